"""--plot for attn posenc: the PE matrix."""

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
    step = step_of(walkthrough, "pe")
    grid = grid_of(
        step,
        xlabel="dimension",
        ylabel="position",
        precision=precision,
        diverging=True,
        colorbar_label="PE value",
    )
    return single(walkthrough, grid)
