"""The mistakes a student makes on attn block's LayerNorm steps, for the quiz and the marking
(attn_cli.course.mistakes)."""

from __future__ import annotations

from attn_cli.course.mistakes import Given, Mistake, StepMistakes
from attn_cli.mechanisms import mistakes as made


def _unbiased(given: Given):
    stats = given.sibling("stats")  # (n, 3): mean μ, variance σ², √(σ² + ε)
    return made.layer_norm_unbiased(given.step(given.key), stats[:, 1], float(given.option("eps")))


STEPS: dict[str, StepMistakes] = {
    "norm*.normalised": StepMistakes(
        follows=None,  # from the row's μ and σ² (the stats step): marked against the exact ones
        mistakes=(
            Mistake(
                "these rows are normalised with the n − 1 variance, Σ(x − μ)² / (d − 1); "
                "LayerNorm divides by d (PyTorch's unbiased=False)",
                _unbiased,
            ),
        ),
        after=None,
    ),
}
