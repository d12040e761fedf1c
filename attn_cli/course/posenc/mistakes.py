"""The mistakes a student makes on attn posenc's encoding, for the quiz and the marking
(attn_cli.course.mistakes)."""

from __future__ import annotations

import numpy as np

from attn_cli.course.mistakes import Given, Mistake, StepMistakes
from attn_cli.mechanisms import mistakes as made
from attn_cli.mechanisms import posenc


def _omega(given: Given) -> np.ndarray:
    d_model = int(given.option("d_model"))
    pairs = np.arange(d_model // 2, dtype=np.float64)
    return np.asarray(posenc.frequencies(pairs, d_model, float(given.option("base"))))


# Where each pair's sine and cosine go, in each layout (attn_cli.mechanisms.posenc).
_ORDER = {
    "interleaved": "PE(pos, 2i) = sin(pos · wᵢ) and PE(pos, 2i + 1) = cos(pos · wᵢ)",
    "split": "the first d_model/2 columns are the sines sin(pos · wᵢ), the rest the cosines",
}


STEPS: dict[str, StepMistakes] = {
    "pe": StepMistakes(
        follows=None,
        mistakes=(
            Mistake(
                lambda g: "sine and cosine are swapped: " + _ORDER[g.option("layout")],
                lambda g: made.sin_and_cos_swapped(g.step("pe"), g.option("layout")),
            ),
            Mistake(
                "the frequencies read the exponent 2i/d_model as i/d_model: wᵢ = "
                "base^(−2i/d_model), i the pair's number",
                lambda g: made.exponent_without_the_2(
                    int(g.option("positions")), _omega(g), g.option("layout")
                ),
            ),
        ),
        after=None,
    ),
}
