"""Start-up stays light: the lesson commands never import torch (checked in a subprocess,
the way Typer's own suite checks that rich stays unimported)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
from attn_cli.cli import app
try:
    app({args!r}, prog_name="attn")
except SystemExit:
    pass
print("HEAVY", sorted(m for m in ("torch", "array_api_compat", "matplotlib") if m in sys.modules))
"""


@pytest.mark.parametrize(
    "args",
    [
        ["scaled"],
        ["scaled", "--format", "json"],
        ["scaled", "--n", "16"],
        ["--help"],
        ["bahdanau", "--example", "cat-slept"],
        ["selfattn", "--permute", "1,0,2", "--format", "json"],
        ["causal", "--conventions"],
        ["multihead", "--format", "json"],
        ["posenc", "--format", "json"],
        ["variance", "--dk", "4,64", "--samples", "50"],
    ],
)
def test_lesson_commands_do_not_import_torch(args):
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip().splitlines()[-1] == "HEAVY []", completed.stdout[-500:]
