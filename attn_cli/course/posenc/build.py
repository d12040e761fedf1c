"""The positional-encoding lesson: frequencies, the PE matrix, the shift rotation, similarity."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.backend import EPSILON, EXACT_INTEGERS, namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Note, Part, Walkthrough
from attn_cli.course.checks import whole_option
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.posenc.card import CARD
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import posenc as mech


@dataclass(frozen=True)
class Settings:
    positions: int  # N: positions 0 .. N-1
    d_model: int  # even: d_model / 2 sine/cosine pairs
    base: float
    offset: int  # k in PE(pos + k) = M_k PE(pos)
    layout: mech.Layout


def settings(options: dict[str, Any]) -> Settings:
    """The lesson options, checked: every problem names the option and the fix."""
    positions = whole_option(options["positions"], "positions")
    d_model = whole_option(options["d_model"], "d_model")
    offset = whole_option(options["offset"], "offset")
    if positions < 1:
        raise UserError(
            f"{param('positions', positions)}: give at least 1 position (rows 0 .. N−1)."
        )
    if d_model < 2 or d_model % 2:
        raise UserError(
            f"{param('d_model', d_model)}: d_model must be even and at least 2, since every frequency "
            "fills two columns (a sine and a cosine); try "
            f"{param('d_model', max(2, d_model + d_model % 2))}."
        )
    base = options["base"]
    if isinstance(base, bool) or not isinstance(base, int | float) or not math.isfinite(base):
        raise UserError(f"{param('base', repr(base))}: give a number such as 10000.")
    if base <= 1:
        raise UserError(
            f"{param('base', format(base, 'g'))}: the base must be greater than 1, so that wavelengths grow from "
            "2π (pair 0) towards 2π·base (the last pair's is 2π·base^(1 − 2/d_model)); the "
            "paper uses 10000."
        )
    layout = options["layout"]
    if layout not in mech.LAYOUTS:
        raise UserError(f"{param('layout', repr(layout))}: choose {' or '.join(mech.LAYOUTS)}.")
    return Settings(positions, d_model, float(base), offset, layout)


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    settings(options)


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    return {}  # nothing is drawn at random: --positions and --d-model are the sizes


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    s = settings(options)
    n, d = s.positions, s.d_model
    # Live at once: angles, sines, cosines and PE for pos and pos + k, M_k PE and its error
    # (about 8 N × d), M_k and its 4-D construction (4 d × d), and PE PEᵀ with its copies.
    return (8 * n * d + 4 * d * d + 3 * n * n) * itemsize


def build(run: LessonRun) -> Walkthrough:
    s = settings(run.options)
    backend = run.backend
    n, d, h = s.positions, s.d_model, s.d_model // 2
    last = n - 1 + s.offset  # the largest position the lesson evaluates
    if last > EXACT_INTEGERS[backend.dtype]:
        raise UserError(
            f"{backend.dtype} holds whole numbers exactly only up to "
            f"{EXACT_INTEGERS[backend.dtype]}, and position {last} would be rounded (two "
            f"positions would share one encoding); use {param('dtype', 'float32')} or float64, or fewer "
            f"{param('positions')} or a smaller {param('offset')}."
        )
    positions = backend.asarray(np.arange(n, dtype=np.float64))  # (N,) 0 .. N-1
    pairs = backend.asarray(np.arange(h, dtype=np.float64))  # (h,) 0 .. h-1
    rows = tuple(str(pos) for pos in range(n))
    columns = column_labels(h, s.layout)
    record = StepRecorder(run)

    (omega, wavelength), took = run.timed(
        lambda: _with_wavelengths(mech.frequencies(pairs, d, s.base))
    )
    lengths = backend.to_numpy(wavelength).astype(np.float64)
    context = {
        "n": n,
        "last_pos": n - 1,
        "d_model": d,
        "pairs": h,
        "last_pair": h - 1,
        "base": s.base,
        "ratio": s.base ** (2 / d),
        "fastest": lengths[0],
        "slowest": lengths[-1],
        "k": s.offset,
        "layout": s.layout,
    }
    record.add(
        "frequencies",
        frequency_table(backend.to_numpy(omega), lengths, s.layout, n),
        kind="records",  # whole column numbers beside frequencies: a column each its own
        grid=Grid(context=context),
        seconds=took,
        text="frequencies_one_pair" if h == 1 else None,  # no later pair to be slower
    )
    pe = record.compute(
        "pe",
        lambda: mech.encoding(positions, omega, s.layout),
        kind="heatmap",
        grid=Grid(rows, columns, context=context),
        text="pe_one_pair" if h == 1 else None,
    )

    def shift() -> tuple[Any, Any]:
        m_k = mech.rotation(s.offset, omega, s.layout)
        return m_k, mech.shift_error(pe, mech.encoding(positions + s.offset, omega, s.layout), m_k)

    (m_k, error), took = run.timed(shift)
    error = float(backend.to_numpy(error))
    record.add(
        "shift",
        m_k,
        kind="matrix",  # mostly zeros: a table (its corner when large) shows the 2 × 2 blocks
        grid=Grid(
            columns, columns, context={**context, "max_error": error, "eps": EPSILON[backend.dtype]}
        ),
        parts=(Part(f"largest |PE(pos+{s.offset}) − M_{s.offset} PE(pos)|", error, "scalar"),),
        seconds=took,
    )

    def gram() -> tuple[Any, Any, Any]:
        s_matrix = mech.similarity(pe)
        return s_matrix, mech.lag_similarity(positions, omega), mech.diagonal_spread(s_matrix)

    (s_matrix, by_lag, spread), took = run.timed(gram)
    spread = backend.to_numpy(spread).astype(np.float64)
    record.add(
        "similarity",
        s_matrix,
        kind="heatmap",
        grid=Grid(rows, rows, context={**context, "max_spread": float(spread.max())}),
        parts=(  # one row per distance δ = |i − j| = 0 .. N−1
            Part("Σ cos(wₚ·δ)", namespace_of(by_lag).reshape(by_lag, (n, 1))),
            Part("spread", spread.reshape(n, 1)),
        ),
        seconds=took,
        notes=_distance_notes(record, np.asarray(backend.to_numpy(by_lag), dtype=np.float64), d),
    )
    notes = () if s.layout == "interleaved" else (record.note("split", h=h, last=h - 1, d=d - 1),)
    return record.walkthrough(
        pe,
        notes=notes,
        meta={"shift_max_error": error, "similarity_max_spread": float(spread.max())},
    )


def _distance_notes(record: StepRecorder, by_lag: np.ndarray, d_model: int) -> tuple[Note, ...]:
    """Whether Σ cos(wₚ·δ) falls at every step of the distances shown: both notes are
    recorded, and the claims (falls_with_distance, rises_again) keep the true one."""
    values = by_lag.reshape(-1)  # (N,) one value per distance δ = 0 .. N-1
    if values.size < 2:
        return ()  # one position: no distance to compare
    steps = np.diff(values)  # (N - 1,)
    rise = int(np.argmax(steps > 0))  # the first δ whose successor is larger (0 if none)
    return (
        record.note(
            "falls", top=float(values[0]), bottom=float(values[-1]), far=int(values.size - 1)
        ),
        record.note(
            "rises_again",
            low=float(values[rise]),
            low_at=rise,
            high=float(values[rise + 1]),
            high_at=rise + 1,
            d_model=d_model,
        ),
    )


def _lag_values(walkthrough: Walkthrough) -> np.ndarray:
    """The similarity step's Σ cos(wₚ·δ), one value per distance δ (empty if not found)."""
    for part in walkthrough.find("similarity").parts:
        if part.label.startswith("Σ cos"):
            return np.asarray(part.value, dtype=np.float64).reshape(-1)
    return np.zeros(0)


