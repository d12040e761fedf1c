"""The mistakes a student makes on attn window's steps (the scores, the scale, the band mask and
its softmax), for the quiz and the marking (attn_cli.course.mistakes)."""

from __future__ import annotations

from attn_cli.course.mistakes import Mistake, StepMistakes, attention_mistakes, mask_mistakes
from attn_cli.mechanisms import mistakes as made

_ATTENTION = attention_mistakes(
    lambda g: g.input("Q"), lambda g: g.input("K"), lambda g: g.input("V")
)

STEPS: dict[str, StepMistakes] = {
    "scores": _ATTENTION["scores"],
    "scaled": _ATTENTION["scaled"],
    **mask_mistakes("scaled", "band", "the keys outside the window"),
    "output": StepMistakes(
        follows=_ATTENTION["output"].follows,
        mistakes=(
            Mistake(
                "these are the masked scores times V; the output is the weights times V",
                lambda g: made.scores_times_values(g.step("masked"), g.input("V")),
            ),
        ),
    ),
}
