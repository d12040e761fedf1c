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


def loglog_slope(ns: Sequence[float], values: Sequence[float]) -> float | None:
    """Least-squares slope b of log(value) = a + b·log(n); None with fewer than two sizes."""
    points = [(n, v) for n, v in zip(ns, values, strict=True) if v is not None and v > 0]
    if len({n for n, _ in points}) < 2:
        return None
    x = np.log([float(n) for n, _ in points])
    y = np.log([float(v) for _, v in points])
    x_centred = x - x.mean()
    return float(np.sum(x_centred * (y - y.mean())) / np.sum(x_centred**2))


def fit_rows(rows: Sequence[Row]) -> dict[str, Fit]:
    """One fit per implementation, over its successful rows."""
    fits: dict[str, Fit] = {}
    for impl in dict.fromkeys(row.impl for row in rows):
        ok = [row for row in rows if row.impl == impl and row.status == "ok"]
        ns = [row.n for row in ok]
        time_exp = loglog_slope(ns, [row.ms_median for row in ok])
        memory_exp = loglog_slope(ns, [row.peak_mem_bytes for row in ok])
        unstable = tuple(row.n for row in ok if row.unstable)
        fits[impl] = Fit(time_exp, memory_exp, not unstable, unstable)
    return fits


def reading(impl: str, fit: Fit) -> str:
    """One sentence that reads an implementation's exponents."""
    parts = []
    if fit.memory_exponent is not None:
        parts.append(f"memory grows as n^{fit.memory_exponent:.1f} ({_memory_word(fit)})")
    if fit.time_exponent is not None:
        parts.append(f"time as n^{fit.time_exponent:.1f} ({_time_word(fit)})")
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
        sizes = ",".join(str(n) for n in fit.unstable_sizes)
        return f"unreliable: unstable timings at n={sizes}"
    if not math.isfinite(exponent) or exponent < FLAT_TIME:
        return "flat: not measuring the n² work"
    if exponent >= QUADRATIC:
        return "the n² work dominates"
    if exponent < LINEAR:
        return "fixed costs still weigh: larger n shows n² better"
    return "on its way to n²"