def falls_with_distance(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``falls``: Σ cos(wₚ·δ) is strictly smaller at every next distance shown."""
    lag = _lag_values(walkthrough)
    return bool(lag.size >= 2 and np.all(np.diff(lag) < 0))


def rises_again(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``rises_again``: the value at distance high_at exceeds the one at low_at."""
    lag = _lag_values(walkthrough)
    low, high = values.get("low_at"), values.get("high_at")
    if not isinstance(low, int) or not isinstance(high, int) or not 0 <= low < high < lag.size:
        return False
    return bool(lag[high] > lag[low])


def _with_wavelengths(omega: Any) -> tuple[Any, Any]:
    return omega, mech.wavelengths(omega)


def column_labels(pairs: int, layout: mech.Layout) -> tuple[str, ...]:
    """sin0, cos0, sin1, cos1, ... (interleaved) or sin0, sin1, ..., cos0, cos1, ... (split)."""
    if layout == "split":
        return tuple(f"sin{i}" for i in range(pairs)) + tuple(f"cos{i}" for i in range(pairs))
    return tuple(label for i in range(pairs) for label in (f"sin{i}", f"cos{i}"))


def frequency_table(
    omega: np.ndarray, lengths: np.ndarray, layout: mech.Layout, positions: int
) -> list[dict[str, Any]]:
    """One row per pair: its sine and cosine columns (counted from 0), wᵢ, its wavelength, how
    many times slower than pair 0 it turns, and its full turns from position 0 to N − 1."""
    pairs = omega.shape[0]
    return [
        {
            "pair": i,
            "sin_col": i if layout == "split" else 2 * i,
            "cos_col": i + pairs if layout == "split" else 2 * i + 1,
            "w": float(omega[i]),
            "wavelength": float(lengths[i]),
            "slowdown": float(lengths[i] / lengths[0]),
            "turns": float((positions - 1) / lengths[i]),
        }
        for i in range(pairs)
    ]


# What every step's text reads: the sizes and settings.
SETTINGS = (
    *("n", "last_pos", "d_model", "pairs", "last_pair"),
    *("base", "ratio", "fastest", "slowest", "k", "layout"),
)
TEXTS = Texts(
    steps={
        "frequencies": SETTINGS,
        "frequencies_one_pair": SETTINGS,
        "pe": SETTINGS,
        "pe_one_pair": SETTINGS,
        "shift": (*SETTINGS, "max_error", "eps"),
        "similarity": (*SETTINGS, "max_spread"),
    },
    notes={
        "falls": ("top", "bottom", "far"),
        "rises_again": ("low", "low_at", "high", "high_at", "d_model"),
        "split": ("h", "last", "d"),
    },
    claims={"falls": falls_with_distance, "rises_again": rises_again},
    general=("split",),
)

LESSON = Lesson(
    card=CARD,
    labels=(),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    memory_fix=f"lower {param('positions')} or {param('d_model')}",
    texts=TEXTS,
)
