"""--plot for attn variance: the "why divide by √d_k" slide, from the lesson's own tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.core.model import Walkthrough
from attn_cli.render.heatmap import figure_title, step_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

RAW, SCALED = "q·k", "q·k / √d_k"
RAW_COLOUR, SCALED_COLOUR = "tab:red", "tab:blue"


def variance_panels(
    title: str,
    moments: list[dict[str, Any]],
    histogram: dict[str, Any],
    softmax: list[dict[str, Any]],
) -> Figure:
    """Variance against d_k, the scores at the largest d_k, and the softmax's largest weight."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(15, 4.6), layout="constrained")
    spread, scores, peaks = figure.subplots(1, 3)
    _variance(spread, moments)
    _histogram(scores, histogram, max(int(row["d_k"]) for row in moments))
    _largest_weight(peaks, softmax)
    figure.suptitle(title)
    return figure


def _dk_axis(ax: Axes, dks: list[int]) -> None:
    from matplotlib.ticker import NullLocator

    ax.set_xscale("log", base=2)
    ax.set_xticks(dks, labels=[str(dk) for dk in dks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("d_k (width of q and k)")
    ax.grid(True, alpha=0.3)


def _variance(ax: Axes, moments: list[dict[str, Any]]) -> None:
    """Measured variances (± one standard error) with the theory: d_k raw, 1 scaled."""
    dks = [int(row["d_k"]) for row in moments]
    span = [min(dks), max(dks)]
    ax.plot(span, span, ":", color="grey", label="theory: d_k and 1")
    ax.plot(span, [1, 1], ":", color="grey")
    ax.plot(dks, [row["var_raw"] for row in moments], "o-", color=RAW_COLOUR, label=RAW)
    ax.errorbar(
        dks,
        [row["var_scaled"] for row in moments],
        yerr=[row["var_scaled_se"] for row in moments],
        fmt="s-",
        color=SCALED_COLOUR,
        capsize=3,
        label=SCALED,
    )
    ax.set_yscale("log")
    _dk_axis(ax, dks)
    ax.set_ylabel("variance of the score")
    ax.set_title("Var(q·k), measured; in theory d_k, scaled 1")
    ax.legend(fontsize="small")


def _histogram(ax: Axes, histogram: dict[str, Any], largest: int) -> None:
    edges = np.asarray(histogram["edges"], dtype=np.float64)
    names = {"raw": (RAW, RAW_COLOUR), "scaled": (SCALED, SCALED_COLOUR)}
    for key, counts in histogram["series"].items():
        label, colour = names.get(key, (key, None))
        ax.stairs(np.asarray(counts), edges, fill=True, alpha=0.5, color=colour, label=label)
    ax.set_xlabel("score")
    ax.set_ylabel("count")
    ax.set_title(f"The scores at d_k = {largest}")
    ax.legend(fontsize="small")


def _largest_weight(ax: Axes, softmax: list[dict[str, Any]]) -> None:
    dks = [int(row["d_k"]) for row in softmax]
    for key, label, colour in (
        ("max_weight_raw", RAW, RAW_COLOUR),
        ("max_weight_scaled", SCALED, SCALED_COLOUR),
    ):
        ax.plot(dks, [row[key] for row in softmax], "o-", color=colour, label=f"softmax({label})")
    _dk_axis(ax, dks)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean largest softmax weight")
    ax.set_title("Largest weight; in theory unscaled → 1")
    ax.legend(fontsize="small")


def draw(walkthrough: Walkthrough, precision: int) -> Figure:
    moments = step_of(walkthrough, "moments")
    return variance_panels(
        figure_title(walkthrough),
        moments.value,
        step_of(walkthrough, "histogram").value,
        step_of(walkthrough, "softmax").value,
    )
