"""The sliding-window (local) attention lesson: the band mask, the weights, the scores a band
needs against the full n², and how far the output moves from full attention.

Query i sees key j when |i − j| ≤ w (causal: 0 ≤ i − j ≤ w); global tokens (Longformer) see
and are seen by every position. Positions count from 0, as --global does. Scores are scaled
by √d_k, as in attn scaled, so that the output compares with its output on the same matrices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from attn_cli.core.errors import UserError, param
from attn_cli.core.matrices import shortened, whole_number
from attn_cli.core.model import Note, Step, Walkthrough
from attn_cli.course.checks import is_whole, row_names
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.scaled import build as scaled
from attn_cli.course.window import layers as stacked
from attn_cli.course.window.card import CARD
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import local
from attn_cli.mechanisms.masks import additive, causal_additive

# (n × n) matrices alive at once: scores, scaled, band, M, masked, softmax parts (exp by hand
# among them), weights, the
# full attention's weights for the comparison.
_SCORE_MATRICES = 11


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    q, k = inputs["Q"], inputs["K"]
    if q.shape[0] != k.shape[0]:
        raise UserError(
            f"Q has {q.shape[0]} rows but K has {k.shape[0]}: a sliding window runs over one "
            "sequence (query i and key i are the same position), so give Q and K the same n."
        )
    scaled.validate({name: inputs[name] for name in ("Q", "K", "V")}, {})
    window_of(options)
    global_tokens(options.get("global_tokens"), k.shape[0])
    stacked.layers_of(options)


def window_of(options: dict[str, Any]) -> int:
    """The half-width w: a whole number ≥ 0 (w = 0: each token sees only itself)."""
    window = options.get("window")
    if not is_whole(window) or window < 0:
        raise UserError(
            f"{param('window')} must be a whole number ≥ 0 (keys within that distance), not {window!r}."
        )
    return window


def global_tokens(value: Any, n: int) -> tuple[int, ...]:
    """The global positions of --global ("0,5", or a list in a lesson file), each 0..n − 1."""
    if value is None or value == "" or value == []:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    items = items if isinstance(items, list | tuple) else [items]
    positions = []
    for item in items:
        text = str(item).strip()
        if not text.isdigit() or isinstance(item, bool | float):
            raise UserError(
                f"{param('global_tokens', shortened(value))}: give positions from 0 separated by commas, e.g. {param('global_tokens', '0,5')}."
            )
        position = whole_number(text, param("global_tokens"))
        if position >= n:
            raise UserError(
                f"{param('global_tokens')} position {position} is past the last token: positions run 0..{n - 1}."
            )
        positions.append(position)
    return tuple(sorted(set(positions)))


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Q, K, V of n tokens (m is n: one sequence)."""
    return scaled.random_shapes({**sizes, "m": sizes["n"]})


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    (n, _d_k), (_, d_v) = shapes["K"], shapes["V"]
    # --layers: the reach composed (two n × n float copies, the layers each pair needs)
    matrices = _SCORE_MATRICES + (4 if stacked.layers_of(options) is not None else 0)
    return (matrices * n * n + 4 * n * d_v) * itemsize


def positions(prefix: str, count: int) -> tuple[str, ...]:
    """Labels from 0 (q0, q1, ...), as --global and --edges count."""
    return tuple(f"{prefix}{index}" for index in range(count))


