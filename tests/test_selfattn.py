"""attn selfattn: lecture values, permutation equivariance, agreement with PyTorch, errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.conftest import assert_user_error, data, unwrap
from tests.lesson_runs import Batch, Runs

# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "5", "--d", "4", "--seed", "3"),
    sized=lambda s: {"n": s, "d": s},
    large=("--n", "101", "--d", "4"),
    variants=(
        ("--n", "3", "--d", "2"),
        ("--n", "3", "--d", "2", "--permute", "2,0,1"),
        ("--n", "9", "--d", "2", "--permute", "8,7,6,5,4,3,2,1,0"),
        ("--n", "3", "--d", "2", "--dropout", "0.5", "--no-scale"),
        ("--n", "3", "--d", "2", "--dropout", "0"),
        ("--n", "1", "--d", "2", "--dropout", "0.5"),
        ("--x", "1,0;0,1", "--permute", "1,0"),
        ("--x", "1,0;0,1", "--wq", "1,0;0,1", "--wk", "0,1;1,0"),
        ("--x", "1,0;0,1", "--tokens", "a,b"),
        ("--x", "1,0", "--wq", "1,0;0,1"),
    ),
    options=({"scale": False},),
    # permuted_wrong would report a bug: a permuted output that is not the output permuted,
    # beyond rounding.
    never_made=frozenset({"permuted_wrong"}),
    figure=(("selfattn", "--tokens", "I,saw,it"), ("I", "saw", "it")),
    batch=Batch(
        lambda draw: {"x": draw(3, 4), "wq": draw(4, 2), "wk": draw(4, 2), "wv": draw(4, 3)}, ("x",)
    ),
)


KEYS = ["Q", "K", "V", "scores", "scaled", "weights", "output"]
PERMUTED = ["permuted.X", "permuted.weights", "permuted.output", "permuted.difference"]


def steps(doc: dict) -> dict:
    return {step["key"]: unwrap(step["value"]) for step in doc["steps"]}


def text(array: np.ndarray) -> str:
    return json.dumps(np.asarray(array).tolist())


# --- lecture examples --------------------------------------------------------------------


def test_identity_example_by_hand(invoke_json):
    doc = invoke_json("selfattn")
    assert doc["example"] == "identity"
    assert [step["key"] for step in doc["steps"]] == KEYS
    got = steps(doc)
    x = [[1, 0], [0, 1], [1, 1]]
    for key in ("Q", "K", "V"):
        assert got[key] == x  # W = I
    scores = [[1, 0, 1], [0, 1, 1], [1, 1, 2]]  # dot products of the rows of X
    assert got["scores"] == scores
    r = 1 / math.sqrt(2)
    np.testing.assert_allclose(got["scaled"], [[r, 0, r], [0, r, r], [r, r, 2 * r]], atol=1e-15)
    # Row 1: softmax([r, 0, r]) = [e^r, 1, e^r] / (2 e^r + 1); row 3: [e^r, e^r, e^2r] / sum.
    a, b = math.exp(r) / (2 * math.exp(r) + 1), 1 / (2 * math.exp(r) + 1)
    c3 = 2 * math.exp(r) + math.exp(2 * r)
    weights = [[a, b, a], [b, a, a], [math.exp(r) / c3, math.exp(r) / c3, math.exp(2 * r) / c3]]
    np.testing.assert_allclose(got["weights"], weights, atol=1e-15)
    output = [[a + a, b + a], [b + a, a + a], [weights[2][0] + weights[2][2]] * 2]
    np.testing.assert_allclose(got["output"], output, atol=1e-15)
    np.testing.assert_allclose(data(doc["output"]), output, atol=1e-15)
    assert data(doc["inputs"]["W_Q"]) == [[1.0, 0.0], [0.0, 1.0]]  # the default, recorded
    notes = " ".join(note["text"] for note in doc["notes"])
    assert "W_Q, W_K and W_V were not given" in notes and "Q = K = V = X" in notes
    # The slide calls these weights symmetric; they are not (each row has its own sum).
    assert a != pytest.approx(weights[2][0])
    assert "the weights are not" in notes and f"{a:.4f}" in notes


def test_projection_example_by_hand(invoke_json):
    doc = invoke_json("selfattn", "-e", "projection")
    got = steps(doc)
    x1, x2, x3, x4 = 1, 2, 3, 4
    q = [x1 + x3, x2 + x3]  # W_Q columns [1,0,1,0] and [0,1,1,0]
    k = [x2 + x4, x1 + x4]  # W_K columns [0,1,0,1] and [1,0,0,1]
    v = [x1 + x4, x1 + x3]  # W_V columns [1,0,0,1] and [1,0,1,0]
    assert (got["Q"], got["K"], got["V"]) == ([q], [k], [v])
    assert got["scores"] == [[q[0] * k[0] + q[1] * k[1]]]
    assert got["scaled"][0] == pytest.approx([49 / math.sqrt(2)], abs=1e-13)
    assert got["weights"] == [[1.0]] and got["output"] == [v]
    assert doc["steps"][0]["row_labels"] == ["cat"]
    assert any("One token" in note["text"] for note in doc["notes"])


def test_given_weights_on_top_of_the_example_and_no_scale(invoke_json):
    doc = invoke_json("selfattn", "--wv", "0,1;1,0", "--no-scale")
    got = steps(doc)
    assert "scaled" not in got
    assert got["V"] == [[0, 1], [1, 0], [1, 1]]  # columns of X swapped
    assert data(doc["inputs"]["W_V"]) == [[0.0, 1.0], [1.0, 0.0]]
    assert any("W_Q and W_K were not given" in note["text"] for note in doc["notes"])
    assert any("not scaled" in note["text"] for note in doc["notes"])


def test_only_missing_weights_default(invoke_json):
    # d = 3, d_k = d_v = 3: W_K and W_V default to I_3, W_Q is given.
    doc = invoke_json("selfattn", "--x", "1,2,3;0,1,0", "--wq", "0,0,1;0,1,0;1,0,0")
    got = steps(doc)
    assert got["Q"] == [[3, 2, 1], [0, 1, 0]] and got["K"] == [[1, 2, 3], [0, 1, 0]]
    assert any("W_K and W_V were not given" in note["text"] for note in doc["notes"])


# --- permutation equivariance -------------------------------------------------------------


def test_permute_reorders_outputs_the_same_way(invoke_json):
    doc = invoke_json("selfattn", "--permute", "2,0,1", "--tokens", "the,cat,slept")
    assert [step["key"] for step in doc["steps"]] == KEYS + PERMUTED
    got = steps(doc)
    order = [2, 0, 1]
    weights, output = np.array(got["weights"]), np.array(got["output"])
    assert got["permuted.X"] == [[1, 1], [1, 0], [0, 1]]
    np.testing.assert_array_equal(got["permuted.weights"], weights[order][:, order])
    np.testing.assert_array_equal(got["permuted.output"], output[order])
    assert got["permuted.difference"] == 0.0
    labels = {step["key"]: step.get("row_labels") for step in doc["steps"]}
    assert labels["permuted.output"] == ["slept", "the", "cat"]
    assert labels["output"] == ["the", "cat", "slept"]
    notes = " ".join(note["text"] for note in doc["notes"])
    assert "does not know word order" in notes and "attn posenc" in notes
    np.testing.assert_array_equal(data(doc["output"]), output)  # the output stays the original one


@pytest.mark.parametrize("seed", range(4))
def test_random_permutations_are_equivariant(invoke_json, seed):
    rng = np.random.default_rng(seed)
    n = 3 + seed * 2
    order = rng.permutation(n).tolist()
    doc = invoke_json(
        "selfattn",
        *("--n", str(n), "--d", "4", "--dk", "3", "--dv", "5", "--seed", str(seed)),
        *("--permute", ",".join(map(str, order))),
    )
    got = steps(doc)
    weights, output = np.array(got["weights"]), np.array(got["output"])
    assert weights.shape == (n, n) and output.shape == (n, 5)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(output, weights @ np.array(got["V"]), atol=1e-12)
    np.testing.assert_allclose(got["permuted.output"], output[order], atol=1e-12)
    assert got["permuted.difference"] <= 1e-12
    x = np.array(data(doc["inputs"]["X"]))
    np.testing.assert_array_equal(got["permuted.X"], x[order])


# --- agreement with PyTorch ---------------------------------------------------------------


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize(("n", "d", "d_k", "d_v"), [(5, 4, 3, 2), (8, 6, 6, 7)])
def test_agrees_with_torch_sdpa(invoke_json, torch, backend, n, d, d_k, d_v):
    rng = np.random.default_rng(n + 10 * d)
    x = rng.standard_normal((n, d))
    wq, wk = rng.standard_normal((d, d_k)) / 2, rng.standard_normal((d, d_k)) / 2
    wv = rng.standard_normal((d, d_v))
    doc = invoke_json(
        "selfattn",
        *("--x", text(x), "--wq", text(wq), "--wk", text(wk), "--wv", text(wv)),
        *("--backend", backend, "--permute", ",".join(map(str, range(n - 1, -1, -1)))),
    )
    assert doc["backend"] == backend
    got = steps(doc)
    t = {
        name: torch.tensor(a, dtype=torch.float64)
        for name, a in dict(x=x, q=wq, k=wk, v=wv).items()
    }
    q, k, v = t["x"] @ t["q"], t["x"] @ t["k"], t["x"] @ t["v"]
    expected = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0]
    weights = torch.softmax(q @ k.T / math.sqrt(d_k), dim=-1)
    for key, value in dict(Q=q, K=k, V=v, weights=weights, output=expected).items():
        np.testing.assert_allclose(got[key], value.numpy(), rtol=0, atol=1e-10, err_msg=key)
    np.testing.assert_allclose(got["permuted.output"], expected.numpy()[::-1], atol=1e-10)


# --- user errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["--x", "1,0;0,x"], ["--x", "'x'", "not a number"]),
        (["--x", "1,0;0"], ["--x", "row 2 has 1 entries"]),
        (["--x", "1,nan"], ["--x has nan"]),
        (["--x", "[[1,0],[0,"], ["--x", "not valid JSON"]),
        (["--x", "1,0;0,1", "--wq", "1,0;0,1;1,1"], ["--wq has 3 rows", "d = 2 rows"]),
        (["--x", "1,0;0,1", "--wv", "1,0,0"], ["--wv has 1 rows", "d = 2"]),
        (
            ["--x", "1,0;0,1", "--wq", "1,0,0;0,1,0"],
            ["W_Q has 3 columns but W_K has 2", "--wk was not given", "2 × 3"],
        ),
        (
            ["--x", "1,0;0,1", "--wq", "1;0", "--wk", "1,0,0;0,1,0"],
            ["W_Q has 1 columns but W_K has 3", "share d_k"],
        ),
        (["--permute", "0,1"], ["--permute has 2 entries but there are 3 tokens"]),
        (["--permute", "0,1,3"], ["--permute: 3 is not a position", "0 to 2"]),
        (["--permute", "1,0,-1"], ["--permute: -1 is not a position"]),
        (["--permute", "0,1,1"], ["--permute repeats 1"]),
        (["--permute", "0,a,1"], ["--permute", "'a' is not a whole number"]),
        (["--permute", " "], ["--permute is empty"]),
        (["--tokens", "a,b"], ["--tokens", "gives 2 names but there are 3 rows"]),
        (["--tokens", "a,,c"], ["--tokens has an empty name"]),
        (["--n", "3", "--x", "1,2"], ["--x is 1 × 2", "draw X 3 × 16: give --d 2 --n 1"]),
        (["--n", "3", "--permute", "0,1"], ["--permute has 2 entries"]),
        (["-e", "nope"], ["identity, projection"]),
        (["--x", "1,0", "-e", "identity"], ["--example picks a lecture example"]),
        (["--wq", "1,0,0;0,1,0;0,0,1"], ["--wq has 3 rows but --x has 2 columns"]),
    ],
)
def test_user_errors(invoke, arguments, fragments):
    assert_user_error(invoke("selfattn", *arguments), *fragments)


# --- formats ------------------------------------------------------------------------------


def test_rich_output(invoke):
    result = invoke("selfattn", "--tokens", "the,cat,slept", "--permute", "2,0,1")
    assert result.exit_code == 0, result.output
    out = result.stdout
    for title in ("Queries  Q = X W_Q", "Weights  A = softmax(rows)", "Reordered tokens"):
        assert title in out
    # X = [[1,0],[0,1],[1,1]], identity weights: row 1's scores are (1, 0, 1)/√2, so the
    # weights are e^a, 1, e^a over 2e^a + 1 with a = 1/√2; output row 1 is (w1 + w3, w2).
    a = math.exp(1 / math.sqrt(2))
    w_same = a / (2 * a + 1)
    assert f"{w_same:.4f}" in out and f"{2 * w_same:.4f}" in out
    assert "slept" in out and "Σ row" in out
    assert "Exactly 0" in out and "attn posenc" in out


def test_markdown_latex_and_list(invoke):
    markdown = invoke("selfattn", "-f", "markdown", "--precision", "3").stdout
    assert markdown.startswith("## Self-attention — example `identity`")
    r = 1 / math.sqrt(2)
    row3 = np.exp([r, r, 2 * r]) / np.exp([r, r, 2 * r]).sum()
    assert "| **x3** | " + " | ".join(f"{w:.3f}" for w in row3) + " |" in markdown
    latex = invoke("selfattn", "-e", "projection", "-f", "latex").stdout
    assert "Q = XW_Q = \\begin{bmatrix} 4 & 5 \\end{bmatrix}" in latex
    assert "W_{Q} = \\begin{bmatrix}" in latex
    listing = invoke("selfattn", "--list-examples").stdout
    assert "identity (default)" in listing and "projection" in listing


def test_large_sizes_are_summarised_in_json(invoke_json):
    doc = invoke_json("selfattn", "--n", "120", "--d", "8")
    weights = next(step for step in doc["steps"] if step["key"] == "weights")
    assert weights["value"]["shape"] == [120, 120]
    assert weights["value"]["summary"]["count"] == 14400


@pytest.mark.parametrize("command", ["selfattn", "bahdanau"])
def test_missing_gpu_is_a_user_error(invoke, torch, monkeypatch, command):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert_user_error(invoke(command, "--device", "cuda"), "--device cuda", "CUDA is not available")
    assert_user_error(invoke(command, "--device", "cuda", "--backend", "numpy"), "CPU only")


# --- issue 22: every sentence true for the numbers on screen ---------------------------------


def step_of(doc: dict, key: str) -> dict:
    return next(step for step in doc["steps"] if step["key"] == key)


def test_values_step_does_not_claim_a_different_projection_when_w_v_is_w_k(invoke_json):
    """Issue 22 #10: Step 3 said values come "through a different projection" while the
    example has W_K = W_V = I; the slide's "these weights are symmetric" was corrected silently."""
    doc = invoke_json("selfattn")
    values = step_of(doc, "V")
    assert "through a different projection" not in values["explanation"]
    assert [note["key"] for note in values["notes"]] == ["values_are_keys"]
    assert steps(doc)["V"] == steps(doc)["K"] == [[1, 0], [0, 1], [1, 1]]
    erratum = next(note for note in doc["notes"] if note["key"] == "slide_symmetric")
    r = 1 / math.sqrt(2)
    assert erratum["values"]["weight"] == pytest.approx(math.exp(r) / (2 * math.exp(r) + 1))
    assert erratum["values"]["mirrored"] == pytest.approx(
        math.exp(r) / (2 * math.exp(r) + math.exp(2 * r))
    )
    assert erratum["text"].startswith("The slide calls this weight matrix symmetric")
    # Another W_V: no note on V; the same X as the user's own input: no note about the slide.
    other = invoke_json("selfattn", "--wv", "0,1;1,0")
    assert "notes" not in step_of(other, "V") or not step_of(other, "V")["notes"]
    own = invoke_json("selfattn", "--x", "1,0;0,1;1,1")
    keys = [note["key"] for note in own["notes"]]
    assert "weights_asymmetric" in keys and "slide_symmetric" not in keys


