"""--plot for attn causal: the weights, the future hatched or grey."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    """The weights; future cells hatched: masked (grey, weight 0) or, with --fill zero, leaking."""
    step = step_of(walkthrough, "weights")
    mask, future = optional_step(walkthrough, "mask"), optional_step(walkthrough, "future")
    options: dict[str, Any] = {}
    if mask is not None:  # the additive mask: −∞ where a key is in the query's future
        options["masked"] = np.isneginf(as_matrix(mask.value))
        options["note"] = "grey: masked (a future key), weight exactly 0"
    elif future is not None:  # --fill zero: the future cells that should have been masked
        options["flagged"] = as_matrix(future.value).astype(bool)
        options["note"] = "hatched: future keys, no longer masked (the fill-0 bug)"
    grid = grid_of(step, xlabel="key token", ylabel="query token", precision=precision, **options)
    return single(walkthrough, grid)
