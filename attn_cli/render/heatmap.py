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

from attn_cli import work
from attn_cli.errors import UserError
from attn_cli.model import Step, Walkthrough
from attn_cli.outputs import check_writable, require_matplotlib, write_bytes
from attn_cli.render.heatmap_draw import Grid, draw_grid, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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


def heatmap_file(walkthrough: Walkthrough, path: Path, precision: int | None = None) -> bytes:
    """The lesson's figure, drawn in memory as the bytes of ``path``'s format."""
    return figure_bytes(heatmap_figure(walkthrough, precision), path)


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


def _head_steps(walkthrough: Walkthrough) -> list[Step]:
    return [s for s in walkthrough.steps if s.key.startswith("head") and s.key.endswith("weights")]


def check_plot_work(walkthrough: Walkthrough, asked: str = COMMAND_LINE) -> None:
    """Refuse, before anything is drawn (or printed), a figure that would take minutes to draw."""
    panels = len(_head_steps(walkthrough))
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
    walkthrough: Walkthrough, precision: int | None = None, asked: str = COMMAND_LINE
) -> Figure:
    """The lesson's figure: weights heatmaps, heads, the PE matrix or the variance plots
    (``asked``: what asked for it, COMMAND_LINE or PYTHON, as its errors name it)."""
    require_matplotlib(asked)
    check_plot_work(walkthrough, asked)
    draw = FIGURES.get(walkthrough.lesson)
    if draw is None:
        raise UserError(f"{asked}: the {walkthrough.lesson} lesson has no figure to draw.")
    if precision is None:
        precision = walkthrough.precision
    try:
        return draw(walkthrough.at_precision(precision), precision)
    except _NoStep as missing:
        raise UserError(
            f"{asked}: this {walkthrough.lesson} run has no {missing.key!r} step to draw; "
            f"{_without(asked)}, or run it with other inputs."
        ) from None


