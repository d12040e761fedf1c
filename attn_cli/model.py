"""The walkthrough: what a lesson computed, as plain data that every renderer reads.

A lesson computes a :class:`Walkthrough` (its inputs, ordered :class:`Step` s and output);
renderers (rich, JSON, Markdown, LaTeX) only lay it out. Values are numpy arrays (already
moved off any GPU), Python numbers, or plain records (lists of dicts) for tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

# How a value is meant to be shown:
#   matrix   a 1-D or 2-D array of numbers
#   weights  a matrix of attention weights: shaded as a heatmap, with row sums
#   heatmap  a signed matrix shaded by value (a compact block picture when large)
#   scalar   one number
#   records  a table: a list of dicts with the same keys
#   histogram  {"edges": [...], "series": {name: counts}}: bars per bin
#   text     a paragraph
Kind = Literal["matrix", "weights", "heatmap", "scalar", "records", "histogram", "text"]


@dataclass(frozen=True)
class Part:
    """A labelled intermediate shown with a step (e.g. the row max inside a softmax)."""

    label: str
    value: Any
    kind: Kind = "matrix"


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    explanation: str
    value: Any
    kind: Kind = "matrix"
    row_labels: tuple[str, ...] | None = None
    col_labels: tuple[str, ...] | None = None
    parts: tuple[Part, ...] = ()
    # Facts computed with the value that the reader should see (e.g. weight row sums).
    row_sums: np.ndarray | None = None
    # Notes shown under the value: where the slide and the exact value differ, and similar.
    notes: tuple[str, ...] = ()
    # Wall time of the computation, with --time.
    seconds: float | None = None
    # LaTeX for the left-hand side, e.g. "S = QK^\\top" (LaTeX output only).
    latex: str | None = None


@dataclass(frozen=True)
class InputValue:
    name: str
    value: Any
    row_labels: tuple[str, ...] | None = None
    col_labels: tuple[str, ...] | None = None
    description: str = ""


@dataclass(frozen=True)
class Walkthrough:
    lesson: str
    title: str
    intro: str
    example: str | None
    backend: str
    device: str
    dtype: str
    inputs: tuple[InputValue, ...]
    steps: tuple[Step, ...]
    output: Any
    example_description: str = ""
    notes: tuple[str, ...] = ()
    # Anything else a machine reader needs (JSON only), e.g. options that were used.
    meta: dict[str, Any] = field(default_factory=dict)

    def step(self, key: str) -> Step:
        for step in self.steps:
            if step.key == key:
                return step
        raise KeyError(key)


def summary(array: np.ndarray) -> dict[str, float | int]:
    """Statistics that describe a matrix too large to print (finite entries only)."""
    values = np.asarray(array, dtype=np.float64)
    finite = values[np.isfinite(values)]
    stats: dict[str, float | int] = {"count": int(values.size)}
    if finite.size:
        stats.update(
            min=float(finite.min()),
            max=float(finite.max()),
            mean=float(finite.mean()),
            std=float(finite.std()),
        )
    non_finite = int(values.size - finite.size)
    if non_finite:
        stats["non_finite"] = non_finite
    return stats
