"""The ALiBi lesson: the slopes, the distances, the scaled scores, each head's bias and weights,
and what the heads do with keys past the training length.

Every head scores the same Q and K here, so that the heads differ by their slope alone (in a
model each head has its own projections too). The scores are scaled by √d, as in attn scaled,
and the bias is added to them, as the paper's code adds it to the scaled q·k.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core.backend import EXACT_INTEGERS
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import InputValue, Note, Part, Walkthrough
from attn_cli.course.alibi.card import CARD
from attn_cli.course.checks import (
    counted,
    is_whole,
    positional_shapes,
    same_positions,
    whole_at_least,
)
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.rope.build import position_names
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import alibi
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms.masks import causal_additive

# Weights (or distances) closer than this, relative to their scale, are equal here.
_TIE = 1e-12
# A key whose bias has cut its weight to this share of an equal-scored key at distance 0.
_SMALL = 0.01


def _heads(options: Mapping[str, Any]) -> int:
    return whole_at_least(options.get("heads", 4), param("heads"), meaning="the number of heads")


def train_length(options: Mapping[str, Any], n: int) -> int:
    """--train-length, else n/2 rounded down (at least 1)."""
    given = options.get("train_length")
    if given is None:
        return max(1, n // 2)
    if not is_whole(given) or given < 1:
        raise UserError(
            f"{param('train_length')} must be a whole number >= 1 (the length trained at), not {given!r}."
        )
    return given


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    q, k = inputs["Q"], inputs["K"]
    same_positions(q.shape, k.shape, "i")
    _heads(options)
    train_length(options, q.shape[0])


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    """Per head: the bias, the biased scores and the weights with the softmax's parts."""
    n, d = shapes["Q"]
    return ((7 * _heads(options) + 4) * n * n + 2 * n * d) * itemsize  # 7: e^s by hand too


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    q, k = (backend.asarray(run.inputs[name]) for name in ("Q", "K"))
    n, d = q.shape
    if n - 1 > EXACT_INTEGERS[backend.dtype]:
        raise UserError(
            f"{backend.dtype} holds whole numbers exactly only up to "
            f"{EXACT_INTEGERS[backend.dtype]}, and the distance {n - 1} would be rounded (two "
            f"distances would get one bias); use {param('dtype', 'float32')} or float64, or fewer positions."
        )
    heads = _heads(run.options)
    causal = bool(run.options.get("causal"))
    trained = train_length(run.options, n)
    slopes = alibi.slopes(heads)
    queries, keys = position_names(run, "queries", n, "q"), position_names(run, "keys", n, "k")
    below = alibi.power_below(heads)
    context: dict[str, Any] = {
        "n": n,
        "d": d,
        "sqrt_d": math.sqrt(d),
        "h": heads,
        "heads_text": counted(heads, "head"),
        "L": trained,
    }
    record = StepRecorder(run)
    notes: tuple[Note, ...] = ()
    if below != heads:
        notes = (
            record.note(
                "not_power_of_two",
                heads=heads,
                below=below,
                rest=heads - below,
                twice=2 * below,
            ),
        )
    record.add(
        "slopes",
        [
            {
                "head": h,
                "slope": slope,
                "power": f"2^{math.log2(slope):g}",
                "half_at": math.log(2) / slope,
                "small_at": math.log(1 / _SMALL) / slope,
            }
            for h, slope in enumerate(slopes, start=1)
        ],
        kind="records",
        grid=Grid(context=context),
        notes=notes,
    )
    grid = Grid(queries, keys, context)
    scaled = record.compute("scaled", lambda: mech.scale(mech.scores(q, k), d), grid=grid)
    distance = record.compute(
        "distances",
        lambda: alibi.distances(scaled, causal),
        grid=grid,
        text="distances_causal" if causal else "distances",
    )
    mask = causal_additive(scaled) if causal else None
    all_weights = []
    for h, slope in enumerate(slopes, start=1):
        head = {**context, "head": h, "slope": slope}
        head_grid = Grid(queries, keys, head)

        def biased_scores(slope: float = slope) -> tuple[Any, Any]:
            bias = alibi.bias(slope, distance)
            logits = scaled + bias
            return bias, logits if mask is None else logits + mask

        (bias, logits), took = run.timed(biased_scores)
        record.add(
            f"head{h}.biased",
            logits,
            grid=head_grid,
            seconds=took,
            parts=(Part(f"bias −m·distance, m = {slope:g}", bias),),
            text="biased_causal" if causal else "biased",
        )
        all_weights.append(
            record.softmax(f"head{h}.weights", logits, grid=head_grid, text="weights")
        )
    far = _far_weights(record, all_weights, trained)
    rows = [
        {
            "head": h,
            "slope": slope,
            "bias_at_length": -slope * trained,
            "factor_at_length": math.exp(-slope * trained),
            "largest_far": far[h - 1],
        }
        for h, slope in enumerate(slopes, start=1)
    ]
    past = n > trained
    record.add(
        "past_length",
        rows,
        kind="records",
        grid=Grid(context=context),
        notes=_reach_notes(record, all_weights, slopes)
        + ((record.note("none_past", n=n, L=trained),) if not past else ()),
        text="past_length",
    )
    stacked = np.stack([np.asarray(backend.to_numpy(w)) for w in all_weights])  # (H, n, n)
    inputs = (
        InputValue("Q", run.inputs["Q"], row_labels=queries, description="queries"),
        InputValue("K", run.inputs["K"], row_labels=keys, description="keys"),
    )
    meta = {"slopes": slopes, "causal": causal, "train_length": trained}
    return record.walkthrough(stacked, inputs=inputs, meta=meta)


