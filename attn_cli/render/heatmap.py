"""--plot on the lessons: the picture the lectures draw (matplotlib, an optional extra).

Data-driven like every renderer: each figure is drawn from the walkthrough's step values and
labels, never recomputed. matplotlib is imported only here, and only when a plot is asked for;
figures are plain ``matplotlib.figure.Figure`` objects (no pyplot, no backend switched), so a
notebook's own matplotlib set-up is left alone.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.core import work
from attn_cli.core.errors import UserError
from attn_cli.core.model import Step, Walkthrough
from attn_cli.core.outputs import check_writable, require_matplotlib, write_bytes
from attn_cli.render.heatmap_draw import Grid, draw_grid, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    # A lesson's figure (attn_cli/course/<lesson>/figure.py, draw): the walkthrough and the
    # decimals of its cells' numbers in, the figure out.
    Draw = Callable[[Walkthrough, int], Figure]

HEATMAP_FORMATS = ("png", "svg", "pdf")
DPI = 120

# What asked for the figure, as its errors name it: the command line's option, or the Python
# method (a notebook has no --plot).
COMMAND_LINE = "--plot"
PYTHON = "plot()"


def _without(asked: str) -> str:
    """How not to draw the figure, said where it was asked for."""
    return "leave out --plot" if asked == COMMAND_LINE else "do not call plot()"


def check_heatmap_path(path: Path, asked: str = COMMAND_LINE) -> None:
    """Refuse, before computing, a figure file that could not be written (or drawn)."""
    suffix = path.suffix.lower().removeprefix(".")
    if suffix not in HEATMAP_FORMATS:
        named, example = (
            (f"--plot {path}", "--plot weights.png")
            if asked == COMMAND_LINE
            else (f"plot({str(path)!r})", "w.plot('weights.png')")
        )
        raise UserError(
            f"{named}: the file name must end in .png, .svg or .pdf (it picks the "
            f"format); e.g. {example}."
        )
    check_writable(path, COMMAND_LINE if asked == COMMAND_LINE else "plot(path)")
    require_matplotlib(asked)


def heatmap_file(walkthrough: Walkthrough, draw: Draw | None, path: Path, precision: int) -> bytes:
    """The lesson's figure, its numbers at ``precision``, drawn in memory as the bytes of
    ``path``'s format."""
    return figure_bytes(heatmap_figure(walkthrough, draw, precision), path)


def save_figure(figure: Figure, path: Path, asked: str = COMMAND_LINE) -> None:
    """Write the figure whole (built in memory first)."""
    write_bytes(path, figure_bytes(figure, path), asked if asked == COMMAND_LINE else "plot(path)")


def figure_bytes(figure: Figure, path: Path) -> bytes:
    import matplotlib

    buffer = io.BytesIO()
    fmt = path.suffix.lower().removeprefix(".")
    # svg.fonttype none: text stays text (searchable, and the fonts of the reader's machine).
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "attn"}):
        figure.savefig(buffer, format=fmt, dpi=DPI, metadata=_metadata(fmt))
    return buffer.getvalue()


def _metadata(fmt: str) -> dict[str, Any]:
    """No creation date in the file: the same walkthrough gives the same bytes."""
    return {"CreationDate": None} if fmt == "pdf" else {"Date": None} if fmt == "svg" else {}


# Seconds matplotlib takes to lay out and write a figure of p panels (one per head), measured
# with multihead --n 4 at 8, 32 and 128 heads (4.4, 8.2 and 30.8 s, 2-core machine, 2026): the
# constrained layout grows faster than the panels, about 0.136·p + 6.2e-4·p².
PANEL_SECONDS, PANEL_PAIR_SECONDS = 0.136, 6.2e-4


def head_steps(walkthrough: Walkthrough) -> list[Step]:
    return [s for s in walkthrough.steps if s.key.startswith("head") and s.key.endswith("weights")]


