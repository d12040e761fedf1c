"""--plot for attn learn: the attention a model learned, drawn from the task's own steps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.render.heatmap import step_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from attn_cli.core.model import Step, Walkthrough


def translate_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """attn learn translate: the true alignment, the attention before and after training, and
    accuracy by source length."""
    truth, before, after = (step_of(walkthrough, key) for key in ("truth", "before", "after"))
    return translate_panels(truth, before, after, step_of(walkthrough, "by_length").value)


def induction_figure(walkthrough: Walkthrough, precision: int) -> Figure:
    """attn learn induction: every head's attention before and after training."""
    heads = [step for step in walkthrough.steps if step.kind == "weights"]
    if not heads:
        step_of(walkthrough, "two.layer1.head1.after")  # the one-line error
    return induction_panels(heads)


def translate_panels(
    truth: Step, before: Step, after: Step, by_length: Sequence[dict[str, Any]]
) -> Figure:
    """The true alignment, the heatmaps before and after training (words as labels), and
    exact-match accuracy by source length for both models."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 10), layout="constrained")
    axes = figure.subplots(2, 2)
    for axis, step, title in (
        (axes[0][0], truth, "true alignment"),
        (axes[0][1], before, "attention before training"),
        (axes[1][0], after, "attention after training"),
    ):
        _alignment(axis, step, title)
    _accuracy_by_length(axes[1][1], by_length)
    return figure


def _alignment(axis: Axes, step: Step, title: str) -> None:
    weights = np.asarray(step.value)
    axis.imshow(weights, cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto")
    axis.set_title(title)
    axis.set_xticks(range(weights.shape[1]), step.col_labels or (), rotation=60, ha="right")
    axis.set_yticks(range(weights.shape[0]), step.row_labels or ())
    axis.set_xlabel("source word")
    axis.set_ylabel("target word")


def _accuracy_by_length(axis: Axes, table: Sequence[dict[str, Any]]) -> None:
    lengths = [row["length"] for row in table]
    axis.plot(lengths, [row["fixed_exact"] for row in table], "o-", label="fixed vector (c = hₙ)")
    axis.plot(
        lengths, [row["attention_exact"] for row in table], "s-", label="attention (Bahdanau)"
    )
    axis.set_xticks(lengths)
    axis.set_ylim(-0.02, 1.02)
    axis.set_xlabel("source length (words)")
    axis.set_ylabel("held-out exact-match accuracy")
    axis.set_title("accuracy by source length")
    axis.legend()


def induction_panels(heads: Sequence[Step]) -> Figure:
    """Every head's attention on the shown held-out sequence (steps ``MODEL.layerL.headH.WHEN``,
    each with its model's name and prefix-matching score): a row per model and time (before,
    then after; the models in the order recorded), a column per head."""
    from matplotlib.figure import Figure

    rows: dict[tuple[str, str], list[Step]] = {}
    for step in heads:
        model, _, _, when = step.key.split(".")
        rows.setdefault((model, when), []).append(step)
    models = list(dict.fromkeys(model for model, _ in rows))
    order = sorted(rows, key=lambda row: (models.index(row[0]), row[1] != "before"))
    columns = max(len(steps) for steps in rows.values())
    figure = Figure(figsize=(2.6 * columns, 2.6 * len(order)), layout="constrained")
    axes = figure.subplots(len(order), columns, squeeze=False)
    for r, row in enumerate(order):
        steps = rows[row]
        for c in range(columns):
            if c < len(steps):
                _head(axes[r][c], steps[c])
            else:
                axes[r][c].axis("off")
    return figure


def _head(axis: Axes, step: Step) -> None:
    axis.imshow(step.value, vmin=0, vmax=1, cmap="Blues")
    labels = step.row_labels or ()
    axis.set_xticks(range(len(labels)), labels, fontsize=6, rotation=90)
    axis.set_yticks(range(len(labels)), labels, fontsize=6)
    _, layer, head, when = step.key.split(".")
    axis.set_title(
        f"{step.context['model']}, {when}\n{layer} {head}: prefix {step.context['prefix']:.2f}",
        fontsize=7,
    )
