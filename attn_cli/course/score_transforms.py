"""Score transforms the 2026 models add to attention, shared by the lessons that take them
(attn scaled; the options --softcap CAP and --qk-norm NAME):

* QK-norm: each query and key row normalised (LayerNorm or RMSNorm, no learned gain) before
  the dot product, so that a scaled score lies within ±√d_k whatever the inputs' scale;
* soft-capping (Gemma 2): the scaled scores s replaced by cap·tanh(s / cap), before any mask.

Each comes with a claim on the largest weight, checked against the numbers: the same run
without the transform (recomputed from the inputs on screen, every other setting kept) gives
the largest weight the note states, and the direction the note says. Only for softmax weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core import variants
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Note, Walkthrough
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import scoring

NORMS = variants.QK_NORMS  # layernorm, rmsnorm: scoring.NORMS's keys
NORM_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}
# Two largest weights closer than this are "moved by less than 0.0001" (the notes say so).
SAME = 1e-4


@dataclass(frozen=True)
class Transforms:
    cap: float | None  # --softcap: None, or a cap above 0
    norm: str | None  # --qk-norm: None, "layernorm" or "rmsnorm"

    @property
    def any(self) -> bool:
        return self.cap is not None or self.norm is not None


def transforms(options: Mapping[str, Any]) -> Transforms:
    """--softcap and --qk-norm, checked (a lesson file's options may hold any TOML value)."""
    cap = options.get("softcap")
    if cap is not None:
        if isinstance(cap, bool) or not isinstance(cap, int | float) or not math.isfinite(cap):
            raise UserError(
                f"{param('softcap', repr(cap))}: give a finite number above 0, such as 50 (Gemma 2's)."
            )
        if cap <= 0:
            raise UserError(
                f"{param('softcap', format(cap, 'g'))}: the cap must be above 0 (scores are squeezed into "
                "(−cap, cap)); Gemma 2 caps attention scores at 50."
            )
        cap = float(cap)
    norm = options.get("qk_norm")
    if norm is not None and norm not in NORMS:
        raise UserError(f"{param('qk_norm', repr(norm))}: choose {' or '.join(NORMS)}.")
    return Transforms(cap, norm)


def record_qk_norm(
    record: StepRecorder, q: Any, k: Any, norm: str, grids: tuple[Grid, Grid]
) -> tuple[Any, Any]:
    """The steps q_normed and k_normed: each row of Q and K normalised by ``norm``."""
    context = {"norm_name": NORM_NAMES[norm], "eps": scoring.EPSILONS[norm]}
    text = f"normed_{norm}"
    q_grid, k_grid = (Grid(g.rows, g.cols, {**g.context, **context}) for g in grids)
    normed_q = record.compute(
        "q_normed", lambda: scoring.qk_norm(q, norm), grid=q_grid, text=f"q_{text}"
    )
    normed_k = record.compute(
        "k_normed", lambda: scoring.qk_norm(k, norm), grid=k_grid, text=f"k_{text}"
    )
    return normed_q, normed_k


def record_softcap(record: StepRecorder, logits: Any, cap: float, grid: Grid) -> Any:
    """The step capped: cap·tanh(s / cap) of every score."""
    context = {**grid.context, "cap": cap}
    return record.compute(
        "capped",
        lambda: scoring.softcap(logits, cap),
        grid=Grid(grid.rows, grid.cols, context),
    )


# --- the same run without a transform, recomputed from the inputs ---------------------------


def _softmax_top(logits: np.ndarray) -> float:
    """The largest softmax weight of ``logits`` (rows; −∞ hidden; NaN rows skipped)."""
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.asarray(mech.softmax(logits), dtype=np.float64)
    finite = weights[np.isfinite(weights)]
    return float(np.max(finite, initial=0.0))


def logits_of(
    q: np.ndarray,
    k: np.ndarray,
    settings: Transforms,
    scale: bool,
    hidden: np.ndarray,
) -> np.ndarray:
    """The logits the normaliser reads, in float64: QK-norm, scores, scale, soft-cap, and −∞
    where ``hidden`` (the mask)."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    if settings.norm is not None:
        q, k = scoring.qk_norm(q, settings.norm), scoring.qk_norm(k, settings.norm)
    with np.errstate(invalid="ignore", over="ignore"):
        logits = q @ k.T
        if scale:
            logits = logits / math.sqrt(q.shape[-1])
        if settings.cap is not None:
            logits = scoring.softcap(logits, settings.cap)
    return np.where(hidden, -np.inf, logits)


# One head: its queries and keys before any transform, and where its logits are −∞ (the mask).
Head = tuple[np.ndarray, np.ndarray, np.ndarray]


def top_without(heads: list[Head], settings: Transforms, scale: bool, drop: str) -> float:
    """The largest weight of any head with transform ``drop`` ("cap" or "norm") left out."""
    without = Transforms(
        None if drop == "cap" else settings.cap, None if drop == "norm" else settings.norm
    )
    tops = [_softmax_top(logits_of(q, k, without, scale, hidden)) for q, k, hidden in heads]
    return max(tops, default=0.0)


def largest(weights: list[np.ndarray]) -> float:
    """The largest finite weight of any of ``weights``."""
    return max(
        (float(np.max(np.where(np.isfinite(w), w, 0.0), initial=0.0)) for w in weights),
        default=0.0,
    )


def notes(
    record: StepRecorder,
    settings: Transforms,
    heads: list[Head],
    scale: bool,
    weights: list[np.ndarray],
) -> tuple[Note, ...]:
    """Per transform, what it did to the largest weight of any head (claims)."""
    after = largest(weights)
    out: list[Note] = []
    for drop, name in (("norm", "qknorm"), ("cap", "softcap")):
        if (settings.norm if drop == "norm" else settings.cap) is None:
            continue
        before = top_without(heads, settings, scale, drop)
        direction = _direction(before, after)
        if drop == "cap" and direction == "raises":
            direction = "keeps"  # never (see CAP_DIRECTIONS): its claim would withhold it
        out.append(record.note(f"{name}_{direction}", before=before, after=after))
    return tuple(out)


def _direction(before: float, after: float) -> str:
    if after < before - SAME:
        return "lowers"
    return "raises" if after > before + SAME else "keeps"


# --- the claims -------------------------------------------------------------------------------


def _settings_of(walkthrough: Walkthrough) -> Transforms | None:
    try:
        return transforms(walkthrough.meta.get("options", {}))
    except UserError:
        return None


# A lesson's reading of its walkthrough: (the heads before any transform, whether the scores
# were scaled, every head's weights on screen); None when they cannot be read.
Reader = Callable[[Walkthrough], tuple[list[Head], bool, list[np.ndarray]] | None]


def read_scaled(walkthrough: Walkthrough) -> tuple[list[Head], bool, list[np.ndarray]] | None:
    """attn scaled: the inputs Q and K, and the mask of the logits the weights were made from."""
    try:
        given = {item.name: np.asarray(item.value, dtype=np.float64) for item in walkthrough.inputs}
        weights = np.asarray(walkthrough.step("weights"), dtype=np.float64)
        keys = [step.key for step in walkthrough.steps]
        feeding = keys[keys.index("weights") - 1]  # the logits the weights were made from
        final = np.asarray(walkthrough.step(feeding), dtype=np.float64)
    except (KeyError, ValueError, TypeError, IndexError):
        return None
    q, k = given.get("Q"), given.get("K")
    if q is None or k is None or final.shape != weights.shape:
        return None
    return [(q, k, np.isneginf(final))], "scaled" in keys, [weights]


def _recomputed(walkthrough: Walkthrough, drop: str, read: Reader) -> tuple[float, float] | None:
    """(largest weight without the transform, largest weight on screen), recomputed from what
    ``read`` finds on screen and the options; None when they cannot be read."""
    settings = _settings_of(walkthrough)
    found = read(walkthrough)
    if settings is None or found is None:
        return None
    heads, scale, weights = found
    return top_without(heads, settings, scale, drop), largest(weights)


def _claim(
    drop: str, direction: str, read: Reader = read_scaled
) -> Callable[[Walkthrough, Mapping[str, Any]], bool]:
    def holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
        found = _recomputed(walkthrough, drop, read)
        if found is None:
            return False
        before, after = found
        said_before, said_after = values.get("before"), values.get("after")
        if not (isinstance(said_before, float) and isinstance(said_after, float)):
            return False
        close = all(
            math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
            for a, b in ((said_before, before), (said_after, after))
        )
        return close and _direction(before, after) == direction

    holds.__doc__ = (
        f"The largest weight {direction.rstrip('s')}s with "
        f"{'the cap' if drop == 'cap' else 'QK-norm'}: recomputed from Q, K and the options "
        "without it, and read from the weights on screen (the note's two values)."
    )
    return holds


def scores_within_bound(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """With QK-norm and the scale, every finite scaled score is within ±√d_k, and the largest
    in size is the note's."""
    try:
        scaled = np.asarray(walkthrough.step("scaled"), dtype=np.float64)
    except (KeyError, ValueError, TypeError):
        return False
    finite = np.abs(scaled[np.isfinite(scaled)])
    largest, bound = values.get("largest"), values.get("bound")
    if not (isinstance(largest, float) and isinstance(bound, float)) or scaled.ndim != 2:
        return False
    top = float(np.max(finite, initial=0.0))
    return math.isclose(top, largest, rel_tol=1e-12, abs_tol=0.0) and top <= bound * (1 + 1e-12)


def bound_note(record: StepRecorder, scaled: Any, d_k: int) -> Note:
    values = np.abs(np.asarray(record.to_numpy(scaled), dtype=np.float64))
    largest = float(np.max(values[np.isfinite(values)], initial=0.0))
    return record.note("qknorm_bound", largest=largest, bound=math.sqrt(d_k))


DIRECTIONS = ("lowers", "raises", "keeps")
# Soft-capping never raises the largest softmax weight: tanh keeps the order of the scores and
# shrinks every gap, so each row's largest weight can only fall or stay.
CAP_DIRECTIONS = ("lowers", "keeps")
# What the texts of the steps read, beyond the lesson's own names.
STEP_NAMES = ("norm_name", "eps")
CAP_NAMES = ("cap",)
NOTES = {
    **{f"qknorm_{d}": ("before", "after") for d in DIRECTIONS},
    **{f"softcap_{d}": ("before", "after") for d in CAP_DIRECTIONS},
    "qknorm_bound": ("largest", "bound"),
}
CLAIMS = {
    **{f"qknorm_{d}": _claim("norm", d) for d in DIRECTIONS},
    **{f"softcap_{d}": _claim("cap", d) for d in CAP_DIRECTIONS},
    "qknorm_bound": scores_within_bound,
}


def claims_of(read: Reader) -> dict[str, Callable[[Walkthrough, Mapping[str, Any]], bool]]:
    """The claims on the largest weight for a lesson that reads its heads with ``read``."""
    return {
        **{f"qknorm_{d}": _claim("norm", d, read) for d in DIRECTIONS},
        **{f"softcap_{d}": _claim("cap", d, read) for d in CAP_DIRECTIONS},
    }
