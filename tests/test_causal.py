"""attn causal: lecture values, properties, agreement with PyTorch, errors and formats."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attn_cli.core.backend_choice import get_backend
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import masks
from attn_cli.run.runner import RunRequest, compute
from tests.conftest import assert_user_error, data, examples, unwrap
from tests.lesson_runs import Batch, Runs

# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "5", "--dk", "3", "--seed", "3"),
    sized=lambda s: {"n": s, "dk": s},
    large=("--n", "101", "--dk", "2"),
    variants=(
        ("--n", "4"),
        ("--n", "4", "--dk", "2"),
        ("--n", "4", "--dk", "2", "--no-scale"),
        ("--x", "1,0;0,1;1,1", "--wq", "1,0;0,1"),
        ("--n", "4", "--fill", "zero"),
        ("--n", "4", "--dk", "2", "--fill", "zero"),
        ("--n", "4", "--conventions"),
        ("--n", "4", "--valid-len", "2"),
        ("--n", "4", "--dk", "2", "--valid-len", "1,2,3,4"),
        ("--n", "4", "--valid-len", "1,2,3,4"),
        ("--scores", "1,2;3,4", "--v", "1;2"),
        ("--scores", "1,2;3,4", "--v", "1;2", "--dropout", "0.5"),
        ("--scores", "1,2;3,4", "--v", "1;2", "--fill", "zero"),
        ("--n", "4", "--dk", "2", "--dropout", "0.5"),
        ("--n", "4", "--dropout", "0"),
        ("--n", "1", "--dropout", "0.5"),
    ),
    options=({"fill": "zero"}, {"scale": False}),
    # --conventions pads token 1, whose query (it sees only key 1) is always left with no key,
    # so its rows are never all free of NaN.
    never_made=frozenset({"no_nan_rows"}),
    figure=(("causal",), ("t1", "t2", "t3")),
    batch=Batch(lambda draw: {"q": draw(3, 2), "k": draw(3, 2), "v": draw(3, 2)}, ("q", "k", "v")),
)


BACKENDS = ("numpy", "torch")


def steps_of(doc: dict) -> dict[str, dict]:
    return {step["key"]: step for step in doc["steps"]}


def as_array(value: list) -> np.ndarray:
    """JSON matrix (with "-inf"/"nan" strings) back to floats."""
    return np.array(
        [[float(x) if isinstance(x, str) else x for x in row] for row in value], dtype=float
    )


def softmax_by_hand(row: list[float]) -> np.ndarray:
    exps = np.array([math.exp(x) for x in row])
    return exps / exps.sum()


def text(matrix: np.ndarray) -> str:
    """A matrix option as exact JSON (Python floats round-trip)."""
    return json.dumps(np.asarray(matrix).tolist())


def run_causal(backend: str = "numpy", **inputs: np.ndarray):
    request = RunRequest(
        lesson="causal", inputs={k: text(v) for k, v in inputs.items()}, backend=backend
    )
    return compute(request)


# --- lecture examples, computed independently ------------------------------------------


def test_three_tokens_weights_match_hand_softmax(invoke_json):
    doc = invoke_json("causal")
    assert doc["example"] == "three-tokens"
    assert [s["key"] for s in doc["steps"]] == ["scores", "mask", "masked", "weights"]
    steps = steps_of(doc)
    weights = as_array(unwrap(steps["weights"]["value"]))
    # Row 1 sees only itself; row 2 sees tokens 1-2; row 3 sees all (scores 2.1 … 2.5 of the slide).
    expected = np.zeros((3, 3))
    expected[0, 0] = 1.0
    expected[1, :2] = [1 / (1 + math.exp(2.3)), math.exp(2.3) / (1 + math.exp(2.3))]
    expected[2] = softmax_by_hand([1.4, 0.7, 2.5])
    np.testing.assert_allclose(weights, expected, rtol=0, atol=1e-15)
    assert unwrap(steps["mask"]["value"]) == [[0.0, "-inf", "-inf"], [0.0, 0.0, "-inf"], [0.0] * 3]
    assert unwrap(steps["masked"]["value"])[1] == [0.8, 3.1, "-inf"]
    assert data(doc["output"]) == unwrap(
        unwrap(steps["weights"]["value"])
    )  # no values: the weights are the result


def test_signals_weights_and_the_slide_record(invoke_json):
    doc = invoke_json("causal", "--example", "signals")
    weights = as_array(unwrap(steps_of(doc)["weights"]["value"]))
    np.testing.assert_allclose(weights[1, :2], softmax_by_hand([0.3, 0.9]), atol=1e-15)
    np.testing.assert_allclose(weights[2], softmax_by_hand([0.2, 0.7, 0.4]), atol=1e-15)
    # The slide prints 0.24 / 0.76 for row 2; the exact values are 0.354 / 0.646.
    assert abs(weights[1, 0] - 0.24) > 0.1


def test_identity_causal_example_projects_scales_and_outputs(invoke_json):
    doc = invoke_json("causal", "--example", "identity-causal")
    steps = steps_of(doc)
    assert list(steps) == ["Q", "K", "V", "scores", "scaled", "mask", "masked", "weights", "output"]
    assert data(doc["inputs"]["W_Q"]) == [[1.0, 0.0], [0.0, 1.0]]  # identity listed as used
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    r = 1 / math.sqrt(2)
    # Row 2 sees x1 (score 0) and x2 (score 1/√2); row 3 sees scores (1, 1, 2)/√2.
    row2 = softmax_by_hand([0.0, r])
    row3 = softmax_by_hand([r, r, 2 * r])
    expected = np.vstack([x[0], row2 @ x[:2], row3 @ x])
    np.testing.assert_allclose(as_array(data(doc["output"])), expected, atol=1e-15)
    assert steps["weights"]["row_labels"] == ["x1", "x2", "x3"]


def test_lesson_records_the_printed_slide_values_as_text():
    from attn_cli.lessonfiles.loader import load_bundled

    lesson = load_bundled("causal")
    printed = {example.name: example.printed for example in lesson.examples}
    assert printed["three-tokens"]["weights"] == "1.0,0,0; 0.09,0.91,0; 0.21,0.10,0.69"
    assert printed["signals"]["weights"] == "1.0,0,0; 0.24,0.76,0; 0.15,0.49,0.36"


def test_random_grid_is_square_scores_and_reproducible(invoke_json):
    first = invoke_json("causal", "--n", "5", "--seed", "7")
    again = invoke_json("causal", "--n", "5", "--seed", "7")
    assert first == again
    assert np.shape(data(first["inputs"]["S"])) == (5, 5)
    assert data(first["inputs"]["S"]) == np.random.default_rng(7).standard_normal((5, 5)).tolist()


# --- properties --------------------------------------------------------------------------


@settings(max_examples=examples(30))
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 7)).map(lambda t: (t[0], t[0])),
        elements=st.floats(-30, 30),
    )
)
def test_masked_softmax_rows_sum_to_one_and_future_is_exactly_zero(scores):
    weights = mech.softmax(scores + masks.causal_additive(scores))
    n = scores.shape[0]
    assert np.all(weights[np.triu_indices(n, k=1)] == 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)
    assert weights[0, 0] == 1.0  # the first token can only attend to itself


@pytest.mark.parametrize("backend", BACKENDS)
def test_properties_on_random_inputs_both_backends(backend, torch):
    rng = np.random.default_rng(3)
    for n, d in ((1, 1), (4, 3), (9, 5)):
        q, k, v = (rng.standard_normal((n, d)) for _ in range(3))
        walk = run_causal(backend, Q=q, K=k, V=v)
        weights = walk.step("weights")
        assert np.all(weights[np.triu_indices(n, k=1)] == 0.0)
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)
        mask = walk.step("mask")
        assert np.all(np.isneginf(mask[np.triu_indices(n, k=1)]))
        assert np.all(mask[np.tril_indices(n)] == 0.0)


def test_mask_conventions_are_negations_of_each_other():
    s = np.zeros((4, 4))
    allowed, blocked = masks.causal_allowed(s), masks.causal_blocked(s)
    assert allowed.dtype == bool
    np.testing.assert_array_equal(allowed, np.tril(np.ones((4, 4), dtype=bool)))
    np.testing.assert_array_equal(blocked, ~allowed)
    np.testing.assert_array_equal(masks.negate(allowed), blocked)
    np.testing.assert_array_equal(masks.additive(allowed, s), masks.causal_additive(s))


# --- agreement with PyTorch --------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_agrees_with_torch_sdpa_is_causal(backend, torch):
    import torch.nn.functional as F

    rng = np.random.default_rng(11)
    for n, d_k, d_v in ((1, 2, 3), (5, 4, 4), (12, 8, 3), (7, 1, 6)):
        q, k = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k))
        v = rng.standard_normal((n, d_v))
        walk = run_causal(backend, Q=q, K=k, V=v)
        assert walk.backend == backend and walk.dtype == "float64"
        expected = F.scaled_dot_product_attention(
            *(torch.from_numpy(a)[None] for a in (q, k, v)), is_causal=True
        )[0].numpy()
        np.testing.assert_allclose(walk.output, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_projection_path_agrees_with_torch_sdpa(backend, torch):
    import torch.nn.functional as F

    rng = np.random.default_rng(5)
    n, d_model, d_k, d_v = 6, 5, 3, 4
    x = rng.standard_normal((n, d_model))
    wq, wk = rng.standard_normal((d_model, d_k)), rng.standard_normal((d_model, d_k))
    wv = rng.standard_normal((d_model, d_v))
    walk = run_causal(backend, X=x, W_Q=wq, W_K=wk, W_V=wv)
    q, k, v = (torch.from_numpy(x @ w)[None] for w in (wq, wk, wv))
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)[0].numpy()
    np.testing.assert_allclose(walk.output, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mask_functions_work_on_the_backend_arrays(backend, torch):
    array = get_backend(backend).asarray(np.arange(9.0).reshape(3, 3))
    mask = masks.causal_additive(array)
    assert type(mask) is type(array)
    np.testing.assert_array_equal(
        np.asarray(mask), [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]]
    )


# --- --fill zero ---------------------------------------------------------------------------


def test_fill_zero_shows_the_leak_row_by_row(invoke_json):
    doc = invoke_json("causal", "--fill", "zero")
    steps = steps_of(doc)
    assert list(steps) == ["scores", "future", "masked", "weights", "leak"]
    s = np.array([[2.1, 1.5, 0.4], [0.8, 3.1, 1.2], [1.4, 0.7, 2.5]])
    future = np.triu(np.ones((3, 3), dtype=bool), k=1)
    assert unwrap(steps["future"]["value"]) == future.tolist()
    buggy = np.where(future, 0.0, s)
    assert unwrap(steps["masked"]["value"]) == buggy.tolist()
    leaky = np.vstack([softmax_by_hand(row) for row in buggy])
    np.testing.assert_allclose(as_array(unwrap(steps["weights"]["value"])), leaky, atol=1e-15)
    leak = as_array(unwrap(steps["leak"]["value"]))
    np.testing.assert_allclose(leak[:, 0], (leaky * future).sum(axis=1), atol=1e-15)
    assert np.all(leak[:, 1] == 0.0)  # the −∞ fill: exactly nothing leaks
    assert leak[0, 0] > 0.19 and leak[2, 0] == 0.0  # the last token has no future
    assert steps["leak"]["col_labels"] == ["future weight, fill 0", "future weight, fill −∞"]


def test_fill_zero_with_values_reports_the_output_change(invoke_json):
    s, v = "[[0.5,1.2,0.8],[0.3,0.9,1.1],[0.2,0.7,0.4]]", "[[1,0],[0,1],[1,1]]"
    doc = invoke_json("causal", "--scores", s, "--v", v, "--fill", "zero")
    steps = steps_of(doc)
    assert "output" in steps
    scores, values = np.array(json.loads(s)), np.array(json.loads(v), dtype=float)
    future = np.triu(np.ones((3, 3), dtype=bool), k=1)
    leaky = np.vstack([softmax_by_hand(row) for row in np.where(future, 0.0, scores)])
    right = np.vstack(
        [np.r_[softmax_by_hand(row[: i + 1]), np.zeros(2 - i)] for i, row in enumerate(scores)]
    )
    change = np.abs(leaky @ values - right @ values).max(axis=1)
    np.testing.assert_allclose(as_array(unwrap(steps["leak"]["value"]))[:, 2], change, atol=1e-15)
    np.testing.assert_allclose(as_array(data(doc["output"])), leaky @ values, atol=1e-15)


def test_fill_zero_texts_hold_where_exp_underflows(invoke_json):
    """float16, row t1 = [20, (0)]: exp(0 − 20) underflows, so t1's future weight is exactly 0.
    The step once said "every future key holds a share exp(0) / row sum > 0" (and was titled
    "future keys keep weight"), and the output step "Each row now mixes in values of tokens that
    come after it", false of the last row on every input."""
    doc = invoke_json(
        "causal", "--scores", "20,0;1,1", "--v", "1;2", "--fill", "zero", "--dtype", "float16"
    )
    steps = steps_of(doc)
    assert unwrap(steps["weights"]["value"]) == [[1.0, 0.0], [0.5, 0.5]]
    assert [row[0] for row in unwrap(steps["leak"]["value"])] == [0.0, 0.0]
    text = steps["weights"]["explanation"]
    assert "> 0" not in text and "keep weight" not in steps["weights"]["title"]
    assert "exactly 0 only where it underflows" in text
    assert steps["output"]["explanation"].startswith("Every row but the last (no token comes")


