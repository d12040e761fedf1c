"""attn backward: every gradient against torch.autograd, the claims, the options and the errors."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attn_cli
from attn_cli.mechanisms import backward as grad
from tests.conftest import assert_user_error, data, examples
from tests.lesson_runs import Batch, Runs

SMALL = ("--n", "3", "--dk", "2")
# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "5", "--m", "3", "--dk", "4", "--dv", "2", "--seed", "3"),
    sized=lambda s: {"n": s, "dk": s},
    large=("--n", "120", "--dk", "4"),
    variants=(
        SMALL,
        (*SMALL, "--causal"),
        (*SMALL, "--no-scale"),
        ("--n", "8", "--dk", "2"),  # more keys than the Jacobian is shown for
        ("--vanishing",),
        ("--x", "1,0;0,1;1,1", "--wq", "1,0;0,1", "--causal"),
        ("--x", "1,0,2;0,1,1", "--wv", "1;2;3", "--no-scale"),
        ("--n", "5", "--dk", "3", "--causal", "--block", "2"),
        (
            "--block",
            "1",
        ),
    ),
    options=({"scale": False}, {"causal": True}),
    batch=Batch(
        lambda draw: {"q": draw(3, 2), "k": draw(3, 2), "v": draw(3, 2), "do": draw(3, 2)},
        ("q", "k", "v", "do"),
    ),
)

TIGHT = 1e-12  # float64 against autograd: a few roundings of sums of a few terms


def autograd(q, k, v, d_out, *, use_scale=True, causal=False):
    """dQ, dK, dV of scaled_dot_product_attention for the upstream gradient, by torch.autograd."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    tq, tk, tv = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (q, k, v))
    scale = None if use_scale else 1.0
    out = scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=scale)
    out.backward(torch.tensor(d_out, dtype=torch.float64))
    return tuple(t.grad.numpy() for t in (tq, tk, tv))


def steps(walkthrough) -> dict[str, np.ndarray]:
    return {step.key: np.asarray(step.value) for step in walkthrough.steps}


# --- the numbers ----------------------------------------------------------------------------


def test_the_lecture_example_by_hand():
    """The default example, dO all ones: the numbers a student derives on paper."""
    walk = attn_cli.backward()
    s = steps(walk)
    a = np.exp(np.array([[1, 2], [1, 0]]) / math.sqrt(2))
    a /= a.sum(axis=1, keepdims=True)  # A = softmax(S / √2)
    v = np.array([[0.1, 0.2], [0.3, 0.4]])
    np.testing.assert_allclose(s["d_v"], a.T @ np.ones((2, 2)), rtol=0, atol=1e-15)
    np.testing.assert_allclose(s["d_weights"], np.ones((2, 2)) @ v.T, rtol=0, atol=1e-15)
    np.testing.assert_allclose(s["d_weights"], [[0.3, 0.7], [0.3, 0.7]], rtol=0, atol=1e-15)
    d = (s["d_weights"] * a).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(s["row_dot"], d, rtol=0, atol=1e-15)
    # Row 1: a = [0.3302, 0.6698], so dZ = a ∘ (dA − D) = ±0.3302 × 0.6698 × 0.4 = ±0.0885.
    np.testing.assert_allclose(s["d_logits"][0], [-0.0885, 0.0885], rtol=0, atol=5e-5)
    by_hand = a[0, 0] * a[0, 1] * (0.7 - 0.3)  # the same, from the exact weights
    np.testing.assert_allclose(s["d_logits"][0], [-by_hand, by_hand], rtol=0, atol=1e-15)
    np.testing.assert_allclose(s["d_scores"], s["d_logits"] / math.sqrt(2), rtol=0, atol=1e-16)
    np.testing.assert_allclose(s["jacobian"], np.diag(a[0]) - np.outer(a[0], a[0]), atol=1e-16)
    assert walk.meta["upstream"] == "ones"
    assert {item.name: item.description for item in walk.inputs}["dO"].endswith(
        "all ones (L = Σ O)"
    )


def test_agrees_with_autograd_on_the_lecture_example(torch):
    walk = attn_cli.backward()
    s = steps(walk)
    q, k, v = np.eye(2), np.array([[1.0, 1.0], [2.0, 0.0]]), np.array([[0.1, 0.2], [0.3, 0.4]])
    d_q, d_k, d_v = autograd(q, k, v, np.ones((2, 2)))
    for name, expected in (("d_q", d_q), ("d_k", d_k), ("d_v", d_v)):
        np.testing.assert_allclose(s[name], expected, rtol=0, atol=TIGHT)
    np.testing.assert_allclose(walk.output, d_q, rtol=0, atol=TIGHT)


