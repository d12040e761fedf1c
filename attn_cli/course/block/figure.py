"""--plot for attn block: the layer's attention weights, one panel per head."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attn_cli.core.model import Walkthrough
from attn_cli.render.heatmap import (
    as_matrix,
    grid_of,
    panels,
    step_of,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def draw(walkthrough: Walkthrough, precision: int) -> Figure:
    """The layer's attention weights, one panel per head: self-attention's, then (decoder)
    cross-attention's over the memory, layer by layer in a stack; one colour scale."""
    heads = [s for s in walkthrough.steps if s.kind == "weights" and s.key.endswith(".weights")]
    if not heads:
        step_of(walkthrough, "self.head1.weights")
    # The largest finite weight; NaN when every weight is NaN (rows that may see no key), without
    # numpy's "All-NaN slice" warning on stderr.
    finite = [m[np.isfinite(m)] for m in (np.asarray(as_matrix(h.value)) for h in heads)]
    top = max((float(np.max(m)) for m in finite if m.size), default=float("nan"))
    grids = []
    for head in heads:
        cross = ".cross." in f".{head.key}"
        grid = grid_of(
            head,
            xlabel="memory row" if cross else "key token",
            ylabel="query token",
            precision=precision,
            vmax=top,
        )
        parts = head.key.split(".")  # [layerK.]self.headN.weights
        number = parts[-2].removeprefix("head")
        layer = f"layer {parts[0].removeprefix('layer')} " if len(parts) == 4 else ""
        title = f"{layer}{'cross' if cross else 'self'}-attention head {number}"
        grids.append(grid.titled(title))
    return panels(walkthrough, grids)
