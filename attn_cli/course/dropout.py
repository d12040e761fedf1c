"""--dropout: inverted dropout on the attention weights, as a training step applies it.

Shared by scaled, bahdanau, selfattn, causal and multihead: the weights are computed as usual,
then each is kept with probability 1 − p and divided by 1 − p, or set to 0. The step shows the
keep mask, the dropped weights and their row sums (no longer 1); the output uses them.

The mask's seed is --seed, the seed of the lesson's random inputs; the generator starts afresh
from it, so the mask does not depend on how (or whether) inputs were drawn:

* ``--backend torch``: ``torch.manual_seed(seed)`` then ``nn.Dropout(p)`` in training mode,
  exactly as the from-scratch book writes it (see TorchBackend.dropout);
* numpy: ``np.random.default_rng(seed).random(shape) < 1 − p`` keeps a weight. numpy cannot
  reproduce torch's stream, so its mask differs from torch's for the same seed.

flash takes no --dropout: FlashAttention's kernels drop weights inside the kernel, tile by tile,
with their own counter-based generator, so no nn.Dropout mask could reproduce theirs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Note, Part
from attn_cli.course.lesson import LessonRun
from attn_cli.course.recorder import Grid, StepRecorder

KEYWORD = "dropout"
# What the dropout step's texts read, on top of the lesson's own names (each lesson declares its
# "dropout" text with them), and the notes on its row sums (with the values each hands over).
STEP_NAMES = ("p", "keep", "scale", "seed", "kept", "dropped", "total", "generator")
NOTES = {"dropout_none": (), "dropout_sums_equal": ("low",), "dropout_sums": ("low", "high")}
# How each note is kept true (lessonfiles.texts): p = 0 changes nothing (a definition); the
# range of the sums is measured; one sum for every row, "not 1", is a claim.
GENERAL = ("dropout_none",)
MEASURED = ("dropout_sums",)


def sums_not_one(walkthrough: Any, values: Mapping[str, Any]) -> bool:
    """Every row sums to the one value handed over, and it is not 1."""
    return bool(values["low"] != 1.0)


CLAIMS = {"dropout_sums_equal": sums_not_one}
GENERATORS = {
    "numpy": "numpy's np.random.default_rng({seed}): a uniform draw below 1 − p keeps a weight; "
    f"this is not torch's mask, {param('backend', 'torch')} draws that one",
    "torch": "torch.manual_seed({seed}), then nn.Dropout({p}) in training mode: the mask "
    "PyTorch itself draws",
}


def probability(value: Any) -> float | None:
    """The dropout probability p, checked to lie in [0, 1); None: no dropout."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise UserError(
            f"{param(KEYWORD, repr(value))}: give a probability p with 0 ≤ p < 1, such as 0.1."
        )
    p = float(value)
    if p == 1:
        raise UserError(
            f"{param(KEYWORD, 1)} would drop every weight (and 1/(1 − p) divides by zero); give a "
            "probability p with 0 ≤ p < 1, such as 0.1."
        )
    if not 0 <= p < 1:  # NaN fails this too
        raise UserError(
            f"{param(KEYWORD, format(value, 'g'))} is not a probability of dropping; give p with 0 ≤ p < 1, "
            "such as 0.1."
        )
    return p


@dataclass(frozen=True)
class Dropped:
    """One draw of dropout: the dropped weights and the keep mask (backend arrays)."""

    weights: Any  # the weights times mask / (1 − p), same shape as the weights
    keep: Any  # booleans, True = kept

    def part(self, index: int) -> Dropped:
        """The draw for one slice along the first axis (one head of stacked weights)."""
        return Dropped(self.weights[index, ...], self.keep[index, ...])


def draw(record: StepRecorder, weights: Any, p: float) -> Dropped:
    """Drop ``weights`` once, in one draw for the whole array (all heads together)."""
    run = record.run
    dropped, keep = run.backend.dropout(weights, p, run.seed)
    return Dropped(dropped, keep)


def record_dropout(
    record: StepRecorder,
    weights: Any,
    p: float,
    grid: Grid,
    *,
    key: str = "dropout",
    text: str = "dropout",
    drawn: Dropped | None = None,
) -> Any:
    """The dropout step for ``weights`` (drawn here, or the slice ``drawn`` of a larger draw).

    Returns the dropped weights on the backend, for the output to use.
    """
    run = record.run
    seconds: float | None = None
    if drawn is None:
        dropped, seconds = run.timed(lambda: draw(record, weights, p))
    else:
        dropped = drawn
    keep = record.to_numpy(dropped.keep)
    kept = int(np.count_nonzero(keep))
    # The text names a parameter, spelt by the door that asked (backend=torch, --backend torch).
    generator = run.door.words(GENERATORS[run.backend.name].format(seed=run.seed, p=f"{p:g}"))
    context = {
        **grid.context,
        "p": f"{p:g}",
        "keep": f"{1 - p:g}",
        "scale": f"{1 / (1 - p):.4g}",
        "seed": run.seed,
        "kept": kept,
        "dropped": int(keep.size) - kept,
        "total": int(keep.size),
        "generator": generator,
    }
    sums = np.sum(np.asarray(record.to_numpy(dropped.weights), dtype=np.float64), axis=-1)
    record.add(
        key,
        dropped.weights,
        kind="weights",
        row_sums=True,
        parts=(
            Part("keep mask (1 = kept)", keep.astype(np.int8)),
            Part("weights before dropout", weights),
        ),
        seconds=seconds,
        notes=(_sums_note(record, sums, p),),
        text=text,
        grid=Grid(grid.rows, grid.cols, context=context),
    )
    return dropped.weights


def _sums_note(record: StepRecorder, sums: np.ndarray, p: float) -> Note:
    """How far the row sums moved from 1 (they are 1 only in expectation now)."""
    low, high = float(np.min(sums)), float(np.max(sums))
    if p == 0:
        return record.note("dropout_none")
    if math.isclose(low, high):
        return record.note("dropout_sums_equal", low=low)
    return record.note("dropout_sums", low=low, high=high)


def dropout_bytes(options: dict[str, Any], entries: int, itemsize: int) -> int:
    """Memory of the dropout step: the mask (as booleans and as a scaled float) and the result."""
    if options.get("dropout") is None:
        return 0
    return entries * (2 * itemsize + 2)


def meta(run: LessonRun, p: float | None) -> dict[str, Any]:
    """The JSON's record of the draw: p, the seed and the generator (empty without dropout)."""
    if p is None:
        return {}
    generator = "torch.manual_seed" if run.backend.name == "torch" else "numpy.random.default_rng"
    return {"dropout": {"p": p, "seed": run.seed, "generator": generator}}


def output_text(p: float | None, text: str = "output") -> str:
    """The output step's text: ``output``, or ``output_dropout`` when it uses dropped weights."""
    return text if p is None else f"{text}_dropout"
