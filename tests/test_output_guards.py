"""Issue 32, the output side: terminals that cannot encode √, closed pipes, --full JSON's
memory, the work guard, and finite answers from finite inputs (every normaliser and feature
map, with a property sweep over huge and tiny inputs)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from attn_cli.api import lesson_function
from attn_cli.core.errors import UserError
from attn_cli.core.spelling import spelled
from attn_cli.mechanisms import linear, normalise
from attn_cli.render import RenderOptions, document_bytes, walkthrough_entries
from attn_cli.render.json_render import json_chunks, to_document, to_json
from tests.conftest import assert_user_error, unwrap
from tests.waits import HANG_GUARD_SECONDS

ROOT = Path(__file__).resolve().parents[1]


def _attn(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """attn ARGS in a fresh process, with these environment variables."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", **env}
    return subprocess.run(
        [sys.executable, "-m", "attn_cli", *args],
        env=environment,
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        timeout=HANG_GUARD_SECONDS,
    )


# Item 6: a terminal that cannot encode √, ², τ, ░.


@pytest.mark.slow
@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONIOENCODING": "ascii"},
        {"PYTHONIOENCODING": "latin-1"},
        {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""},
    ],
    ids=["ascii", "latin-1", "LANG=C"],
)
def test_a_terminal_without_unicode_gets_ascii_spellings_and_one_note(env):
    result = _attn("scaled", **env)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "UnicodeEncodeError" not in result.stderr
    out = result.stdout
    assert "softmax(Q K^T / sqrtd_k) V" in out  # the formula, readable
    assert "scaled by sqrt2" in out and "sum row" in out
    assert "0.6698+" in out  # a weight's shade mark, in a character ASCII has
    assert "\u221a" not in out and "\u2591" not in out
    (note,) = [line for line in result.stderr.splitlines() if line]
    assert note.startswith("attn: note:") and "PYTHONIOENCODING=utf-8" in note


@pytest.mark.slow
def test_help_json_and_errors_on_an_ascii_terminal():
    helped = _attn("scaled", "--help", PYTHONIOENCODING="ascii")
    assert helped.returncode == 0 and "Traceback" not in helped.stderr
    assert "Q K^T" in helped.stdout
    document = _attn("scaled", "--format", "json", PYTHONIOENCODING="ascii")
    assert document.returncode == 0 and document.stderr == ""
    assert document.stdout.isascii() and "\\u221a" in document.stdout  # escaped, not spelled
    same = json.loads(_attn("scaled", "--format", "json").stdout)
    assert json.loads(document.stdout) == same  # the data exactly as on a UTF-8 terminal
    refused = _attn("scaled", "--q", "1,x", "--k", "1,1", "--v", "1", PYTHONIOENCODING="ascii")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr


def test_spellings_keep_what_the_encoding_has():
    assert spelled("√d_k · τ² ░▓", "ascii") == "sqrtd_k . tau^2 .+"
    assert spelled("√d_k · τ² ░▓", "latin-1") == "sqrtd_k · tau² .+"  # latin-1 has · and ²
    assert spelled("Dvořák ╭─┬│", "ascii") == "Dvorak +-+|"


# Item 8: a closed pipe stops the work.


