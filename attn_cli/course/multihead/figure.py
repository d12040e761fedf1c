"""--plot for attn multihead: one panel per head."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_cli.core.model import Walkthrough
from attn_cli.render.heatmap import head_grids, panels

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def draw(walkthrough: Walkthrough, precision: int) -> Figure:
    """One panel per head, on one colour scale."""
    return panels(walkthrough, head_grids(walkthrough, precision, "key token", "query token"))
