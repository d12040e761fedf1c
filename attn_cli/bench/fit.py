"""How time and memory grow with n: the slope of a least-squares line through log-log points,
and what can be read from it.

A time slope is only read when its rows are stable (see config.UNSTABLE_SPREAD): a slope
through noisy medians says nothing about the algorithm (a busy machine gave slopes from 0.4 to
3.8 for the same code). Every implementation does n² work, so a time that barely grows with n
(slope under FLAT_TIME) measures fixed costs, not the algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attn_cli.bench.config import BenchResult, Row
from attn_cli.bench.machine import Load

# Below this time slope the n² work is not what the clock measured.
FLAT_TIME = 1.0
QUADRATIC = 1.7  # a slope at least this: quadratic at these sizes
LINEAR = 1.3  # at most this: linear (or better)


@dataclass(frozen=True)
class Fit:
    time_exponent: float | None  # time ∝ n^time_exponent over the measured sizes
    memory_exponent: float | None
    time_reliable: bool = True  # False when a row it is fitted through was unstable
    unstable_sizes: tuple[int, ...] = ()  # the n of those rows


def loglog_slope(ns: Sequence[float], values: Sequence[float | None]) -> float | None:
    """Least-squares slope b of log(value) = a + b·log(n); None with fewer than two sizes."""
    points = [(n, v) for n, v in zip(ns, values, strict=True) if v is not None and v > 0]
    if len({n for n, _ in points}) < 2:
        return None
    x = np.log([float(n) for n, _ in points])
    y = np.log([float(v) for _, v in points])
    x_centred = x - x.mean()
    return float(np.sum(x_centred * (y - y.mean())) / np.sum(x_centred**2))


def fit_rows(rows: Sequence[Row], variable: str = "n") -> dict[str, Fit]:
    """One fit per implementation, over its successful rows, against ``variable`` (n or d)."""
    fits: dict[str, Fit] = {}
    for impl in dict.fromkeys(row.impl for row in rows):
        ok = [row for row in rows if row.impl == impl and row.status == "ok"]
        xs = [getattr(row, variable) for row in ok]
        time_exp = loglog_slope(xs, [row.ms_median for row in ok])
        memory_exp = loglog_slope(xs, [row.peak_mem_bytes for row in ok])
        unstable = tuple(getattr(row, variable) for row in ok if row.unstable)
        fits[impl] = Fit(time_exp, memory_exp, not unstable, unstable)
    return fits


@dataclass(frozen=True)
class TableRow:
    """A row of the lectures' complexity table, and the exponents it predicts."""

    name: str
    time: str  # as the table writes it
    memory: str
    notes: str  # the table's last column
    n_exponents: tuple[int, int]  # (time, memory) in n, with d and w fixed
    d_time_exponent: int  # time in d, with n fixed


# The complexity table of the lecture note 'Attention is all you need' (n tokens, d the width
# of a head, w the window), in its order. The lecture's slide 'Complexity · the O(n²) wall'
# gives the Vanilla row.
COMPLEXITY_SOURCE = "the lecture note 'Attention is all you need', section Complexity"
COMPLEXITY_TABLE = {
    "vanilla": TableRow("Vanilla", "O(n²d)", "O(n²)", "the baseline", (2, 2), 1),
    "flash": TableRow("FlashAttention", "O(n²d)", "O(n)", "tiling + recomputation", (2, 1), 1),
    "linear": TableRow("Linear attention", "O(nd²)", "O(nd)", "approximation, weaker", (1, 1), 2),
    "window": TableRow(
        "Sliding window", "O(nwd)", "O(nw)", "local only; common with global", (1, 1), 1
    ),
}
# Which row each implementation is an instance of. sdpa-window masks a dense n × n matrix: a
# window mask alone does not make attention local, so it is Vanilla. sdpa's row depends on the
# kernel it dispatches to, so it has none.
IMPL_ROWS = {
    "naive": "vanilla",
    "numpy": "vanilla",
    "sdpa-math": "vanilla",
    "sdpa-window": "vanilla",
    "sdpa-flash": "flash",
    "sdpa-efficient": "flash",
    "sdpa-cudnn": "flash",
    "tiled": "flash",
    "tiled-numpy": "flash",
    "window": "window",
    "window-numpy": "window",
    "flex-window": "window",
    "linear": "linear",
    "linear-numpy": "linear",
}
# A measured exponent matches the table's when it is this close.
TABLE_TOLERANCE = 0.2