class _NoStep(Exception):
    """A step the figure draws that this run did not record (heatmap_figure says so)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _step(walkthrough: Walkthrough, key: str) -> Step:
    """The step a figure draws; a one-line error if this run did not record it."""
    for step in walkthrough.steps:
        if step.key == key:
            return step
    raise _NoStep(key)


def _optional(walkthrough: Walkthrough, key: str) -> Step | None:
    return next((step for step in walkthrough.steps if step.key == key), None)


def _title(walkthrough: Walkthrough) -> str:
    example = f" · example {walkthrough.example}" if walkthrough.example else ""
    return f"{walkthrough.title}{example}"


def _labels(labels: tuple[str, ...] | None, count: int) -> tuple[str, ...]:
    return labels if labels and len(labels) == count else tuple(str(i) for i in range(1, count + 1))


def _matrix(value: Any) -> np.ndarray:
    return np.atleast_2d(np.asarray(value, dtype=np.float64))


def _grid(step: Step, *, xlabel: str, ylabel: str, precision: int, **options: Any) -> Grid:
    values = _matrix(step.value)
    rows, cols = values.shape
    return Grid(
        values=values,
        row_labels=_labels(step.row_labels, rows),
        col_labels=_labels(step.col_labels, cols),
        title=step.title,
        xlabel=xlabel,
        ylabel=ylabel,
        precision=precision,
        **options,
    )


def _single(walkthrough: Walkthrough, grid: Grid) -> Figure:
    figure, (axes,) = new_figure([grid], title=_title(walkthrough))
    draw_grid(figure, axes, grid)
    return figure


# --- one figure per lesson -------------------------------------------------------------------


def scaled_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    step = _step(walkthrough, "weights")
    return _single(walkthrough, _grid(step, xlabel="keys", ylabel="queries", precision=precision))


def selfattn_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    step = _step(walkthrough, "weights")
    grid = _grid(step, xlabel="key token", ylabel="query token", precision=precision)
    return _single(walkthrough, grid)


def causal_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """The weights; future cells hatched: masked (grey, weight 0) or, with --fill zero, leaking."""
    step = _step(walkthrough, "weights")
    mask, future = _optional(walkthrough, "mask"), _optional(walkthrough, "future")
    options: dict[str, Any] = {}
    if mask is not None:  # the additive mask: −∞ where a key is in the query's future
        options["masked"] = np.isneginf(_matrix(mask.value))
        options["note"] = "grey: masked (a future key), weight exactly 0"
    elif future is not None:  # --fill zero: the future cells that should have been masked
        options["flagged"] = _matrix(future.value).astype(bool)
        options["note"] = "hatched: future keys, which get weight here (the fill-0 bug)"
    grid = _grid(step, xlabel="key token", ylabel="query token", precision=precision, **options)
    return _single(walkthrough, grid)


def bahdanau_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """One decoder step's weights over the encoder states; with --compare, one row per score;
    with --steps, the alignment matrix (one row per decoder step), as Bahdanau et al. draw it."""
    alignment = _optional(walkthrough, "decoder.alignment")
    if alignment is not None:
        grid = _grid(alignment, xlabel="encoder state", ylabel="decoder step", precision=precision)
        return _single(walkthrough, grid)
    step = _step(walkthrough, "weights")
    others = [_optional(walkthrough, f"{name}.weights") for name in ("dot", "general")]
    grid = _grid(step, xlabel="encoder state", ylabel="decoder step", precision=precision)
    if all(other is not None for other in others):
        rows = [_matrix(s.value) for s in (step, *others) if s is not None]
        grid = grid.with_rows(np.vstack(rows), ("additive α", "dot α", "general α"), "score")
    return _single(walkthrough, grid)


def flash_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """The tiled algorithm never forms the weights: its score blocks, side by side, outlined."""
    if any(step.key.startswith("tile") for step in walkthrough.steps):
        return _single(walkthrough, _tiles_grid(walkthrough, precision))
    blocks = [
        s for s in walkthrough.steps if s.key.startswith("block") and s.key.endswith("scores")
    ]
    if not blocks:
        _step(walkthrough, "block1.scores")  # the one-line error
    values = np.hstack([_matrix(block.value) for block in blocks])
    labels = tuple(label for block in blocks for label in block.col_labels or ())
    widths = [_matrix(block.value).shape[1] for block in blocks]
    grid = Grid(
        values=values,
        row_labels=_labels(blocks[0].row_labels, values.shape[0]),
        col_labels=_labels(labels, values.shape[1]),
        title=f"Scores, one key block at a time ({len(blocks)} blocks)",
        xlabel="keys (a line between blocks)",
        ylabel="queries",
        precision=precision,
        diverging=True,
        masked=np.isneginf(values),
        note="grey: −∞ (masked)" if np.isneginf(values).any() else "",
        blocks=tuple(np.cumsum(widths)[:-1]),
        colorbar_label="score",
    )
    return _single(walkthrough, grid)


def _tiles_grid(walkthrough: Walkthrough, precision: int) -> Grid:
    """--query-block: each tile's score blocks side by side, the tiles one under another; a
    visit a causal tile skipped is grey like a masked score."""
    tiles: dict[str, list[Step]] = {}
    for step in walkthrough.steps:
        parts = step.key.split(".")
        if len(parts) == 3 and parts[0].startswith("tile") and parts[2] == "scores":
            tiles.setdefault(parts[0], []).append(step)
    widest = max(tiles.values(), key=len)  # a tile that visited every block (the last one)
    widths = [_matrix(block.value).shape[1] for block in widest]
    rows = []
    for blocks in tiles.values():
        values = np.hstack([_matrix(block.value) for block in blocks])
        missing = sum(widths) - values.shape[1]  # skipped blocks, wholly in the future
        rows.append(np.hstack([values, np.full((values.shape[0], missing), -np.inf)]))
    values = np.vstack(rows)
    heights = [row.shape[0] for row in rows]
    row_labels = tuple(label for blocks in tiles.values() for label in blocks[0].row_labels or ())
    col_labels = tuple(label for block in widest for label in block.col_labels or ())
    masked = np.isneginf(values)
    return Grid(
        values=values,
        row_labels=_labels(row_labels, values.shape[0]),
        col_labels=_labels(col_labels, values.shape[1]),
        title=f"Scores, one query tile × key block at a time ({len(tiles)} tiles, "
        f"{len(widest)} blocks)",
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


def multihead_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """One panel per head, on one colour scale."""
    heads = _head_steps(walkthrough)
    if not heads:
        _step(walkthrough, "head1.weights")
    top = max(float(np.nanmax(_matrix(head.value))) for head in heads)
    grids = [
        _grid(head, xlabel="key token", ylabel="query token", precision=precision, vmax=top)
        for head in heads
    ]
    grids = [grid.titled(f"head {index}") for index, grid in enumerate(grids, start=1)]
    figure, axes = new_figure(grids, title=_title(walkthrough))
    for ax, grid in zip(axes, grids, strict=True):
        draw_grid(figure, ax, grid, colorbar=ax is axes[-1])
    return figure


def block_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """The layer's attention weights, one panel per head: self-attention's, then (decoder)
    cross-attention's over the memory; one colour scale."""
    heads = [s for s in walkthrough.steps if s.kind == "weights" and s.key.endswith(".weights")]
    if not heads:
        _step(walkthrough, "self.head1.weights")
    top = max(float(np.nanmax(_matrix(head.value))) for head in heads)
    grids = []
    for head in heads:
        cross = head.key.startswith("cross.")
        grid = _grid(
            head,
            xlabel="memory row" if cross else "key token",
            ylabel="query token",
            precision=precision,
            vmax=top,
        )
        number = head.key.split(".")[1].removeprefix("head")
        grids.append(grid.titled(f"{'cross' if cross else 'self'}-attention head {number}"))
    figure, axes = new_figure(grids, title=_title(walkthrough))
    for ax, grid in zip(axes, grids, strict=True):
        draw_grid(figure, ax, grid, colorbar=ax is axes[-1])
    return figure


