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
from attn_cli.render.heatmap_draw import Grid, draw_grid, new_figure, paired_figure

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


# --- --compare "FLAGS" --plot: the two runs' weights, on one colour scale ---------------------


def _weights_steps(walkthrough: Walkthrough) -> dict[str, Step]:
    """The run's attention weights that a heatmap can draw (matrices), by key."""
    return {
        step.key: step
        for step in walkthrough.steps
        if step.kind == "weights" and np.ndim(step.value) in (1, 2)
    }


def compared_pairs(
    first: Walkthrough, second: Walkthrough
) -> list[tuple[Step | None, Step | None]]:
    """The two runs' weights steps in pairs (as given, with the flags; None where a run has no
    such step), in the order --compare shows them: those whose values differ, or every pair
    when none differs."""
    from attn_cli.core.compare import same_value

    ours, theirs = _weights_steps(first), _weights_steps(second)
    pairs: list[tuple[Step | None, Step | None]] = [
        (step, theirs.get(key)) for key, step in ours.items()
    ]
    pairs += [(None, step) for key, step in theirs.items() if key not in ours]
    differing = [
        (a, b) for a, b in pairs if a is None or b is None or not same_value(a.value, b.value)
    ]
    return differing or pairs


def compared_figure(
    first: Walkthrough, second: Walkthrough, flags: str, precision: int, asked: str = COMMAND_LINE
) -> Figure:
    """``--compare FLAGS --plot``: each attention weights step of the two runs, as given on the
    left and with FLAGS on the right, a row per step, every panel on one colour scale (from 0
    to the largest weight of either run), its title naming its run."""
    require_matplotlib(asked)
    pairs = compared_pairs(first, second)
    if not pairs:
        raise UserError(
            f"{asked} with --compare draws the two runs' attention weights; this "
            f"{first.lesson} run has none: leave out {asked}."
        )
    panels = sum((a is not None) + (b is not None) for a, b in pairs)
    work.check_work(
        PANEL_SECONDS * panels + PANEL_PAIR_SECONDS * panels**2,
        1.0,
        f"{asked} would draw {panels:,} panels, one per weights step of each run",
        f"fewer heads or layers, or {_without(asked)}",
    )
    shown = [as_matrix(step.value) for pair in pairs for step in pair if step is not None]
    finite = [values[np.isfinite(values)] for values in shown]
    top = max((float(np.max(v)) for v in finite if v.size), default=1.0)
    runs = ("as given", f"with {flags}")
    largest = max((values.shape for values in shown), key=lambda shape: shape[0] * shape[1])
    title = f"{figure_title(first)} · compared with {flags}"
    figure, axes = paired_figure(len(pairs), largest, title=title)
    last = None
    for row, pair in enumerate(pairs):
        for column, step in enumerate(pair):
            ax = axes[row][column]
            if step is None:
                ax.set_axis_off()
                ax.set_title(f"{runs[column]}: not in this run")
                continue
            grid = grid_of(step, xlabel="keys", ylabel="queries", precision=precision, vmax=top)
            last = (ax, grid.titled(f"{grid.title} · {runs[column]}"))
            draw_grid(figure, ax, last[1], colorbar=False)
    assert last is not None
    # One colour bar for every panel: they share its scale.
    drawn = [ax for row in axes for ax in row if ax.get_images()]
    figure.colorbar(last[0].get_images()[0], ax=drawn, label="weight", shrink=0.9)
    return figure