def test_finite_fill_text_names_its_condition(invoke_json):
    """Visible scores of −5e9 lie below the −1e9 fill: row t2 moves all its weight to the pad
    key t1. The step once said "Rows with a visible key are unchanged" beside that row."""
    doc = invoke_json("causal", "--scores", "-5e9,-5e9;-5e9,-5e9", "--conventions")
    steps = steps_of(doc)
    assert unwrap(steps["padded_weights"]["value"])[1] == [0.0, 1.0]
    assert unwrap(steps["fix_finite"]["value"])[1] == [1.0, 0.0]
    text = steps["fix_finite"]["explanation"]
    assert "Rows with a visible key are unchanged (" not in text
    assert "as long as its largest visible score lies well above −1e9" in text


# --- --conventions ---------------------------------------------------------------------------


def test_conventions_show_three_spellings_and_the_nan_row(invoke_json):
    doc = invoke_json("causal", "--conventions")
    steps = steps_of(doc)
    assert list(steps)[4:] == [
        "sdpa_mask",
        "mha_mask",
        "agree",
        "swapped",
        "padding_mask",
        "padded_weights",
        "fix_keep_self",
        "fix_zero_row",
        "fix_finite",
    ]
    lower = np.tril(np.ones((3, 3), dtype=bool))
    assert unwrap(steps["sdpa_mask"]["value"]) == lower.tolist()
    assert unwrap(steps["mha_mask"]["value"]) == (~lower).tolist()
    assert [row["max_abs_diff"] for row in unwrap(steps["agree"]["value"])] == [0.0, 0.0, 0.0]
    assert unwrap(steps["swapped"]["value"])[2] == ["nan"] * 3  # the last token sees no future key
    assert unwrap(steps["padding_mask"]["value"])[0] == ["-inf"] * 3
    assert unwrap(steps["padding_mask"]["parts"]["key_padding_mask (True = pad)"]) == [
        [True, False, False]
    ]
    assert unwrap(steps["padded_weights"]["value"])[0] == ["nan"] * 3
    assert [n["text"] for n in steps["padded_weights"]["notes"]] == ["Rows that are NaN: t1."]
    # Row 2 loses the pad key and attends to itself only; row 3 splits between tokens 2 and 3.
    assert unwrap(steps["padded_weights"]["value"])[1] == [0.0, 1.0, 0.0]
    np.testing.assert_allclose(
        as_array(unwrap(steps["padded_weights"]["value"]))[2, 1:], softmax_by_hand([0.7, 2.5])
    )
    assert unwrap(steps["fix_keep_self"]["value"])[0] == [1.0, 0.0, 0.0]
    assert unwrap(steps["fix_zero_row"]["value"])[0] == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(unwrap(steps["fix_finite"]["value"])[0], [1 / 3] * 3, atol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_finite_fill_overflows_to_nan_in_float16(backend, torch, invoke_json):
    doc = invoke_json("causal", "--conventions", "--backend", backend, "--dtype", "float16")
    assert unwrap(steps_of(doc)["fix_finite"]["value"])[0] == ["nan"] * 3


def test_pytorch_behaviour_with_a_row_that_sees_no_key(torch, invoke_json):
    """Pins the lesson's claims about torch: SDPA zeroes the row; softmax and MHA weights NaN."""
    import torch.nn.functional as F

    doc = invoke_json(
        "causal", "--q", "[[1,0],[0,1],[1,1]]", "--k", "[[1,1],[0,1],[1,0]]", "--conventions"
    )
    steps = steps_of(doc)
    q = torch.tensor([[1.0, 0], [0, 1], [1, 1]], dtype=torch.float64)
    k = torch.tensor([[1.0, 1], [0, 1], [1, 0]], dtype=torch.float64)
    v = torch.eye(3, dtype=torch.float64)  # output = the weights themselves
    allowed = torch.tensor(
        np.isfinite(as_array(unwrap(steps["padding_mask"]["value"])))
    )  # True = may attend
    sdpa = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=allowed)[0]
    np.testing.assert_allclose(sdpa.numpy(), unwrap(steps["fix_zero_row"]["value"]), atol=1e-10)
    logits = q @ k.T / math.sqrt(2) + torch.tensor(as_array(unwrap(steps["padding_mask"]["value"])))
    assert torch.isnan(torch.softmax(logits, dim=-1)[0]).all()
    mha = torch.nn.MultiheadAttention(2, 1, bias=False, batch_first=True, dtype=torch.float64)
    _, weights = mha(q[None], k[None], k[None], attn_mask=~allowed)
    assert torch.isnan(weights[0, 0]).all()