def _read_then_close(args: list[str], first: int) -> tuple[subprocess.Popen[bytes], bytes, float]:
    """Start attn ARGS, read ``first`` bytes (or a line when 0), close the pipe; the process
    (finished), what was read, and the seconds it ran on after the close."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "attn_cli", *args],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    read = process.stdout.read(first) if first else process.stdout.readline()
    process.stdout.close()
    closed = time.monotonic()
    process.wait(timeout=HANG_GUARD_SECONDS)
    return process, read, time.monotonic() - closed


@pytest.mark.slow
def test_a_reader_that_goes_away_ends_full_json_quietly():
    process, read, _ = _read_then_close(
        ["scaled", "--n", "300", "--dk", "64", "--full", "--format", "json"], 10
    )
    assert read == b'{"schema_v'
    assert process.returncode in (0, 141, -13)
    assert process.stderr is not None and process.stderr.read() == b""


@pytest.mark.slow
def test_bench_writes_its_first_line_before_the_sweep_and_stops_when_the_reader_goes():
    # The whole sweep takes tens of seconds here (n = 2048, 20 timed calls); head -1 ends it
    # after its first row.
    args = ["bench", "--impl", "numpy", "--sizes", "16..2048", "--repeats", "20", "--heads", "8"]
    for fmt, first in (("csv", b"impl,n,d,"), ("rich", b"attn bench")):
        process, line, after = _read_then_close([*args, "--format", fmt], 0)
        assert line.startswith(first)
        assert process.returncode in (0, 141, -13)
        assert process.stderr is not None and process.stderr.read() == b""
        assert after < 15, f"the sweep ran on {after:.1f} s after the reader left"


# Item 9: --full JSON is written in pieces; the to_dict estimate fits its measured peak.


class _Null(io.TextIOBase):
    """A file that keeps only the count of characters written to it."""

    written = 0

    def write(self, text: str) -> int:
        self.written += len(text)
        return len(text)


def _walkthrough(n: int):
    return lesson_function("scaled")(n=n, dk=64)


def test_streamed_json_is_the_same_text_as_the_document():
    walkthrough = _walkthrough(150)  # 22,500-entry matrices: streamed in blocks of rows
    options = RenderOptions(full=True)
    assert "".join(json_chunks(walkthrough, options)) == to_json(walkthrough, options)
    masked = lesson_function("causal")(n=120, dk=8)  # −∞ entries written as "-inf"
    assert "".join(json_chunks(masked, options)) == to_json(masked, options)


def _peak(action) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_full_json_memory_does_not_grow_with_the_document():
    from rich.console import Console

    from attn_cli.render import Format, render

    options = RenderOptions(full=True)
    peaks, sizes = [], []
    for n in (150, 450):
        walkthrough, null = _walkthrough(n), _Null()
        console = Console(file=null)
        peaks.append(_peak(lambda w=walkthrough, c=console: render(w, Format.json, c, options)))
        # The document's length, counted as it was written (the same text as to_json's:
        # test_streamed_json_is_the_same_text_as_the_document), with its closing newline.
        sizes.append(null.written - 1)
    assert sizes[1] > 7 * sizes[0]  # nine times the entries
    assert sizes[1] > 12e6  # the document alone is more than the memory it is written in
    assert max(peaks) < 12e6 and peaks[1] < 2 * peaks[0], peaks  # a block at a time


@pytest.mark.parametrize("n", [100, 250])
def test_the_document_estimate_is_within_a_fifth_of_the_measured_peak(n):
    walkthrough = _walkthrough(n)
    measured = _peak(lambda: to_document(walkthrough, RenderOptions(full=True)))
    estimate = document_bytes(walkthrough)
    assert walkthrough_entries(walkthrough) > 10_000
    assert 0.8 * measured <= estimate <= 1.2 * measured, (estimate, measured)


# Item 11: a work guard for samples, repeats, sizes and heads.


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (
            ("--repeats", "2147483648", "--sizes", "16", "--impl", "numpy"),
            ("2,147,483,648 timed calls a row", "here; ask for less", "fewer --repeats"),
        ),
        (
            ("--sizes", "1..99999999999", "--impl", "numpy,tiled-numpy,naive,sdpa-math"),
            ("at 37 sizes", "here; ask for less", "smaller or fewer --sizes"),
        ),
    ],
)
def test_bench_refuses_a_sweep_of_hours_before_the_first_row(invoke, args, fragments, monkeypatch):
    if "naive" in ",".join(args):
        pytest.importorskip("torch", reason="--impl naive and sdpa-math run on PyTorch")
    from attn_cli.bench import sweep

    def no_row(*_args, **_kwargs):
        raise AssertionError("a row was measured before the sweep was refused")

    monkeypatch.setattr(sweep, "_run_one", no_row)  # refused before the first row, not timed
    result = invoke("bench", *args)
    assert_user_error(result, *fragments)


def test_the_bench_guard_lets_the_default_sweep_run():
    from attn_cli.bench.config import BenchConfig, parse_sizes
    from attn_cli.bench.devices import CpuOps
    from attn_cli.bench.sweep import sweep_seconds
    from attn_cli.core.work import MAX_SECONDS

    config = BenchConfig(sizes=parse_sizes(None, "cpu"), impls=("numpy", "tiled-numpy"))
    assert 0 < sweep_seconds(config, CpuOps()) < MAX_SECONDS / 10


def test_a_plot_of_a_thousand_heads_is_refused_before_anything_is_printed(
    invoke, tmp_path, monkeypatch
):
    pytest.importorskip("matplotlib")
    from attn_cli.render import heatmap

    # The guard's own crossing, on the walkthrough's head steps: 440 panels are drawn, 441 and
    # 1,024 refused, naming the count and the most there is time for.
    def heads(count: int) -> SimpleNamespace:
        return SimpleNamespace(
            steps=[SimpleNamespace(key=f"head{h}_weights") for h in range(count)]
        )

    assert heatmap.most_panels() == 440
    heatmap.check_plot_work(heads(440))
    for count, panels in ((441, "441 panels"), (1024, "1,024 panels")):
        words = (
            rf"^--plot would draw {panels}, one per head, about \d+ minutes here; ask for less: "
        )
        with pytest.raises(UserError, match=words + r"at most 440 heads, or leave out --plot\.$"):
            heatmap.check_plot_work(heads(count))
    # The command line refuses before printing or writing anything: here with each panel priced
    # at 30 s, so that 8 heads cross the guard (at the real price the crossing is 441 heads,
    # seconds of computing the walkthrough before the guard is asked).
    monkeypatch.setattr(heatmap, "PANEL_SECONDS", 30.0)
    plot = tmp_path / "w.png"
    args = ("--n", "4", "--d-model", "8", "--heads", "8", "--plot", str(plot))
    result = invoke("multihead", *args)
    assert_user_error(result, "8 panels", "minutes here", f"at most {heatmap.most_panels()} heads")
    assert result.stdout == "" and not plot.exists()


def test_the_work_guard_words():
    from attn_cli.core.work import check_work, duration

    check_work(180, 1.0, "x", "y")  # exactly the cap
    with pytest.raises(UserError, match=r"^it, about 3 minutes here; ask for less: less\.$"):
        check_work(181, 1.0, "it", "less")
    assert [duration(s) for s in (40, 600, 36000, 10**6, 10**12)] == [
        "40 seconds",
        "10 minutes",
        "10 hours",
        "12 days",
        "3.2e+04 years",
    ]


# Item 12: finite inputs, finite answers; the overflow note only when a number overflowed.


def _output_and_notes(doc):
    return np.array(unwrap(doc["output"]), dtype=float), [note["key"] for note in doc["notes"]]


def test_sparsemax_of_huge_equal_scores_is_even(invoke_json):
    doc = invoke_json(
        "scaled", "--normalise", "sparsemax", "--no-scale", "--q", "1e16", "--k", "1;1",
        "--v", "1,2;3,4",
    )  # fmt: skip
    output, notes = _output_and_notes(doc)
    np.testing.assert_array_equal(output, [[2.0, 3.0]])  # weights 0.5, 0.5
    assert "overflow" not in notes
    parts = doc["steps"][1]["parts"]
    assert unwrap(parts["z − τ (weight: max(z − τ, 0))"]) == [[0.5, 0.5]]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # φ(q) = e^-750 underflows to 0: the weights are still 4 : 6 (φ(k) = 2·1, 3·1)
        (("--q", "-750,-750", "--k", "1,1;2,2"), [[2.2, 3.2]]),
        # φ(q)·φ(k) = 2e600 overflows: the weights are 1 : ~0
        (("--q", "1e300,1e300", "--k", "1e300,1e300;2,2"), [[1.0, 2.0]]),
        # causal: token 1 sees only key 1; token 2 as the first case
        (("--causal", "--q", "-750,-750;-800,-800", "--k", "1,1;2,2"), [[1, 2], [2.2, 3.2]]),
    ],
)
def test_linear_attention_where_the_features_under_or_overflow(invoke_json, args, expected):
    output, notes = _output_and_notes(invoke_json("linear", *args, "--v", "1,2;3,4"))
    np.testing.assert_allclose(output, expected, rtol=1e-14)
    assert notes == []


def test_random_features_of_a_large_query(invoke_json):
    doc = invoke_json(
        "linear", "--feature-map", "random", "--q", "40,40", "--k", "1,1;2,2", "--v", "1,2;3,4"
    )
    output, notes = _output_and_notes(doc)
    assert np.isfinite(output).all() and "overflow" not in notes
    assert 1.0 < output[0, 0] < 3.0 and output[0, 1] - output[0, 0] == pytest.approx(1.0)


def test_the_overflow_note_only_when_a_number_overflowed(invoke_json):
    overflowing = invoke_json("scaled", "--q", "1e308,1e308", "--k", "1e308,1e308", "--v", "1,2")
    assert "overflow" in _output_and_notes(overflowing)[1]  # Q Kᵀ is 2e616: it did overflow
    # The steps' texts speak of every row ("each row sums to 1"): the note says for which.
    note = next(note for note in overflowing["notes"] if note["key"] == "overflow")
    assert (
        "what a step's text says of every row holds only for the rows that stayed finite"
        in (note["text"])
    )


def test_a_temperature_below_the_smallest_normal_float_gives_the_hardmax(invoke, tmp_path):
    lesson = tmp_path / "tiny.toml"
    lesson.write_text(
        'lesson = "variance"\n[[examples]]\nname = "tiny"\n'
        "options = { temperatures = [1e-320, 1.0], samples = 100 }\n"
    )
    result = invoke("variance", "--lesson", str(lesson), "--format", "json")
    assert result.exit_code == 0, result.output
    steps = {step["key"]: step for step in json.loads(result.stdout)["steps"]}
    weights = unwrap(steps["temperature"]["value"])
    assert weights[0] == [1.0, 0.0, 0.0]  # softmax(s / T) as T → 0: all on the largest logit
    assert np.isfinite(np.array(weights, dtype=float)).all()


def _magnitudes(rng: np.random.Generator, shape: tuple[int, ...], top: float) -> np.ndarray:
    """Entries of random sign and magnitude 10^u, u uniform in [-300, log10(top)]."""
    exponents = rng.uniform(-300, np.log10(top), size=shape)
    return rng.choice([-1.0, 1.0], size=shape) * 10.0**exponents


@pytest.mark.parametrize("seed", range(40))
def test_no_nan_from_huge_or_tiny_inputs_where_the_answer_is_finite(seed):
    """Seeded draws of Q, K, V with entries from 1e-300 up to 1e300 (1e150 where the scores
    Q Kᵀ must stay in float64's range, and for random features |k|²): every normaliser,
    every feature map, causal and self-attention give no NaN, and no overflow note."""
    rng = np.random.default_rng(seed)
    m, n, d = (int(x) for x in rng.integers(1, 5, size=3))
    v = _magnitudes(rng, (n, 2), 1e300)
    inside = 1e150  # |q|·|k|·d stays below 1.8e308
    q, k = _magnitudes(rng, (m, d), inside), _magnitudes(rng, (n, d), inside)
    outputs = {}
    for normaliser in normalise.NORMALISERS:
        outputs[f"scaled {normaliser}"] = lesson_function("scaled")(q, k, v, normalise=normaliser)
    huge_q, huge_k = _magnitudes(rng, (m, d), 1e300), _magnitudes(rng, (n, d), 1e300)
    outputs["linear elu"] = lesson_function("linear")(huge_q, huge_k, v)
    v_m = _magnitudes(rng, (m, 2), 1e300)
    outputs["linear elu causal"] = lesson_function("linear")(huge_q, huge_q, v_m, causal=True)
    outputs["linear random"] = lesson_function("linear")(q, k, v, feature_map="random")
    x = _magnitudes(rng, (n, d), inside)
    outputs["causal"] = lesson_function("causal")(x, x, v)
    outputs["selfattn"] = lesson_function("selfattn")(x=_magnitudes(rng, (n, 4), 1e3))
    for name, walkthrough in outputs.items():
        output = np.asarray(walkthrough.output, dtype=float)
        assert not np.isnan(output).any(), (name, q, k, v)
        assert "overflow" not in [note.key for note in walkthrough.notes], name


def test_every_normaliser_is_finite_on_extreme_rows():
    s = np.array([[1e308, -1e308, 0.0], [-1000.0, -1000.0, -1000.0], [1e-300, 0.0, -1e-300]])
    for name, rows in normalise.NORMALISERS.items():
        weights = rows(s)
        assert np.isfinite(weights).all(), name
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-14, err_msg=name)
    np.testing.assert_allclose(normalise.sigmoid_normalise(s)[1], [1 / 3] * 3, rtol=1e-15)


def test_range_safe_linear_attention_agrees_with_torch(torch):
    q = np.array([[-750.0, -750.0], [1e300, -1e300]])
    k = np.array([[1.0, 1.0], [2.0, 2.0], [-3.0, 1e200]])
    v = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    expected = linear.linear_attention(q, k, v).output
    assert np.isfinite(expected).all()
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    np.testing.assert_allclose(linear.linear_attention(tq, tk, tv).output.numpy(), expected)
    np.testing.assert_allclose(
        linear.causal_linear_attention(tq[:2], tk[:2], tv[:2]).output.numpy(),
        linear.causal_linear_attention(q[:2], k[:2], v[:2]).output,
    )
