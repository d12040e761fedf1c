"""The mistakes a student makes on attn bahdanau's weights and context, for the quiz and the
marking (attn_cli.course.mistakes)."""

from __future__ import annotations

from attn_cli.course.mistakes import SOFTMAX_MISTAKES, Mistake, StepMistakes, softmax_follows

STEPS: dict[str, StepMistakes] = {
    "weights": StepMistakes(follows=softmax_follows, mistakes=SOFTMAX_MISTAKES, after="scores"),
    "context": StepMistakes(
        follows=lambda g, a: a @ g.input("H"),
        mistakes=(
            Mistake(
                "this is the scores times the encoder states, Σ eᵢ hᵢ: the context weighs them "
                "by the softmax αᵢ, not by the scores",
                lambda g: g.step("scores") @ g.input("H"),
            ),
        ),
        after="weights",
    ),
}