def test_the_scaling_step_states_its_assumption(invoke_json):
    """Issue 22 #13: "stays soft whatever the width" without the assumption."""
    doc = invoke_json("selfattn", "--x", "-1,-2;3,0;0,0", "--wk", "-1,0;2,2")
    scaled = step_of(doc, "scaled")
    assert "stays soft" not in scaled["explanation"]
    assert "independent, with mean 0 and variance 1" in scaled["explanation"]
    assert max(max(row) for row in steps(doc)["weights"]) > 0.95  # not soft on this input


def test_words_a_student_can_know(invoke_json):
    """Issue 22 #9: no "from-scratch book", no "seed NNN", "convex combination" defined."""
    doc = invoke_json("selfattn", "--dropout", "0.5")
    text = " ".join(step["explanation"] for step in doc["steps"])
    assert "from-scratch book" not in text and "comes from seed" not in text
    assert "random seed 0 (set it with --seed)" in text
    assert (
        "sum to 1 (a convex combination)"
        in step_of(invoke_json("selfattn"), "output")["explanation"]
    )


def test_permuted_weights_are_said_equal_only_up_to_rounding(invoke_json):
    """--n 7 --dk 5 --seed 0 --permute: the reordered sequence's weights differ from the original
    ones, reordered, by float rounding (a row's exps are summed in another order); the step said
    "each pair of tokens gets the same weight as before" without that."""
    order = [int(i) for i in np.random.default_rng(0).permutation(7)]
    doc = invoke_json(
        "selfattn", "--n", "7", "--dk", "5", "--seed", "0",
        "--permute", ",".join(map(str, order)),
    )  # fmt: skip
    steps = {step["key"]: step for step in doc["steps"]}
    weights = np.array(data(steps["weights"]["value"]))
    permuted = np.array(data(steps["permuted.weights"]["value"]))
    gap = np.max(np.abs(permuted - weights[np.ix_(order, order)]))
    assert gap <= 1e-14
    assert "up to float rounding" in steps["permuted.weights"]["explanation"]
