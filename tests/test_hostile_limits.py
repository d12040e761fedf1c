"""Hostile numbers, round 4 (issue 43): every whole-number option has a largest value, refused
in one line past it; sizes that would run for minutes are refused with how long.

The two properties at the end run every integer option of every command with values up to
10**309, and every file channel with declared shapes up to 2**62, in a subprocess under a
memory limit, each run timed: a one-line refusal within a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attn_cli.core.errors import UserError
from attn_cli.core.numbers import format_bytes
from attn_cli.core.whole import LARGEST_WHOLE
from tests.conftest import assert_user_error, examples
from tests.waits import HANG_GUARD_SECONDS

HUGE = {
    "--n": 10**154,
    "--d": 10**160,
    "--heads": 10**300,
    "--layers": 10**300,
    "--features": 10**309,
}


@pytest.mark.parametrize("fmt", ["rich", "json", "markdown", "latex"])
@pytest.mark.parametrize(("flag", "value"), HUGE.items())
def test_cost_refuses_numbers_past_the_largest_in_every_format(invoke, flag, value, fmt):
    result = invoke("cost", flag, str(value), "--format", fmt)
    assert_user_error(result, flag, "at most 999,999,999,999,999,999")
    assert len(result.stderr) < 200  # 310 digits are never echoed


@pytest.mark.parametrize("fmt", ["rich", "json", "markdown", "latex"])
def test_cost_takes_the_largest_of_every_size_at_once(invoke, fmt):
    largest = str(LARGEST_WHOLE)
    sizes = ("--n", "--d", "--window", "--features", "--heads", "--layers")
    result = invoke("cost", *(part for flag in sizes for part in (flag, largest)), "-f", fmt)
    assert result.exit_code == 0, result.output[-2000:]
    assert result.stderr == ""


def test_bytes_past_a_million_tib_are_written_in_powers_of_ten():
    assert format_bytes(5 * 1024**4) == "5.0 TiB"
    assert format_bytes(10**300) == "9.1e+287 TiB"
    assert format_bytes(10**5000) == "9.1e+4987 TiB"  # no float() of the int


def test_a_lessons_memory_guard_at_10_to_the_18_says_its_bytes(invoke):
    assert_user_error(invoke("scaled", "--n", str(LARGEST_WHOLE)), "e+", "TiB", "is free")


@pytest.mark.parametrize("task", ["translate", "induction"])
def test_learn_refuses_a_seed_of_2_to_the_64_on_both_tasks(invoke, task):
    assert_user_error(invoke("learn", task, "--seed", str(2**64)), "--seed", "at most")


@pytest.mark.parametrize(
    ("value", "fragment"), [("100000", "at most 256"), (str(2**64), "at most 999,999")]
)
def test_learn_induction_caps_its_width(torch, invoke, value, fragment):
    assert_user_error(invoke("learn", "induction", "--hidden", value), "--hidden", fragment)


def test_learn_induction_refuses_a_budget_of_days_with_its_estimate(torch, invoke):
    result = invoke("learn", "induction", "--steps", "100000000")
    assert_user_error(result, "--steps 100,000,000", "days here", "the default is 400")


def test_block_refuses_a_layer_of_minutes_with_its_estimate(invoke):
    result = invoke("block", "--d-ff", "300000000")
    assert_user_error(result, "d_ff = 300,000,000", "minutes here", "--d-ff")


def test_blocks_memory_estimate_counts_the_ffn_weights_as_measured():
    from attn_cli.course.block.build import estimate_bytes

    measured = 1_530_456 * 1024  # peak resident bytes of attn block --d-ff 4000000 (3 × 4 X)
    estimate = estimate_bytes({"X": (3, 4)}, {"heads": 2, "d_ff": 4_000_000}, 8)
    assert measured * 0.8 <= estimate <= measured * 1.5


# --- the properties: every integer option, every file channel, under a memory limit ------------

# The address space each run may map (python, numpy, typer and rich take about 0.6 GiB of it):
# an option or a file that asked for more would die of MemoryError, not be refused.
MEMORY_LIMIT = 2 * 2**30
# Every refusal comes within this many seconds of the process's own CPU time (each run timed on
# its own), the work refused taking a minute (reading the 2 GB a .npz of zeros declares: 59 s) or
# never ending (a declared 2**62 array). CPU time, not the wall clock: on 2 shared cores at load
# 9 a refusal waits for a core longer than it works. torch is imported before the clock starts,
# as numpy is: its first import (1.5 s in CI) is start-up, not the refusal.
SECONDS = 1.0

RUNNER = r"""
import json, resource, sys, time
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from typer.testing import CliRunner
import numpy  # imported by every lesson: not what a refusal is timed on
try:
    import torch  # learn induction's first use of it: start-up, not the refusal
