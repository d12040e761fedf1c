"""Start-up stays light: the lesson commands never import torch (checked in a subprocess,
the way Typer's own suite checks that rich stays unimported)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

PROBE = """
import sys
from attn_cli.cli.app import app
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
        ["block", "--format", "json"],
        ["block", "--layers", "2", "--decoder", "--activation", "gelu", "--code"],
        # A state_dict in .npz reads with numpy alone (a .pt file needs torch.load).
        ["block", "--weights", str(DATA / "block" / "encoder-layer.npz"), "--format", "json"],
        [
            "multihead",
            "--weights",
            str(DATA / "multihead" / "mha-kdim.npz"),
            "--x",
            "1,0,0,1",
            "--xk",
            "1,2,3",
            "--xv",
            "1,0",
        ],
        ["posenc", "--format", "json"],
        ["variance", "--dk", "4,64", "--samples", "50"],
        ["flash", "--kernel", "--format", "json"],  # the kernel's source, read as text
        ["learn", "translate", "--code"],  # the training program, printed without training
        ["learn", "--help"],
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
from attn_cli.cli.app import main
try:
    main()
except SystemExit:
    pass
print("MODULES", " ".join(sorted(sys.modules)))
"""
NOT_AT_START_UP = (
    "numpy",
    "tomllib",
    "attn_cli.run.runner",
    "attn_cli.lessonfiles.loader",
    "attn_cli.course.lesson",
    "attn_cli.course.recorder",
    "attn_cli.mechanisms",
    "attn_cli.core.model",
    "attn_cli.core.matrices",
    "attn_cli.core.slides",
    "attn_cli.run.check",
    "attn_cli.run.quiz",
    "attn_cli.cli.tour",
    "attn_cli.bench",
    "attn_cli.core.backend",
)


def modules_after(args: list[str]) -> list[str]:
    """The modules loaded once `attn ARGS` has run in a fresh interpreter (MAIN_PROBE)."""
    completed = subprocess.run(
        [sys.executable, "-c", MAIN_PROBE.format(args=args)],
        capture_output=True,
        text=True,
        check=True,
    )
    modules = completed.stdout.strip().splitlines()[-1].split()
    assert modules[0] == "MODULES", completed.stdout[-500:]
    return modules


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"], ["scaled", "--help"]])
def test_version_and_help_import_no_lesson_numpy_or_renderer(args):
    modules = modules_after(args)
    assert "attn_cli.cli.app" in modules  # the probe did run the app
    loaded = [
        module
        for module in modules[1:]
        if module in NOT_AT_START_UP  # each, or a module inside it
        or module.startswith(tuple(f"{name}." for name in NOT_AT_START_UP))
        # a renderer (the options every renderer is told, a dataclass and an enum, are none)
        or (module.startswith("attn_cli.render.") and module != "attn_cli.render.options")
        # a lesson's card and stop (and the hooks its card names), never its build, its
        # programs or its figure
        or (
            module.startswith("attn_cli.course.")
            and module.endswith((".build", ".program", ".figure"))
        )
    ]
    assert loaded == [], loaded


@pytest.mark.parametrize(
    "args", [["scaled", "--format", "json"], ["scaled", "--bogus"], ["--version"], ["--help"]]
)
def test_main_runs_the_command_with_the_collector_on_and_leaves_it_on(args, monkeypatch, capsys):
    """main() turns the cyclic garbage collector off for start-up only."""
    import gc

    import attn_cli.run.runner
    from attn_cli.cli.app import main

    seen = []
    compute = attn_cli.run.runner.compute

    def recording_compute(request):
        seen.append(gc.isenabled())
        return compute(request)

    monkeypatch.setattr(attn_cli.run.runner, "compute", recording_compute)
    monkeypatch.setattr(sys, "argv", ["attn", *args])
    with pytest.raises(SystemExit):
        main()
    capsys.readouterr()
    assert gc.isenabled()
    assert seen == ([True] if args[-1] == "json" else [])


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["scaled"],
        ["scaled", "--q", "1,0;0,1", "--k", "1,1;2,0", "--v", "1,2;3,4", "--precision", "3"],
        ["scaled", "--format", "json", "--dropout", "0.25", "--seed", "2", "--device", "cpu"],
        ["causal", "--n", "4", "--dk", "2"],
    ],
)
def test_a_lesson_run_imports_one_card_and_no_pydantic(args):
    """Typer coerces options through pydantic TypeAdapters (its import alone is about 120 ms); a
    default, text, a plain number and a choice typed exactly need none of it
    (attn_cli.cli.parsing). And a lesson's run does not import every card."""
    modules = modules_after(args)
    assert "attn_cli.run.runner" in modules  # the lesson did run
    assert [m for m in modules if m == "pydantic" or m.startswith("pydantic.")] == []
    cards = [m for m in modules if m.startswith("attn_cli.course.") and m.endswith(".card")]
    # Its own card, and those of the lessons its walkthrough builds on (causal's: scaled's and
    # selfattn's), not all sixteen.
    assert f"attn_cli.course.{args[0]}.card" in cards
    assert len(cards) <= 3, cards


@pytest.mark.slow
def test_the_lecture_run_does_only_what_it_needs():
    """Issue 55's measure (benchmarks/calls.py, in a fresh interpreter): `attn scaled` with the
    user's matrices makes at most 2,000 calls into attn_cli (4,691 before its cuts: the bundled
    file checked on every run, the help built for a run, the registry rescanned, each table's
    widths measured again and again)."""
    completed = subprocess.run(
        [sys.executable, str(Path(__file__).parent.parent / "benchmarks" / "calls.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = completed.stdout.splitlines()
    assert lines[0].endswith("(exit status 0)"), completed.stdout
    calls = int(lines[1].split(": ")[1].split()[0].replace(",", ""))
    assert calls <= 2_000, completed.stdout