Judgement = str  # "matches", "at least" (the n² wall, steeper at these sizes), "above", "below"


def judge(what: str, measured: float, expected: int, variable: str = "n") -> Judgement:
    """How one measured exponent stands to the table's, judged on its own.

    A time slope above 2 over n, with the table's n², is the quadratic wall itself: the n²
    work is there, and at small n caches and memory traffic (which grow with the n × n
    matrix) add to it. So for time against an n² row, steeper is "at least", never a miss.
    """
    if abs(measured - expected) <= TABLE_TOLERANCE:
        return "matches"
    if measured > expected:
        wall = what == "time" and variable == "n" and expected == 2
        return "at least" if wall else "above"
    return "below"


def table_verdict(impl: str, fit: Fit, variable: str = "n") -> str | None:
    """The row of the complexity table an implementation runs, and how each measured exponent
    (time, memory) stands to that row's, each judged on its own; None for an impl with no row
    or nothing measured."""
    key = IMPL_ROWS.get(impl)
    if key is None:
        return None
    row = COMPLEXITY_TABLE[key]
    if variable == "d":  # memory in d is not in the table (O(n²) has no d), time is
        checks = [("time", fit.time_exponent, row.d_time_exponent, fit.time_reliable)]
    else:
        checks = [
            ("memory", fit.memory_exponent, row.n_exponents[1], True),
            ("time", fit.time_exponent, row.n_exponents[0], fit.time_reliable),
        ]
    parts, unread = [], []
    for what, measured, expected, reliable in checks:
        if measured is None or not reliable or not math.isfinite(measured):
            unread.append(what)
            continue
        parts.append(_judged(what, measured, expected, variable))
    if not parts:
        return None
    text = (
        f"{impl} is the table's {row.name} row ({row.time} time, {row.memory} memory). "
        + " ".join(parts)
    )
    if unread:
        text += f" Its {' and '.join(unread)} slope is not read (unstable or missing)."
    return text


def _power(variable: str, exponent: int) -> str:
    return (
        variable if exponent == 1 else f"{variable}{'²' if exponent == 2 else '^' + str(exponent)}"
    )


def _judged(what: str, measured: float, expected: int, variable: str) -> str:
    grew = f"{what.capitalize()} grew as {variable}^{measured:.2f}"
    row = _power(variable, expected)
    judgement = judge(what, measured, expected, variable)
    if judgement == "matches":
        return f"{grew}: the row's {row}."
    if judgement == "at least":
        return (
            f"{grew}: at least the row's {row}, the quadratic wall (steeper than 2 at these "
            "sizes: caches and memory traffic grow with the n × n matrix)."
        )
    if judgement == "above":
        return f"{grew}: steeper than the row's {row} at these sizes."
    if what == "time":
        return (
            f"{grew}: below the row's {row} at these sizes: fixed costs per call still weigh, "
            f"and larger {variable} shows the {row} better."
        )
    return f"{grew}: below the row's {row}."


def complexity_rows() -> list[dict[str, str]]:
    """The complexity table as records (variant, time, memory, notes), in its order."""
    return [
        {"variant": row.name, "time": row.time, "memory": row.memory, "notes": row.notes}
        for row in COMPLEXITY_TABLE.values()
    ]


def reading(impl: str, fit: Fit) -> str:
    """One sentence that reads an implementation's exponents (in n)."""
    parts = []
    if fit.memory_exponent is not None:
        parts.append(f"memory grows as n^{fit.memory_exponent:.1f} ({_memory_word(fit)})")
    if fit.time_exponent is not None:
        word = _linear_time_word(fit) if _linear_in_n(impl) else _time_word(fit)
        parts.append(f"time as n^{fit.time_exponent:.1f} ({word})")
    if not parts:
        return f"{impl}: fewer than two successful sizes, no exponent."
    return f"{impl}: " + "; ".join(parts) + "."


def flat_time(fit: Fit) -> bool:
    """The clock barely moved while the work grew as n²."""
    return fit.time_exponent is not None and fit.time_exponent < FLAT_TIME