except ImportError:
    pass
import attn_cli.run.runner, attn_cli.core.weights_file, attn_cli.learn.common
from attn_cli.cli.app import app
runner = CliRunner()
for args in json.loads(sys.stdin.read()):
    start = time.process_time()
    try:
        result = runner.invoke(app, args)
        outcome = {"code": result.exit_code, "stderr": result.stderr, "stdout": len(result.stdout),
                   "exception": None if result.exception is None or isinstance(result.exception, SystemExit)
                   else repr(result.exception)[:300]}
    except BaseException as error:
        outcome = {"code": None, "stderr": "", "stdout": 0, "exception": repr(error)[:300]}
    outcome.update(args=[arg[:60] for arg in args], seconds=time.process_time() - start)
    print(json.dumps(outcome), flush=True)
"""


def refused_in_time(cases: list[list[str]], tmp_path) -> None:
    """Run every argv in ``cases`` through the real app in one subprocess under MEMORY_LIMIT:
    each must be refused in one line on stderr (exit 2, nothing on stdout) within SECONDS."""
    environment = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(MEMORY_LIMIT)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SECONDS + 2 * len(cases),
        env={**os.environ, **environment},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(outcomes) == len(cases), done.stderr[-3000:]
    for outcome in outcomes:
        lines = outcome["stderr"].strip().splitlines()
        assert outcome["exception"] is None, outcome
        assert outcome["code"] == 2 and outcome["stdout"] == 0, outcome
        assert len(lines) == 1 and lines[0].startswith("attn: error: "), outcome
        assert len(lines[0]) < 600, outcome  # a number is never echoed whole
        assert outcome["seconds"] < SECONDS, outcome


def integer_options() -> list[tuple[tuple[str, ...], str]]:
    """(the command, as typed before the option; the option) for every whole-number option of
    every command (each lesson's, the tools': learn's for both tasks, bench's, explore's)."""
    import typer

    from attn_cli.cli.app import full_app
    from attn_cli.cli.commands.learn import TASKS
    from tests.command_params import declared_type

    group = typer.main.get_command(full_app())
    found = []
    for name, command in group.commands.items():
        bases = [(name, task) for task in TASKS] if name == "learn" else [(name,)]
        for param in command.params:
            if (
                declared_type(command, param.name) is int
                and param.opts
                and param.opts[0].startswith("--")
            ):
                found += [(base, param.opts[0]) for base in bases]
    return found


INTEGER_OPTIONS = integer_options()
HUGE_WHOLE = st.one_of(
    st.sampled_from([10**18, 2**62, 2**63, 2**64, 10**30, 10**154, 10**300, 10**309]),
    st.integers(min_value=10**18, max_value=10**309),
)


def test_every_integer_option_is_found():
    flags = {(base[0], flag) for base, flag in INTEGER_OPTIONS}
    assert {("cost", "--features"), ("learn", "--hidden"), ("bench", "--block")} <= flags
    assert {("explore", "--port"), ("scaled", "--seed"), ("block", "--d-ff")} <= flags
    assert len(INTEGER_OPTIONS) > 90


@pytest.mark.slow
@settings(max_examples=examples(4), suppress_health_check=list(HealthCheck), deadline=None)
@given(values=st.lists(HUGE_WHOLE, min_size=len(INTEGER_OPTIONS), max_size=len(INTEGER_OPTIONS)))
def test_every_integer_option_refuses_any_value_up_to_10_to_the_309(tmp_path_factory, values):
    cases = [
        [*base, flag, str(value)]
        for (base, flag), value in zip(INTEGER_OPTIONS, values, strict=True)
    ]
    refused_in_time(cases, tmp_path_factory.mktemp("integers"))


DTYPES = ["<f8", "<f4", ">f8", "<i8", "|u1", "<c16", "|O", "<U10", "|V16"]
SHAPES = st.lists(st.integers(min_value=0, max_value=2**62), min_size=0, max_size=4).map(tuple)
CHANNELS = ["@file", "lesson file", "check", "bahdanau --weights", "learn --weights"]


def file_case(folder, index: int, channel: str, shape: tuple[int, ...], descr: str) -> list[str]:
    """The command line that reads an array declared ``shape`` of ``descr`` (no data: the
    file holds only the header) through ``channel``."""
    from tests.hostile_files import npy_with_header, npz_of

    if channel in ("@file", "lesson file", "check"):
        path = npy_with_header(folder / f"a{index}.npy", shape, descr)
        if channel == "@file":
            return ["scaled", "--q", f"@{path}", "--k", "1,0;0,1", "--v", "1,2;3,4"]
        lesson = folder / f"l{index}.toml"
        body = (
            f'[[examples]]\nname = "x"\n[examples.inputs]\nQ = "@{path}"\nK = [[1, 0]]\nV = [[1]]\n'
        )
        lesson.write_text(f'lesson = "scaled"\n{body}', encoding="utf-8")
        return (
            ["scaled", "--lesson", str(lesson)]
            if channel == "lesson file"
            else ["check", str(lesson)]
        )
    if channel == "bahdanau --weights":
        import numpy as np

        arrays = {"s_t": np.zeros(3), "W1": np.ones((2, 6)), "W2": np.ones((2, 3)), "v": np.ones(2)}
        path = npz_of(folder / f"w{index}.npz", arrays, {"H": shape})
        return ["bahdanau", "--weights", str(path)]
    from tests.test_hostile_files import induction_arrays

    arrays = induction_arrays()
    del arrays["two.embed"]
    path = npz_of(folder / f"w{index}.npz", arrays, {"two.embed": shape})
    return ["learn", "induction", "--weights", str(path)]


@pytest.mark.slow
@settings(max_examples=examples(8), suppress_health_check=list(HealthCheck), deadline=None)
@given(
    files=st.lists(
        st.tuples(st.sampled_from(CHANNELS), SHAPES, st.sampled_from(DTYPES)),
        min_size=15,
        max_size=15,
    )
)
def test_every_file_channel_refuses_any_declared_shape_up_to_2_to_the_62(tmp_path_factory, files):
    folder = tmp_path_factory.mktemp("files")
    cases = [file_case(folder, index, *file) for index, file in enumerate(files)]
    refused_in_time(cases, folder)


# --- round 5 (issue 54): a stack of layers, and --full JSON, counted before any work -----------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (  # before: hours (0.37 s a layer); the estimate counted its numbers alone
            ("--layers", "100000"),
            ("100000 layers of n = 4 tokens", "steps take 0.58 s to record and draw as tables"),
        ),
        (("--layers", "1000"), ("1000 layers", "draw as tables, about 10 minutes here")),
        (
            ("--layers", "10000", "--format", "json"),
            ("10000 layers", "take 0.025 s to record and write as JSON, about 4 minutes here"),
        ),
        (("--layers", "400", "--format", "svg"), ("draw as an SVG picture, about 10 minutes",)),
        (("--layers", "3000", "--format", "markdown"), ("write as Markdown",)),
        (("--layers", "2000", "--format", "html", "--n", "2"), ("n = 2 tokens", "HTML page")),
        (
            (
                "--layers",
                "1000000000",
            ),
            ("1,000,000,000 layers", "days here"),
        ),
    ],
)
def test_block_refuses_a_stack_of_layers_that_would_take_minutes(invoke, args, fragments):
    result = invoke("block", *args)
    assert_user_error(
        result, *fragments, "ask for less: a smaller --n, --d-model, --d-ff or --layers"
    )


