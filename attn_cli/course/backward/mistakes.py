"""The mistakes a student makes on attn backward's steps (the forward's as attn scaled's, then
dV, dA, dZ, the scale and dQ, dK), for the quiz and the marking (attn_cli.course.mistakes)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from attn_cli.course.mistakes import Given, Mistake, StepMistakes, attention_mistakes, root_of
from attn_cli.mechanisms import mistakes as made


def _has(given: Given, key: str) -> bool:
    return any(step.key == key for step in given.walkthrough.steps)


def _matrix(name: str) -> Callable[[Given], np.ndarray]:
    """Q, K or V: the input, or with tokens X the projection step of that name."""
    return lambda g: g.step(name) if _has(g, name) else g.input(name)


q, k, v = _matrix("Q"), _matrix("K"), _matrix("V")


def _d_k(given: Given) -> int:
    return q(given).shape[1]


def _d_s(given: Given, before: np.ndarray | None = None) -> np.ndarray:
    """dS as the step before gives it (the student's own), else the walkthrough's: d_scores,
    or d_logits where the scores are not scaled (dS = dZ)."""
    if before is not None:
        return before
    return given.step("d_scores") if _has(given, "d_scores") else given.step("d_logits")


def _times(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    return x @ y if x.shape[1] == y.shape[0] else None


def _softmax_backward(given: Given, d_a: np.ndarray) -> np.ndarray:
    a = given.step("weights")
    return a * (d_a - np.sum(d_a * a, axis=-1, keepdims=True))


FORWARD = attention_mistakes(q, k, v)

STEPS: dict[str, StepMistakes] = {
    **FORWARD,
    # O = A V follows the weights (the log-sum-exp L is shown between them).
    "output": replace(FORWARD["output"], after="weights"),
    "d_v": StepMistakes(
        follows=lambda g, a: a.T @ g.input("dO"),
        mistakes=(
            Mistake(
                "this is A dO, with A not transposed: value row j collects dO's rows with the "
                "weights of column j of A (the attention key j received), Aᵀ dO",
                lambda g: made.value_gradient_untransposed(g.before, g.input("dO")),
            ),
        ),
        after="weights",
    ),
    "d_weights": StepMistakes(
        follows=None,
        mistakes=(
            Mistake(
                "this is dO V, with V not transposed: entry (i, j) is dO's row i dotted with "
                "value row j, dO Vᵀ",
                lambda g: made.weight_gradient_untransposed(g.input("dO"), v(g)),
            ),
        ),
        after=None,
    ),
    "d_logits": StepMistakes(
        follows=_softmax_backward,
        mistakes=(
            Mistake(
                "this is A ∘ dA: the row's weighted average D = rowsum(dA ∘ A) is never "
                "subtracted (the Jacobian's −a aᵀ part is left out)",
                lambda g: made.softmax_backward_without_d(g.step("weights"), g.before),
            ),
            Mistake(
                "this is A ∘ (1 − A) ∘ dA: the Jacobian's diagonal w (1 − w) alone, as if each "
                "weight moved with its own score only; every weight moves with every score of "
                "its row",
                lambda g: made.softmax_backward_diagonal(g.step("weights"), g.before),
            ),
            Mistake(
                "this is dA − D, not yet multiplied by A",
                lambda g: made.softmax_backward_not_weighted(g.step("weights"), g.before),
            ),
        ),
        after="d_weights",
    ),
    "d_scores": StepMistakes(
        follows=lambda g, d_z: d_z / math.sqrt(_d_k(g)),
        mistakes=(
            Mistake(
                lambda g: f"this is dZ before dividing by {root_of(_d_k(g))}",
                lambda g: made.not_scaled(g.before, _d_k(g)),
            ),
            Mistake(
                lambda g: f"this is dZ multiplied by {root_of(_d_k(g))}, where it is divided",
                lambda g: made.multiplied_by_root(g.before, _d_k(g)),
            ),
        ),
        after="d_logits",
    ),
    # dQ and dK from dS: the step just before dQ (d_scores, or d_logits unscaled); dK's is
    # named, and where the scores are not scaled it is d_logits, read by _d_s.
    "d_q": StepMistakes(
        follows=lambda g, d_s: _d_s(g, d_s) @ k(g),
        mistakes=(
            Mistake(
                "this is dS Q, with Q where K goes: S = Q Kᵀ, so a query's gradient adds up "
                "the keys, dS K",
                lambda g: _times(_d_s(g, g.before), q(g)),
            ),
        ),
    ),
    "d_k": StepMistakes(
        follows=lambda g, d_s: _d_s(g, d_s).T @ q(g),
        mistakes=(
            Mistake(
                "this is dS Q, with dS not transposed: key j collects column j of dS, dSᵀ Q",
                lambda g: _times(_d_s(g, g.before), q(g)),
            ),
            Mistake(
                "this is dSᵀ K, with K where Q goes: a key's gradient adds up the queries",
                lambda g: _times(_d_s(g, g.before).T, k(g)),
            ),
        ),
        after="d_scores",
    ),
}
