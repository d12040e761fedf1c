"""attn linear: the worked example by hand, both orders, the running state, the FLOPs, the gap
from softmax, torch, and the user errors; every reference written out here with loops."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from attn_cli.core.errors import UserError
from attn_cli.lessonfiles.loader import load_bundled
from tests.conftest import assert_user_error, data, unwrap
from tests.lesson_runs import Batch, Runs

SMALL = ("--n", "3", "--dk", "2")
# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "5", "--m", "3", "--dk", "4", "--dv", "2", "--seed", "3"),
    sized=lambda s: {"n": s, "dk": s, "causal": s % 2 == 1},
    large=("--n", "120", "--dk", "4"),
    variants=(
        SMALL,
        (*SMALL, "--causal"),
        (*SMALL, "--feature-map", "random"),
        (*SMALL, "--feature-map", "relu"),
        (*SMALL, "--feature-map", "leaky-squared"),
        (*SMALL, "--feature-map", "relu", "--causal"),
        # q2 has no positive entry: relu leaves it no weights (the zero normaliser's note)
        ("--q", "1,0;-1,0", "--k", "1,0;0,1", "--v", "1;2", "--feature-map", "relu"),
        # q1's elu features underflow to 0: the normaliser prints 0 (underflow_normaliser)
        ("--q", "-1000,-1000;1,1", "--k", "1,0;0,1", "--v", "1;2"),
    ),
    options=(
        {"feature_map": "random"},
        {"causal": True},
        {"feature_map": "relu"},
        {"feature_map": "relu", "causal": True},
        {"feature_map": "leaky-squared"},
    ),
    figure=(("linear", "--example", "causal-three"), ("q1", "q3", "k1", "k3")),
    batch=Batch(lambda draw: {"q": draw(2, 3), "k": draw(4, 3), "v": draw(4, 2)}, ("q", "k", "v")),
)


Q = np.array([[1.0, 0], [0, 1]])
K = np.array([[1.0, 0], [0, 1], [1, 1]])
V = np.array([[1.0, 0], [0, 2], [1, 1]])


def elu1(x: np.ndarray) -> np.ndarray:
    return np.array([[xi + 1 if xi > 0 else math.exp(xi) for xi in row] for row in x])


def relu(x: np.ndarray) -> np.ndarray:
    return np.array([[max(xi, 0.0) for xi in row] for row in x])


def leaky_squared(x: np.ndarray) -> np.ndarray:
    """(leaky_relu(x) + 0.05)², the negative slope 0.01 (PyTorch's default)."""
    return np.array([[((xi if xi >= 0 else 0.01 * xi) + 0.05) ** 2 for xi in row] for row in x])


def kernel_attention(q, k, v, phi, *, causal=False):
    """(weights, output): w_ij = φ(q_i)·φ(k_j) / Σ_j', j ≤ i when causal; loops only. A row
    whose similarities are all 0 keeps weights 0 (the lesson's convention for 0 / 0)."""
    fq, fk = phi(q), phi(k)
    weights = np.zeros((q.shape[0], k.shape[0]))
    for i in range(q.shape[0]):
        visible = range(i + 1) if causal else range(k.shape[0])
        sims = {j: sum(fq[i, c] * fk[j, c] for c in range(fq.shape[1])) for j in visible}
        total = sum(sims.values())
        for j, s in sims.items():
            weights[i, j] = s / total if total != 0 else 0.0
    return weights, weights @ v


def softmax_attention(q, k, v, *, causal=False):
    s = q @ k.T / math.sqrt(q.shape[1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w, w @ v


def steps_by_key(doc):
    return {step["key"]: step for step in doc["steps"]}


def test_two_queries_by_hand(invoke_json):
    doc = invoke_json("linear")
    assert doc["lesson"] == "linear" and doc["example"] == "two-queries"
    steps = steps_by_key(doc)
    # elu + 1 of 0 and 1 is 1 and 2: φ(K) = [[2,1],[1,2],[2,2]], integers throughout.
    assert unwrap(steps["phi_k"]["value"]) == [[2, 1], [1, 2], [2, 2]]
    # φ(K)ᵀV = Σ_j φ(k_j) v_jᵀ = [[2·1+1·0+2·1, 2·0+1·2+2·1], [1·1+2·0+2·1, 1·0+2·2+2·1]]
    assert unwrap(steps["kv"]["value"]) == [[4, 4], [3, 6]]
    assert unwrap(steps["k_sum"]["value"]) == [[5], [5]]
    assert unwrap(steps["numerator"]["value"]) == [[11, 14], [10, 16]]
    assert unwrap(steps["normaliser"]["value"]) == [[15], [15]]
    np.testing.assert_allclose(data(doc["output"]), [[11 / 15, 14 / 15], [10 / 15, 16 / 15]])
    weights, output = kernel_attention(Q, K, V, elu1)
    np.testing.assert_allclose(unwrap(steps["weights"]["value"]), weights, atol=1e-15)
    np.testing.assert_allclose(unwrap(steps["output_quadratic"]["value"]), output, atol=1e-15)
    assert doc["meta"]["max_abs_difference"] < 1e-15
    assert [step["key"] for step in doc["steps"]] == [
        "phi_q", "phi_k", "similarity", "weights", "output_quadratic", "kv", "k_sum",
        "numerator", "normaliser", "output", "flops", "softmax", "versus_softmax",
    ]  # fmt: skip


def test_flops_of_both_orders(invoke_json):
    (here, long) = steps_by_key(invoke_json("linear"))["flops"]["value"]
    m, n, r, d_v = 2, 3, 2, 2
    # (φQ φKᵀ): 2mnr; its row sums: 2mn (as the mechanism counts); · V: 2mn·d_v; m·d_v divisions
    assert here["quadratic_flops"] == 2 * m * n * r + 2 * m * n + 2 * m * n * d_v + m * d_v
    # φKᵀV 2nr·d_v, φKᵀ1 2nr, φQ(·) 2mr·d_v and 2mr, then m·d_v divisions
    assert (
        here["linear_flops"] == 2 * n * r * d_v + 2 * n * r + 2 * m * r * d_v + 2 * m * r + m * d_v
    )
    assert (here["quadratic_largest"], here["linear_largest"]) == (m * n, r * d_v)
    assert long["m"] == long["n"] == 4096
    assert long["quadratic_flops"] > 1000 * long["linear_flops"]


def test_gap_from_softmax_is_measured(invoke_json):
    doc = invoke_json("linear")
    steps = steps_by_key(doc)
    kernel_w, kernel_out = kernel_attention(Q, K, V, elu1)
    soft_w, soft_out = softmax_attention(Q, K, V)
    np.testing.assert_allclose(unwrap(steps["softmax"]["value"]), soft_w, atol=1e-15)
    for i, row in enumerate(steps["versus_softmax"]["value"]):
        assert row["query"] == f"q{i + 1}"
        assert row["max_weight_gap"] == pytest.approx(np.max(np.abs(kernel_w[i] - soft_w[i])))
        assert row["total_variation"] == pytest.approx(np.sum(np.abs(kernel_w[i] - soft_w[i])) / 2)
        assert row["max_output_gap"] == pytest.approx(np.max(np.abs(kernel_out[i] - soft_out[i])))
    assert doc["meta"]["softmax_gap"] == pytest.approx(np.max(np.abs(kernel_out - soft_out)))
    assert doc["meta"]["softmax_gap"] > 0.1  # elu + 1 is not softmax: "approximation, weaker"


def test_causal_running_state_by_hand(invoke_json):
    doc = invoke_json("linear", "--example", "causal-three")
    steps = steps_by_key(doc)
    x = np.array([[1.0, 0], [0, 1], [1, 1]])
    fk, fq = elu1(K), elu1(x)
    state, total = np.zeros((2, 2)), np.zeros(2)
    states, sums, outputs = [], [], []
    for t in range(3):
        state = state + np.outer(fk[t], V[t])  # S_t = S_{t−1} + φ(k_t) v_tᵀ
        total = total + fk[t]
        states.append(state.reshape(-1))
        sums.append(total)
        outputs.append(fq[t] @ state / (fq[t] @ total))
    np.testing.assert_allclose(unwrap(steps["states"]["value"]), states, atol=1e-15)
    np.testing.assert_allclose(unwrap(steps["sums"]["value"]), sums, atol=1e-15)
    np.testing.assert_allclose(data(doc["output"]), outputs, atol=1e-15)
    assert unwrap(steps["states"]["value"])[0] == [2, 0, 1, 0]  # φ(k1) v1ᵀ = [2,1]ᵀ[1,0]
    assert steps["states"]["col_labels"] == ["S[f1,1]", "S[f1,2]", "S[f2,1]", "S[f2,2]"]
    weights, output = kernel_attention(x, K, V, elu1, causal=True)
    np.testing.assert_allclose(unwrap(steps["weights"]["value"]), weights, atol=1e-15)
    np.testing.assert_allclose(outputs, output, atol=1e-15)
    soft_w, _ = softmax_attention(x, K, V, causal=True)
    np.testing.assert_allclose(unwrap(steps["softmax"]["value"]), soft_w, atol=1e-15)


@pytest.mark.parametrize("causal", [False, True])
def test_random_inputs_against_loops(invoke_json, causal):
    flag = "--causal" if causal else "--no-causal"
    doc = invoke_json("linear", "--n", "7", "--dk", "3", "--dv", "2", "--seed", "5", flag)
    q, k, v = (np.array(data(doc["inputs"][name])) for name in ("Q", "K", "V"))
    _, expected = kernel_attention(q, k, v, elu1, causal=causal)
    output = np.array(data(doc["output"]))
    assert output.shape == (7, 2)
    np.testing.assert_allclose(output, expected, rtol=1e-12, atol=1e-14)


def random_features(x, w):
    """Performer's φ(x) = exp(x'W − |x'|²/2) / √r with x' = x / d_k^¼, by loops."""
    d_k, r = w.shape
    out = np.zeros((x.shape[0], r))
    for i, row in enumerate(x / d_k**0.25):
        for f in range(r):
            out[i, f] = math.exp(sum(row[c] * w[c, f] for c in range(d_k)) - row @ row / 2)
    return out / math.sqrt(r)


def test_random_features_are_seeded_and_approach_softmax(invoke_json):
    args = ("--feature-map", "random", "--feature-seed", "3")
    doc = invoke_json("linear", *args, "--features", "8")
    w = np.random.default_rng(3).standard_normal((2, 8))
    steps = steps_by_key(doc)
    np.testing.assert_allclose(unwrap(steps["phi_q"]["value"]), random_features(Q, w), rtol=1e-13)
    _, expected = kernel_attention(Q, K, V, lambda x: random_features(x, w))
    np.testing.assert_allclose(data(doc["output"]), expected, rtol=1e-12)
    assert invoke_json("linear", *args, "--features", "8") == doc  # the same seed, the same run
    # E[φ(q)·φ(k)] = exp(q·k/√d_k): with many features the gap from softmax shrinks.
    many = invoke_json("linear", *args, "--features", "20000")["meta"]["softmax_gap"]
    elu = invoke_json("linear")["meta"]["softmax_gap"]
    assert many < 0.02 < elu


def test_torch_agrees_with_a_direct_float64_computation(invoke_json, torch):
    doc = invoke_json("linear", "--backend", "torch", "--n", "6", "--m", "4", "--dk", "3")
    q, k, v = (torch.tensor(data(doc["inputs"][name]), dtype=torch.float64) for name in "QKV")
    fq, fk = (torch.nn.functional.elu(x) + 1 for x in (q, k))
    expected = (fq @ fk.T) @ v / (fq @ fk.T).sum(dim=-1, keepdim=True)
    np.testing.assert_allclose(data(doc["output"]), expected.numpy(), rtol=1e-12)
    causal = invoke_json("linear", "--backend", "torch", "--n", "5", "--dk", "3", "--causal")
    q, k, v = (torch.tensor(data(causal["inputs"][name]), dtype=torch.float64) for name in "QKV")
    fq, fk = (torch.nn.functional.elu(x) + 1 for x in (q, k))
    sims = torch.tril(fq @ fk.T)
    np.testing.assert_allclose(
        data(causal["output"]), (sims @ v / sims.sum(-1, keepdim=True)).numpy(), rtol=1e-12
    )


def test_check_passes_on_the_bundled_file(invoke):  # its --quiz: tests/test_quiz.py
    check = invoke("check", "lessons/linear.toml")
    assert check.exit_code == 0, check.output


def test_rich_output(invoke):
    result = invoke("linear")
    assert result.exit_code == 0, result.output
    assert "Reassociate:  φ(K)ᵀ V" in result.stdout
    assert "How far from softmax attention" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--n", "5", "--m", "3", "--causal"), ("--causal needs as many queries as keys",)),
        (("--features", "0", "--feature-map", "random"), ("--features", "not 0")),
        (("--feature-seed", "-1"), ("--feature-seed",)),
        (("--q", "1,0", "--k", "1,0,0", "--v", "1"), ("Q and K must share d_k",)),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("linear", *args), *fragments)


def test_unknown_feature_map(invoke):
    result = invoke("linear", "--feature-map", "cosine")
    assert result.exit_code == 2 and result.stdout == ""


def entropy(row) -> float:
    return -sum(a * math.log(a) for a in row if a > 0)


def note_texts(doc, key: str) -> dict[str, str]:
    """The notes printed under step ``key``: note key -> text."""
    return {note["key"]: note["text"] for note in steps_by_key(doc)[key].get("notes", ())}


def test_sharper_than_softmax_is_said_when_it_is(invoke_json):
    """Issue 22: 'Nothing is exponentiated, so they are flatter than softmax's' printed over
    weights 0.5255/0.4745 against softmax's 0.5035/0.4965. Flatness is now each row's entropy,
    and the note says sharper where the kernel's row has the lower entropy."""
    doc = invoke_json("linear", "--q", "0.1,0", "--k", "0.1,0;-0.1,0", "--v", "1;0")
    steps = steps_by_key(doc)
    assert "flatter than softmax" not in steps["weights"]["explanation"]
    assert "Nothing is exponentiated" not in steps["weights"]["explanation"]
    q, k, v = np.array([[0.1, 0]]), np.array([[0.1, 0], [-0.1, 0]]), np.array([[1.0], [0]])
    weights, _ = kernel_attention(q, k, v, elu1)
    soft, _ = softmax_attention(q, k, v)
    np.testing.assert_allclose(weights[0], [1.1 / 2.0933, 0.9933 / 2.0933], atol=1e-4)
    assert entropy(weights[0]) < entropy(soft[0])  # 0.6918 < 0.6931: sharper
    (row,) = steps["versus_softmax"]["value"]
    assert row["entropy"] == pytest.approx(entropy(weights[0]))
    assert row["entropy_softmax"] == pytest.approx(entropy(soft[0]))
    notes = note_texts(doc, "versus_softmax")
    assert "flatter" not in notes
    assert notes["sharper"].startswith("Sharper than softmax's (a lower entropy H) for q1:")


def test_flatter_than_softmax_is_said_when_it_is(invoke_json):
    doc = invoke_json("linear")  # two-queries: both kernel rows flatter
    weights, _ = kernel_attention(Q, K, V, elu1)
    soft, _ = softmax_attention(Q, K, V)
    assert all(entropy(weights[i]) > entropy(soft[i]) for i in range(2))
    notes = note_texts(doc, "versus_softmax")
    assert "sharper" not in notes
    assert notes["flatter"].startswith("Flatter than softmax's (a higher entropy H) for q1, q2:")
    assert "softer" not in load_bundled("linear").intro


def test_no_flatness_note_where_the_rows_tie(invoke_json):
    """causal-three: query 1 sees one key in both (entropy 0 each): named in neither note."""
    doc = invoke_json("linear", "--example", "causal-three")
    notes = note_texts(doc, "versus_softmax")
    assert "q1" not in notes.get("flatter", "") and "sharper" not in notes
    assert notes["flatter"].startswith("Flatter than softmax's (a higher entropy H) for q2, q3:")


# --- other feature maps: relu and the squared leaky ReLU ----------------------------------------


def test_relu_features_by_hand(invoke_json):
    """relu-features: φ = relu keeps q1, q2 and the keys as they are (no negative entry) and
    zeroes q3 = [−1, 0]. q1·k = 1, 0, 1 → weights ½, 0, ½; q2·k = 0, 1, 1 → 0, ½, ½; q3 has no
    similarity at all: normaliser 0, weights 0, output 0, and the note says so."""
    doc = invoke_json("linear", "--example", "relu-features")
    steps = steps_by_key(doc)
    assert unwrap(steps["phi_q"]["value"]) == [[1, 0], [0, 1], [0, 0]]
    assert "relu" in steps["phi_q"]["title"]
    assert unwrap(steps["weights"]["value"]) == [[0.5, 0, 0.5], [0, 0.5, 0.5], [0, 0, 0]]
    assert unwrap(steps["normaliser"]["value"]) == [[2], [2], [0]]
    assert data(doc["output"]) == [[1, 0.5], [0.5, 1.5], [0, 0]]
    (note,) = steps["normaliser"]["notes"]
    assert note["key"] == "zero_normaliser" and note["values"] == {"queries": "q3"}
    assert "0 / 0 has no value" in note["text"]
    assert "nan" not in json.dumps(doc).lower()
    # q3 is named neither flatter nor sharper; q1 and q2 (two keys at ½) are sharper than
    # softmax's three nonzero weights.
    notes = note_texts(doc, "versus_softmax")
    assert "flatter" not in notes
    assert notes["sharper"].startswith("Sharper than softmax's (a lower entropy H) for q1, q2:")
    q = np.array([[1.0, 0], [0, 1], [-1, 0]])
    weights, output = kernel_attention(q, K, V, relu)
    soft_w, soft_out = softmax_attention(q, K, V)
    table = steps["versus_softmax"]["value"]
    for i, row in enumerate(table):
        assert row["max_weight_gap"] == pytest.approx(np.max(np.abs(weights[i] - soft_w[i])))
        assert row["max_output_gap"] == pytest.approx(np.max(np.abs(output[i] - soft_out[i])))
    assert table[2]["total_variation"] == pytest.approx(0.5)  # Σ|0 − softmax| / 2
    assert doc["meta"]["softmax_gap"] == pytest.approx(np.max(np.abs(output - soft_out)))


def test_leaky_squared_example_by_hand(invoke_json):
    """leaky-squared: φ(1) = 1.05² = 1.1025, φ(0) = 0.05² = 0.0025."""
    doc = invoke_json("linear", "--example", "leaky-squared")
    steps = steps_by_key(doc)
    np.testing.assert_allclose(
        unwrap(steps["phi_q"]["value"]), [[1.1025, 0.0025], [0.0025, 1.1025]], rtol=1e-15
    )
    sims = [1.1025**2 + 0.0025**2, 2 * 1.1025 * 0.0025, 1.1025 * 1.105]  # q1 against k1, k2, k3
    total = sum(sims)
    np.testing.assert_allclose(
        unwrap(steps["weights"]["value"])[0], [x / total for x in sims], rtol=1e-14
    )
    _, output = kernel_attention(Q, K, V, leaky_squared)
    np.testing.assert_allclose(data(doc["output"]), output, rtol=1e-14)
    _, soft_out = softmax_attention(Q, K, V)
    assert doc["meta"]["softmax_gap"] == pytest.approx(np.max(np.abs(output - soft_out)))
    assert "zero_normaliser" not in note_texts(doc, "normaliser")


@pytest.mark.parametrize("feature_map", ["relu", "leaky-squared"])
@pytest.mark.parametrize("causal", [False, True])
def test_relu_and_leaky_squared_on_random_inputs_against_loops(invoke_json, feature_map, causal):
    flag = "--causal" if causal else "--no-causal"
    doc = invoke_json(
        "linear", "--n", "7", "--dk", "2", "--dv", "2", "--seed", "3", flag,
        "--feature-map", feature_map,
    )  # fmt: skip
    q, k, v = (np.array(data(doc["inputs"][name])) for name in ("Q", "K", "V"))
    phi = relu if feature_map == "relu" else leaky_squared
    weights, expected = kernel_attention(q, k, v, phi, causal=causal)
    np.testing.assert_allclose(data(doc["output"]), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        unwrap(steps_by_key(doc)["weights"]["value"]), weights, rtol=1e-12, atol=1e-15
    )
    _, soft_out = softmax_attention(q, k, v, causal=causal)
    assert doc["meta"]["softmax_gap"] == pytest.approx(np.max(np.abs(expected - soft_out)))
    empty = [f"q{i + 1}" for i in range(7) if not np.any(weights[i])]
    assert bool(empty) == (feature_map == "relu")  # these inputs leave relu rows with no weight
    notes = note_texts(doc, "normaliser")
    if empty:
        assert notes["zero_normaliser"].startswith(f"For {', '.join(empty)},")
    else:
        assert "zero_normaliser" not in notes


def test_relu_causal_row_with_no_visible_key(invoke_json):
    """Causal, token 1 sees only k1 = [0, 1] and q1 = [1, 0]: no shared positive feature, so
    its running normaliser φ(q1)ᵀz_1 is 0; token 2 sees k2 too."""
    doc = invoke_json(
        "linear", "--q", "1,0;1,0", "--k", "0,1;1,0", "--v", "1;3", "--causal",
        "--feature-map", "relu",
    )  # fmt: skip
    steps = steps_by_key(doc)
    assert unwrap(steps["normaliser"]["value"]) == [[0], [1]]
    assert data(doc["output"]) == [[0], [3]]
    (note,) = steps["normaliser"]["notes"]
    assert note["values"] == {"queries": "q1"}
    assert unwrap(steps["weights"]["value"]) == [[0, 0], [0, 1]]


def test_torch_agrees_on_relu_and_leaky_squared(invoke_json, torch):
    functional = torch.nn.functional
    maps = {
        "relu": functional.relu,
        "leaky-squared": lambda x: (functional.leaky_relu(x, negative_slope=0.01) + 0.05) ** 2,
    }
    for name, phi in maps.items():
        args = ("--n", "6", "--m", "4", "--dk", "3", "--feature-map", name)
        doc = invoke_json("linear", "--backend", "torch", *args)
        q, k, v = (torch.tensor(data(doc["inputs"][n]), dtype=torch.float64) for n in "QKV")
        sims = phi(q) @ phi(k).T
        sums = sims.sum(dim=-1, keepdim=True)
        expected = torch.where(sums > 0, sims @ v / torch.where(sums > 0, sums, 1.0), 0.0)
        np.testing.assert_allclose(data(doc["output"]), expected.numpy(), rtol=1e-12)
        assert doc == invoke_json("linear", "--backend", "torch", *args)


def test_a_feature_map_that_is_not_one_names_them_all():
    import attn_cli as attn

    with pytest.raises(UserError, match="choose one of: elu, random, relu, leaky-squared"):
        attn.linear(Q, K, V, feature_map="cosine")


@pytest.mark.parametrize("causal", [False, True])
def test_an_underflowed_normaliser_is_not_called_a_row_with_no_weights(invoke_json, causal):
    """q1 = [−1000, −1000]: elu + 1 gives e^−1000, positive but 0 in float64, so the printed
    normaliser is 0. The note once said the row "is shown with weights 0 (row sum 0) and an
    output of 0" beside weights ½, ½ (causal: 1) and an output of 1.5 (causal: 1), the exact
    ratios computed from log φ; now it says the 0 is an underflow."""
    flag = "--causal" if causal else "--no-causal"
    doc = invoke_json("linear", "--q", "-1000,-1000;1,1", "--k", "1,0;0,1", "--v", "1;2", flag)
    steps = steps_by_key(doc)
    assert unwrap(steps["normaliser"]["value"])[0] == [0]
    # Exact: φ(q1) = e^−1000·[1, 1] and φ(K) = [[2, 1], [1, 2]]: similarities 3·e^−1000 each.
    assert unwrap(steps["weights"]["value"])[0] == ([1, 0] if causal else [0.5, 0.5])
    assert data(doc["output"])[0] == [1.0 if causal else 1.5]
    notes = note_texts(doc, "normaliser")
    assert "zero_normaliser" not in notes
    assert notes["underflow_normaliser"].startswith(
        "For q1, the normaliser printed is 0 only because it underflowed"
    )
    assert "they sum to 1 as usual" in notes["underflow_normaliser"]


@pytest.mark.parametrize("causal", [False, True])
def test_the_program_says_where_its_plain_ratio_gives_nan(invoke, causal):
    """The same underflow in --code: the program's plain ratio prints NaN for q1 where the lesson
    prints 1.5 (causal: 1), and its comment once said "the same numbers"; it now says why."""
    flag = "--causal" if causal else "--no-causal"
    args = ("--q", "-1000,-1000;1,1", "--k", "1,0;0,1", "--v", "1;2", flag)
    program = invoke("linear", *args, "--code").stdout
    assert program.count("# NaN for q1: φ underflowed to 0 (0 / 0)") == 2
    assert "# the same numbers" not in program
    assert "# the same numbers" in invoke("linear", "--code").stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--features", "8"), "--features 8 is read only by --feature-map random (elu makes"),
        (
            ("--feature-seed", "3", "--feature-map", "relu"),
            "--feature-seed 3 is read only by --feature-map random (relu makes",
        ),
    ],
)
def test_random_feature_options_without_random_features_are_refused(invoke, args, fragment):
    """attn linear --features 8 ran the elu map with r = d_k = 2 (--features ignored) and said
    "The inputs of example two-queries, run with --features 8"."""
    assert_user_error(invoke("linear", *args), fragment)
