"""The project's web addresses, and where its links lead. What the wheel and the sdist carry (the
lesson files, the LICENSE, py.typed, the JSON schemas, the docs, the metadata) and that an
installed copy runs from another directory are checked by .ci/run (stages 3 to 5), which builds
them as for an upload; the suite builds nothing."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The address that was written into the metadata and the README while no repository existed.
PLACEHOLDER = "attn-cli/attn"


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_no_address_until_the_repository_exists():
    """A placeholder that looks real is worse than none: the metadata carries no Project-URL
    until [project.urls] is set in pyproject.toml (the one place), and nothing the project ships
    names the placeholder."""
    urls = _project().get("urls", {})
    assert all(PLACEHOLDER not in url for url in urls.values()), urls
    shipped = [ROOT / "pyproject.toml", *_markdown_files(), *sorted((ROOT / "attn_cli").rglob("*"))]
    naming = [
        path.relative_to(ROOT).as_posix()
        for path in shipped
        if path.is_file()
        and path.suffix in (".py", ".md", ".toml", ".json")
        and PLACEHOLDER in path.read_text(encoding="utf-8")
    ]
    assert naming == []


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda path: path.relative_to(ROOT).name)
def test_links_between_the_project_files_are_relative_and_lead_to_a_file(page):
    """The README's and the docs' links to the project's own files are relative (they work in
    the repository and in the sdist, wherever it is hosted), and each leads to a file there."""
    text = page.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    for target in targets:
        if target.startswith(("https://", "http://", "#", "mailto:")):
            assert "github.com" not in target, f"{page.name}: make {target} relative"
            continue
        path = (page.parent / unquote(target.split("#", 1)[0])).resolve()
        assert path.exists(), f"{page.name}: {target} leads nowhere"
