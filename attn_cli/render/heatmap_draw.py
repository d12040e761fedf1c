"""Drawing one labelled matrix as a heatmap (matplotlib is imported inside the functions)."""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.core.numbers import format_number

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap, Normalize
    from matplotlib.figure import Figure

# Up to this many rows and columns each cell shows its value; beyond, the colour alone.
ANNOTATE_LIMIT = 12
# Up to this many rows (columns) every label is shown; beyond, about TICKS_SHOWN of them.
LABEL_LIMIT = 40
TICKS_SHOWN = 20
PANELS_PER_ROW = 4
MASKED_COLOUR = "#d4d4d4"


@dataclass(frozen=True)
class Grid:
    """A matrix to draw, with its labels and how to show it."""

    values: np.ndarray  # 2-D float64
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    title: str
    xlabel: str
    ylabel: str
    precision: int
    diverging: bool = False  # signed values: a blue–red map centred at 0
    masked: np.ndarray | None = None  # cells drawn grey (e.g. masked future keys)
    flagged: np.ndarray | None = None  # cells hatched, colour and value kept
    note: str = ""  # a line under the x label saying what grey or hatching means
    blocks: tuple[int, ...] = ()  # column boundaries drawn as lines (tiles)
    row_blocks: tuple[int, ...] = ()  # row boundaries drawn as lines (query tiles)
    vmax: float | None = None  # a shared scale (heads); else the largest value
    colorbar_label: str = "weight"

    def with_rows(self, values: np.ndarray, labels: tuple[str, ...], ylabel: str) -> Grid:
        return replace(self, values=values, row_labels=labels, ylabel=ylabel)

    def titled(self, title: str) -> Grid:
        return replace(self, title=title)


def new_figure(grids: list[Grid], *, title: str) -> tuple[Figure, list[Axes]]:
    """A figure with one panel per grid (rows of up to PANELS_PER_ROW), sized to the cells."""
    from matplotlib.figure import Figure

    columns = min(len(grids), PANELS_PER_ROW)
    rows = math.ceil(len(grids) / columns)
    width, height = _panel_size(grids[0].values.shape)
    figure = Figure(figsize=(width * columns + 1.2, height * rows + 0.6), layout="constrained")
    axes = list(figure.subplots(rows, columns, squeeze=False).ravel())
    for spare in axes[len(grids) :]:
        spare.remove()
    figure.suptitle(wrap(title, figure.get_figwidth()))
    return figure, axes[: len(grids)]


def paired_figure(
    rows: int, shape: tuple[int, ...], *, title: str
) -> tuple[Figure, list[list[Axes]]]:
    """A figure of ``rows`` rows of two panels (two runs side by side), each sized to
    ``shape``'s cells."""
    from matplotlib.figure import Figure

    width, height = _panel_size(shape)
    figure = Figure(figsize=(2 * width + 1.2, height * rows + 0.8), layout="constrained")
    axes = figure.subplots(rows, 2, squeeze=False)
    figure.suptitle(wrap(title, figure.get_figwidth()))
    return figure, [list(row) for row in axes]


def wrap(text: str, inches: float, size: float = 12) -> str:
    """Break a title into lines that fit the width (about 0.6 em a character)."""
    return "\n".join(textwrap.wrap(text, width=max(20, int(inches * 72 / (0.6 * size))))) or text


def _panel_size(shape: tuple[int, ...]) -> tuple[float, float]:
    """Inches for one panel: about 0.6 in a cell when small, bounded when large."""
    rows, cols = shape
    width = min(max(cols * 0.6 + 1.8, 4.0), 9.0)
    height = min(max(rows * 0.6 + 1.6, 2.4), 7.5)
    return width, height