# --- errors, formats, options ---------------------------------------------------------------

SQUARE = "1,0;0,1"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--scores", "1,2;3,4;5,6"), ("--scores is 3 × 2", "square")),
        (("--scores", "1,x"), ("--scores", "'x'", "not a number")),
        (("--scores", "[[1,NaN],[0,1]]"), ("--scores has nan",)),
        (("--scores", "1,2;3"), ("--scores", "row 2 has 1 entries")),
        (("--scores", "@/nonexistent/s.npy"), ("not found",)),
        (("--q", SQUARE), ("--q needs --k",)),
        (("--k", SQUARE), ("--k needs --q",)),
        (("--q", SQUARE, "--k", "1,1"), ("Q has 2 rows but K has 1",)),
        (("--q", SQUARE, "--k", "1,1,1;2,2,2"), ("Q has 2 columns but K has 3", "d_k")),
        (
            ("--q", SQUARE, "--k", SQUARE, "--v", "1,2"),
            ("K has 2 rows but V has 1", "one value per key"),
        ),
        (("--scores", SQUARE, "--v", "1,2"), ("the scores have 2 rows but V has 1",)),
        (("--scores", SQUARE, "--q", "1,1", "--k", "1,1"), ("give the scores one way",)),
        (("--x", SQUARE, "--scores", SQUARE), ("give the scores one way",)),
        (("--wq", SQUARE), ("--wq needs --x",)),
        (("--v", SQUARE), ("--v alone gives no scores",)),
        (("--x", SQUARE, "--v", SQUARE), ("--v does not go with --x",)),
        (("--x", SQUARE, "--wk", "1,0,0;0,1,0;0,0,1"), ("--wk has 3 rows but --x has 2 columns",)),
        (("--x", SQUARE, "--wq", "1,0,0;0,1,0"), ("--wk was not given", "2 × 2 identity")),
        (
            ("--x", SQUARE, "--wq", "1,0,0;0,1,0", "--wk", SQUARE),
            ("W_Q has 3 columns but W_K has 2",),
        ),
        (("--fill", "zero", "--conventions"), ("leave out --fill zero",)),
        (("--scores", "3", "--fill", "zero"), ("one token has none", "2 tokens or more")),
        (("--n", "1", "--fill", "zero"), ("one token has none", "2 tokens or more")),
        (("--scores", SQUARE, "--n", "3"), ("--scores is 2 × 2", "draw S 3 × 3: give --n 2")),
        (("--example", "nope"), ("no example 'nope'", "three-tokens")),
        (("--tokens", "a,b"), ("--tokens", "gives 2 names but there are 3 rows")),
        (("--n", "2000000"), ("needs about", "choose smaller sizes")),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("causal", *args), *fragments)


