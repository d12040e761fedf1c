"""--plot for attn kvcache: one generation step's weights per row."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attn_cli.core.model import Walkthrough
from attn_cli.render.heatmap import (
    as_matrix,
    axis_labels,
    single,
    step_of,
)
from attn_cli.render.heatmap_draw import Grid

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def draw(walkthrough: Walkthrough, precision: int) -> Figure:
    """Each generation step's weights as one row: the lower triangle of causal attention."""
    rows = [step for step in walkthrough.steps if step.key.startswith("token")]
    if not rows:
        step_of(walkthrough, "token1")  # the one-line error
    # Every step, or past 32 tokens the steps shown: row r is token t_r's weights over t_r keys.
    weights = [as_matrix(step.value)[0] for step in rows]
    n, width = len(rows), max(len(row) for row in weights)
    values = np.zeros((n, width))
    for i, row in enumerate(weights):
        values[i, : len(row)] = row
    held = np.arange(width)[None, :] < np.array([len(row) for row in weights])[:, None]
    grid = Grid(
        values=values,
        row_labels=axis_labels(tuple(label for s in rows for label in s.row_labels or ()), n),
        col_labels=axis_labels(rows[-1].col_labels, width),
        title=f"Weights, one generation step per row ({n} steps)",
        xlabel="cached key",
        ylabel="new query",
        precision=precision,
        masked=~held,
        note="grey: not in the cache yet",
    )
    return single(walkthrough, grid)
