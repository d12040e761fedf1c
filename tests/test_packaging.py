"""The project's one base address. What the wheel and the sdist carry (the lesson files, the
LICENSE, py.typed, the JSON schemas, the docs, the metadata) and that an installed copy runs
from another directory are checked by .ci/run (stages 3 and 4), which builds them as for an
upload; the suite builds nothing."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _homepage() -> str:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return pyproject["project"]["urls"]["Homepage"]


def test_one_base_address_for_the_project():
    """pyproject's Homepage is the base of the help's and the README's links: the README is
    shown on the package index, where a relative link leads nowhere."""
    from attn_cli.project import REPOSITORY

    assert _homepage() == REPOSITORY
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert targets, "the README has no links?"
    relative = [target for target in targets if not target.startswith(("https://", "#"))]
    assert relative == [], f"make these absolute against {REPOSITORY}: {relative}"
    for target in targets:
        if "github.com" in target:
            assert target.startswith(REPOSITORY), target
