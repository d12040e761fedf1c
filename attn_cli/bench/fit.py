"""How time and memory grow with n: the slope of a least-squares line through log-log points."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attn_cli.bench.config import Row


@dataclass(frozen=True)
class Fit:
    time_exponent: float | None  # time ∝ n^time_exponent over the measured sizes
    memory_exponent: float | None


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
        fits[impl] = Fit(time_exp, memory_exp)
    return fits


def reading(impl: str, fit: Fit) -> str:
    """One sentence that reads an implementation's exponents."""
    parts = []
    if fit.memory_exponent is not None:
        parts.append(f"memory grows as n^{fit.memory_exponent:.1f} ({_memory_word(fit)})")
    if fit.time_exponent is not None:
        parts.append(f"time as n^{fit.time_exponent:.1f} ({_time_word(fit.time_exponent)})")
    if not parts:
        return f"{impl}: fewer than two successful sizes, no exponent."
    return f"{impl}: " + "; ".join(parts) + "."


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
    if exponent >= 1.7:
        return "it holds n × n scores"
    if exponent <= 1.3:
        return "the n × n matrix never exists"
    return "between linear and quadratic at these sizes"


def _time_word(exponent: float) -> str:
    if exponent >= 1.7:
        return "the n² work dominates"
    if math.isfinite(exponent) and exponent < 1.3:
        return "fixed overheads still dominate: sizes too small to show n²"
    return "on its way to n²"
