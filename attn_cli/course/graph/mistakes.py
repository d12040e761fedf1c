"""The mistakes a student makes on attn graph's steps (the scores, the neighbourhood mask and
its softmax), for the quiz and the marking (attn_cli.course.mistakes)."""

from __future__ import annotations

from attn_cli.course.mistakes import Mistake, StepMistakes, mask_mistakes, root_of

STEPS: dict[str, StepMistakes] = {
    "scores": StepMistakes(
        follows=None,  # from two steps, Q and K: marked against the exact ones
        mistakes=(
            Mistake(
                lambda g: (
                    f"these are the scores before dividing by {root_of(g.step('Q').shape[1])}"
                ),
                lambda g: g.step("Q") @ g.step("K").T,  # (N, d_k) @ (d_k, N)
            ),
        ),
        after=None,
    ),
    **mask_mistakes("scores", "mask", "the nodes outside N(i)"),
    "output": StepMistakes(
        follows=lambda g, a: a @ g.step("V"),
        mistakes=(),
    ),
}