@settings(max_examples=examples(60), deadline=None)
@given(
    m=st.integers(1, 7),
    n=st.integers(1, 7),
    d_k=st.integers(1, 5),
    d_v=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    use_scale=st.booleans(),
    causal=st.booleans(),
)
def test_every_gradient_matches_autograd_on_random_shapes(m, n, d_k, d_v, seed, use_scale, causal):
    """dQ, dK, dV of the lesson (through the Python API, as a user calls it) equal autograd's
    of F.scaled_dot_product_attention, float64, within 1e-12, scaled or not, causal or not."""
    pytest.importorskip("torch")
    if causal:
        m = n
    rng = np.random.default_rng(seed)
    q, k, v, d_out = (
        rng.standard_normal(shape) for shape in ((m, d_k), (n, d_k), (n, d_v), (m, d_v))
    )
    walk = attn_cli.backward(q, k, v, do=d_out, scale=use_scale, causal=causal)
    s = steps(walk)
    expected = autograd(q, k, v, d_out, use_scale=use_scale, causal=causal)
    for name, value in zip(("d_q", "d_k", "d_v"), expected, strict=True):
        np.testing.assert_allclose(s[name], value, rtol=0, atol=TIGHT)


@settings(max_examples=examples(40), deadline=None)
@given(
    n=st.integers(1, 6),
    d=st.integers(1, 4),
    d_k=st.integers(1, 4),
    d_v=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    causal=st.booleans(),
)
def test_the_weights_and_tokens_gradients_match_autograd(n, d, d_k, d_v, seed, causal):
    """With tokens X and weights: dW_Q, dW_K, dW_V and dX (the walkthrough's output) equal
    autograd's through X W_Q, X W_K, X W_V and F.scaled_dot_product_attention, within 1e-12."""
    torch = pytest.importorskip("torch")
    from torch.nn.functional import scaled_dot_product_attention

    rng = np.random.default_rng(seed)
    shapes = ((n, d), (d, d_k), (d, d_k), (d, d_v), (n, d_v))
    x, wq, wk, wv, d_out = (rng.standard_normal(shape) for shape in shapes)
    walk = attn_cli.backward(x=x, wq=wq, wk=wk, wv=wv, do=d_out, causal=causal)
    s = steps(walk)
    tx, tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (x, wq, wk, wv))
    out = scaled_dot_product_attention(tx @ tq, tx @ tk, tx @ tv, is_causal=causal)
    out.backward(torch.tensor(d_out))
    for key, t in (("d_x", tx), ("d_w_q", tq), ("d_w_k", tk), ("d_w_v", tv)):
        np.testing.assert_allclose(s[key], t.grad.numpy(), rtol=0, atol=TIGHT, err_msg=key)
    np.testing.assert_allclose(walk.output, tx.grad.numpy(), rtol=0, atol=TIGHT)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_torch_backend_gives_the_numpy_numbers(torch, dtype):
    rng = np.random.default_rng(4)
    q, k, v, d_out = (rng.standard_normal(shape) for shape in ((3, 2), (4, 2), (4, 3), (3, 3)))
    mine = steps(attn_cli.backward(q, k, v, do=d_out))
    theirs = steps(attn_cli.backward(q, k, v, do=d_out, backend="torch", dtype=dtype))
    tolerance = 1e-13 if dtype == "float64" else 2e-6
    for key, value in mine.items():
        np.testing.assert_allclose(theirs[key], value, rtol=0, atol=tolerance, err_msg=key)


def test_the_mechanism_agrees_with_the_jacobian_built_out():
    """dZ = A ∘ (dA − D) is each row of dA times the full Jacobian diag(a) − a aᵀ."""
    rng = np.random.default_rng(1)
    z = rng.standard_normal((4, 5))
    a = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    d_a = rng.standard_normal((4, 5))
    rows = np.stack([d_a[i] @ grad.softmax_jacobian(a[i]) for i in range(4)])
    np.testing.assert_allclose(grad.softmax_backward(a, d_a), rows, rtol=0, atol=1e-15)
    np.testing.assert_allclose(grad.softmax_jacobian(a[0]).sum(axis=1), 0, atol=1e-16)
    lse = grad.log_sum_exp(z)
    np.testing.assert_allclose(np.exp(z - lse), a, rtol=0, atol=1e-15)  # A recomputed from L


# --- what the notes say, on the numbers --------------------------------------------------------


