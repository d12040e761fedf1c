"""Shared test helpers: drive the real Typer app, render rich output as plain text."""

from __future__ import annotations

import functools
import io
import json
import math
import os
import signal
from typing import Any

import numpy as np
import pytest
import typer.testing
from hypothesis import settings
from rich.console import Console
from typer.testing import CliRunner

from attn_cli.cli.app import app
from attn_cli.learn.common import pin_kernels

# torch's and MKL's CPU kernels pinned for the whole session, before any test imports torch, as
# `attn learn` pins them before it imports torch: a model trained in a test prints the numbers
# the command (and its --code program, which pins them too) prints for the same seed.
pin_kernels()

# Ctrl-C as a terminal's foreground job gets it. A suite started as a background job (`pytest
# &`, `nohup ... &`: a shell without job control starts those with SIGINT ignored) passed SIGINT
# ignored to every command a test starts, and a test that sends one a Ctrl-C waited for ever (the
# runs beside six busy processes, started so, timed out on test_ctrl_c_mid_lesson_stops_every_
# process). A handler of the process's own is reset to the default in each command it starts.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# CliRunner.invoke(app, ...) turns the Typer app into its click command on every call (Typer's
# get_command inspects the signature of each of the 22 commands: ~60 ms, nine tenths of a typical
# in-process run, and a third of the suite's time). The app is built once per process
# (cli.full_app); its click command is now too: the same objects for every run, as in a notebook
# that calls the app again and again (click commands are made to be invoked repeatedly).
assert callable(typer.testing._get_command), "typer.testing no longer has _get_command"
typer.testing._get_command = functools.cache(typer.testing._get_command)

# Hypothesis, in two profiles, both deterministic (derandomize: the same inputs on every run, no
# example database replaying an old failure). "default", a contributor's run, draws a quarter of
# each property's budget; "ci" (.ci/run sets HYPOTHESIS_PROFILE=ci for its second run of the
# suite) draws all of it. A property says its budget with examples(N), N being CI's count.
settings.register_profile(
    "default", max_examples=25, derandomize=True, database=None, deadline=None
)
settings.register_profile("ci", max_examples=100, derandomize=True, database=None, deadline=None)
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(ci: int) -> int:
    """A property's number of examples: ``ci`` under the ci profile, a quarter (at least one)
    under the default one."""
    return ci if HYPOTHESIS_PROFILE == "ci" else max(1, ci // 4)


@pytest.fixture
def invoke():
    """Run ``attn ARGS`` through the real app; returns the click Result."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, list(args), input=input)

    return run


@pytest.fixture
def invoke_json(invoke):
    """Run a command with --format json, assert success, and return the parsed document."""

    def run(*args: str) -> dict[str, Any]:
        result = invoke(*args, "--format", "json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return run


def data(value: dict[str, Any]) -> Any:
    """The entries of a JSON array object {"shape", "data"}, after checking the shape is theirs."""
    assert isinstance(value, dict) and set(value) == {"shape", "data"}, value
    assert list(np.shape(value["data"])) == value["shape"], (value["shape"], value["data"])
    return value["data"]


def unwrap(value: Any) -> Any:
    """A step value as the tests read it: an array object's entries; anything else unchanged
    (a summarised array {"shape", "summary"} too)."""
    if isinstance(value, dict) and set(value) == {"shape", "data"}:
        return data(value)
    return value


def as_typed(lesson: str, /, **given: Any) -> Any:
    """The library's run of ``lesson`` with ``given`` (Python's keywords), its words naming
    parameters as the command line spells them (``--seed`` where Python's door writes ``seed``:
    test_lesson_text_params): the walkthrough ``attn LESSON`` with the same flags prints."""
    from attn_cli.cli.flags import COMMAND_LINE
    from attn_cli.course import card
    from attn_cli.run.request import request_for
    from attn_cli.run.runner import compute

    return compute(request_for(card(lesson), given, python=True, door=COMMAND_LINE))


def render_plain(renderable: Any, width: int = 80) -> str:
    """A rich renderable as the plain text an 80-column terminal would show (lines rstripped)."""
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines())


def assert_user_error(result, *fragments: str) -> None:
    """A user error: exit code 2, one line on stderr naming the problem, nothing on stdout."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stdout == "", result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("attn: error: "), lines[0]
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture(autouse=True)
def installed_from_an_index(monkeypatch):
    """Install advice as for `pip install attn-cli` from an index, whatever this checkout's
    install is (editable here, a wheel in CI): the tests that read advice read pip's;
    tests/test_install.py fakes each installer in turn."""
    from pathlib import Path

    from attn_cli.core import install

    pip = install.Facts(Path("/venv"), direct_url=None, installer="pip")
    monkeypatch.setattr(install, "facts", lambda: pip)


@pytest.fixture
def torch():
    """The torch module, or a clean skip when the optional backend is not installed."""
    return pytest.importorskip("torch")


@pytest.fixture
def mpl():
    """matplotlib, or a clean skip where the optional extra is not installed."""
    return pytest.importorskip(
        "matplotlib", reason="--plot draws with matplotlib, the optional extra attn-cli[plot]"
    )


@pytest.fixture
def without_torch(monkeypatch):
    """Make this run behave as on a machine where PyTorch is not installed."""
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    monkeypatch.delitem(sys.modules, "attn_cli.core.torch_backend", raising=False)


@pytest.fixture
def torch_without_cuda(torch, monkeypatch):
    """torch installed, but no CUDA device (whatever this machine has)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    return torch


# --- references the tests compute with, independently of attn_cli's mechanisms ----------------


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """softmax along the last axis, in float64, with the row max subtracted."""
    exp = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def random_qkv(seed: int, m: int, n: int, d_k: int = 3, d_v: int = 2):
    """Standard-normal Q (m × d_k), K (n × d_k) and V (n × d_v) from one seeded generator."""
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((m, d_k)),
        rng.standard_normal((n, d_k)),
        rng.standard_normal((n, d_v)),
    )


def sparsemax_reference(z: list[float]) -> tuple[list[float], float]:
    """Martins & Astudillo (2016), algorithm 1, one row, in plain Python."""
    finite = sorted((x for x in z if x != -math.inf), reverse=True)
    k_z, running = 0, 0.0
    for k, value in enumerate(finite, start=1):
        running += value
        if 1 + k * value > running:
            k_z = k
    tau = (sum(finite[:k_z]) - 1) / k_z
    return [max(x - tau, 0.0) for x in z], tau


def entmax15_reference(z: list[float]) -> tuple[list[float], float]:
    """1.5-entmax of one row by bisection, in plain Python: the t with
    Σ_j max((z_j − t)/2, 0)² = 1, found between max z − 2 (the top score alone already gives 1)
    and max z (nothing left); the weights are max((z_j − t)/2, 0)², and τ = t/2 is the paper's
    threshold (p = [(α − 1)z − τ]_+^{1/(α−1)} with α = 1.5)."""

    def total(t: float) -> float:
        return sum(max((x - t) / 2, 0.0) ** 2 for x in z)

    low, high = max(z) - 2, max(z)
    while True:
        middle = (low + high) / 2
        if not low < middle < high:  # the bracket is two neighbouring floats
            break
        if total(middle) >= 1:
            low = middle
        else:
            high = middle
    t = low if abs(total(low) - 1) <= abs(total(high) - 1) else high
    return [max((x - t) / 2, 0.0) ** 2 for x in z], t / 2
