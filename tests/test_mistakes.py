"""The mistake library (issue 56) on inputs other than the lecture's: each mistake a student
makes at a step of attn scaled is named from its numbers at the student's decimals, a step right
for the student's own wrong answer is said to follow from it, and a right answer is never given
a diagnosis."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attn_cli as attn
from attn_cli import course
from attn_cli.core.rounding import parse_rounded
from attn_cli.course.mistakes import diagnosis
from attn_cli.mechanisms import mistakes as made

STEPS = course.mistakes_of("scaled")


def typed(row: np.ndarray, decimals: int) -> list:
    return [parse_rounded(f"{x:.{decimals}f}") for x in row]


@pytest.fixture(scope="module", params=[0, 1, 2])
def run(request):
    """Random 3 × 3 inputs (d_k = n = 3, so Q K is possible), each seed its own."""
    rng = np.random.default_rng(request.param)
    q, k, v = (rng.normal(size=(3, 3)).round(2) for _ in range(3))
    return attn.scaled(q, k, v), q, k, v


def _cases(q, k, v):
    s = q @ k.T
    scaled = s / math.sqrt(3)
    weights = made.softmax_rows(scaled)
    return [
        ("scores", q @ k, "these are Q K, with K not transposed"),
        ("scores", k @ q.T, "these are the scores transposed"),
        ("scaled", s, "these are the scores before dividing by √d_k = √3 = 1.7321"),
        ("scaled", s / 3, "divided by d_k = 3"),
        ("scaled", s * math.sqrt(3), "multiplied by √d_k = √3 = 1.7321"),
        ("weights", made.softmax_rows(scaled.T).T, "the softmax down each column"),
        ("weights", np.exp(scaled), "these are e^s, not yet divided"),
        ("weights", made.softmax_rows(s), "the softmax of the scores before dividing"),
        ("output", scaled @ v, "these are the scaled scores times V"),
        ("output", weights.T @ v, None),  # no such mistake declared: only marked
    ]


@pytest.mark.parametrize("decimals", [2, 4])
def test_each_mistake_is_named_at_the_students_decimals(run, decimals):
    walkthrough, q, k, v = run
    for key, wrong, named in _cases(q, k, v):
        found = diagnosis(STEPS, walkthrough, key, 0, typed(wrong[0], decimals), None)
        if named is None:
            assert found is None, (key, found)
        else:
            assert found is not None and found[0] == "mistake" and named in found[1], (key, found)


def test_a_right_answer_is_never_diagnosed(run):
    walkthrough, *_ = run
    for step in walkthrough.steps:
        exact = np.atleast_2d(np.asarray(step.value, dtype=np.float64))
        for row in range(exact.shape[0]):
            assert diagnosis(STEPS, walkthrough, step.key, row, typed(exact[row], 4), None) is None


def test_a_step_right_for_the_students_own_wrong_answer_follows_from_it(run):
    walkthrough, q, k, v = run
    their_scaled = q @ k.T  # not divided by √3
    their_weights = made.softmax_rows(their_scaled)
    found = diagnosis(STEPS, walkthrough, "weights", 1, typed(their_weights[1], 4), their_scaled)
    assert found == ("follows", "right for your scaled step")
    found = diagnosis(
        STEPS, walkthrough, "output", 2, typed((their_weights @ v)[2], 4), their_weights
    )
    assert found == ("follows", "right for your weights step")
    # A mistake made on the student's own numbers is said to be from them.
    found = diagnosis(
        STEPS, walkthrough, "weights", 0, typed(np.exp(their_scaled)[0], 4), their_scaled
    )
    assert found == (
        "mistake",
        "these are e^s, not yet divided by the row's sum Σ e^s (from your scaled step)",
    )