def test_a_lesson_files_stack_is_refused_under_check_and_when_run(invoke, tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text(
        'lesson = "block"\n[[examples]]\nname = "mine"\noptions = { layers = 100000 }\n'
        '[examples.inputs]\nX = "1,0,0,1"\n',
        encoding="utf-8",
    )
    where = f"{path}: example 'mine', inputs: 100000 layers of n = 1 token"
    checked = invoke("check", str(path))  # computed, never drawn: the recording alone
    assert_user_error(checked, where, "take 0.025 s to record, about 42 minutes here")
    shown = invoke("block", "--lesson", str(path))
    assert_user_error(shown, where, "0.58 s to record and draw as tables, about 16 hours here")


def test_the_layer_guard_lets_a_thousand_layers_of_json_run_and_python_is_counted_too():
    """Before: 1,000 layers of JSON ran past 300 s (each layer's weights drew its stream by
    spawning every stream before it, and each step was found by scanning them all); both are
    one look-up now, and the estimate (25 s) lets it run."""
    import attn_cli as attn
    from attn_cli.course import get_lesson
    from attn_cli.course.block.build import check_layer_work
    from attn_cli.course.block.settings import settings

    options = get_lesson("block").options_with({"layers": 1000})
    chosen = settings(options, {"X": np.zeros((4, 4))})
    check_layer_work(4, 4, 4, chosen, "json")  # not refused
    with pytest.raises(UserError, match=r"take 0\.58 s to record and draw as tables"):
        check_layer_work(4, 4, 4, chosen, "rich")
    with pytest.raises(UserError, match=r"100000 layers .* about 42 minutes here"):
        attn.block(layers=100_000)


def test_a_layers_stream_is_its_spawned_child_made_directly():
    from attn_cli.course.block.parameters import child

    for seed, index in ((0, 0), (5, 3), (2**40, 200)):
        expected = np.random.default_rng(seed).spawn(index + 1)[index].standard_normal(4)
        assert np.array_equal(child(seed, index).standard_normal(4), expected)


FULL_JSON = "--format json --full writes every number"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (  # before: still writing after 60 s (6.7 GB at 21 bytes a number; e^s by hand since)
            ("scaled", "--n", "8000", "--dk", "64"),
            ("about 3.9e+08 at these sizes (7.6 GiB of JSON), about 14 minutes here",),
        ),
        (("scaled", "--n", "8000", "--dk", "64", "-o", "out.json"), ("7.6 GiB",)),
        (("selfattn", "--n", "6000"), ("4.2 GiB of JSON",)),
        (("causal", "--n", "6000"), ("7.0 GiB of JSON",)),
        (("multihead", "--n", "4000", "--heads", "8", "--d-model", "64"), ("10.1 GiB",)),
        (("block", "--n", "6000"), ("GiB of JSON",)),
        (("window", "--n", "6000"), ("GiB of JSON",)),
        (("graph", "--n", "6000"), ("GiB of JSON",)),
        (("linear", "--n", "6000"), ("GiB of JSON",)),
        (("rope", "--n", "6000"), ("GiB of JSON",)),
        (("alibi", "--n", "6000"), ("GiB of JSON",)),
        (("ring", "--n", "12000"), ("GiB of JSON",)),
    ],
)
def test_full_json_of_minutes_is_refused_before_any_work_with_its_size(
    invoke, tmp_path, monkeypatch, args, fragments
):
    monkeypatch.chdir(tmp_path)
    result = invoke(*args, "--format", "json", "--full")
    assert_user_error(result, FULL_JSON, *fragments, "leave out --full")
    assert list(tmp_path.iterdir()) == []  # -o: nothing written


