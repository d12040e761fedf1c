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
print("HEAVY", sorted(m for m in ("torch", "array_api_compat", "matplotlib", "triton", "textual") if m in sys.modules))
"""


@pytest.mark.slow
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
        ["flash", "--kernel", "--format", "json"],  # the kernel's source, read as text
    ],
)
def test_lesson_commands_do_not_import_torch(args):
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip().splitlines()[-1] == "HEAVY []", completed.stdout[-500:]


# What `attn --version` and `attn --help` must not import: they need each command's signature
# and docstring, never numpy, the lessons, the lesson files or a renderer.
MAIN_PROBE = """
import sys
sys.argv = ["attn", *{args!r}]
from attn_cli.cli import main
try:
    main()
except SystemExit:
    pass
print("MODULES", " ".join(sorted(sys.modules)))
"""
NOT_AT_START_UP = (
    "numpy",
    "tomllib",
    "attn_cli.runner",
    "attn_cli.lessonfiles.loader",
    "attn_cli.walkthroughs",
    "attn_cli.mechanisms",
    "attn_cli.model",
    "attn_cli.matrices",
    "attn_cli.slides",
    "attn_cli.check",
    "attn_cli.quiz",
    "attn_cli.tour",
    "attn_cli.bench",
    "attn_cli.backend",
)


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"], ["scaled", "--help"]])
def test_version_and_help_import_no_lesson_numpy_or_renderer(args):
    completed = subprocess.run(
        [sys.executable, "-c", MAIN_PROBE.format(args=args)],
        capture_output=True,
        text=True,
        check=True,
    )
    modules = completed.stdout.strip().splitlines()[-1].split()
    assert modules[0] == "MODULES", completed.stdout[-500:]
    assert "attn_cli.cli" in modules  # the probe did run the app
    loaded = [
        module
        for module in modules[1:]
        if module.startswith(NOT_AT_START_UP) or module.startswith("attn_cli.render.")
    ]
    assert loaded == [], loaded


@pytest.mark.parametrize(
    "args", [["scaled", "--format", "json"], ["scaled", "--bogus"], ["--version"], ["--help"]]
)
def test_main_runs_the_command_with_the_collector_on_and_leaves_it_on(args, monkeypatch, capsys):
    """main() turns the cyclic garbage collector off for start-up only."""
    import gc

    import attn_cli.runner
    from attn_cli.cli import main

    seen = []
    compute = attn_cli.runner.compute

    def recording_compute(request):
        seen.append(gc.isenabled())
        return compute(request)

    monkeypatch.setattr(attn_cli.runner, "compute", recording_compute)
    monkeypatch.setattr(sys, "argv", ["attn", *args])
    with pytest.raises(SystemExit):
        main()
    capsys.readouterr()
    assert gc.isenabled()
    assert seen == ([True] if args[-1] == "json" else [])