def draw_grid(figure: Figure, ax: Axes, grid: Grid, *, colorbar: bool = True) -> None:
    """The heatmap of one grid: cells, labels, values (when small), masks, colour bar."""
    import matplotlib as mpl

    values = grid.values
    hidden = ~np.isfinite(values)
    if grid.masked is not None:
        hidden |= grid.masked
    cmap = mpl.colormaps["RdBu_r" if grid.diverging else "Blues"].with_extremes(bad=MASKED_COLOUR)
    norm = _norm(values[~hidden], grid)
    small = max(values.shape) <= LABEL_LIMIT
    image = ax.imshow(
        np.ma.masked_array(values, mask=hidden),
        cmap=cmap,
        norm=norm,
        aspect="equal" if small else "auto",
        interpolation="nearest",
    )
    _ticks(ax, grid)
    if small:
        _cell_borders(ax, values.shape)
    if max(values.shape) <= ANNOTATE_LIMIT:
        _annotate(ax, grid, cmap, norm, hidden)
    if grid.flagged is not None:
        _hatch(ax, grid.flagged)
    for boundary in grid.blocks:
        ax.axvline(boundary - 0.5, color="black", linewidth=2.5)
    for boundary in grid.row_blocks:
        ax.axhline(boundary - 0.5, color="black", linewidth=2.5)
    ax.set_title(wrap(grid.title, _panel_size(values.shape)[0] + 0.6))
    ax.set_xlabel(f"{grid.xlabel}\n{grid.note}" if grid.note else grid.xlabel)
    ax.set_ylabel(grid.ylabel)
    if colorbar:
        figure.colorbar(image, ax=ax, label=grid.colorbar_label, shrink=0.9)


def _norm(shown: np.ndarray, grid: Grid) -> Normalize:
    """Weights from 0 (white) to the largest; signed values symmetric about 0."""
    from matplotlib.colors import Normalize

    largest = float(np.max(np.abs(shown))) if shown.size else 1.0
    if grid.diverging:
        limit = largest or 1.0
        return Normalize(vmin=-limit, vmax=limit)
    top = grid.vmax if grid.vmax is not None else float(np.max(shown)) if shown.size else 1.0
    return Normalize(vmin=0.0, vmax=top if top > 0 else 1.0)


def _ticks(ax: Axes, grid: Grid) -> None:
    rows, cols = grid.values.shape
    x, y = _shown(cols), _shown(rows)
    long = max((len(label) for label in grid.col_labels), default=0) > 4
    ax.set_xticks(x, labels=[grid.col_labels[i] for i in x], rotation=45 if long else 0)
    if long:
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")
    ax.set_yticks(y, labels=[grid.row_labels[i] for i in y])


def _shown(count: int) -> list[int]:
    """Which labels to show: all when few, else every k-th."""
    if count <= LABEL_LIMIT:
        return list(range(count))
    return list(range(0, count, math.ceil(count / TICKS_SHOWN)))


def _cell_borders(ax: Axes, shape: tuple[int, ...]) -> None:
    rows, cols = shape
    ax.set_xticks(np.arange(-0.5, cols, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, rows, 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    ax.tick_params(which="major", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _annotate(ax: Axes, grid: Grid, cmap: Colormap, norm: Normalize, hidden: np.ndarray) -> None:
    """Each cell's value at the output's precision, dark or light to read on its colour."""
    rows, cols = grid.values.shape
    size = 11 if max(rows, cols) <= 5 else 9 if max(rows, cols) <= 8 else 7
    for i in range(rows):
        for j in range(cols):
            value = grid.values[i, j]
            colour = "#555555" if hidden[i, j] else _text_colour(cmap(norm(value)))
            text = format_number(value, grid.precision)
            ax.text(j, i, text, ha="center", va="center", color=colour, fontsize=size)


def _text_colour(rgba: Any) -> str:
    """Black on light cells, white on dark ones (relative luminance of the cell's colour)."""
    red, green, blue = rgba[:3]
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return "black" if luminance > 0.5 else "white"


def _hatch(ax: Axes, flagged: np.ndarray) -> None:
    from matplotlib.patches import Rectangle

    for i, j in zip(*np.nonzero(flagged), strict=True):
        ax.add_patch(
            Rectangle(
                (j - 0.5, i - 0.5),
                1,
                1,
                fill=False,
                hatch="///",
                edgecolor="crimson",
                linewidth=0,
            )
        )