def test_cuda_request_without_cuda_is_a_user_error(invoke, torch, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert_user_error(invoke("causal", "--backend", "torch", "--device", "cuda"), "CUDA")


def test_json_encodes_minus_infinity_as_a_string(invoke):
    result = invoke("causal", "--format", "json")
    assert result.exit_code == 0
    assert '"-inf"' in result.stdout and "-Infinity" not in result.stdout
    json.loads(result.stdout)


def test_rich_output(invoke):
    result = invoke("causal")
    assert result.exit_code == 0, result.output
    out = result.stdout
    for fragment in ("Causal mask  M", "−∞", "Masked scores  S + M", "three-tokens"):
        assert fragment in out
    assert "3 of the 3 weights above the diagonal are exactly 0" in out


def test_rich_output_of_conventions_shows_booleans_and_nan(invoke):
    out = invoke("causal", "--conventions").stdout
    assert "True" in out and "False" in out and "nan" in out
    assert "sdpa(…, attn_mask=A)" in out


def test_markdown_output(invoke):
    result = invoke("causal", "--format", "markdown")
    assert result.exit_code == 0
    assert "| **t1** | 0 | -inf | -inf |" in result.stdout
    assert result.stdout.startswith("## Causal attention")


def test_latex_output(invoke):
    result = invoke("causal", "--format", "latex", "--fill", "zero")
    assert result.exit_code == 0
    assert "\\begin{bmatrix}" in result.stdout
    out = invoke("causal", "--format", "latex").stdout
    assert "M = \\begin{bmatrix} 0 & -\\infty & -\\infty" in out


def test_list_examples(invoke):
    result = invoke("causal", "--list-examples")
    assert result.exit_code == 0
    for name in ("three-tokens (default)", "signals", "identity-causal"):
        assert name in result.stdout


def test_time_and_random_qkv(invoke_json):
    doc = invoke_json("causal", "--n", "6", "--dk", "4", "--time", "--seed", "2")
    assert [s["key"] for s in doc["steps"]] == [
        "scores",
        "scaled",
        "mask",
        "masked",
        "weights",
        "output",
    ]
    assert all("seconds" in step for step in doc["steps"])


def test_no_scale_flag(invoke_json):
    doc = invoke_json("causal", "--q", "[[2,0],[0,2]]", "--k", "[[1,0],[0,1]]", "--no-scale")
    assert "scaled" not in steps_of(doc)
    assert as_array(unwrap(steps_of(doc)["masked"]["value"]))[1, 1] == 2.0


def test_tokens_name_rows_and_columns(invoke_json):
    doc = invoke_json("causal", "--tokens", "the,cat,sat")
    weights = steps_of(doc)["weights"]
    assert weights["row_labels"] == weights["col_labels"] == ["the", "cat", "sat"]


def _note_texts(doc: dict) -> list[str]:
    return [note["text"] for note in doc["notes"]]


def test_a_slide_remark_only_on_the_lectures_examples(invoke_json):
    # Issue 22 (4): `attn causal --scores "1,5;2,-3"` said "(the slides' examples have d_k = 1)".
    own = invoke_json("causal", "--scores", "1,5;2,-3")
    assert _note_texts(own) == ["The scores are used as given: no scaling by √d_k."]
    assert not any("slide" in text for text in _note_texts(own))
    weights = as_array(data(steps_of(own)["weights"]["value"]))
    np.testing.assert_allclose(weights[1], softmax_by_hand([2, -3]), rtol=1e-14)  # unscaled
    for example in ("three-tokens", "signals"):
        doc = invoke_json("causal", "--example", example)
        assert _note_texts(doc) == [
            "The scores are used as given, with no scaling by √d_k, as the slide does."
        ]


def test_causal_texts_name_their_sources(invoke):
    # Issue 22 (9): "the textbooks'" and "the from-scratch book" name no book a student knows.
    shown = " ".join(invoke("causal", "--valid-len", "2", "--dropout", "0.5").stdout.split())
    assert "textbooks'" not in shown and "from-scratch book" not in shown
    assert "Dive into Deep Learning" in shown and "Build a Large Language Model" in shown


def test_every_row_sums_to_one_is_a_claim_on_the_drift():
    from attn_cli.course.causal.build import rows_sum_to_one

    class Fake:
        dtype = "float64"

        @staticmethod
        def step(key):
            return np.eye(3)

    assert rows_sum_to_one(Fake(), {"drift": 2.2e-16})
    assert not rows_sum_to_one(Fake(), {"drift": float("nan")})  # a NaN row sums to nothing
    assert not rows_sum_to_one(Fake(), {"drift": 0.5}) and not rows_sum_to_one(Fake(), {})


def test_the_masked_scores_are_named_as_the_lecture_writes_them(invoke_json):
    """Issue 57: scores from Q and K are scaled before the mask, and the steps say S / √d_k + M
    (lecture 4: softmax(QKᵀ/√d_k + M)); scores given as S are masked as S + M."""

    def titles(*args: str) -> dict[str, str]:
        return {step["key"]: step["title"] for step in invoke_json("causal", *args)["steps"]}

    scaled = titles("--n", "3", "--dk", "2")
    assert scaled["masked"] == "Masked scores  S / √d_k + M"
    assert scaled["weights"] == "Weights  A = softmax(rows of S / √d_k + M)"
    padded = titles("--n", "3", "--dk", "2", "--valid-len", "2")
    assert padded["masked"] == "Masked scores  S / √d_k + M + P"
    unscaled = titles("--n", "3", "--dk", "2", "--no-scale")
    assert unscaled["masked"] == "Masked scores  S + M"
    given = titles()
    assert given["masked"] == "Masked scores  S + M"