def posenc_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    step = _step(walkthrough, "pe")
    grid = _grid(
        step,
        xlabel="dimension",
        ylabel="position",
        precision=precision,
        diverging=True,
        colorbar_label="PE value",
    )
    return _single(walkthrough, grid)


def variance_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    from attn_cli.render.heatmap_variance import variance_panels

    moments = _step(walkthrough, "moments")
    return variance_panels(
        _title(walkthrough),
        moments.value,
        _step(walkthrough, "histogram").value,
        _step(walkthrough, "softmax").value,
    )


def linear_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """The kernel's weights, φ(q_i)·φ(k_j) normalised (causal: future keys grey, weight 0)."""
    step = _step(walkthrough, "weights")
    values = _matrix(step.value)
    causal = walkthrough.meta.get("options", {}).get("causal")
    options: dict[str, Any] = {}
    if causal:
        options["masked"] = ~np.tril(np.ones(values.shape, dtype=bool))
        options["note"] = "grey: a future key, not yet in the running state"
    return _single(
        walkthrough, _grid(step, xlabel="keys", ylabel="queries", precision=precision, **options)
    )


def kvcache_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """Each generation step's weights as one row: the lower triangle of causal attention."""
    rows = [step for step in walkthrough.steps if step.key.startswith("token")]
    if not rows:
        _step(walkthrough, "token1")  # the one-line error
    n = len(rows)
    values = np.zeros((n, n))
    for i, step in enumerate(rows):
        values[i, : i + 1] = _matrix(step.value)[0]
    grid = Grid(
        values=values,
        row_labels=_labels(tuple(label for s in rows for label in s.row_labels or ()), n),
        col_labels=_labels(rows[-1].col_labels, n),
        title=f"Weights, one generation step per row ({n} steps)",
        xlabel="cached key",
        ylabel="new query",
        precision=precision,
        masked=~np.tril(np.ones((n, n), dtype=bool)),
        note="grey: not in the cache yet",
    )
    return _single(walkthrough, grid)


def learn_translate_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """attn learn translate: the true alignment, the attention before and after training, and
    accuracy by source length."""
    from attn_cli.render.heatmap_learn import translate_panels

    truth, before, after = (_step(walkthrough, key) for key in ("truth", "before", "after"))
    return translate_panels(truth, before, after, _step(walkthrough, "by_length").value)


def learn_induction_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """attn learn induction: every head's attention before and after training."""
    from attn_cli.render.heatmap_learn import induction_panels

    heads = [step for step in walkthrough.steps if step.kind == "weights"]
    if not heads:
        _step(walkthrough, "two.layer1.head1.after")  # the one-line error
    return induction_panels(heads)


FIGURES: dict[str, Callable[[Walkthrough, int], Figure]] = {
    "scaled": scaled_figure,
    "bahdanau": bahdanau_figure,
    "selfattn": selfattn_figure,
    "causal": causal_figure,
    "flash": flash_figure,
    "multihead": multihead_figure,
    "posenc": posenc_figure,
    "block": block_figure,
    "variance": variance_figure,
    "linear": linear_figure,
    "kvcache": kvcache_figure,
    "learn-translate": learn_translate_figure,
    "learn-induction": learn_induction_figure,
}
