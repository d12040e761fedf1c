"""The mistakes a student makes on attn selfattn's steps (the projections, then scaled
dot-product attention's), for the quiz and the marking (attn_cli.course.mistakes)."""

from __future__ import annotations

from dataclasses import replace

from attn_cli.course.mistakes import Mistake, StepMistakes, attention_mistakes
from attn_cli.mechanisms import mistakes as made


def _projection(weight: str) -> StepMistakes:
    """Q = X W_Q (and K, V): the weight transposed, X W_Qᵀ, where W_Q is square."""
    return StepMistakes(
        follows=None,
        mistakes=(
            Mistake(
                f"this is X {weight}ᵀ, with {weight} transposed; the projection is X {weight}",
                lambda g: made.times_transposed(g.input("X"), g.input(weight)),
            ),
        ),
        after=None,
    )


# Q, K and V are the lesson's own steps; the scores are marked against the exact ones.
_ATTENTION = attention_mistakes(lambda g: g.step("Q"), lambda g: g.step("K"), lambda g: g.step("V"))
_WEIGHTS_TIMES_X = Mistake(
    "these are the weights times X; the output is the weights times V = X W_V",
    lambda g: made.scores_times_values(g.step("weights"), g.input("X")),
)

STEPS: dict[str, StepMistakes] = {
    "Q": _projection("W_Q"),
    "K": _projection("W_K"),
    "V": _projection("W_V"),
    **_ATTENTION,
    "output": replace(
        _ATTENTION["output"], mistakes=(*_ATTENTION["output"].mistakes, _WEIGHTS_TIMES_X)
    ),
}
