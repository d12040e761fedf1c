"""--plot for attn alibi: one panel per head, its slope in its title."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_cli.core.model import Walkthrough
from attn_cli.render.heatmap import head_grids, panels

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def draw(walkthrough: Walkthrough, precision: int) -> Figure:
    """One panel per head, on one colour scale, each titled with its slope."""
    grids = head_grids(walkthrough, precision, "key position", "query position")
    slopes = walkthrough.meta["slopes"]
    return panels(
        walkthrough,
        [
            grid.titled(f"head {index}, m = {slope:g}")
            for index, (grid, slope) in enumerate(zip(grids, slopes, strict=True), start=1)
        ],
    )
