"""--plot for attn learn: the attention a model learned, drawn from the task's own steps.

Each heatmap is drawn as the lessons draw theirs (attn_cli.render.heatmap_draw: a colour bar,
axis names, the values in the cells when they fit), on one scale from 0 to 1, with the score
that measures it in its title.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.render.heatmap import NoStep, figure_title, step_of
from attn_cli.render.heatmap_draw import Grid, draw_grid, wrap

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from attn_cli.core.model import Step, Walkthrough


def _grid(
    values: Any,
    rows: Sequence[str],
    cols: Sequence[str],
    title: str,
    precision: int,
    *,
    xlabel: str,
    ylabel: str,
) -> Grid:
    """A weights heatmap on the scale 0 … 1 (every panel alike)."""
    return Grid(
        values=np.atleast_2d(np.asarray(values, dtype=np.float64)),
        row_labels=tuple(rows),
        col_labels=tuple(cols),
        title=title,
        xlabel=xlabel,
        ylabel=ylabel,
        precision=precision,
        vmax=1.0,
        colorbar_label="attention weight",
    )


def _draw(figure: Figure, axis: Axes, grid: Grid, *, colorbar: bool = True) -> None:
    """``grid`` drawn as the lessons draw theirs, its title in lines that fit the panel (the
    lines given, each wrapped to the panel's width) and, past a dozen, small upright labels."""
    draw_grid(figure, axis, grid, colorbar=colorbar)
    inches = axis.get_position().width * figure.get_figwidth()
    lines = [wrap(line, inches, size=9) for line in grid.title.split("\n")]
    axis.set_title("\n".join(lines), fontsize=9)
    if max(grid.values.shape) > 12:
        axis.tick_params(axis="x", labelrotation=90, labelsize=7)
        axis.tick_params(axis="y", labelsize=7)


def _labels(step: Step, count: int, which: str) -> tuple[str, ...]:
    labels = step.row_labels if which == "rows" else step.col_labels
    return (
        tuple(labels) if labels and len(labels) == count else tuple(map(str, range(1, count + 1)))
    )


# --- translate -------------------------------------------------------------------------------


def translate_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """attn learn translate: the true alignment, the attention before and after training (each
    titled with its alignment score on the held-out sentences), and exact match by source
    length for both models."""
    from matplotlib.figure import Figure

    truth, before, after = (step_of(walkthrough, key) for key in ("truth", "before", "after"))
    scores = {row["when"]: row for row in step_of(walkthrough, "score").value}
    figure = Figure(figsize=(13, 11), layout="constrained")
    figure.suptitle(wrap(figure_title(walkthrough), 13))
    axes = figure.subplots(2, 2)
    panels = (
        (axes[0][0], truth, "true alignment (a 1 at each target word's source word)"),
        (axes[0][1], before, _scored("attention before training", scores["before training"])),
        (axes[1][0], after, _scored("attention after training", scores["after training"])),
    )
    for axis, step, title in panels:
        values = np.asarray(step.value)
        rows, cols = values.shape
        grid = _grid(
            values,
            _labels(step, rows, "rows"),
            _labels(step, cols, "cols"),
            title,
            precision,
            xlabel="source word (attended to)",
            ylabel="target word (decoder step)",
        )
        _draw(figure, axis, grid)
    _accuracy_by_length(axes[1][1], step_of(walkthrough, "by_length").value)
    return figure


def _scored(title: str, row: Mapping[str, Any]) -> str:
    return (
        f"{title}: held-out argmax on the true word {row['share']:.1%}, "
        f"mean weight there {row['weight']:.3f}"
    )


def _accuracy_by_length(axis: Axes, table: Sequence[dict[str, Any]]) -> None:
    lengths = [row["length"] for row in table]
    fixed = [row["fixed_exact"] for row in table]
    attention = [row["attention_exact"] for row in table]
    axis.plot(
        lengths, fixed, "o-", label=f"fixed vector (c = hₙ): {fixed[-1]:.2f} at {lengths[-1]}"
    )
    axis.plot(
        lengths,
        attention,
        "s-",
        label=f"attention (Bahdanau): {attention[-1]:.2f} at {lengths[-1]}",
    )
    axis.set_xticks(lengths)
    axis.set_ylim(-0.02, 1.02)
    axis.set_xlabel("source length (words)")
    axis.set_ylabel("held-out exact-match accuracy")
    axis.set_title("accuracy by source length (held-out sentences)")
    axis.legend()


# --- grammar ---------------------------------------------------------------------------------


def grammar_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """attn learn grammar: the self-attention map before and after training (each titled with
    its head's held-out score), then the grammar's heads and the control's map; words on both
    axes."""
    from matplotlib.figure import Figure

    order = ("before", "after", "heads", "control_map")
    steps = [step_of(walkthrough, key) for key in order if _has(walkthrough, key)]
    if not any(step.key == "after" for step in steps):
        step_of(walkthrough, "after")  # the one-line error
    scores = {
        (row["model"], row["when"], row["layer"], row["head"]): row
        for row in step_of(walkthrough, "scores").value
    }
    columns = 2
    rows = -(-len(steps) // columns)
    figure = Figure(figsize=(7.4 * columns, 6.6 * rows), layout="constrained")
    figure.suptitle(wrap(figure_title(walkthrough), 7.4 * columns))
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for spare in axes[len(steps) :]:
        spare.remove()
    for axis, step in zip(axes, steps, strict=False):
        values = np.asarray(step.value)
        words = _labels(step, values.shape[0], "rows")
        title = _grammar_title(step, scores)
        grid = _grid(
            values, words, words, title, precision, xlabel="attended to", ylabel="word (query)"
        )
        _draw(figure, axis, grid)
    return figure


def _grammar_title(step: Step, scores: Mapping[tuple[str, str, int, int], Any]) -> str:
    """A grammar panel's title, with the held-out score of what it shows."""
    if step.key == "heads":
        return "the grammar's heads: a 1 at the word each word depends on"
    if step.key == "control_map":
        row = next(found for key, found in scores.items() if key[0] == "control")
        return (
            f"the control, attention frozen even: on the head {row['share']:.1%} of held-out "
            f"words, mean weight {row['weight']:.3f}"
        )
    layer, head = step.context["layer"], step.context["head"]
    row = scores[("attention", f"{step.key} training", layer, head)]
    return (
        f"{step.key} training, layer {layer} head {head}: largest weight on the head for "
        f"{row['share']:.1%} of held-out words, mean weight there {row['weight']:.3f}"
    )


def _has(walkthrough: Walkthrough, key: str) -> bool:
    return any(step.key == key for step in walkthrough.steps)


# --- induction -------------------------------------------------------------------------------


def induction_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """attn learn induction: every head's attention before and after training on one long
    held-out sequence (meta["figure"]: its tokens and each head's weights), a row per model and
    time, each panel titled with the head's held-out scores."""
    shown = walkthrough.meta.get("figure")
    if not shown:
        raise NoStep("two.layer1.head1.after")  # the one-line error
    return induction_panels(
        shown["tokens"], list(shown["heads"].values()), shown["accuracy"], precision
    )


def induction_panels(
    tokens: Sequence[str],
    heads: Sequence[Mapping[str, Any]],
    accuracy: Mapping[str, float],
    precision: int,
) -> Figure:
    """A row per model and time (before, then after; the models in the order given), a column
    per head; ``heads``: each head's ``model``, ``when``, ``layer``, ``head``, held-out
    ``previous`` and ``prefix`` scores and ``weights`` on ``tokens``."""
    from matplotlib.figure import Figure

    rows: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for head in heads:
        rows.setdefault((head["model"], head["when"]), []).append(head)
    models = list(dict.fromkeys(model for model, _ in rows))
    order = sorted(rows, key=lambda row: (models.index(row[0]), row[1] != "before"))
    columns = max(len(found) for found in rows.values())
    figure = Figure(figsize=(4.4 * columns, 4.3 * len(order)), layout="constrained")
    figure.suptitle(
        f"Every head's attention on a held-out sequence of {len(tokens)} tokens "
        f"({len(tokens) // 2} distinct, then the same again)"
    )
    axes = figure.subplots(len(order), columns, squeeze=False)
    for r, key in enumerate(order):
        found = rows[key]
        for c in range(columns):
            if c >= len(found):
                axes[r][c].axis("off")
                continue
            head = found[c]
            scored = "" if key[1] == "before" else f" (held-out accuracy {accuracy[key[0]]:.3f})"
            title = (
                f"{key[0]}, {key[1]} training{scored}\nlayer {head['layer']} head {head['head']}: "
                f"previous-token {head['previous']:.2f}\nprefix-matching {head['prefix']:.2f}"
            )
            grid = _grid(
                head["weights"],
                tokens,
                tokens,
                title,
                precision,
                xlabel="key (attended to)",
                ylabel="query",
            )
            _draw(figure, axes[r][c], grid, colorbar=c == len(found) - 1)
    return figure
