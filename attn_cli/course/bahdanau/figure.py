"""--plot for attn bahdanau: the weights over the encoder states (the alignment, with --steps)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attn_cli.core.model import Walkthrough
from attn_cli.render.heatmap import (
    as_matrix,
    grid_of,
    optional_step,
    single,
    step_of,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def draw(walkthrough: Walkthrough, precision: int) -> Figure:
    """One decoder step's weights over the encoder states; with --all-scores, one row per score;
    with --steps, the alignment matrix (one row per decoder step), as Bahdanau et al. draw it."""
    alignment = optional_step(walkthrough, "decoder.alignment")
    if alignment is not None:
        grid = grid_of(
            alignment, xlabel="encoder state", ylabel="decoder step", precision=precision
        )
        return single(walkthrough, grid)
    step = step_of(walkthrough, "weights")
    others = [optional_step(walkthrough, f"{name}.weights") for name in ("dot", "general")]
    grid = grid_of(step, xlabel="encoder state", ylabel="decoder step", precision=precision)
    if all(other is not None for other in others):
        rows = [as_matrix(s.value) for s in (step, *others) if s is not None]
        grid = grid.with_rows(np.vstack(rows), ("additive α", "dot α", "general α"), "score")
    return single(walkthrough, grid)