def test_full_json_the_guard_lets_run_and_a_python_call_it_does_not_count():
    """n = 3,000 (45 million numbers, about 100 s of a core) is still written; the library's
    to_dict(full=True) has its memory guard instead (it builds the document whole)."""
    from attn_cli.run.runner import RunRequest, prepare_items

    request = RunRequest(lesson="scaled", sizes={"n": 3000, "dk": 4}, shown="json", full=True)
    prepare_items(request)  # not refused
    larger = RunRequest(lesson="scaled", sizes={"n": 4500, "dk": 4}, shown="json", full=True)
    with pytest.raises(UserError, match=FULL_JSON):
        prepare_items(larger)
    prepare_items(RunRequest(lesson="scaled", sizes={"n": 4500, "dk": 4}))  # not shown: no guard


@pytest.mark.parametrize(
    ("lesson", "options"),
    [
        ("scaled", {}),
        ("scaled", {"normalise": "entmax15"}),
        ("scaled", {"valid_len": 3}),
        ("selfattn", {}),
        ("causal", {}),
        ("multihead", {}),
        ("multihead", {"heads": 4, "causal": True}),
        ("multihead", {"valid_len": 3}),
        ("multihead", {"dropout": 0.1}),
        ("block", {}),
        ("block", {"decoder": True}),
        ("block", {"layers": 2, "causal": True}),
        ("window", {}),
        ("graph", {}),
        ("linear", {}),
        ("rope", {}),
        ("alibi", {}),
        ("ring", {}),
        ("bahdanau", {}),
    ],
)
def test_the_documents_estimate_is_about_the_numbers_it_writes(lesson, options):
    """The guard's count, from the shapes alone, within a few tenths of the numbers the
    --full document holds (each lesson at n = 200): the size it says is the size written."""
    from attn_cli.course import get_lesson
    from attn_cli.render import walkthrough_entries
    from attn_cli.run.runner import RunRequest, compute, prepare_items

    request = RunRequest(lesson=lesson, sizes={"n": 200}, options=options)
    (run, *_), _, _ = prepare_items(request)
    shapes = {name: value.shape for name, value in run.inputs.items()}
    inputs = sum(value.size for value in run.inputs.values())
    estimate = inputs + get_lesson(lesson).document_numbers(shapes, run.options)
    written = walkthrough_entries(compute(request))
    assert 0.75 * written <= estimate <= 1.6 * written, (estimate, written)
