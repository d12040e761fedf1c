"""The mistakes a student makes on attn causal's steps (the mask M, the padding P, the masked
scores and their softmax), for the quiz and the marking (attn_cli.course.mistakes)."""

from __future__ import annotations

import numpy as np

from attn_cli.course.mistakes import SOFTMAX_MISTAKES, Given, Mistake, StepMistakes, softmax_follows
from attn_cli.mechanisms import mistakes as made


def _has(given: Given, key: str) -> bool:
    return any(step.key == key for step in given.walkthrough.steps)


def _padding(given: Given) -> np.ndarray:
    """P where the run pads (valid_len), else 0: what the masked scores add beside M."""
    return given.step("padding") if _has(given, "padding") else np.zeros(1)


def _masks(given: Given) -> np.ndarray:
    return given.step("mask") + _padding(given)  # (n, n): M + P


def _masked_follows(given: Given, before: np.ndarray) -> np.ndarray:
    """S + M + P with the student's own mask step (the one just before) in its place."""
    if _has(given, "padding"):
        return given.step("scores") + given.step("mask") + before
    return given.step("scores") + before + _padding(given)


_WRONG_TRIANGLE = (
    "the mask is on the wrong triangle: −∞ below the diagonal blocks the keys before each "
    "query, where the causal mask blocks those after it (j > i)"
)
_ZEROS = (
    "the masked entries are 0, where the mask makes them −∞: a score of 0 still has weight "
    "e⁰ = 1, so the future keys keep weight"
)
_UNMASKED = "these are the scores unmasked: the future keys need −∞ (adding 0 masks nothing)"
_QUERIES = (
    "the padding is on the queries (rows), where it blocks the padded keys (columns): a padded "
    "key gets no weight, while a padded query's row is still computed"
)


def _wrong_triangle(given: Given) -> np.ndarray | None:
    flipped = made.mask_on_the_wrong_triangle(given.step("mask"))
    return None if flipped is None else given.step("scores") + flipped + _padding(given)


def _padding_on_queries(given: Given) -> np.ndarray | None:
    if not _has(given, "padding"):
        return None
    moved = made.padding_on_the_queries(given.step("padding"))
    return None if moved is None else given.step("scores") + given.step("mask") + moved


def _softmax_of(masked: np.ndarray | None) -> np.ndarray | None:
    return None if masked is None else made.softmax_rows(masked)


STEPS: dict[str, StepMistakes] = {
    "mask": StepMistakes(
        follows=None,
        mistakes=(
            Mistake(_WRONG_TRIANGLE, lambda g: made.mask_on_the_wrong_triangle(g.step("mask"))),
            Mistake(
                "this mask writes 1 for a blocked key; the mask adds −∞ there and 0 elsewhere",
                lambda g: np.isneginf(g.step("mask")).astype(np.float64),
            ),
            Mistake(
                "a mask of 0s masks nothing: the future keys (j > i) need −∞",
                lambda g: np.zeros_like(g.step("mask")),
            ),
        ),
        after=None,
    ),
    "padding": StepMistakes(
        follows=None,
        mistakes=(Mistake(_QUERIES, lambda g: made.padding_on_the_queries(g.step("padding"))),),
        after=None,
    ),
    "masked": StepMistakes(
        follows=_masked_follows,
        mistakes=(
            Mistake(_UNMASKED, lambda g: g.step("scores") + _padding(g)),
            Mistake(_WRONG_TRIANGLE, _wrong_triangle),
            Mistake(_ZEROS, lambda g: made.masked_with_zeros(g.step("scores"), _masks(g))),
            Mistake(_QUERIES, _padding_on_queries),
        ),
    ),
    "weights": StepMistakes(
        follows=softmax_follows,
        mistakes=(
            *SOFTMAX_MISTAKES,
            Mistake(
                "this is the softmax of the unmasked scores: the future keys keep weight",
                lambda g: made.softmax_rows(g.step("scores") + _padding(g)),
            ),
            Mistake(_ZEROS, lambda g: made.softmax_masked_with_zeros(g.step("scores"), _masks(g))),
            Mistake(_WRONG_TRIANGLE, lambda g: _softmax_of(_wrong_triangle(g))),
        ),
    ),
}
