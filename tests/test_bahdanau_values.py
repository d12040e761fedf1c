"""attn bahdanau --values: the context Σ αᵢ vᵢ with values that differ from the keys hᵢ.

A direct float64 formula, and the textbook's AdditiveAttention(queries, keys, values) written
out in torch (W_k = W1 on the keys, W_q = W2 on the query, w_v = v), with and without dropout.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import attn_cli as attn
from tests.conftest import assert_user_error, unwrap


def inputs(seed: int, n: int = 4, d_s: int = 3, d_h: int = 2, d_a: int = 5, d_v: int = 6):
    rng = np.random.default_rng(seed)
    return {
        "s": rng.standard_normal(d_s),
        "h": rng.standard_normal((n, d_h)),
        "w1": rng.standard_normal((d_a, d_h)),
        "w2": rng.standard_normal((d_a, d_s)),
        "v": rng.standard_normal(d_a),
        "values": rng.standard_normal((n, d_v)),
    }


def reference(given: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """α = softmax(vᵀ tanh(W1 hᵢ + W2 s)) and the context Σ αᵢ valuesᵢ, in float64."""
    scores = np.array(
        [given["v"] @ np.tanh(given["w1"] @ h_i + given["w2"] @ given["s"]) for h_i in given["h"]]
    )
    e = np.exp(scores - scores.max())
    alpha = e / e.sum()
    return alpha, sum(a * row for a, row in zip(alpha, given["values"], strict=True))


@pytest.mark.parametrize(("seed", "n", "d_v"), [(0, 4, 6), (1, 1, 2), (2, 7, 1), (3, 3, 3)])
def test_context_is_the_weighted_values(seed, n, d_v):
    given = inputs(seed, n=n, d_v=d_v)
    walk = attn.bahdanau(**given)
    alpha, context = reference(given)
    np.testing.assert_allclose(walk.step("weights"), alpha, rtol=0, atol=1e-15)
    np.testing.assert_allclose(walk.output, context, rtol=0, atol=1e-14)
    assert walk.output.shape == (d_v,)
    step = walk.find("context")
    assert step.title == "Context  cₜ = Σᵢ αᵢ vᵢ" and f"d_v = {d_v}" in step.explanation
    shown = {item.name: item for item in walk.inputs}
    np.testing.assert_array_equal(shown["values"].value, given["values"])


def test_without_values_the_context_averages_the_keys():
    given = inputs(4)
    del given["values"]
    walk = attn.bahdanau(**given)
    _, context = reference({**given, "values": given["h"]})
    np.testing.assert_allclose(walk.output, context, rtol=0, atol=1e-14)
    step = walk.find("context")
    assert step.title == "Context  cₜ = Σᵢ αᵢ hᵢ"
    assert "the values are the encoder states themselves" in step.explanation
    assert "values" not in {item.name for item in walk.inputs}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_agrees_with_the_textbooks_additive_attention(torch, backend):
    """d2l's AdditiveAttention: features = W_q(q) + W_k(k); scores = w_v(tanh(features))."""
    given = inputs(5, n=5, d_s=3, d_h=4, d_a=6, d_v=2)
    nn = torch.nn
    w_k = nn.Linear(4, 6, bias=False, dtype=torch.float64)
    w_q = nn.Linear(3, 6, bias=False, dtype=torch.float64)
    w_v = nn.Linear(6, 1, bias=False, dtype=torch.float64)
    with torch.no_grad():
        w_k.weight.copy_(torch.from_numpy(given["w1"]))
        w_q.weight.copy_(torch.from_numpy(given["w2"]))
        w_v.weight.copy_(torch.from_numpy(given["v"])[None])
    queries = torch.from_numpy(given["s"])[None, None]  # (batch 1, 1 query, d_s)
    keys = torch.from_numpy(given["h"])[None]  # (1, n, d_h)
    values = torch.from_numpy(given["values"])[None]  # (1, n, d_v)

    def additive(dropout: torch.nn.Module):
        features = torch.tanh(w_q(queries).unsqueeze(2) + w_k(keys).unsqueeze(1))
        weights = torch.softmax(w_v(features).squeeze(-1), dim=-1)  # (1, 1, n)
        return weights, torch.bmm(dropout(weights), values)  # (1, 1, d_v)

    with torch.no_grad():
        weights, context = additive(nn.Identity())
    walk = attn.bahdanau(**given, backend=backend)
    np.testing.assert_allclose(walk.step("weights"), weights[0, 0].numpy(), atol=1e-15)
    np.testing.assert_allclose(walk.output, context[0, 0].numpy(), rtol=0, atol=1e-14)

    # In training: self.dropout(attention_weights) under torch.manual_seed, as the book runs it.
    torch.manual_seed(7)
    with torch.no_grad():
        _, dropped_context = additive(nn.Dropout(0.5).train())
    walk = attn.bahdanau(**given, dropout=0.5, seed=7, backend="torch")
    np.testing.assert_allclose(walk.output, dropped_context[0, 0].numpy(), rtol=0, atol=1e-14)


def test_values_on_top_of_an_example_with_compare(invoke_json):
    values = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    doc = invoke_json("bahdanau", "--example", "cat-slept", "--values", json.dumps(values))
    steps = {step["key"]: step for step in doc["steps"]}
    assert doc["inputs"]["values"]["data"] == values
    for form in ("", "dot.", "general."):
        weights = np.asarray(unwrap(steps[f"{form}weights"]["value"]))
        context = np.asarray(unwrap(steps[f"{form}context"]["value"]))
        np.testing.assert_allclose(context, weights.reshape(-1) @ np.asarray(values), atol=1e-14)
    contexts = np.asarray(unwrap(steps["compare.contexts"]["value"]))
    assert contexts.shape == (3, 3)
    assert any("averages the values vᵢ" in note["text"] for note in doc["notes"])


def test_values_in_a_lesson_file(invoke_json, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        """lesson = "bahdanau"
[[examples]]
name = "mine"
[examples.inputs]
s_t = [1, 0]
H = [[1, 0], [0, 1]]
W1 = [[1, 0], [0, 1]]
W2 = [[1, 0], [0, 1]]
v = [1, 1]
values = [[10], [20]]
""",
        encoding="utf-8",
    )
    doc = invoke_json("bahdanau", "--lesson", str(path))
    weights = np.asarray(unwrap(doc["steps"][5]["value"]))
    assert doc["steps"][5]["key"] == "weights"
    np.testing.assert_allclose(unwrap(doc["output"]), [weights @ [10.0, 20.0]], atol=1e-14)


@pytest.mark.parametrize(
    ("values", "fragments"),
    [
        ("1,2;3,4", ("--values has 2 rows but --h has 3", "one value row per encoder state")),
        ("1;2;3;4", ("--values has 4 rows but --h has 3",)),
    ],
)
def test_wrong_number_of_value_rows_is_one_line(invoke, values, fragments):
    result = invoke("bahdanau", "--example", "cat-slept", "--values", values)
    assert_user_error(result, *fragments)


def test_values_on_top_of_random_sizes_are_averaged(invoke_json):
    """--n 3 draws the states and weights; the values given are what the context averages."""
    doc = invoke_json("bahdanau", "--n", "3", "--values", "1;2;3")
    steps = {step["key"]: step for step in doc["steps"]}
    alpha = np.ravel(np.array(unwrap(steps["weights"]["value"]), dtype=float))
    context = np.ravel(np.array(unwrap(steps["context"]["value"]), dtype=float))
    assert abs(context[0] - alpha @ [1.0, 2.0, 3.0]) <= 1e-15
