"""--normalise: softmax's alternatives as the weights step (attn scaled).

The scores are turned into weights by softmax (the default: the step is recorded exactly as
before), sparsemax (the simplex projection, with its threshold τ per row), 1.5-entmax (between
the two, with its own τ per row), sigmoid then normalise, or hardmax (see mechanisms/normalise.py). The step keeps its key, ``weights``, so
quizzes, ``attn check``'s printed values and --plot read it whatever the normaliser; its words
are ``[steps.weights_<normaliser>]`` of the lesson file, its notes ``[notes]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core import variants
from attn_cli.core.backend import Array, namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Note, Part
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import normalise as mech

KEYWORD = "normalise"
CHOICES: tuple[str, ...] = variants.NORMALISERS  # softmax first: the default
ALTERNATIVES: tuple[str, ...] = CHOICES[
    1:
]  # each recorded by this module (softmax by the recorder)
# The (m × n) matrices a normaliser holds beyond softmax's: sparsemax sorts, sums, compares and
# picks (sorted, cumulative, inside, candidates, picked, s − τ); 1.5-entmax halves, shifts, sorts,
# floors, sums twice, and forms the spread, room, τ_k, picked k, z/2 − τ and its square; sigmoid
# its gates; hardmax its 0/1 hits and the boolean matrix of maxima.
EXTRA_MATRICES = {"softmax": 0, "sparsemax": 6, "entmax15": 13, "sigmoid": 2, "hardmax": 2}


def choice(value: Any) -> str:
    """The normaliser asked for (None: softmax), checked against the choices."""
    if value is None:
        return "softmax"
    if value not in CHOICES:
        raise UserError(
            f"{param(KEYWORD, repr(value))} is not a normaliser; choose one of: {', '.join(CHOICES)}."
        )
    return str(value)


def record_weights(record: StepRecorder, logits: Array, normaliser: str, grid: Grid) -> Array:
    """The weights step: ``normaliser`` applied to each row of ``logits`` (−∞ where masked)."""
    if normaliser == "softmax":
        return record.softmax("weights", logits, grid=grid)
    compute = {
        "sparsemax": _sparsemax,
        "entmax15": _entmax15,
        "sigmoid": _sigmoid,
        "hardmax": _hardmax,
    }[normaliser]
    (weights, parts), seconds = record.run.timed(lambda: compute(logits))
    shown = record.to_numpy(weights)
    notes = _notes(record, normaliser, shown, record.to_numpy(logits))
    record.add(
        "weights",
        weights,
        kind="weights",
        row_sums=True,
        parts=parts,
        seconds=seconds,
        shown=shown,
        grid=grid,
        notes=notes,
        text=f"weights_{normaliser}",
    )
    return weights


def _sparsemax(logits: Array) -> tuple[Array, tuple[Part, ...]]:
    parts = mech.sparsemax_parts(logits)
    return parts.weights, (
        Part("support size k", parts.support),
        Part("τ = (sum of the top k − 1) / k", parts.tau),
        Part("z − τ (weight: max(z − τ, 0))", parts.excess),
    )


def _entmax15(logits: Array) -> tuple[Array, tuple[Part, ...]]:
    parts = mech.entmax15_parts(logits)
    return parts.weights, (
        Part("support size k", parts.support),
        Part("τ: the top k's Σ (z/2 − τ)² = 1", parts.tau),
        Part("z/2 − τ (weight: max(z/2 − τ, 0)²)", logits / 2 - parts.tau),
    )


def _sigmoid(logits: Array) -> tuple[Array, tuple[Part, ...]]:
    xp = namespace_of(logits)
    gates = mech.sigmoid(logits)  # (m, n)
    return mech.sigmoid_normalise(logits), (
        Part("σ(scores)", gates),
        Part("row sum of σ", xp.sum(gates, axis=-1, keepdims=True)),
    )


def no_weight_is_zero(walkthrough: Any, values: Mapping[str, Any]) -> bool:
    """No weight (masked keys apart) is exactly 0."""
    return bool(values["zeros"] == 0)


# How each note of the weights step is kept true (lessonfiles.texts): the zeros counted are
# measured; "no weight is exactly 0" is a claim; the rest are definitions.
MEASURED = (*(f"{name}_zeros" for name in ALTERNATIVES), "masked_zeros")
GENERAL = ("hardmax_gradient", "dropout_normalised")
CLAIMS = {f"{name}_dense": no_weight_is_zero for name in ALTERNATIVES}


def _hardmax(logits: Array) -> tuple[Array, tuple[Part, ...]]:
    xp = namespace_of(logits)
    row_max = xp.max(logits, axis=-1, keepdims=True)  # (m, 1)
    at_max = xp.sum(xp.astype(logits == row_max, logits.dtype), axis=-1, keepdims=True)
    return mech.hardmax(logits), (
        Part("row max", row_max),
        Part("keys at the max", at_max),
    )


def _notes(
    record: StepRecorder, normaliser: str, weights: np.ndarray, logits: np.ndarray
) -> tuple[Note, ...]:
    """The step's notes: how many weights are exactly 0 (masked keys counted
    apart), or that none is."""
    masked = int(np.count_nonzero(np.isneginf(logits)))
    zeros = int(np.count_nonzero(weights == 0)) - masked
    total = int(weights.size) - masked
    key = f"{normaliser}_zeros" if zeros else f"{normaliser}_dense"
    notes = [record.note(key, zeros=zeros, total=total)]
    if masked:
        notes.append(record.note("masked_zeros", masked=masked, normaliser=normaliser))
    return tuple(notes)