def test_causal_masked_entries_get_exactly_zero(invoke_json):
    doc = invoke_json("backward", "--n", "4", "--dk", "3", "--causal")
    by_key = {step["key"]: step for step in doc["steps"]}
    d_z = np.array(data(by_key["d_logits"]["value"]))
    assert np.all(d_z[np.triu_indices(4, k=1)] == 0.0)
    notes = {note["key"]: note["text"] for note in by_key["d_logits"]["notes"]}
    assert "6 of the 6 masked entries get a gradient of exactly 0" in " ".join(
        notes["masked_zero"].split()
    )


def test_the_one_hot_example_stalls_and_its_scaled_twin_flows():
    """The lecture's raw scores [15.5, −16.1, 2.3]: the first weight's gradient with respect
    to its own score is w (1 − w), about 1.85e-6 unscaled and 0.23 divided by 16."""
    stalled = steps(attn_cli.backward(example="one-hot"))
    flowing = steps(attn_cli.backward(example="one-hot-scaled"))
    for s, scores in ((stalled, [15.5, -16.1, 2.3]), (flowing, [0.96875, -1.00625, 0.14375])):
        a = np.exp(scores) / np.exp(scores).sum()
        # a − a² beside a (1 − a): for a = 0.999998 the two differ in the 10th digit (a − a²
        # subtracts two numbers near 1), well within what the tables show
        np.testing.assert_allclose(s["jacobian"][0, 0], a[0] * (1 - a[0]), rtol=1e-9)
        np.testing.assert_allclose(s["d_logits"][0], a[0] * (np.eye(3)[0] - a), atol=1e-15)
    assert stalled["jacobian"][0, 0] < 2e-6 < 0.2 < flowing["jacobian"][0, 0]


def test_vanishing_measures_the_lectures_claim(invoke_json):
    doc = invoke_json("backward", "--vanishing")
    table = {(row["dk"], row["scaled"]): row for row in doc["steps"][-1]["value"]}
    plain = [table[(d, "not scaled")]["row_gradient"] for d in (16, 64, 512)]
    divided = [table[(d, "÷ √d_k")]["row_gradient"] for d in (16, 64, 512)]
    assert plain[0] / plain[2] > 50  # 1.0518 / 0.0078 for seed 0
    assert max(divided) / min(divided) < 1.1
    assert table[(512, "not scaled")]["largest_weight"] > 0.99
    assert [note["key"] for note in doc["notes"]] == ["vanishing"]
    text = " ".join(doc["notes"][0]["text"].split())
    assert f"{plain[0] / plain[2]:.0f} times smaller" in text


def test_a_claim_is_withheld_when_its_numbers_do_not_bear_it_out():
    from attn_cli.course.backward import build

    walk = attn_cli.backward(vanishing=True)
    table = walk.step("vanishing")
    values = dict(walk.notes[0].values)
    assert build.vanishes(walk, values)
    assert not build.vanishes(walk, {**values, "ratio": values["ratio"] * 2})
    flat = [{**row, "row_gradient": 1.0} for row in table]  # no fall: the note must not show
    assert not build.vanishes(SimpleNamespace(step=lambda key: flat), values)


# --- the inputs -----------------------------------------------------------------------------


def test_do_given_on_top_of_an_example_or_drawn(invoke_json):
    given = invoke_json("backward", "--q", "1,0;0,1", "--k", "1,1;2,0", "--v", "0.1,0.2;0.3,0.4",
                        "--do", "1,0;0,1")  # fmt: skip
    assert given["meta"]["upstream"] == "given"
    drawn = invoke_json("backward", "--n", "3", "--dk", "2")
    assert drawn["meta"]["upstream"] == "drawn"
    assert set(drawn["inputs"]) == {"Q", "K", "V", "dO"}


def test_user_errors(invoke):
    qkv = ("--q", "1,0;0,1", "--k", "1,1;2,0", "--v", "0.1,0.2;0.3,0.4")
    assert_user_error(invoke("backward", *qkv, "--do", "1,2,3"), "dO is 1 × 3", "--do needs")
    assert_user_error(
        invoke("backward", "--q", "1,0", "--k", "1,1;2,0", "--v", "1;2", "--causal"),
        "Q has 1 rows but K has 2",
        "--causal",
    )
    assert_user_error(invoke("backward", "--wq", "1"), "--wq needs --x")
    assert_user_error(
        invoke("backward", "--x", "1,0;0,1", "--q", "1,0;0,1"), "give --q, --k and --v, or --x"
    )
    assert_user_error(invoke("backward", "--q", "1,0;0,1"), "needs --k and --v as well")