def diagnosis(result: BenchResult, fits: dict[str, Fit]) -> list[str]:
    """What stands between the timings and the algorithm: a busy machine, unstable rows,
    times flat across n while memory grows as n². Empty when nothing does."""
    lines = []
    load = result.load
    if load is not None and load.busy:
        lines.append(busy_sentence(load))
    noisy = [impl for impl, fit in fits.items() if not fit.time_reliable]
    if noisy:
        lines.append(
            f"Time slopes of {', '.join(noisy)} are unreliable: some of their rows stayed "
            "unstable (the runs' spread above a tenth of their median) when timed twice, so "
            "their slopes say nothing about n²; the memory slopes still hold."
        )
    flat = [
        impl
        for impl, fit in fits.items()
        if fit.time_reliable and flat_time(fit) and (fit.memory_exponent or 0) >= QUADRATIC
    ]
    if flat:
        lines.append(
            f"{', '.join(flat)}: memory grows as n² but the time barely moves: these timings "
            "are not measuring the algorithm (a floor of fixed costs: start-up per call, or "
            "threads waiting for a core). Larger --sizes, or an idle machine, show the n²."
        )
    return lines


def busy_sentence(load: Load) -> str:
    """The machine was shared: what the load was, and what to do about it."""
    when = []
    if load.busy_before and load.before is not None:
        when.append(f"{load.before:.1f} before the sweep")
    if load.busy_during and load.during_max is not None:
        when.append(f"up to {load.during_max:.1f} during it")
    threads = ", ".join(f"{name} {count}" for name, count in load.threads.items())
    return (
        f"The machine is busy: load average {' and '.join(when)} on {load.cores} cores, "
        f"and each run uses {load.most_threads} thread{'s' if load.most_threads > 1 else ''} "
        f"({threads}). Runs wait for a core, so times include those waits. Close other "
        "programs, or use one thread: OMP_NUM_THREADS=1 attn bench ..."
    )


def contrast(fits: dict[str, Fit]) -> str | None:
    """The steepest and the flattest memory growth in one line, e.g.
    "naive memory grows as n^2.0; tiled as n^1.0." (None with fewer than two fits)."""
    measured = {
        impl: fit.memory_exponent for impl, fit in fits.items() if fit.memory_exponent is not None
    }
    if len(measured) < 2:
        return None
    steep = max(measured, key=lambda impl: measured[impl])
    flat = min(measured, key=lambda impl: measured[impl])
    if steep == flat:
        return None
    return f"{steep} memory grows as n^{measured[steep]:.1f}; {flat} as n^{measured[flat]:.1f}."


def _memory_word(fit: Fit) -> str:
    exponent = fit.memory_exponent
    assert exponent is not None
    if exponent >= QUADRATIC:
        return "it holds n × n scores"
    if exponent <= LINEAR:
        return "the n × n matrix never exists"
    return "between linear and quadratic at these sizes"


def _time_word(fit: Fit) -> str:
    exponent = fit.time_exponent
    assert exponent is not None
    if not fit.time_reliable:
        return _unreliable(fit)
    if not math.isfinite(exponent) or exponent < FLAT_TIME:
        return "flat: not measuring the n² work"
    if exponent >= QUADRATIC:
        return "the n² work dominates"
    if exponent < LINEAR:
        return "fixed costs still weigh: larger n shows n² better"
    return "on its way to n²"


def _linear_in_n(impl: str) -> bool:
    """The algorithm's work grows as n, not n² (window, linear attention)."""
    key = IMPL_ROWS.get(impl)
    return key is not None and COMPLEXITY_TABLE[key].n_exponents[0] == 1


def _linear_time_word(fit: Fit) -> str:
    exponent = fit.time_exponent
    assert exponent is not None
    if not fit.time_reliable:
        return _unreliable(fit)
    if abs(exponent - 1) <= TABLE_TOLERANCE:
        return "linear: the work per token does not grow with n"
    if exponent < 1:
        return "below linear: fixed costs still weigh"
    return "above linear at these sizes"


def _unreliable(fit: Fit) -> str:
    sizes = ",".join(str(n) for n in fit.unstable_sizes)
    return f"unreliable: unstable timings at n={sizes}"
