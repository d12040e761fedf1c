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
    (contract,) = config["tool"]["importlinter"]["contracts"]
    named = {name.strip() for layer in contract["layers"] for name in re.split(r"[|:]", layer)}
    graph = grimp.build_graph("attn_cli")
    modules = {".".join(module.split(".")[:2]) for module in graph.modules} - {"attn_cli"}
    assert modules - named == set(), "add these to a layer of [tool.importlinter] in pyproject"
    assert named - modules == set(), "these layers name no module"