def names(run: LessonRun, key: str, count: int, prefix: str) -> tuple[str, ...]:
    """The example's names for ``key`` when it has them, else prefix0, prefix1, ..."""
    if run.labels.get(key):
        return row_names(run, key, count, prefix, "the lesson file")
    return positions(prefix, count)


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    q, k, v = (backend.asarray(run.inputs[name]) for name in ("Q", "K", "V"))
    (n, d_k), d_v = q.shape, v.shape[1]
    window = window_of(run.options)
    causal = bool(run.options.get("causal"))
    chosen = global_tokens(run.options.get("global_tokens"), n)
    queries, keys = names(run, "queries", n, "q"), names(run, "keys", n, "k")
    context: dict[str, Any] = {"n": n, "dk": d_k, "dv": d_v, "sqrt_dk": math.sqrt(d_k)}
    context.update(w=window, reach=(window + 1) if causal else (2 * window + 1))
    record = StepRecorder(run)
    grid = Grid(queries, keys, context)

    scores = record.compute("scores", lambda: mech.scores(q, k), grid=grid)
    logits = record.compute("scaled", lambda: mech.scale(scores, d_k), grid=grid)

    def band_mask() -> Any:
        band = local.window_allowed(logits, window, causal=causal)  # (n, n) True = may attend
        return local.with_global(band, chosen) if chosen else band

    band_notes = (
        (record.note("global", tokens=", ".join(keys[t] for t in chosen)),) if chosen else ()
    )
    allowed = record.compute(
        "band",
        band_mask,
        grid=grid,
        text="band_causal" if causal else "band",
        notes=band_notes,
    )
    masked = record.compute("masked", lambda: logits + additive(allowed, logits), grid=grid)
    weights = record.softmax("weights", masked, grid=grid)
    rows = Grid(queries, context=context)
    output = record.compute("output", lambda: mech.weighted_sum(weights, v), grid=rows)
    if not chosen:
        record.steps[-1] = _with_notes(
            record.steps[-1], _blockwise_note(record, (q, k, v), output, window, causal)
        )
    computed, total = local.computed_scores(allowed)
    band_only = local.window_pairs(n, window, causal)
    count_notes = [
        record.note("count", computed=computed, total=total, percent=100.0 * computed / total),
        record.note("band_pairs_causal" if causal else "band_pairs", band=band_only, n=n, w=window),
    ]
    if chosen:
        count_notes.append(record.note("count_global", extra=computed - band_only))
    mask = backend.to_numpy(allowed)
    record.add(
        "count",
        [
            {
                "query": queries[i],
                "keys": _spans(keys, np.flatnonzero(mask[i]).tolist()),
                "computed": int(np.count_nonzero(mask[i])),
                "full": n,
            }
            for i in range(n)
        ],
        kind="records",
        grid=Grid(context=context),
        notes=tuple(count_notes),
    )
    # Full attention on the same matrices: attn scaled's, or with --causal causal attention's
    # (every earlier key): a causal window hides only past keys, never the future ones.
    full_weights = mech.softmax(logits + causal_additive(logits) if causal else logits)
    full = mech.weighted_sum(full_weights, v)
    outside = np.sum(np.where(mask, 0.0, backend.to_numpy(full_weights)), axis=-1)  # (n,)
    difference = record.compute(
        "difference",
        lambda: output - full,
        grid=rows,
        text=_difference_text(causal, bool(np.any(_sees_future(mask, causal)))),
    )
    change = np.max(np.abs(backend.to_numpy(difference)), axis=-1)  # (n,)
    record.steps[-1] = _with_notes(
        record.steps[-1], *_change_notes(record, queries, outside, change, mask, causal)
    )
    layers = stacked.layers_of(run.options)
    if layers is not None:
        settings = (layers, window, causal, chosen)
        stacked.record_layers(record, np.asarray(mask), (queries, keys), context, settings)
    meta = {
        "window": window,
        "causal": causal,
        "global": list(chosen),
        "scores_computed": computed,
        "scores_full": total,
        "max_abs_difference_from_full": float(np.max(change)),
    }
    return record.walkthrough(output, inputs=scaled.labelled_inputs(run, queries, keys), meta=meta)


# Two weights (or changes, relative to the output's scale) closer than this are equal here.
_TIE = 1e-9


def _out_of_order(hidden: np.ndarray, change: np.ndarray) -> tuple[int, int] | None:
    """The pair of rows (a, b) where a hides less of full attention's weight than b but moves
    further, by the widest margin (of the widest, the first a, then the first b); None when
    ordering the rows by weight hidden orders them by change too (or the numbers are not all
    finite).

    Row b can pair with row a when hidden[a] < hidden[b] − _TIE: with the rows sorted by that
    bound, those b are a suffix, and a's widest margin is against the suffix's smallest
    change: O(n log n), not the O(n²) pairs.
    """
    if not (np.all(np.isfinite(hidden)) and np.all(np.isfinite(change))):
        return None
    tie = _TIE * max(1.0, float(np.max(change, initial=0.0)))
    bound = hidden - _TIE  # b pairs with a when hidden[a] < bound[b]
    order = np.argsort(bound, kind="stable")
    suffix_least = np.minimum.accumulate(change[order][::-1])[::-1]  # least change from i on
    first = np.searchsorted(bound[order], hidden, side="right")  # a's first partner there
    paired = first < len(hidden)
    margin = change - suffix_least[np.minimum(first, len(hidden) - 1)]
    widest = paired & (margin > tie)
    if not widest.any():
        return None
    best = float(np.max(margin[widest]))
    a = int(np.flatnonzero(widest & (margin == best))[0])
    partners = (hidden[a] < bound) & (change[a] - change == best)
    return a, int(np.flatnonzero(partners)[0])


