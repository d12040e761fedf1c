"""The rotary-position lesson: the frequencies θᵢ, the angle table m·θᵢ, q and k turned by
their position, the scores, the same scores under the other convention, and the property that
makes RoPE work shown on the numbers: move every position by s and the scores stay, where the
scores of sinusoidal PE added to q and k change.

Positions count from 0, as the models' code does. The scores are plain dot products (R_m q_m)·(R_n k_n)
(attention then scales them by √d and takes the softmax, as in attn scaled).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from attn_cli.core.backend import EPSILON, EXACT_INTEGERS
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import InputValue, Note, Part, Step, Walkthrough
from attn_cli.course.checks import (
    counted,
    is_whole,
    positional_shapes,
    row_names,
    same_positions,
)
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.rope import scaling as scaled_rope
from attn_cli.course.rope.card import CARD
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import posenc, rope_scaling, rotary

# Each convention in words: which dimensions a pair turns, and whose code writes it so.
CONVENTIONS = {
    "interleaved": "pairs (2i, 2i + 1), as the RoFormer paper and Meta's Llama code",
    "split": "pairs (i, i + r/2), the two halves, as Hugging Face's rotate_half",
}
OTHER: dict[str, rotary.Layout] = {"interleaved": "split", "split": "interleaved"}


@dataclass(frozen=True)
class Settings:
    layout: rotary.Layout
    base: float
    rotary: int  # r: the dimensions turned (even, at most d)
    offset: int  # s: every position moved by s
    scaling: rope_scaling.Scaling | None = None  # --rope-scaling and its parameters


def settings(options: Mapping[str, Any], d: int) -> Settings:
    """The options, checked against the width d of q and k; every problem names its fix."""
    layout = options.get("layout") or "interleaved"
    if layout not in rotary.LAYOUTS:
        raise UserError(f"{param('layout', repr(layout))}: choose {' or '.join(rotary.LAYOUTS)}.")
    base = options.get("base", 10000.0)
    if isinstance(base, bool) or not isinstance(base, int | float) or not math.isfinite(base):
        raise UserError(f"{param('base', repr(base))}: give a number such as 10000.")
    if base <= 1:
        raise UserError(
            f"{param('base', format(base, 'g'))}: the base must be greater than 1, so that each pair turns slower "
            "than the one before (the paper's is 10000, Llama 3's 500000)."
        )
    offset = options.get("offset", 3)
    if not is_whole(offset) or offset < 1:
        raise UserError(
            f"{param('offset')} must be a whole number >= 1 (the shift s), not {offset!r}."
        )
    width = options.get("rotary_dim")
    if width is None:
        if d == 1:
            raise UserError(
                "Q and K are 1 wide: RoPE turns pairs of dimensions, so it needs a width of 2 "
                "or more; give an even d."
            )
        if d % 2:
            raise UserError(
                f"Q and K are {d} wide, an odd width: RoPE turns pairs of dimensions; give an "
                f"even d, or {param('rotary_dim')} with an even width of at most {d} (the rest pass "
                "through)."
            )
        width = d
    if not is_whole(width) or width < 2:
        raise UserError(f"{param('rotary_dim')} must be a whole number >= 2, not {width!r}.")
    if width % 2:
        raise UserError(
            f"{param('rotary_dim', width)} is odd: RoPE turns pairs of dimensions; give an even width "
            f"such as {width - 1 if width > 2 else 2}."
        )
    if width > d:
        raise UserError(
            f"{param('rotary_dim', width)} is wider than q and k (d = {d}); give at most {d}."
        )
    return Settings(
        cast(rotary.Layout, layout),
        float(base),
        width,
        offset,
        scaled_rope.parse(options, width),
    )


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    q, k = inputs["Q"], inputs["K"]
    same_positions(q.shape, k.shape, "m")
    settings(options, q.shape[1])


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    """Six n × n score matrices (and their differences) and a dozen n × d rotations."""
    n, d = shapes["Q"]
    return (8 * n * n + 16 * n * d) * itemsize


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    q, k = (backend.asarray(run.inputs[name]) for name in ("Q", "K"))
    n, d = q.shape
    s = settings(run.options, d)
    last = n - 1 + s.offset
    if last > EXACT_INTEGERS[backend.dtype]:
        raise UserError(
            f"{backend.dtype} holds whole numbers exactly only up to "
            f"{EXACT_INTEGERS[backend.dtype]}, and position {last} would be rounded; use "
            f"{param('dtype', 'float32')} or float64, or a smaller {param('offset')}."
        )
    if s.scaling is not None:
        scaled_rope.check_positions(s.scaling, backend.dtype)
    half = s.rotary // 2
    queries, keys = position_names(run, "queries", n, "q"), position_names(run, "keys", n, "k")
    positions = backend.asarray(np.arange(n, dtype=np.float64))  # (n,) 0 .. n-1
    moved = positions + s.offset  # (n,) s .. s+n-1
    pairs = backend.asarray(np.arange(half, dtype=np.float64))  # (r/2,)
    columns = tuple(str(index) for index in range(d))
    theta = rotary.frequencies(pairs, s.rotary, s.base)
    lengths = np.asarray(backend.to_numpy(rotary.wavelengths(theta)), dtype=np.float64)
    context: dict[str, Any] = {
        "n": n,
        "last_pos": n - 1,
        "d": d,
        "r": s.rotary,
        "pairs": half,
        "pairs_text": counted(half, "pair"),
        "last_pair": half - 1,
        "base": s.base,
        "fastest": float(lengths[0]),
        "slowest": float(lengths[-1]),
        "s": s.offset,
        "layout": s.layout,
        "convention": CONVENTIONS[s.layout],
        "other": OTHER[s.layout],
        "other_convention": CONVENTIONS[OTHER[s.layout]],
    }
    record = StepRecorder(run)
    spans = rotary.pair_columns(half, s.layout)
    record.add(
        "frequencies",
        [
            {
                "pair": i,
                "dims": f"{a}, {b}",
                "theta": float(theta_i),
                "wavelength": float(lengths[i]),
            }
            for i, ((a, b), theta_i) in enumerate(
                zip(spans, np.asarray(backend.to_numpy(theta)).tolist(), strict=True)
            )
        ],
        kind="records",
        grid=Grid(context=context),
        text="frequencies_one_pair" if half == 1 else None,  # no later, slower pair
    )
    plain = theta
    if s.scaling is not None:  # the steps below turn q and k by the scaled frequencies
        scaling_context = {
            **context,
            **scaled_rope.context_of(s.scaling, s.rotary, s.base),
        }
        scaled = scaled_rope.record_frequencies(
            record, s.scaling, theta, pairs, s.rotary, s.base, scaling_context
        )
        theta = scaled.theta
    position_rows = tuple(str(m) for m in range(n))
    pair_cols = tuple(f"pair {i}" for i in range(half))
    table = record.compute(
        "angles",
        lambda: rotary.angles(positions, theta),
        grid=Grid(position_rows, pair_cols, context),
    )
    turned_q = record.compute(
        "q_rotated",
        lambda: rotary.rotate(q, table, s.layout),
        grid=Grid(queries, columns, context),
    )
    turned_k = record.compute(
        "k_rotated",
        lambda: rotary.rotate(k, table, s.layout),
        grid=Grid(keys, columns, context),
    )
    grid = Grid(queries, keys, context)
    notes = () if s.rotary == d else (record.note("partial", r=s.rotary, d=d, rest=d - s.rotary),)
    scores = record.compute(
        "scores", lambda: mech.scores(turned_q, turned_k), grid=grid, notes=notes
    )

    def other_layout() -> Any:
        other = OTHER[s.layout]
        return mech.scores(rotary.rotate(q, table, other), rotary.rotate(k, table, other))

    other = record.compute("other_layout", other_layout, grid=grid)
    record.steps[-1] = _with_note(record, _layout_note(record, scores, other))

    def shifted_scores() -> tuple[Any, Any]:
        later = rotary.angles(moved, theta)
        value = mech.scores(rotary.rotate(q, later, s.layout), rotary.rotate(k, later, s.layout))
        return value, value - scores

    (shifted, change), took = run.timed(shifted_scores)
    record.add(
        "shifted",
        shifted,
        grid=grid,
        seconds=took,
        parts=(Part(f"difference from the scores at 0 … {n - 1}", change),),
    )
    record.steps[-1] = _with_note(
        record, record.note("shift_kept", s=s.offset, difference=_largest(record, change))
    )
    omega = posenc.frequencies(
        backend.asarray(np.arange((d + 1) // 2, dtype=np.float64)), d, s.base
    )

    def added(at: Any) -> Any:
        return encoded_scores(q, k, at, omega)

    pe_scores = record.compute("pe_scores", lambda: added(positions), grid=grid)

    def pe_moved() -> tuple[Any, Any]:
        value = added(moved)
        return value, value - pe_scores

    (pe_shifted, pe_change), took = run.timed(pe_moved)
    record.add(
        "pe_shifted",
        pe_shifted,
        grid=grid,
        seconds=took,
        parts=(Part(f"difference from the scores at 0 … {n - 1}", pe_change),),
    )
    moved_by = _largest(record, pe_change)
    moves = encoding_moves_scores(run.inputs["Q"], run.inputs["K"], s.offset, s.base)
    key = "pe_changes" if moves else "pe_kept"
    record.steps[-1] = _with_note(record, record.note(key, s=s.offset, difference=moved_by))
    if s.scaling is not None:
        scaled_rope.record_far(
            record,
            scaling=s.scaling,
            q=q,
            k=k,
            plain=plain,
            scaled=scaled,
            layout=s.layout,
            keys=keys,
            context=scaling_context,
        )
    inputs = (
        InputValue("Q", run.inputs["Q"], queries, columns, description="queries"),
        InputValue("K", run.inputs["K"], keys, columns, description="keys"),
    )
    meta: dict[str, Any] = {
        "layout": s.layout,
        "rotary_dim": s.rotary,
        "shift_max_difference": _largest(record, change),
        "pe_shift_max_difference": moved_by,
    }
    if s.scaling is not None:
        meta["rope_scaling"] = s.scaling.rope_type
    return record.walkthrough(scores, inputs=inputs, meta=meta)


def position_names(run: LessonRun, key: str, count: int, prefix: str) -> tuple[str, ...]:
    """The example's names for ``key`` when it has them, else prefix0, prefix1, ...: from 0,
    as the positions count."""
    if run.labels.get(key):
        return row_names(run, key, count, prefix, "the lesson file")
    return tuple(f"{prefix}{index}" for index in range(count))


def _largest(record: StepRecorder, difference: Any) -> float:
    """max |difference| as a Python float (0 for an empty matrix)."""
    values = np.abs(np.asarray(record.to_numpy(difference), dtype=np.float64))
    return float(np.max(values, initial=0.0))


def _with_note(record: StepRecorder, note: Note) -> Step:
    """The last recorded step with ``note`` added (a note that reads the step's own value)."""
    step = record.steps[-1]
    return replace(step, notes=(*step.notes, note))


def _layout_note(record: StepRecorder, scores: Any, other: Any) -> Note:
    """Whether the other convention gives other scores: one note either way (claims)."""
    gap = _largest(record, other - scores)
    n, d = record.run.inputs["Q"].shape
    s = settings(record.run.options, d)
    key = "layouts_differ" if gap > _bound_of(record.run, n, d, s.offset) else "layouts_agree"
    return record.note(key, other=OTHER[s.layout], difference=gap)


def _bound_of(run: LessonRun, n: int, d: int, offset: int) -> float:
    return rounding_bound(run.backend.dtype, run.inputs["Q"], run.inputs["K"], n + offset)


def encoded_scores(q: Any, k: Any, at: Any, omega: Any) -> Any:
    """(n, n) scores of q and k (n, d each) with the sinusoidal encoding of positions ``at``
    added to both: (q_m + PE(m)) · (k_n + PE(n))."""
    encoding = posenc.encoding(at, omega)[
        :, : q.shape[-1]
    ]  # (n, d): a column cut off when d is odd
    return mech.scores(q + encoding, k + encoding)


def encoding_moves_scores(q: np.ndarray, k: np.ndarray, offset: int, base: float) -> bool:
    """Whether the added sinusoidal encoding makes the scores of q and k (n, d each) change
    when every position moves by offset: decided in float64 from the inputs, whatever the
    lesson's dtype, because in bfloat16 the rounding bound can exceed the change itself (the
    claim is about the inputs' cross terms q_m·PE(n) and PE(m)·k_n, not the type's rounding)."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    n, d = q.shape
    omega = posenc.frequencies(np.arange((d + 1) // 2, dtype=np.float64), d, base)
    positions = np.arange(n, dtype=np.float64)  # (n,) 0 .. n-1
    with np.errstate(over="ignore", invalid="ignore"):
        moved = encoded_scores(q, k, positions + offset, omega)  # (n, n)
        change = np.abs(moved - encoded_scores(q, k, positions, omega))  # (n, n)
    return float(np.max(change, initial=0.0)) > rounding_bound("float64", q, k, n + offset)


def rounding_bound(dtype: str, q: np.ndarray, k: np.ndarray, last: int) -> float:
    """How far two computations of the same score may differ by rounding alone: each angle
    m·θ is off by about ε·m, its sine and cosine by as much, and a score sums d products of
    entries of q and k (the sinusoidal encoding's entries are at most 1), so 8·d·ε·(m + 1)
    times the largest |q| + 1 and |k| + 1 covers it."""
    d = q.shape[-1] if q.ndim else 1
    with np.errstate(over="ignore", invalid="ignore"):
        size = (float(np.max(np.abs(q), initial=0.0)) + 1) * (
            float(np.max(np.abs(k), initial=0.0)) + 1
        )
    return 8 * d * EPSILON[dtype] * (last + 1) * size


def _bound(walkthrough: Walkthrough) -> float:
    given = {item.name: np.asarray(item.value, dtype=np.float64) for item in walkthrough.inputs}
    q, k = given["Q"], given["K"]
    offset = int(walkthrough.meta.get("options", {}).get("offset", 3))
    return rounding_bound(walkthrough.dtype, q, k, q.shape[0] + offset)


def _encoding_moves(walkthrough: Walkthrough) -> bool:
    """encoding_moves_scores for a walkthrough's own inputs and options."""
    given = {item.name: np.asarray(item.value, dtype=np.float64) for item in walkthrough.inputs}
    options = walkthrough.meta.get("options", {})
    offset, base = int(options.get("offset", 3)), float(options.get("base", 10000.0))
    return encoding_moves_scores(given["Q"], given["K"], offset, base)


def _gap(walkthrough: Walkthrough, first: str, second: str) -> float | None:
    """max |second − first| between two steps' matrices; None when they cannot be read or are
    not finite."""
    try:
        a = np.asarray(walkthrough.step(first), dtype=np.float64)
        b = np.asarray(walkthrough.step(second), dtype=np.float64)
    except (KeyError, ValueError, TypeError):
        return None
    if a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return None
    return float(np.max(np.abs(b - a), initial=0.0))


def _stated(gap: float | None, values: Mapping[str, Any]) -> bool:
    """The note's difference is the one measured from the steps (to rounding of the sum)."""
    said = values.get("difference")
    return (
        gap is not None
        and isinstance(said, float)
        and math.isclose(gap, said, rel_tol=1e-9, abs_tol=1e-300)
    )


def scores_kept(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Moving every position by s changes no score beyond rounding (the note's difference)."""
    gap = _gap(walkthrough, "scores", "shifted")
    return _stated(gap, values) and gap is not None and gap <= _bound(walkthrough)


def pe_scores_change(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """With sinusoidal PE added, moving every position by s changes a score by more than
    rounding: by the note's difference."""
    gap = _gap(walkthrough, "pe_scores", "pe_shifted")
    return _stated(gap, values) and gap is not None and _encoding_moves(walkthrough)


def pe_scores_kept(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """With sinusoidal PE added, moving every position by s changes no score beyond rounding."""
    gap = _gap(walkthrough, "pe_scores", "pe_shifted")
    return _stated(gap, values) and gap is not None and not _encoding_moves(walkthrough)


def layouts_differ(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The other convention's scores differ from these by more than rounding: by the note's
    difference."""
    gap = _gap(walkthrough, "scores", "other_layout")
    return _stated(gap, values) and gap is not None and gap > _bound(walkthrough)


def layouts_agree(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The other convention's scores equal these to rounding."""
    gap = _gap(walkthrough, "scores", "other_layout")
    return _stated(gap, values) and gap is not None and gap <= _bound(walkthrough)


# What every step's text reads: the sizes and settings.
SETTINGS = (
    *("n", "last_pos", "d", "r", "pairs", "pairs_text", "last_pair", "base"),
    *("fastest", "slowest", "s", "layout", "convention", "other", "other_convention"),
)
SCALED = (*SETTINGS, *scaled_rope.CONTEXT)
TEXTS = Texts(
    steps={
        "frequencies": SETTINGS,
        "frequencies_one_pair": SETTINGS,
        "angles": SETTINGS,
        "q_rotated": SETTINGS,
        "k_rotated": SETTINGS,
        "scores": SETTINGS,
        "other_layout": SETTINGS,
        "shifted": SETTINGS,
        "pe_scores": SETTINGS,
        "pe_shifted": SETTINGS,
        **{f"scaling_{kind}": SCALED for kind in rope_scaling.SCALINGS},
        "temperature": SCALED,
        "far": SCALED,
        "far_yarn": SCALED,
    },
    notes={
        "partial": ("r", "d", "rest"),
        "layouts_differ": ("other", "difference"),
        "layouts_agree": ("other", "difference"),
        "shift_kept": ("s", "difference"),
        "pe_changes": ("s", "difference"),
        "pe_kept": ("s", "difference"),
        "regimes": ("pairs", "factor", "kept", "blended", "interpolated", "order"),
        "far_unseen": ("far", "L", "pairs", "plain", "scaled"),
    },
    claims={
        "layouts_differ": layouts_differ,
        "layouts_agree": layouts_agree,
        "shift_kept": scores_kept,
        "pe_changes": pe_scores_change,
        "pe_kept": pe_scores_kept,
        "regimes": scaled_rope.regimes_counted,
        "far_unseen": scaled_rope.far_counted,
    },
    general=("partial",),
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
