"""attn posenc: the encoding against a loop over the paper's formula, its shift and similarity
properties, numpy against torch, every format and every user error."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_cli.mechanisms import posenc as mech
from tests.conftest import assert_user_error, data, examples, unwrap
from tests.lesson_runs import Runs

# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--positions", "7", "--d-model", "6", "--offset", "2"),
    sized=lambda s: {"positions": s, "d_model": s + s % 2},  # d_model even
    large=("--positions", "100", "--d-model", "128"),
    variants=(
        (),
        ("--layout", "split"),
        ("--positions", "8", "--d-model", "512"),
        ("--positions", "4", "--d-model", "2"),  # one pair: the one-pair texts
    ),
    sweeps=tuple(
        {"positions": p, "d_model": d, "base": b}
        for p in (1, 2, 8, 40)
        for d in (2, 4, 6, 8, 16, 64)
        for b in (10000.0, 16.0, 2.0)
    ),
    figure=(("posenc",), ("sin0", "cos3", "position", "dimension")),
)


def formula_pe(positions: int, d_model: int, base: float, layout: str) -> np.ndarray:
    """PE written out from the paper, one entry at a time (no shared code with the lesson)."""
    pe = np.zeros((positions, d_model))
    half = d_model // 2
    for pos in range(positions):
        for i in range(half):
            angle = pos / base ** (2 * i / d_model)
            sin_col, cos_col = (i, half + i) if layout == "split" else (2 * i, 2 * i + 1)
            pe[pos, sin_col] = math.sin(angle)
            pe[pos, cos_col] = math.cos(angle)
    return pe


def numpy_parts(positions: int, d_model: int, base: float = 10000.0):
    pos = np.arange(positions, dtype=np.float64)
    omega = mech.frequencies(np.arange(d_model // 2, dtype=np.float64), d_model, base)
    return pos, omega


@pytest.mark.parametrize("layout", ["interleaved", "split"])
@pytest.mark.parametrize(("positions", "d_model", "base"), [(8, 8, 10000.0), (13, 10, 100.0)])
def test_encoding_matches_the_formula_loop(positions, d_model, base, layout):
    pos, omega = numpy_parts(positions, d_model, base)
    assert np.allclose(
        mech.encoding(pos, omega, layout), formula_pe(positions, d_model, base, layout), atol=1e-12
    )


def test_cli_output_matches_the_formula_loop(invoke_json):
    doc = invoke_json(
        "posenc", "--positions", "11", "--d-model", "6", "--base", "50", "--layout", "split"
    )
    assert np.allclose(data(doc["output"]), formula_pe(11, 6, 50.0, "split"), atol=1e-12)
    assert doc["example"] is None
    assert [step["key"] for step in doc["steps"]] == ["frequencies", "pe", "shift", "similarity"]
    assert doc["options"] == {
        "positions": 11,
        "d_model": 6,
        "base": 50.0,
        "offset": 3,
        "layout": "split",
    }


def test_frequencies_table_and_binary_counter(invoke, invoke_json):
    doc = invoke_json("posenc", "--example", "binary-counter")
    rows = unwrap(doc["steps"][0]["value"])
    d_model, base = 8, 16.0
    omega = [base ** (-2 * i / d_model) for i in range(4)]
    # The columns a pair sits in are whole numbers (issue 57: they once printed as 0.000).
    assert [(row["pair"], row["sin_col"], row["cos_col"]) for row in rows] == [
        (0, 0, 1),
        (1, 2, 3),
        (2, 4, 5),
        (3, 6, 7),
    ]
    column = {key: [row[key] for row in rows] for key in rows[0]}
    assert np.allclose(column["w"], omega, rtol=1e-14)
    assert np.allclose(column["wavelength"], [2 * math.pi / w for w in omega], rtol=1e-14)
    # Base 16 at d_model 8: each pair exactly twice as slow, like the bits of a binary counter.
    assert np.allclose(column["slowdown"], [1, 2, 4, 8], rtol=1e-14)
    assert np.allclose(
        column["turns"], [11 * w / (2 * math.pi) for w in omega], rtol=1e-14
    )  # 12 positions
    assert "wᵢ rad/pos" in invoke("posenc", "--example", "binary-counter").stdout  # the title's
    assert "2 times" in doc["steps"][0]["explanation"]


def test_split_columns_are_the_interleaved_ones_reordered():
    pos, omega = numpy_parts(9, 12)
    order = [*range(0, 12, 2), *range(1, 12, 2)]  # sines first, then cosines
    interleaved = mech.encoding(pos, omega, "interleaved")
    assert np.array_equal(mech.encoding(pos, omega, "split"), interleaved[:, order])
    rotation = mech.rotation(5, omega, "interleaved")
    assert np.array_equal(mech.rotation(5, omega, "split"), rotation[np.ix_(order, order)])


@settings(max_examples=examples(40))
@given(
    positions=st.integers(1, 60),
    pairs=st.integers(1, 40),
    offset=st.integers(-50, 200),
    base=st.floats(2.0, 1e5),
    layout=st.sampled_from(["interleaved", "split"]),
)
def test_shift_is_a_fixed_rotation_to_rounding(positions, pairs, offset, base, layout):
    d_model = 2 * pairs
    pos, omega = numpy_parts(positions, d_model, base)
    m_k = mech.rotation(offset, omega, layout)
    error = mech.shift_error(
        mech.encoding(pos, omega, layout), mech.encoding(pos + offset, omega, layout), m_k
    )
    # Angles up to (60 + 200) rad: sin/cos rounding ~ 260 * 2.2e-16 per entry.
    assert error < 1e-12
    assert np.allclose(m_k @ m_k.T, np.eye(d_model), atol=1e-13)  # a rotation
    # M_a M_b = M_(a+b): moving a then b positions is moving a + b.
    assert np.allclose(
        mech.rotation(2, omega, layout) @ m_k, mech.rotation(offset + 2, omega, layout), atol=1e-12
    )


def test_rotation_blocks_are_the_angle_addition_formulas():
    omega = np.array([1.0, 0.1])
    m_3 = mech.rotation(3, omega, "interleaved")
    c, s = math.cos(3.0), math.sin(3.0)
    assert np.allclose(m_3[:2, :2], [[c, s], [-s, c]], atol=1e-15)
    assert np.allclose(m_3[:2, 2:], 0) and np.allclose(m_3[2:, :2], 0)


@settings(max_examples=examples(25))
@given(positions=st.integers(1, 40), pairs=st.integers(1, 30), base=st.floats(2.0, 1e5))
def test_similarity_depends_only_on_distance(positions, pairs, base):
    d_model = 2 * pairs
    pos, omega = numpy_parts(positions, d_model, base)
    pe = mech.encoding(pos, omega)
    gram = mech.similarity(pe)
    by_lag = mech.lag_similarity(pos, omega)
    lags = np.abs(np.subtract.outer(np.arange(positions), np.arange(positions)))
    expected = np.array([[sum(math.cos(w * lag) for w in omega) for lag in row] for row in lags])
    assert np.allclose(gram, expected, atol=1e-12)
    assert np.allclose(by_lag, expected[0], atol=1e-12)
    spread = mech.diagonal_spread(gram)
    brute = [np.ptp(gram[lags == lag]) for lag in range(positions)]
    assert np.allclose(spread, brute, atol=0) and spread.max() < 1e-12
    assert gram[0, 0] == pytest.approx(pairs)


@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_numpy_and_torch_mechanisms_agree(torch, layout):
    pos, omega = numpy_parts(17, 24, 500.0)
    t_pos, t_omega = torch.from_numpy(pos), torch.from_numpy(omega)
    t_omega_mech = mech.frequencies(torch.arange(12, dtype=torch.float64), 24, 500.0)
    assert np.allclose(t_omega_mech.numpy(), omega, rtol=1e-14)
    pe, t_pe = mech.encoding(pos, omega, layout), mech.encoding(t_pos, t_omega, layout)
    assert np.allclose(t_pe.numpy(), pe, atol=1e-12)
    assert np.allclose(
        mech.rotation(4, t_omega, layout).numpy(), mech.rotation(4, omega, layout), atol=1e-12
    )
    assert np.allclose(mech.similarity(t_pe).numpy(), mech.similarity(pe), atol=1e-12)
    assert np.allclose(
        mech.diagonal_spread(mech.similarity(t_pe)).numpy(),
        mech.diagonal_spread(mech.similarity(pe)),
        atol=1e-12,
    )


def test_cli_torch_backend_agrees_with_numpy(invoke_json, torch):
    args = ("posenc", "--positions", "9", "--d-model", "10", "--offset", "-2")
    numpy_doc, torch_doc = invoke_json(*args), invoke_json(*args, "--backend", "torch")
    assert torch_doc["backend"] == "torch"
    for numpy_step, torch_step in zip(numpy_doc["steps"], torch_doc["steps"], strict=True):
        numpy_value, torch_value = unwrap(numpy_step["value"]), unwrap(torch_step["value"])
        if numpy_step["kind"] == "records":  # a table of named columns
            numpy_value = [list(row.values()) for row in numpy_value]
            torch_value = [list(row.values()) for row in torch_value]
        assert np.allclose(numpy_value, torch_value, atol=1e-12)
    assert torch_doc["meta"]["shift_max_error"] < 1e-12
    assert torch_doc["meta"]["similarity_max_spread"] < 1e-12


def test_default_example_steps_and_parts(invoke_json):
    doc = invoke_json("posenc")
    assert doc["example"] == "small"
    shift, similarity = doc["steps"][2], doc["steps"][3]
    assert shift["title"].startswith("Shift by k = 3")
    (error,) = shift["parts"].values()
    assert error == doc["meta"]["shift_max_error"] < 1e-15
    assert "largest |PE(pos+k) − M_k PE(pos)| is" in shift["explanation"]
    by_lag, spread = (data(part) for part in similarity["parts"].values())
    assert np.allclose(np.ravel(by_lag), np.asarray(unwrap(similarity["value"]))[0], atol=1e-12)
    assert max(np.ravel(spread)) == doc["meta"]["similarity_max_spread"] < 1e-14


def test_float32_shift_error_is_float32_rounding(invoke_json):
    doc = invoke_json("posenc", "--dtype", "float32")
    assert doc["dtype"] == "float32"
    assert 0 < doc["meta"]["shift_max_error"] < 1e-5


def test_example_options_can_be_overridden_explicitly(invoke_json):
    doc = invoke_json("posenc", "--example", "paper", "--positions", "5")
    assert doc["example"] == "paper"
    assert np.shape(data(doc["output"])) == (5, 512)


def test_rich_output_small_and_large(invoke):
    small = invoke("posenc")
    assert small.exit_code == 0, small.output
    for text in ("Frequencies", "binary", "sin0", "cos3", "Shift by k = 3", "Similarity"):
        assert text in small.stdout
    assert "…" not in small.stdout.split("Step 2")[1].split("Step 3")[0]  # fits in 80 columns
    large = invoke("posenc", "--positions", "100", "--d-model", "128", "--time")
    assert large.exit_code == 0, large.output
    assert "every 3 row(s), every 2 column(s)" in large.stdout  # the block heatmap
    assert " ms ─" in large.stdout


def test_large_json_is_summarised_unless_full(invoke_json):
    doc = invoke_json("posenc", "--positions", "100", "--d-model", "128")
    assert doc["output"]["shape"] == [100, 128] and "summary" in doc["output"]
    full = invoke_json("posenc", "--positions", "100", "--d-model", "128", "--full")
    assert np.shape(data(full["output"])) == (100, 128)


def test_markdown_and_latex(invoke):
    markdown = invoke("posenc", "--format", "markdown", "--layout", "split")
    assert markdown.exit_code == 0
    assert "| | sin0 | sin1 | sin2 | sin3 | cos0 |" in markdown.stdout
    assert "Split layout" in markdown.stdout
    latex = invoke("posenc", "--format", "latex")
    assert latex.exit_code == 0
    assert "\\[ M_k = \\begin{bmatrix}" in latex.stdout
    assert "PE\\,PE^\\top" in latex.stdout


def test_list_examples(invoke):
    result = invoke("posenc", "--list-examples")
    assert result.exit_code == 0
    for name in ("small", "paper", "split", "binary-counter"):
        assert name in result.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--d-model", "7"), ("--d-model 7", "even", "--d-model 8")),
        (("--d-model", "0"), ("--d-model 0", "even")),
        (("--positions", "0"), ("--positions 0", "at least 1")),
        (("--base", "1"), ("--base 1", "greater than 1")),
        (("--base", "nan"), ("--base",)),
        (("--example", "nope"), ("no example 'nope'", "small")),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("posenc", *args), *fragments)


def test_a_bad_option_on_an_example_blames_the_option(invoke):
    result = invoke("posenc", "--example", "paper", "--d-model", "5")
    assert_user_error(result, "--d-model 5")
    assert "posenc.toml" not in result.stderr


def test_quiz_handout_without_a_terminal(invoke):
    result = invoke("posenc", "--quiz")
    assert result.exit_code == 0, result.output
    blanks, key = result.stdout.split("Answer key")
    assert "______" in blanks and "0.841" not in blanks
    assert "0.841" in key  # sin(1), in the answer key


def test_bad_layout_is_refused(invoke):
    result = invoke("posenc", "--layout", "diagonal")
    assert result.exit_code == 2 and result.stdout == ""


def test_lesson_file_with_a_bad_layout(invoke, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'lesson = "posenc"\n[[examples]]\nname = "mine"\n'
        'options = { positions = 4, d_model = 4, layout = "diagonal" }\n'
    )
    assert_user_error(
        invoke("posenc", "--lesson", str(path)),
        "example 'mine', options.layout: found \"diagonal\" (text)",
        'one of "interleaved", "split"',
    )


def test_lesson_file_of_ones_own(invoke_json, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'lesson = "posenc"\ntitle = "Mine"\n[steps.pe]\ntitle = "My PE ({n} rows)"\n'
        '[[examples]]\nname = "mine"\noptions = { positions = 3, d_model = 4, offset = 1 }\n'
    )
    doc = invoke_json("posenc", "--lesson", str(path))
    assert doc["example"] == "mine" and doc["steps"][1]["title"] == "My PE (3 rows)"
    assert np.allclose(data(doc["output"]), formula_pe(3, 4, 10000.0, "interleaved"), atol=1e-12)


def test_too_large_for_memory_is_refused_before_allocating(invoke, monkeypatch):
    monkeypatch.setattr("attn_cli.core.backend.available_host_bytes", lambda: 50 * 2**20)
    result = invoke("posenc", "--positions", "4000", "--d-model", "512")
    assert_user_error(result, "needs about", "MiB is free", "lower --positions or --d-model")
    assert invoke("posenc", "--positions", "40", "--d-model", "64").exit_code == 0


def test_json_is_one_document(invoke):
    result = invoke("posenc", "--format", "json", "--example", "split")
    doc = json.loads(result.stdout)
    assert doc["lesson"] == "posenc" and doc["inputs"] == {}
    assert doc["steps"][1]["col_labels"][:2] == ["sin0", "sin1"]
    assert doc["notes"] and "Split layout" in doc["notes"][0]["text"]


def similarity_notes(doc: dict) -> dict[str, dict]:
    step = next(step for step in doc["steps"] if step["key"] == "similarity")
    return {note["key"]: note for note in step.get("notes", [])}


@pytest.mark.parametrize(
    ("args", "low_at", "low", "high"),
    [((), 3, 1.9648895, 2.2666095), (("--positions", "8", "--d-model", "6"), 3, 1.0003073, 1.3292)],
)
def test_similarity_does_not_claim_it_falls_where_it_rises_again(
    invoke_json, args, low_at, low, high
):
    """Issue 22: "The value falls, with ripples, as positions move apart" was printed under a
    table where PE(0)·PE(6) = 3.784 beats the neighbours' 3.535 (2.922 vs 2.539 at d_model 6)."""
    doc = invoke_json("posenc", *args)
    assert "falls, with ripples" not in json.dumps(doc)
    notes = similarity_notes(doc)
    assert set(notes) == {"rises_again"}
    values = notes["rises_again"]["values"]
    assert (values["low_at"], values["high_at"]) == (low_at, low_at + 1)
    assert values["low"] == pytest.approx(low, abs=1e-4)
    assert values["high"] == pytest.approx(high, abs=1e-4)
    lag = np.asarray(unwrap(similarity_step_part(doc, "Σ cos")), dtype=float).reshape(-1)
    assert lag[6] > lag[1]  # the counter-example: distance 6 beats the neighbours


