"""--plot for attn alibi: one panel per head, its slope in its title."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attn_cli.core.model import Walkthrough
from attn_cli.render.heatmap import (
    as_matrix,
    grid_of,
    head_steps,
    panels,
    step_of,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def draw(walkthrough: Walkthrough, precision: int) -> Figure:
    """One panel per head, on one colour scale, each titled with its slope."""
    heads = head_steps(walkthrough)
    if not heads:
        step_of(walkthrough, "head1.weights")
    top = max(float(np.nanmax(as_matrix(head.value))) for head in heads)
    grids = [
        grid_of(head, xlabel="key position", ylabel="query position", precision=precision, vmax=top)
        for head in heads
    ]
    slopes = walkthrough.meta["slopes"]
    grids = [
        grid.titled(f"head {index}, m = {slope:g}")
        for index, (grid, slope) in enumerate(zip(grids, slopes, strict=True), start=1)
    ]
    return panels(walkthrough, grids)
