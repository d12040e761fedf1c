"""The layers contract (issue 23) covers every module: import-linter checks only the modules its
layers name, so a new top-level module left out of [tool.importlinter] would escape it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp", reason="import-linter (the dev extra) brings grimp")

ROOT = Path(__file__).resolve().parent.parent


def test_every_top_level_module_is_in_a_layer():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["type"] == "layers"]  # beside the acyclic one
    named = {name.strip() for layer in contract["layers"] for name in re.split(r"[|:]", layer)}
    graph = grimp.build_graph("attn_cli")

    def covered(module: str) -> bool:
        """Named itself or through a package above it; a package whose modules are named one by
        one (attn_cli.lessonfiles) is covered by them."""
        parts = module.split(".")
        above = {".".join(parts[:end]) for end in range(2, len(parts) + 1)}
        return bool(above & named) or any(name.startswith(module + ".") for name in named)

    uncovered = {module for module in graph.modules - {"attn_cli"} if not covered(module)}
    assert uncovered == set(), "add these to a layer of [tool.importlinter] in pyproject"
    assert {name for name in named if name not in graph.modules} == set(), "layers name no module"
