"""--plot for attn flash: the score blocks, one key block at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attn_cli.core.model import Step, Walkthrough
from attn_cli.course.checks import counted
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
    """The tiled algorithm never forms the weights: its score blocks, side by side, outlined."""
    if any(step.key.startswith("tile") for step in walkthrough.steps):
        return single(walkthrough, _tilesgrid_of(walkthrough, precision))
    blocks = [
        s for s in walkthrough.steps if s.key.startswith("block") and s.key.endswith("scores")
    ]
    if not blocks:
        step_of(walkthrough, "block1.scores")  # the one-line error
    values = np.hstack([as_matrix(block.value) for block in blocks])
    labels = tuple(label for block in blocks for label in block.col_labels or ())
    widths = [as_matrix(block.value).shape[1] for block in blocks]
    grid = Grid(
        values=values,
        row_labels=axis_labels(blocks[0].row_labels, values.shape[0]),
        col_labels=axis_labels(labels, values.shape[1]),
        title=f"Scores, one key block at a time ({counted(len(blocks), 'block')})",
        xlabel="keys (a line between blocks)",
        ylabel="queries",
        precision=precision,
        diverging=True,
        masked=np.isneginf(values),
        note="grey: −∞ (masked)" if np.isneginf(values).any() else "",
        blocks=tuple(np.cumsum(widths)[:-1]),
        colorbar_label="score",
    )
    return single(walkthrough, grid)


def _tilesgrid_of(walkthrough: Walkthrough, precision: int) -> Grid:
    """--query-block: each tile's score blocks side by side, the tiles one under another; a
    visit a causal tile skipped is grey like a masked score."""
    tiles: dict[str, list[Step]] = {}
    for step in walkthrough.steps:
        parts = step.key.split(".")
        if len(parts) == 3 and parts[0].startswith("tile") and parts[2] == "scores":
            tiles.setdefault(parts[0], []).append(step)
    widest = max(tiles.values(), key=len)  # a tile that visited every block (the last one)
    widths = [as_matrix(block.value).shape[1] for block in widest]
    rows = []
    for blocks in tiles.values():
        values = np.hstack([as_matrix(block.value) for block in blocks])
        missing = sum(widths) - values.shape[1]  # skipped blocks, wholly in the future
        rows.append(np.hstack([values, np.full((values.shape[0], missing), -np.inf)]))
    values = np.vstack(rows)
    heights = [row.shape[0] for row in rows]
    row_labels = tuple(label for blocks in tiles.values() for label in blocks[0].row_labels or ())
    col_labels = tuple(label for block in widest for label in block.col_labels or ())
    masked = np.isneginf(values)
    return Grid(
        values=values,
        row_labels=axis_labels(row_labels, values.shape[0]),
        col_labels=axis_labels(col_labels, values.shape[1]),
        title=f"Scores, one query tile × key block at a time ({counted(len(tiles), 'tile')}, "
        f"{counted(len(widest), 'block')})",
        xlabel="keys (a line between blocks)",
        ylabel="queries (a line between tiles)",
        precision=precision,
        diverging=True,
        masked=masked,
        note="grey: −∞ (masked, or a block the tile skipped)" if masked.any() else "",
        blocks=tuple(np.cumsum(widths)[:-1]),
        row_blocks=tuple(np.cumsum(heights)[:-1]),
        colorbar_label="score",
    )