# --- FlashAttention-2's backward, tiled (--block) -------------------------------------------


@settings(max_examples=examples(40), deadline=None)
@given(
    m=st.integers(1, 9),
    n=st.integers(1, 9),
    d_k=st.integers(1, 4),
    d_v=st.integers(1, 3),
    block=st.integers(1, 5),
    seed=st.integers(0, 2**16),
    use_scale=st.booleans(),
    causal=st.booleans(),
)
def test_the_tiled_backward_equals_the_plain_one(m, n, d_k, d_v, block, seed, use_scale, causal):
    """From O and L alone, tile by tile (ragged last blocks, causal tiles skipped), the same dQ,
    dK, dV as the plain backward, within 1e-13; every tile's P is A's tile."""
    if causal:
        m = n
    rng = np.random.default_rng(seed)
    q, k, v, d_out = (rng.standard_normal(s) for s in ((m, d_k), (n, d_k), (n, d_v), (m, d_v)))
    walk = attn_cli.backward(q, k, v, do=d_out, scale=use_scale, causal=causal, block=block)
    s = steps(walk)
    check = {row["gradient"]: row["largest_difference"] for row in walk.step("tiled_check")}
    assert max(check.values()) <= 1e-13
    assert all(row["p_vs_a"] <= 1e-15 for row in walk.step("tiles"))
    skipped = sum(1 for j in range(0, n, block) for i in range(0, m, block) if j > i + block - 1)
    assert len(walk.step("tiles")) == -(-m // block) * -(-n // block) - (skipped if causal else 0)
    np.testing.assert_allclose(s["tile"], s["weights"][:block, :block], rtol=0, atol=1e-15)
    held = {row["what"]: row["numbers"] for row in walk.step("tiled_memory")}
    assert held["A, dA and dZ, each m × n"] == 3 * m * n
    assert held["L and D, each m × 1"] == 2 * m
    assert held["one tile's P, dP and dS"] == 3 * min(block, m) * min(block, n)


def test_the_tiled_backward_on_torch(torch):
    rng = np.random.default_rng(2)
    q, k, v, d_out = (rng.standard_normal(s) for s in ((5, 3), (5, 3), (5, 2), (5, 2)))
    walk = attn_cli.backward(q, k, v, do=d_out, causal=True, block=2, backend="torch")
    assert max(row["largest_difference"] for row in walk.step("tiled_check")) <= 1e-13
    notes = {note.key for step in walk.steps for note in step.notes}
    assert {"tiled_equal", "tiled_memory", "masked_zero"} <= notes


def test_the_notes_describe_the_numbers_shown_in_float32():
    """The row sums and the D gap a note states are those of the float32 tables on screen
    (computed from them, not from a float64 copy of the math): 9.7e-08 here, where a float64
    recomputation would say 7.5e-09."""
    walk = attn_cli.backward(n=4, dk=3, dtype="float32")
    d_logits = next(step for step in walk.steps if step.key == "d_logits")
    stated = {note.key: dict(note.values) for note in d_logits.notes}["rows_sum_to_zero"]
    shown = np.asarray(d_logits.value, dtype=np.float64)
    assert stated["drift"] == float(np.max(np.abs(shown.sum(axis=-1))))
    row_dot = next(step for step in walk.steps if step.key == "row_dot")
    gap = {note.key: dict(note.values) for note in row_dot.notes}["d_from_output"]["gap"]
    d_out = np.float32({item.name: item.value for item in walk.inputs}["dO"])  # as computed
    output = np.asarray(walk.step("output"), dtype=np.float64)
    other = (d_out.astype(np.float64) * output).sum(axis=-1)
    assert gap == float(
        np.max(np.abs(other[:, None] - np.asarray(row_dot.value, dtype=np.float64)))
    )


def test_the_tiles_step_counts_its_tiles_and_says_skipped_ones_only_when_causal(invoke_json):
    def tiles(*args: str) -> str:
        doc = invoke_json("backward", "--block", "2", *args)
        return next(s["explanation"] for s in doc["steps"] if s["key"] == "tiles")

    assert tiles().startswith("1 tile, key blocks outside, query blocks inside. Each")
    assert "skipped" not in tiles() and "skipped" not in tiles("--n", "5")
    assert tiles("--n", "5").startswith("9 tiles, key blocks")
    assert tiles("--n", "5", "--causal").startswith(
        "6 tiles, key blocks outside, query blocks inside (3 skipped: every key after every "
        "query of the block)."
    )
