"""The mistakes a student makes on attn multihead's steps (each head's softmax, the
concatenation, W_O), for the quiz and the marking (attn_cli.course.mistakes)."""

from __future__ import annotations

import math

import numpy as np

from attn_cli.course.mistakes import Given, Mistake, StepMistakes, root_of
from attn_cli.mechanisms import mistakes as made


def _scores(given: Given) -> np.ndarray:
    """The head's raw scores Q_h K_hᵀ."""
    return given.sibling("Q") @ given.sibling("K").T  # (n, d_h) @ (d_h, n)


def _d_h(given: Given) -> int:
    return given.sibling("Q").shape[1]


def _scaled(given: Given) -> np.ndarray:
    return _scores(given) / math.sqrt(_d_h(given))


def _head_outputs(given: Given) -> list[np.ndarray]:
    keys = [step.key for step in given.walkthrough.steps]
    heads = sorted(
        (int(key[4:].split(".")[0]), key)
        for key in keys
        if key.startswith("head") and key.endswith(".output")
    )
    return [given.step(key) for _, key in heads]


# A head's weights have no scores step of their own, so their softmax mistakes are written from
# the head's Q_h and K_h.
STEPS: dict[str, StepMistakes] = {
    "head*.weights": StepMistakes(
        follows=None,  # from the head's Q and K: marked against the exact ones
        mistakes=(
            Mistake(
                lambda g: (
                    f"this is the softmax of Q_h K_hᵀ before dividing by {root_of(_d_h(g))} "
                    "(d_k is the head's width)"
                ),
                lambda g: made.softmax_rows(_scores(g)),
            ),
            Mistake(
                lambda g: (
                    f"this is the softmax of Q_h K_hᵀ divided by d_k = {_d_h(g)}, where the "
                    f"scale is {root_of(_d_h(g))}"
                ),
                lambda g: made.softmax_rows(_scores(g) / _d_h(g)),
            ),
            Mistake(
                "this is the softmax down each column; each row (one query's scores) is the "
                "distribution, so each row of weights sums to 1",
                lambda g: made.softmax_down_columns(_scaled(g)),
            ),
        ),
        after=None,
    ),
    "head*.output": StepMistakes(
        follows=lambda g, a: a @ g.sibling("V"),
        mistakes=(
            Mistake(
                "these are the weights times the head's keys K_h; the output is the weights "
                "times its values V_h",
                lambda g: g.sibling("weights") @ g.sibling("K"),
            ),
        ),
        after="head*.weights",
    ),
    "concat": StepMistakes(
        follows=None,  # from every head's output: marked against the exact ones
        mistakes=(
            Mistake(
                "the heads are side by side in the wrong order (last head first): head 1's "
                "output fills the first columns",
                lambda g: made.heads_in_reverse_order(_head_outputs(g)),
            ),
        ),
        after=None,
    ),
    "output": StepMistakes(
        follows=lambda g, c: c @ g.input("W_O"),
        mistakes=(
            Mistake(
                "this is the concatenation itself: W_O left out (the output is Concat · W_O)",
                lambda g: made.w_o_left_out(g.step("concat")),
            ),
            Mistake(
                "this is Concat · W_Oᵀ, with W_O transposed; the output is Concat · W_O",
                lambda g: made.w_o_transposed(g.step("concat"), g.input("W_O")),
            ),
        ),
        after="concat",
    ),
}
