"""The softmax as a student works it on paper (issue 56): e^s and Σ e^s with no maximum
subtracted, shown before the stable form, in every lesson a student works by hand; each head's
raw scores Q_h K_hᵀ before the scale; only the stable form, with a note, where e^s overflows."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attn_cli as attn
from tests.conftest import data

EXP, SUM = "by hand: exp(scores)", "by hand: Σ exp(scores)"
HEAD_EXP, HEAD_SUM = "by hand: exp(scaled scores)", "by hand: Σ exp(scaled scores)"

# The lessons whose softmax a student works by hand, and their weights steps.
WEIGHTS_STEPS = {
    "scaled": ["weights"],
    "selfattn": ["weights"],
    "causal": ["weights"],
    "bahdanau": ["weights"],
    "window": ["weights"],
    "graph": ["weights"],
    "multihead": ["head1.weights", "head2.weights"],
    "block": ["self.head1.weights", "self.head2.weights"],
}


def parts_of(step):
    return {part.label: np.asarray(part.value, dtype=np.float64) for part in step.parts}


def test_the_lectures_softmax_is_on_screen():
    """softmax([0.707, 1.414]) = [2.03/6.14, 4.11/6.14]: the first query of the lecture's
    example, its exps and their sum as the lecture writes them."""
    step = attn.scaled().find("weights")
    parts = parts_of(step)
    root2 = math.sqrt(2)
    exact = np.exp([[1 / root2, root2], [1 / root2, 0.0]])
    np.testing.assert_allclose(parts[EXP], exact, rtol=1e-15)
    np.testing.assert_allclose(parts[SUM], exact.sum(axis=1, keepdims=True), rtol=1e-15)
    assert [f"{x:.2f}" for x in parts[EXP][0]] == ["2.03", "4.11"]
    assert f"{parts[SUM][0, 0]:.2f}" == "6.14"
    labels = [part.label for part in step.parts]
    assert labels[:2] == [EXP, SUM]  # the paper's form first, then the program's
    assert labels[2:] == ["row max", "shifted = scores − row max", "exp(shifted)", "row sum of exp"]


def test_the_2_by_3_example_of_the_issue():
    """Worked by hand: exponentials 2.028, 1, 4.113, sum 7.141 (the tool showed only 0.4931,
    0.2431, 1, sum 1.7362)."""
    s = np.array([[1 / math.sqrt(2), 0.0, math.sqrt(2)]])
    step = attn.scaled(q=[[1.0, 0.0]], k=[[1.0, 1.0], [0.0, 0.0], [2.0, 0.0]], v=[[1], [2], [3]])
    parts = parts_of(step.find("weights"))
    np.testing.assert_allclose(parts[EXP], np.exp(s), rtol=1e-15)
    assert [f"{x:.3f}" for x in parts[EXP][0]] == ["2.028", "1.000", "4.113"]
    assert f"{parts[SUM][0, 0]:.3f}" == "7.141"
    np.testing.assert_allclose(parts["exp(shifted)"][0], [0.4931, 0.2431, 1.0], atol=5e-5)


@pytest.mark.parametrize(
    ("lesson", "key"), [(lesson, key) for lesson, keys in WEIGHTS_STEPS.items() for key in keys]
)
def test_by_hand_gives_the_same_weights_as_the_stable_form(lesson, key):
    """In every lesson a student works by hand: e^s / Σ e^s is the step's weights."""
    step = getattr(attn, lesson)().find(key)
    parts = parts_of(step)
    exp, total = (parts[EXP], parts[SUM]) if EXP in parts else (parts[HEAD_EXP], parts[HEAD_SUM])
    np.testing.assert_allclose(exp.sum(axis=-1, keepdims=True), total, rtol=1e-14)
    np.testing.assert_allclose(exp / total, np.asarray(step.value), rtol=1e-13, atol=1e-300)


def _head1_q_k(lesson):
    """Head 1's queries and keys, read from the walkthrough's own steps."""
    w = getattr(attn, lesson)()
    if lesson == "multihead":
        return w, "head1.weights", *(np.asarray(w.find(f"head1.{n}").value) for n in "QK")
    q, k = (np.asarray(w.find(f"self.{n}").value) for n in "QK")
    d_k = q.shape[1] // w.meta["options"]["heads"]  # head 1: the first d_k columns
    return w, "self.head1.weights", q[:, :d_k], k[:, :d_k]


@pytest.mark.parametrize("lesson", ["multihead", "block"])
def test_each_head_shows_its_raw_scores_before_the_scale(lesson):
    """Q_h K_hᵀ, then ÷ √d_k: the head's scores as a student computes them first."""
    w, key, q, k = _head1_q_k(lesson)
    parts = parts_of(w.find(key))
    raw = next(value for label, value in parts.items() if label.startswith("scores Q Kᵀ"))
    np.testing.assert_allclose(raw, q @ k.T, rtol=1e-13, atol=1e-15)
    scaled = next(value for label, value in parts.items() if label.startswith("scaled scores"))
    np.testing.assert_allclose(scaled, raw / math.sqrt(q.shape[1]), rtol=1e-13, atol=1e-15)


def test_where_exp_overflows_only_the_stable_form_is_shown_and_said():
    """A score of 1000: e^1000 is beyond float64 (e^s overflows above s = 709.78)."""
    w = attn.scaled(q=[[1000.0, 0.0], [1.0, 0.0]], k=[[1.0, 0.0], [0.0, 1.0]], v=[[1], [2]],
                    scale=False)  # fmt: skip
    step = w.find("weights")
    assert not any(part.label.startswith("by hand") for part in step.parts)
    (note,) = [note for note in step.notes if note.key == "by_hand_overflows"]
    text = note.text()
    assert "the largest of the scores, 1000," in text and "709.78" in text
    assert "float64's largest number, 1.798e+308" in text
    np.testing.assert_allclose(np.asarray(step.value)[0], [1.0, 0.0])


def test_just_below_the_overflow_the_paper_form_is_kept():
    """e^709 fits float64 (8.2e307), and so does a row sum of one such entry and e^0."""
    w = attn.scaled(q=[[709.0, 0.0]], k=[[1.0, 0.0], [0.0, 1.0]], v=[[1], [2]], scale=False)
    parts = parts_of(w.find("weights"))
    np.testing.assert_allclose(parts[EXP], [[math.exp(709.0), 1.0]], rtol=1e-15)
    assert not [note for note in w.find("weights").notes if note.key == "by_hand_overflows"]


def test_a_masked_key_is_zero_by_hand_too():
    """causal: e^(−∞) = 0, so the future keys add nothing to Σ e^s."""
    step = attn.causal().find("weights")
    exp = parts_of(step)[EXP]
    assert np.all(exp[np.triu_indices_from(exp, 1)] == 0)
    assert np.all(exp[np.tril_indices_from(exp)] > 0)


def test_every_format_shows_the_paper_form(invoke, invoke_json):
    doc = invoke_json("scaled")
    weights = next(step for step in doc["steps"] if step["key"] == "weights")
    assert list(weights["parts"])[:2] == [EXP, SUM]
    root2 = math.sqrt(2)
    sums = [[math.exp(1 / root2) + math.exp(root2)], [math.exp(1 / root2) + 1.0]]
    np.testing.assert_allclose(data(weights["parts"][SUM]), sums, rtol=1e-15)
    for fmt in ("rich", "markdown", "latex", "html"):
        out = " ".join(invoke("scaled", "--format", fmt).stdout.split())
        assert "by hand" in out and "6.1414" in out, fmt
    assert json.loads(invoke("scaled", "--format", "json").stdout)["lesson"] == "scaled"
