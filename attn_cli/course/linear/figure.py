"""--plot for attn linear: the kernel's weights."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.core.model import Walkthrough
from attn_cli.render.heatmap import (
    as_matrix,
    grid_of,
    single,
    step_of,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def draw(walkthrough: Walkthrough, precision: int) -> Figure:
    """The kernel's weights, φ(q_i)·φ(k_j) normalised (causal: future keys grey, weight 0)."""
    step = step_of(walkthrough, "weights")
    values = as_matrix(step.value)
    causal = walkthrough.meta.get("options", {}).get("causal")
    options: dict[str, Any] = {}
    if causal:
        options["masked"] = ~np.tril(np.ones(values.shape, dtype=bool))
        options["note"] = "grey: a future key, not yet in the running state"
    return single(
        walkthrough, grid_of(step, xlabel="keys", ylabel="queries", precision=precision, **options)
    )