def _sees_future(mask: np.ndarray, causal: bool) -> np.ndarray:
    """(n,) True for each row of a causal window that may attend to a later key: a global
    token's own row, and every row before a global token. Causal attention never sees those
    keys, so such a row's change is not only the weight the window hides."""
    if not causal:
        return np.zeros(mask.shape[0], dtype=bool)
    return np.any(np.triu(np.asarray(mask, dtype=bool), k=1), axis=-1)


def _difference_text(causal: bool, future: bool) -> str:
    if not causal:
        return "difference"
    return "difference_causal_global" if future else "difference_causal"


def _change_notes(
    record: StepRecorder,
    queries: tuple[str, ...],
    outside: np.ndarray,
    change: np.ndarray,
    mask: np.ndarray,
    causal: bool,
) -> tuple[Note, ...]:
    """The largest change and whether the changes follow the weight hidden, over the rows
    that see no future key (every row, unless global tokens let a causal window see ahead)."""
    future = _sees_future(mask, causal)
    keep = ~future
    if np.count_nonzero(keep) < 2:
        return ()
    names = tuple(name for name, kept in zip(queries, keep, strict=True) if kept)
    outside, change = outside[keep], change[keep]
    worst = int(np.argmax(change))
    worst_note = record.note(
        "worst_row_past" if future.any() else "worst_row",
        query=names[worst],
        outside=float(outside[worst]),
        change=float(change[worst]),
    )
    return (worst_note, *_follows_notes(record, names, outside, change, bool(future.any())))


def _follows_notes(
    record: StepRecorder,
    queries: tuple[str, ...],
    hidden: np.ndarray,
    change: np.ndarray,
    past_only: bool,
) -> tuple[Note, ...]:
    """Whether the change follows the weight hidden: one note either way (each a claim);
    ``past_only``: the rows are those that see no future key, and the note says so."""
    pair = _out_of_order(hidden, change)
    if pair is None:
        return (record.note("grows_with_hidden_past" if past_only else "grows_with_hidden"),)
    a, b = pair
    return (
        record.note(
            "not_with_hidden",
            first=queries[a],
            first_hidden=float(hidden[a]),
            first_change=float(change[a]),
            second=queries[b],
            second_hidden=float(hidden[b]),
            second_change=float(change[b]),
        ),
    )


def _hidden_and_change(walkthrough: Walkthrough) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Recomputed from the walkthrough's own steps: the query names, the weight full attention
    (causal when the window is) gives the keys the mask hides, and each row's largest change;
    of the rows that see no future key (_sees_future), the rows the notes speak of."""
    logits = np.asarray(walkthrough.step("scaled"), dtype=float)
    mask = np.asarray(walkthrough.step("band"), dtype=bool)
    difference = np.asarray(walkthrough.step("difference"), dtype=float)
    if walkthrough.meta.get("causal"):
        logits = np.where(np.tril(np.ones(logits.shape, dtype=bool)), logits, -np.inf)
    with np.errstate(invalid="ignore", over="ignore"):
        shifted = np.exp(logits - np.max(logits, axis=-1, keepdims=True))
        full = shifted / np.sum(shifted, axis=-1, keepdims=True)
        hidden = np.sum(np.where(mask, 0.0, full), axis=-1)
        change = np.max(np.abs(difference), axis=-1)
    names = tuple(str(row["query"]) for row in walkthrough.step("count"))
    keep = ~_sees_future(mask, bool(walkthrough.meta.get("causal")))
    names = tuple(name for name, kept in zip(names, keep, strict=True) if kept)
    return names, hidden[keep], change[keep]


def grows_with_hidden(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Ordered by the weight hidden, the rows' changes never decrease, and at least two rows
    hide different weights (else there is no order to follow)."""
    try:
        _, hidden, change = _hidden_and_change(walkthrough)
    except (KeyError, ValueError, TypeError):
        return False
    if not (np.all(np.isfinite(hidden)) and np.all(np.isfinite(change))):
        return False
    hidden_spread = float(np.max(hidden, initial=0.0) - np.min(hidden, initial=0.0))
    change_spread = float(np.max(change, initial=0.0) - np.min(change, initial=0.0))
    tie = _TIE * max(1.0, float(np.max(change, initial=0.0)))
    moves = hidden_spread > _TIE and change_spread > tie  # both vary: an order to follow
    return moves and _out_of_order(hidden, change) is None