def similarity_step_part(doc: dict, prefix: str):
    step = next(step for step in doc["steps"] if step["key"] == "similarity")
    return next(value for label, value in step["parts"].items() if label.startswith(prefix))


def test_similarity_says_it_falls_where_it_falls_at_every_distance(invoke_json):
    doc = invoke_json("posenc", "--positions", "8", "--d-model", "512")
    notes = similarity_notes(doc)
    assert set(notes) == {"falls"}
    lag = np.asarray(unwrap(similarity_step_part(doc, "Σ cos")), dtype=float).reshape(-1)
    assert np.all(np.diff(lag) < 0)
    assert notes["falls"]["values"]["top"] == 256
    assert notes["falls"]["values"]["bottom"] == pytest.approx(lag[7])
    assert "falls at every step" in notes["falls"]["text"]


def test_one_position_makes_no_distance_note(invoke_json):
    assert similarity_notes(invoke_json("posenc", "--positions", "1")) == {}


def test_one_pair_is_not_followed_by_slower_pairs(invoke_json):
    """--d-model 2: a single pair (w₀ = 1, wavelength 2π). The frequencies step once said "each
    later pair is base^(2/d_model) = 1e+04 times slower ..., down to pair 0 at 6.283 positions
    per turn", and the encoding step "each pair's columns change more slowly ... than those of
    the pair before it", of pairs that do not exist."""
    doc = invoke_json("posenc", "--d-model", "2", "--positions", "4")
    steps = {step["key"]: step for step in doc["steps"]}
    (row,) = unwrap(steps["frequencies"]["value"])
    assert row["w"] == 1.0 and row["wavelength"] == pytest.approx(2 * math.pi, rel=1e-15)
    text = steps["frequencies"]["explanation"]
    assert "down to pair" not in text and "each later pair" not in text
    assert text.startswith("d_model = 2 gives a single sine/cosine pair: pair 0 turns")
    assert "6.283 positions" in text
    assert "the pair before it" not in steps["pe"]["explanation"]
    wide = invoke_json("posenc", "--d-model", "4", "--positions", "4")
    assert "down to pair 1" in wide["steps"][0]["explanation"]
