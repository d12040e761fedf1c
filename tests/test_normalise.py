"""attn scaled --normalise: softmax's alternatives as the weights step (issue 16)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.core.errors import UserError
from attn_cli.course import card
from attn_cli.mechanisms.normalise import NORMALISERS
from attn_cli.run.check import check_bundled
from tests.conftest import (
    assert_user_error,
    data,
    entmax15_reference,
    random_qkv,
    sparsemax_reference,
)

LIBRARY = {
    "q": [[1.0, 1.0], [-1.0, -1.0]],
    "k": [[1.0, 0.0], [0.5, 0.5], [-1.0, -1.0]],
    "v": [[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]],
}
NEW_EXAMPLES = (
    "library-sparsemax",
    "cat-slept-sparsemax",
    "library-entmax15",
    "cat-slept-entmax15",
    "library-sigmoid",
    "two-tokens-hardmax",
)
ENTMAX_TAU = "τ: the top k's Σ (z/2 − τ)² = 1"


def dot_scores(q, k, scale: bool) -> list[list[float]]:
    d_k = len(q[0])
    return [
        [sum(a * b for a, b in zip(query, key, strict=True)) / (math.sqrt(d_k) if scale else 1)
         for key in k]
        for query in q
    ]  # fmt: skip


def weighted(weights: list[list[float]], v) -> list[list[float]]:
    return [[sum(w * row[c] for w, row in zip(ws, v, strict=True)) for c in range(len(v[0]))]
            for ws in weights]  # fmt: skip


def steps_of(doc: dict) -> dict[str, dict]:
    return {step["key"]: step for step in doc["steps"]}


def test_the_command_choices_are_the_mechanisms():
    (normalise,) = [option for option in card("scaled").options if option.name == "normalise"]
    assert normalise.choices == tuple(NORMALISERS)


def test_library_sparsemax_by_hand(invoke_json):
    doc = invoke_json("scaled", "--example", "library-sparsemax")
    assert doc["options"]["normalise"] == "sparsemax"
    weights = steps_of(doc)["weights"]
    # Row q: scores 1, 1, −2: k = 2 (1 + 2·1 > 2, 1 + 3·(−2) < 0), τ = (2 − 1)/2 = 0.5.
    # Row q': scores −1, −1, 2: k = 1 (1 + 2·(−1) < 1), τ = 2 − 1 = 1.
    np.testing.assert_array_equal(data(weights["value"]), [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    assert weights["parts"]["τ = (sum of the top k − 1) / k"]["data"] == [[0.5], [1.0]]
    assert weights["parts"]["support size k"]["data"] == [[2], [1]]
    assert "sparsemax" in weights["title"]
    (note,) = weights["notes"]
    assert note["key"] == "sparsemax_zeros"
    assert note["values"] == {"zeros": 3, "total": 6}
    np.testing.assert_array_equal(data(doc["output"]), [[5.0, 5.0], [5.0, 5.0]])


def test_cat_slept_sparsemax_is_dense(invoke_json):
    doc = invoke_json("scaled", "--example", "cat-slept-sparsemax")
    (scores,) = dot_scores([[0.1, 0.9]], [[1, 0], [0, 1], [0.2, 0.1]], scale=False)
    tau = (sum(scores) - 1) / 3  # all three keys in the support: 1 + 3·0.1 > 1.11
    expected = [s - tau for s in scores]
    weights = steps_of(doc)["weights"]
    np.testing.assert_allclose(data(weights["value"]), [expected], rtol=0, atol=1e-15)
    assert [note["key"] for note in weights["notes"]] == ["sparsemax_dense"]
    states = [[1, 0], [0, 1], [0.2, 0.1]]
    np.testing.assert_allclose(data(doc["output"]), weighted([expected], states), atol=1e-15)


def test_library_entmax15_by_hand(invoke_json):
    doc = invoke_json("scaled", "--example", "library-entmax15")
    assert doc["options"]["normalise"] == "entmax15"
    weights = steps_of(doc)["weights"]
    # Row q: x = z/2 = 0.5, 0.5, −1. The top two alone: mean 0.5, no spread, so
    # τ = 0.5 − √(1/2) and each weight (0.5 − τ)² = 1/2; the third: −1 < τ, weight 0.
    # Row q': x = −0.5, −0.5, 1: the top one alone, τ = 1 − 1 = 0, weight (1 − 0)² = 1; with
    # the second, the mean 0.25 and spread 1.125 leave (1 − 1.125)/2 < 0: no such τ.
    np.testing.assert_allclose(
        data(weights["value"]), [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], rtol=1e-15, atol=0
    )
    tau = weights["parts"][ENTMAX_TAU]["data"]
    np.testing.assert_allclose(tau, [[0.5 - math.sqrt(0.5)], [0.0]], rtol=1e-15, atol=1e-16)
    assert weights["parts"]["support size k"]["data"] == [[2], [1]]
    assert "1.5-entmax" in weights["title"]
    (note,) = weights["notes"]
    assert note["key"] == "entmax15_zeros"
    assert note["values"] == {"zeros": 3, "total": 6}
    np.testing.assert_allclose(data(doc["output"]), [[5.0, 5.0], [5.0, 5.0]], rtol=1e-15)


def test_cat_slept_entmax15_is_dense_and_between(invoke_json):
    doc = invoke_json("scaled", "--example", "cat-slept-entmax15")
    (scores,) = dot_scores([[0.1, 0.9]], [[1, 0], [0, 1], [0.2, 0.1]], scale=False)
    expected, tau = entmax15_reference(scores)
    weights = steps_of(doc)["weights"]
    np.testing.assert_allclose(data(weights["value"]), [expected], rtol=1e-12)
    assert weights["parts"][ENTMAX_TAU]["data"][0][0] == pytest.approx(tau, rel=1e-12)
    assert [note["key"] for note in weights["notes"]] == ["entmax15_dense"]
    # Between: the largest weight above softmax's and below sparsemax's.
    softmax = [math.exp(s) / sum(math.exp(t) for t in scores) for s in scores]
    sparse, _ = sparsemax_reference(scores)
    assert softmax[1] < expected[1] < sparse[1]
    states = [[1, 0], [0, 1], [0.2, 0.1]]
    np.testing.assert_allclose(data(doc["output"]), weighted([expected], states), rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_entmax15_against_a_bisection_on_random_rows_with_ties(seed):
    rng = np.random.default_rng(seed)
    m, n = 5, int(rng.integers(2, 9))
    scores = np.round(rng.standard_normal((m, n)) * 2) / 2  # halves: many ties
    scores[0] = 0.5  # a row all tied
    w = attn.scaled(q=scores, k=np.eye(n), v=np.eye(n), scale=False, normalise="entmax15")
    step = w.find("weights")
    parts = {part.label: part.value for part in step.parts}
    for row, weights, tau, k in zip(
        scores, step.value, parts[ENTMAX_TAU], parts["support size k"], strict=True
    ):
        expected, expected_tau = entmax15_reference(row.tolist())
        np.testing.assert_allclose(weights, expected, rtol=1e-12, atol=1e-14)
        assert tau[0] == pytest.approx(expected_tau, rel=1e-12, abs=1e-14)
        assert math.isclose(sum(weights), 1.0, rel_tol=1e-14)
        assert all(x == 0 for x, e in zip(weights, expected, strict=True) if e == 0)
        assert k[0] == sum(1 for x in weights if x > 0)


def test_library_sigmoid_by_hand(invoke_json):
    doc = invoke_json("scaled", "--example", "library-sigmoid")
    expected = []
    for row in dot_scores(LIBRARY["q"], LIBRARY["k"], scale=False):
        gates = [1 / (1 + math.exp(-s)) for s in row]
        expected.append([g / sum(gates) for g in gates])
    weights = steps_of(doc)["weights"]
    np.testing.assert_allclose(data(weights["value"]), expected, rtol=0, atol=1e-15)
    assert weights["notes"][0]["key"] == "sigmoid_dense"
    np.testing.assert_allclose(data(doc["output"]), weighted(expected, LIBRARY["v"]), atol=1e-14)


def test_two_tokens_hardmax_and_its_missing_gradient(invoke_json):
    doc = invoke_json("scaled", "--example", "two-tokens-hardmax")
    weights = steps_of(doc)["weights"]
    # scaled scores: row 1 (1, 2)/√2 → key 2; row 2 (1, 0)/√2 → key 1
    assert data(weights["value"]) == [[0.0, 1.0], [1.0, 0.0]]
    assert data(doc["output"]) == [[0.3, 0.4], [0.1, 0.2]]
    assert "hardmax_gradient" in [note["key"] for note in doc["notes"]]
    assert "gradient" in weights["explanation"]


def test_hardmax_ties_share_the_weight():
    w = attn.scaled(**LIBRARY, scale=False, normalise="hardmax")
    np.testing.assert_array_equal(w.step("weights"), [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize("seed", range(6))
def test_sparsemax_against_the_papers_algorithm_on_random_rows_with_ties(seed):
    rng = np.random.default_rng(seed)
    m, n = 5, int(rng.integers(2, 9))
    scores = np.round(rng.standard_normal((m, n)) * 2) / 2  # halves: many ties
    scores[0] = 0.5  # a row all tied
    w = attn.scaled(q=scores, k=np.eye(n), v=np.eye(n), scale=False, normalise="sparsemax")
    step = w.find("weights")
    taus = dict((part.label, part.value) for part in step.parts)["τ = (sum of the top k − 1) / k"]
    for row, weights, tau in zip(scores, step.value, taus, strict=True):
        expected, expected_tau = sparsemax_reference(row.tolist())
        np.testing.assert_allclose(weights, expected, rtol=1e-14, atol=1e-15)
        assert tau[0] == pytest.approx(expected_tau, rel=1e-14, abs=1e-15)
        assert math.isclose(sum(weights), 1.0, rel_tol=1e-14)
        assert all(x == 0 for x, e in zip(weights, expected, strict=True) if e == 0)


@pytest.mark.parametrize("normaliser", ["sparsemax", "entmax15", "sigmoid", "hardmax"])
def test_masked_keys_get_exactly_zero(normaliser):
    q, k, v = random_qkv(3, 4, 5)
    w = attn.scaled(q, k, v, valid_len=[2, 3, 5, 1], normalise=normaliser)
    weights = w.step("weights")
    for row, length in zip(weights, [2, 3, 5, 1], strict=True):
        assert (row[length:] == 0).all()
        assert math.isclose(row.sum(), 1.0, rel_tol=1e-14)
    keys = [note.key for note in w.find("weights").notes]
    assert keys[-1] == "masked_zeros"
    assert w.find("weights").notes[-1].values["masked"] == 3 + 2 + 0 + 4


def test_dropout_after_sparsemax_keeps_its_zeros():
    w = attn.scaled(**LIBRARY, scale=False, normalise="sparsemax", dropout=0.5, seed=1)
    before, after = w.step("weights"), w.step("dropout")
    assert (after[before == 0] == 0).all()
    kept = after != 0
    np.testing.assert_allclose(after[kept], before[kept] / 0.5, rtol=1e-15)
    assert "dropout_normalised" in [note.key for note in w.notes]


def test_softmax_is_the_default_and_unchanged(invoke):
    default = invoke("scaled", "--example", "library")
    explicit = invoke("scaled", "--example", "library", "--normalise", "softmax")
    assert default.exit_code == 0 and default.stdout == explicit.stdout
    doc = json.loads(invoke("scaled", "--format", "json").stdout)
    assert doc["options"]["normalise"] == "softmax"
    assert steps_of(doc)["weights"]["title"].startswith("Weights  A = softmax")


def test_torch_agrees_with_numpy(torch):
    q, k, v = random_qkv(5, 4, 6)
    for normaliser in ("sparsemax", "entmax15", "sigmoid", "hardmax"):
        ours = attn.scaled(q, k, v, normalise=normaliser, valid_len=[3, 6, 2, 4])
        theirs = attn.scaled(q, k, v, normalise=normaliser, valid_len=[3, 6, 2, 4],
                             backend="torch")  # fmt: skip
        np.testing.assert_allclose(
            theirs.step("weights"), ours.step("weights"), rtol=1e-12, atol=1e-15
        )
        np.testing.assert_allclose(theirs.output, ours.output, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("example", NEW_EXAMPLES)
def test_quiz_runs(invoke, example):
    result = invoke("scaled", "--quiz", "--example", example)
    assert result.exit_code == 0, result.output
    assert "Weights" in result.stdout


def test_attn_check_passes_the_new_examples():
    (scaled,) = [result for result in check_bundled() if result.lesson == "scaled"]
    checked = {example.name: example for example in scaled.examples}
    for name in NEW_EXAMPLES:
        assert checked[name].checked and not checked[name].errata, name


def test_a_normaliser_that_is_not_one_is_a_user_error(invoke, tmp_path):
    assert_user_error(invoke("scaled", "--normalise", "argmax"), "--normalise", "argmax")
    with pytest.raises(UserError, match=r"^normalise='argmax' is not a normaliser"):
        attn.scaled(**LIBRARY, normalise="argmax")
    own = tmp_path / "own.toml"
    own.write_text(
        'lesson = "scaled"\n[[examples]]\nname = "x"\noptions = { normalise = "max" }\n'
        "[examples.inputs]\nQ = [[1]]\nK = [[1]]\nV = [[1]]\n",
        encoding="utf-8",
    )
    assert_user_error(invoke("scaled", "--lesson", str(own)), "normalise", "max")