def _far_weights(record: StepRecorder, weights: list[Any], trained: int) -> list[float]:
    """Per head, the largest total weight a query gives to keys ``trained`` or more positions
    away (0 when no pair is that far apart)."""
    out = []
    for value in weights:
        w = np.asarray(record.to_numpy(value), dtype=np.float64)
        i, j = np.indices(w.shape)
        far = np.abs(i - j) >= trained  # causal: the keys after i have weight 0 anyway
        with np.errstate(invalid="ignore"):
            out.append(float(np.max(np.sum(np.where(far, w, 0.0), axis=-1), initial=0.0)))
    return out


def mean_distances(weights: list[np.ndarray]) -> np.ndarray:
    """Per head, the average over the rows of Σ_j w_ij·|i − j|: how far back its weight lies."""
    out = []
    for w in weights:
        w = np.asarray(w, dtype=np.float64)
        i, j = np.indices(w.shape)
        out.append(float(np.mean(np.sum(w * np.abs(i - j), axis=-1))))
    return np.asarray(out)


def _reach_notes(record: StepRecorder, weights: list[Any], slopes: list[float]) -> tuple[Note, ...]:
    """Whether the steeper heads keep their weight nearer: one note either way (claims)."""
    if len(slopes) < 2:
        return ()
    reach = mean_distances([np.asarray(record.to_numpy(w)) for w in weights])
    if not np.all(np.isfinite(reach)):
        return ()
    steep, flat = int(np.argmax(slopes)), int(np.argmin(slopes))
    values = {
        "steep": steep + 1,
        "steep_slope": slopes[steep],
        "steep_distance": float(reach[steep]),
        "flat": flat + 1,
        "flat_slope": slopes[flat],
        "flat_distance": float(reach[flat]),
    }
    key = "nearer_when_steeper" if reach[steep] < reach[flat] - _tie(reach) else "same_reach"
    return (record.note(key, **values),)


def _tie(values: np.ndarray) -> float:
    return _TIE * max(1.0, float(np.max(np.abs(values), initial=0.0)))


def _reach_of(walkthrough: Walkthrough) -> tuple[np.ndarray, list[float]] | None:
    """The heads' average distances, from the walkthrough's weights, and their slopes."""
    try:
        slopes = [float(m) for m in walkthrough.meta["slopes"]]
        weights = [walkthrough.step(f"head{h}.weights") for h in range(1, len(slopes) + 1)]
    except (KeyError, ValueError, TypeError):
        return None
    reach = mean_distances(weights)
    if not np.all(np.isfinite(reach)):
        return None
    return reach, slopes


def _as_stated(reach: np.ndarray, slopes: list[float], values: Mapping[str, Any]) -> bool:
    steep, flat = values.get("steep"), values.get("flat")
    heads = range(1, len(slopes) + 1)
    if not (is_whole(steep) and is_whole(flat) and steep in heads and flat in heads):
        return False
    return (
        slopes[steep - 1] == max(slopes)
        and slopes[flat - 1] == min(slopes)
        and reach[steep - 1] == values.get("steep_distance")
        and reach[flat - 1] == values.get("flat_distance")
    )


def nearer_when_steeper(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Ordered by slope, the heads' average distances never grow as the slope grows, and the
    steepest head's is smaller than the flattest's (the note's two)."""
    found = _reach_of(walkthrough)
    if found is None:
        return False
    reach, slopes = found
    along = reach[np.argsort(slopes)]  # flattest first: the distances must not grow along it
    ordered = bool(np.all(np.diff(along) <= _tie(reach)))
    return (
        _as_stated(reach, slopes, values)
        and ordered
        and reach[values["steep"] - 1] < reach[values["flat"] - 1] - _tie(reach)
    )


def same_reach(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The steepest and the flattest heads' average distances are equal (to rounding)."""
    found = _reach_of(walkthrough)
    if found is None:
        return False
    reach, slopes = found
    if not _as_stated(reach, slopes, values):
        return False
    return bool(abs(reach[values["steep"] - 1] - reach[values["flat"] - 1]) <= _tie(reach))


SIZES = ("n", "d", "sqrt_d", "h", "heads_text", "L")
HEAD = (*SIZES, "head", "slope")
TEXTS = Texts(
    steps={
        "slopes": SIZES,
        "scaled": SIZES,
        "distances": SIZES,
        "distances_causal": SIZES,
        "biased": HEAD,
        "biased_causal": HEAD,
        "weights": HEAD,
        "past_length": SIZES,
    },
    notes={
        "not_power_of_two": ("heads", "below", "rest", "twice"),
        "nearer_when_steeper": (
            *("steep", "steep_slope", "steep_distance"),
            *("flat", "flat_slope", "flat_distance"),
        ),
        "same_reach": (
            *("steep", "steep_slope", "steep_distance"),
            *("flat", "flat_slope", "flat_distance"),
        ),
        "none_past": ("n", "L"),
    },
    claims={"nearer_when_steeper": nearer_when_steeper, "same_reach": same_reach},
    general=("not_power_of_two", "none_past"),
)

LESSON = Lesson(
    card=CARD,
    labels=("queries", "keys"),
    validate=validate,
    random_shapes=positional_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
)