def not_with_hidden(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The note's first row hides less weight than its second and still moves further."""
    try:
        names, hidden, change = _hidden_and_change(walkthrough)
        a, b = names.index(values["first"]), names.index(values["second"])
    except (KeyError, ValueError, TypeError):
        return False
    tie = _TIE * max(1.0, float(np.nanmax(change, initial=0.0)))
    return bool(hidden[a] < hidden[b] - _TIE and change[a] > change[b] + tie)


def largest_change_at(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The named row's change is the largest of all rows', and not every row's is the same."""
    try:
        names, _, change = _hidden_and_change(walkthrough)
        row = names.index(values["query"])
    except (KeyError, ValueError, TypeError):
        return False
    if not np.all(np.isfinite(change)):
        return False
    tie = _TIE * max(1.0, float(np.max(change)))
    return bool(change[row] >= np.max(change) and np.max(change) - np.min(change) > tie)


def same_output(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The blockwise output agrees to rounding: a finite gap within 1e-9 of the output's scale."""
    try:
        output = np.asarray(walkthrough.output, dtype=float)
        difference = float(values["difference"])
    except (KeyError, ValueError, TypeError):
        return False
    if not (np.all(np.isfinite(output)) and math.isfinite(difference)):
        return False
    return difference <= 1e-9 * max(1.0, float(np.max(np.abs(output), initial=0.0)))


def _with_notes(step: Step, *notes: Note) -> Step:
    """A recorded step with notes that need its value (computed after it) added."""
    return replace(step, notes=(*step.notes, *notes))


def _blockwise_note(
    record: StepRecorder, qkv: tuple[Any, Any, Any], output: Any, window: int, causal: bool
) -> Note:
    """The blockwise computation (the bench's --impl window), which never forms the n × n
    scores, gives the same output: each block of queries is scored against its key slice,
    every block at once."""
    q, k, v = qkv
    block = window + 1
    blocks = local.window_attention(q, k, v, window, causal=causal, block=block)
    backend = record.run.backend
    gap = float(np.max(np.abs(backend.to_numpy(blocks) - backend.to_numpy(output))))
    largest = local.window_blocks(q.shape[-2], window, causal, block).scores
    return record.note("blockwise", block=block, largest=largest, difference=gap)


def _spans(names: tuple[str, ...], indices: list[int]) -> str:
    """Key indices as runs: [0, 1, 2, 5] -> "k0–k2, k5"."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ", ".join(
        names[run[0]] if len(run) == 1 else f"{names[run[0]]}–{names[run[-1]]}" for run in runs
    )


# The values every step text of this lesson may read.
CONTEXT = ("n", "dk", "dv", "sqrt_dk", "w", "reach")

TEXTS = Texts(
    steps={
        "scores": CONTEXT,
        "scaled": CONTEXT,
        "band": CONTEXT,
        "band_causal": CONTEXT,
        "masked": CONTEXT,
        "weights": CONTEXT,
        "output": CONTEXT,
        "count": CONTEXT,
        "difference": CONTEXT,
        "difference_causal": CONTEXT,
        "difference_causal_global": CONTEXT,
        **dict.fromkeys(stacked.STEPS, (*CONTEXT, *stacked.STEP_NAMES)),
    },
    notes={
        "global": ("tokens",),
        "blockwise": ("block", "largest", "difference"),
        "count": ("computed", "total", "percent"),
        "band_pairs": ("band", "n", "w"),
        "band_pairs_causal": ("band", "n", "w"),
        "count_global": ("extra",),
        "worst_row": ("query", "outside", "change"),
        "worst_row_past": ("query", "outside", "change"),
        "grows_with_hidden": (),
        "grows_with_hidden_past": (),
        "not_with_hidden": (
            *("first", "first_hidden", "first_change"),
            *("second", "second_hidden", "second_change"),
        ),
        **stacked.NOTES,
    },
    claims={
        "worst_row": largest_change_at,
        "worst_row_past": largest_change_at,
        "grows_with_hidden": grows_with_hidden,
        "grows_with_hidden_past": grows_with_hidden,
        "not_with_hidden": not_with_hidden,
        "blockwise": same_output,
        **stacked.CLAIMS,
    },
    measured=(
        "count",
        "band_pairs",
        "band_pairs_causal",
        "count_global",
    ),
    general=("global",),
)

LESSON = Lesson(
    card=CARD,
    labels=("queries", "keys"),
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
)