def head_grids(walkthrough: Walkthrough, precision: int, xlabel: str, ylabel: str) -> list[Grid]:
    """One grid per head's weights, all on the largest weight's colour scale, titled
    "head i" (a caller may title them again)."""
    heads = head_steps(walkthrough)
    if not heads:
        step_of(walkthrough, "head1.weights")  # the error that names the missing step
    top = max(float(np.nanmax(as_matrix(head.value))) for head in heads)
    return [
        grid_of(head, xlabel=xlabel, ylabel=ylabel, precision=precision, vmax=top).titled(
            f"head {index}"
        )
        for index, head in enumerate(heads, start=1)
    ]


def check_plot_work(walkthrough: Walkthrough, asked: str = COMMAND_LINE) -> None:
    """Refuse, before anything is drawn (or printed), a figure that would take minutes to draw."""
    panels = len(head_steps(walkthrough))
    work.check_work(
        PANEL_SECONDS * panels + PANEL_PAIR_SECONDS * panels**2,
        1.0,
        f"{asked} would draw {panels:,} panels, one per head",
        f"at most {most_panels():,} heads, or {_without(asked)}",
    )


def most_panels() -> int:
    """The most panels drawn within the work guard's time (the root of the quadratic)."""
    a, b, c = PANEL_PAIR_SECONDS, PANEL_SECONDS, -work.MAX_SECONDS
    return int((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a))


def heatmap_figure(
    walkthrough: Walkthrough,
    draw: Draw | None,
    precision: int,
    asked: str = COMMAND_LINE,
) -> Figure:
    """The lesson's figure (its folder's ``figure.draw``, handed in by the caller, None for a
    lesson without one), its numbers and titles at ``precision``: weights heatmaps, heads, the
    PE matrix or the variance plots (``asked``: what asked for it, COMMAND_LINE or PYTHON, as
    its errors name it)."""
    require_matplotlib(asked)
    check_plot_work(walkthrough, asked)
    if draw is None:
        raise UserError(f"{asked}: the {walkthrough.lesson} lesson has no figure to draw.")
    try:
        return draw(walkthrough, precision)
    except NoStep as missing:
        raise UserError(
            f"{asked}: this {walkthrough.lesson} run has no {missing.key!r} step to draw; "
            f"{_without(asked)}, or run it with other inputs."
        ) from None


class NoStep(Exception):
    """A step the figure draws that this run did not record (heatmap_figure says so)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def step_of(walkthrough: Walkthrough, key: str) -> Step:
    """The step a figure draws; a one-line error if this run did not record it."""
    for step in walkthrough.steps:
        if step.key == key:
            return step
    raise NoStep(key)


def optional_step(walkthrough: Walkthrough, key: str) -> Step | None:
    return next((step for step in walkthrough.steps if step.key == key), None)


def figure_title(walkthrough: Walkthrough) -> str:
    example = f" · example {walkthrough.example}" if walkthrough.example else ""
    return f"{walkthrough.title}{example}"


def axis_labels(labels: tuple[str, ...] | None, count: int) -> tuple[str, ...]:
    return labels if labels and len(labels) == count else tuple(str(i) for i in range(1, count + 1))


def as_matrix(value: Any) -> np.ndarray:
    return np.atleast_2d(np.asarray(value, dtype=np.float64))


def grid_of(step: Step, *, xlabel: str, ylabel: str, precision: int, **options: Any) -> Grid:
    values = as_matrix(step.value)
    rows, cols = values.shape
    return Grid(
        values=values,
        row_labels=axis_labels(step.row_labels, rows),
        col_labels=axis_labels(step.col_labels, cols),
        title=step.title_at(precision),
        xlabel=xlabel,
        ylabel=ylabel,
        precision=precision,
        **options,
    )


def single(walkthrough: Walkthrough, grid: Grid) -> Figure:
    figure, (axes,) = new_figure([grid], title=figure_title(walkthrough))
    draw_grid(figure, axes, grid)
    return figure


def panels(walkthrough: Walkthrough, grids: list[Grid]) -> Figure:
    """One panel per grid, side by side, the colour bar beside the last one."""
    figure, axes = new_figure(grids, title=figure_title(walkthrough))
    for ax, grid in zip(axes, grids, strict=True):
        draw_grid(figure, ax, grid, colorbar=ax is axes[-1])
    return figure
