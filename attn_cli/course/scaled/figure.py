"""--plot for attn scaled: the weights as a heatmap."""

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
    return single(walkthrough, grid_of(step, xlabel="keys", ylabel="queries", precision=precision))
