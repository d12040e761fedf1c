"""--plot for attn selfattn: the weights between the tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_cli.core.model import Walkthrough
from attn_cli.render.heatmap import (
    grid_of,
    single,
    step_of,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def draw(walkthrough: Walkthrough, precision: int) -> Figure:
    step = step_of(walkthrough, "weights")
    grid = grid_of(step, xlabel="key token", ylabel="query token", precision=precision)
    return single(walkthrough, grid)
