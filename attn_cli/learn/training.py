"""The training loop of the attention-only models (`attn learn grammar`, `attn learn induction`):
Adam on the weights that train, one batch per step, the held-out accuracy every so many steps
and at the last. Each model says what a batch's loss is and how its accuracy is measured; the
loop is written once, here (torch, imported when a model trains).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    import torch

Weights = dict[str, np.ndarray]
Batch = TypeVar("Batch")

# Told after each evaluation: step reached, training loss, held-out accuracy.
Report = Callable[[int, float, float], None]


@dataclass(frozen=True)
class Trained:
    weights: Weights  # float64 copies of the trained float32 weights
    curve: list[dict[str, float]]  # {"step", "loss", "accuracy"} at each evaluation


def train(
    weights: dict[str, torch.Tensor],
    batches: Sequence[Batch],
    loss: Callable[[dict[str, torch.Tensor], Batch], torch.Tensor],
    accuracy: Callable[[Weights], float],
    *,
    learning_rate: float,
    every: int,
    report: Report | None = None,
) -> Trained:
    """Adam (``learning_rate``) on the ``weights`` that require a gradient, one of ``batches``
    per step, minimising ``loss``; the held-out ``accuracy`` of the weights every ``every``
    steps and last, in the curve and told to ``report``."""
    import torch

    optimiser = torch.optim.Adam([w for w in weights.values() if w.requires_grad], lr=learning_rate)
    curve: list[dict[str, float]] = []
    total = len(batches)
    for step, batch in enumerate(batches, start=1):
        value = loss(weights, batch)
        optimiser.zero_grad()
        value.backward()
        optimiser.step()
        if step % every == 0 or step == total:
            held_out = accuracy(as_numpy(weights))
            curve.append({"step": step, "loss": float(value.detach()), "accuracy": held_out})
            if report is not None:
                report(step, curve[-1]["loss"], held_out)
    return Trained(as_numpy(weights), curve)


def as_numpy(weights: Mapping[str, torch.Tensor]) -> Weights:
    """float64 copies of torch weights."""
    return {name: value.detach().double().numpy().copy() for name, value in weights.items()}
