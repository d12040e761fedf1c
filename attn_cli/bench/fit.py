"""How time and memory grow with n: the slope of a least-squares line through log-log points,
and what can be read from it.

The floor. Every call pays a fixed cost whatever n is (a kernel launch, Python's overhead),
and no call is faster than it: it is at most the fastest median of the implementation in the
sweep. A row enters the time fit only when its median is at least FLOOR_FACTOR × that fastest
median, so that the fixed part is at most a third of it; the rows below are left out, and
named. (On an H200 the fused kernels took 0.03-0.08 ms a call from n = 512 to 4096: a slope
through those rows read 0.7-1.4 where the rows from 4096 up read 2.0.) Memory likewise: a part
that does not grow with n (a kernel's workspace) is at most the smallest peak, and a row enters
the memory fit when its peak is at least FLOOR_FACTOR × that. The floor applies to sweeps over
n; a sweep over d (--dims) fits every row, since at one n the n² softmax is part of every call.

A time slope is only read when its fitted rows are stable (see config.UNSTABLE_SPREAD): a slope
through noisy medians says nothing about the algorithm (a busy machine gave slopes from 0.4 to
3.8 for the same code). A row left out of the fit does not make the slope unreliable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from attn_cli.bench.config import BenchResult, Row
from attn_cli.bench.machine import Load
from attn_cli.core.backend import format_bytes

# A row enters a fit when its value is at least this many times the implementation's least:
# the part that does not grow with n (at most that least value) is then at most a third of it.
FLOOR_FACTOR = 3
QUADRATIC = 1.7  # a slope at least this: quadratic at these sizes
# A time slope beyond this is more than the n² work (caches add some; a busy core, anything).
STEEP = 3.0
LINEAR = 1.3  # at most this: linear (or better)
# The implementations that loop over key blocks in Python, one step per block of --block keys.
KEY_BLOCK_LOOPS = ("tiled", "tiled-numpy")
# Per-step times of a key-block loop within this ratio of each other are "about the same".
STEADY_STEP = 1.5


@dataclass(frozen=True)
class Fit:
    """The exponents of one implementation, and the rows they were fitted through."""

    time_exponent: float | None  # time ∝ n^time_exponent over time_sizes
    memory_exponent: float | None  # over memory_sizes
    time_reliable: bool = True  # False when a row of the time fit was unstable
    unstable_sizes: tuple[int, ...] = ()  # the n of those rows
    time_sizes: tuple[int, ...] = ()  # the rows the time slope goes through
    memory_sizes: tuple[int, ...] = ()
    time_left_out: tuple[int, ...] = ()  # successful rows below the floor
    memory_left_out: tuple[int, ...] = ()
    fastest_ms: float | None = None  # the fastest median: a bound on the fixed cost of a call
    smallest_bytes: int | None = None  # the smallest peak: a bound on memory that does not grow
    # The time slope with fastest_ms taken from every fitted row: the steepest that the part of
    # the time that grows with n can be (a smaller fixed cost leaves a flatter one).
    time_exponent_max: float | None = None
    # A key-block loop's median per step (n / block steps) over the fitted rows: (least, most).
    block_step_ms: tuple[float, float] | None = None

    @property
    def time_cutoff_ms(self) -> float | None:
        return None if self.fastest_ms is None else FLOOR_FACTOR * self.fastest_ms

    @property
    def memory_cutoff_bytes(self) -> float | None:
        return None if self.smallest_bytes is None else FLOOR_FACTOR * self.smallest_bytes

    @property
    def readable(self) -> bool:
        """Something to say: an exponent, or rows left out of a fit."""
        return (
            self.time_exponent is not None
            or self.memory_exponent is not None
            or bool(self.time_left_out or self.memory_left_out)
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def loglog_slope(ns: Sequence[float], values: Sequence[float | None]) -> float | None:
    """Least-squares slope b of log(value) = a + b·log(n); None with fewer than two sizes."""
    points = [(n, v) for n, v in zip(ns, values, strict=True) if v is not None and v > 0]
    if len({n for n, _ in points}) < 2:
        return None
    x = np.log([float(n) for n, _ in points])
    y = np.log([float(v) for _, v in points])
    x_centred = x - x.mean()
    return float(np.sum(x_centred * (y - y.mean())) / np.sum(x_centred**2))


def past_floor(
    points: Sequence[tuple[int, float]],
) -> tuple[list[tuple[int, float]], list[int], float | None]:
    """(the points at least FLOOR_FACTOR × the least value, the sizes of the others, the least
    value); with fewer than two points there is no floor to read: all are kept."""
    if len(points) < 2:
        return list(points), [], None
    least = min(value for _, value in points)
    kept = [(x, value) for x, value in points if value >= FLOOR_FACTOR * least]
    left_out = [x for x, value in points if value < FLOOR_FACTOR * least]
    return kept, left_out, least


def fit_rows(rows: Sequence[Row], variable: str = "n", block: int | None = None) -> dict[str, Fit]:
    """One fit per implementation, over its successful rows, against ``variable`` (n or d);
    over n, through the rows past the floor only. ``block``: the key block of the loops."""
    fits: dict[str, Fit] = {}
    for impl in dict.fromkeys(row.impl for row in rows):
        ok = [row for row in rows if row.impl == impl and row.status == "ok"]
        fits[impl] = _fit(impl, ok, variable, block)
    return fits


def fit_sweep(result: BenchResult) -> dict[str, Fit]:
    """The fits of a sweep's rows, as its config asks (the variable, the key block)."""
    return fit_rows(result.rows, result.config.variable, result.config.block)


def _fit(impl: str, ok: list[Row], variable: str, block: int | None) -> Fit:
    unstable = {getattr(row, variable) for row in ok if row.unstable}
    times = _points(ok, variable, "ms_median")
    memory = _points(ok, variable, "peak_mem_bytes")
    if variable == "n":
        timed, time_left_out, fastest = past_floor(times)
        held, memory_left_out, smallest = past_floor(memory)
    else:  # over d at one n, every row: the n² softmax is no fixed cost
        timed, time_left_out, fastest = times, [], None
        held, memory_left_out, smallest = memory, [], None
    time_exponent = _slope(timed)
    time_exponent_max = None
    if fastest is not None and time_exponent is not None:
        time_exponent_max = _slope([(x, value - fastest) for x, value in timed])
    steps = None
    if variable == "n" and block and impl in KEY_BLOCK_LOOPS and timed:
        per_step = [value / math.ceil(x / block) for x, value in timed]
        steps = (min(per_step), max(per_step))
    fitted_unstable = tuple(x for x, _ in timed if x in unstable)
    return Fit(
        time_exponent=time_exponent,
        memory_exponent=_slope(held),
        time_reliable=not fitted_unstable,
        unstable_sizes=fitted_unstable,
        time_sizes=tuple(x for x, _ in timed),
        memory_sizes=tuple(x for x, _ in held),
        time_left_out=tuple(time_left_out),
        memory_left_out=tuple(memory_left_out),
        fastest_ms=fastest,
        smallest_bytes=None if smallest is None else int(smallest),
        time_exponent_max=time_exponent_max,
        block_step_ms=steps,
    )


def _points(rows: list[Row], variable: str, measure: str) -> list[tuple[int, float]]:
    """(size, value) of the rows with a positive ``measure`` (ms_median, peak_mem_bytes)."""
    points = []
    for row in rows:
        value = getattr(row, measure)
        if value is not None and value > 0:
            points.append((int(getattr(row, variable)), float(value)))
    return points


def _slope(points: Sequence[tuple[int, float]]) -> float | None:
    return loglog_slope([x for x, _ in points], [value for _, value in points])


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
        checks = [("time", fit.time_exponent, row.d_time_exponent)]
    else:
        checks = [
            ("memory", fit.memory_exponent, row.n_exponents[1]),
            ("time", fit.time_exponent, row.n_exponents[0]),
        ]
    parts, unread = [], []
    for what, measured, expected in checks:
        reliable = fit.time_reliable or what == "memory"
        if measured is None or not reliable or not math.isfinite(measured):
            unread.append(f"Its {what} slope is not read ({_why_unread(what, fit)}).")
            continue
        parts.append(_judged(what, measured, expected, variable, fit))
    if not parts:
        return None
    return (
        f"{impl} is the table's {row.name} row ({row.time} time, {row.memory} memory). "
        + " ".join(parts + unread)
    )


def _why_unread(what: str, fit: Fit) -> str:
    if what == "time" and fit.time_exponent is not None and not fit.time_reliable:
        return "unstable rows"
    fitted, left_out = (
        (fit.time_sizes, fit.time_left_out)
        if what == "time"
        else (fit.memory_sizes, fit.memory_left_out)
    )
    if left_out:
        return "fewer than two rows past the floor"
    return "fewer than two sizes" if len(fitted) < 2 else "not measured"


def _power(variable: str, exponent: int) -> str:
    return (
        variable if exponent == 1 else f"{variable}{'²' if exponent == 2 else '^' + str(exponent)}"
    )


def _judged(what: str, measured: float, expected: int, variable: str, fit: Fit) -> str:
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
    if what != "time":
        return f"{grew}: below the row's {row}."
    if variable == "d":  # at one n, what does not grow with d (the n² softmax) weighs
        return (
            f"{grew}: below the row's {row} at these sizes: fixed costs per call still weigh, "
            f"and larger {variable} shows the {row} better."
        )
    steepest = fit.time_exponent_max
    if steepest is None or fit.fastest_ms is None:
        return f"{grew}: below the row's {row} at these sizes."
    if judge(what, steepest, expected, variable) != "below":
        return (
            f"{grew}: below the row's {row} at these sizes, which a fixed cost per call (up to "
            f"{_ms(fit.fastest_ms)}, the fastest median) can account for."
        )
    return (
        f"{grew}: below the row's {row} at these sizes, by more than a fixed cost per call (up "
        f"to {_ms(fit.fastest_ms)}, the fastest median) can account for."
    )


def complexity_rows() -> list[dict[str, str]]:
    """The complexity table as records (variant, time, memory, notes), in its order."""
    return [
        {"variant": row.name, "time": row.time, "memory": row.memory, "notes": row.notes}
        for row in COMPLEXITY_TABLE.values()
    ]


def reading(impl: str, fit: Fit, block: int | None = None) -> str:
    """One sentence that reads an implementation's exponents (in n). ``block``: the key block
    of the sweep (for the key-block loops)."""
    parts = []
    if fit.memory_exponent is not None:
        parts.append(f"memory grows as n^{fit.memory_exponent:.1f} ({_memory_word(fit)})")
    elif fit.memory_left_out:
        parts.append("memory not read: " + _too_few("memory", fit))
    if fit.time_exponent is not None:
        if _linear_in_n(impl):
            word = _linear_time_word(fit)
        else:
            word = _time_word(fit, block if impl in KEY_BLOCK_LOOPS else None)
        parts.append(f"time as n^{fit.time_exponent:.1f} ({word})")
    elif fit.time_left_out:
        parts.append("time not read: " + _too_few("time", fit))
    if not parts:
        return f"{impl}: fewer than two successful sizes, no exponent."
    return f"{impl}: " + "; ".join(parts) + "."


def _too_few(what: str, fit: Fit) -> str:
    """Why an exponent is not read: fewer than two rows reach the floor."""
    if what == "time":
        fitted, least = fit.time_sizes, f"fastest median ({_ms(fit.fastest_ms)})"
    else:
        fitted, least = fit.memory_sizes, f"smallest peak ({_bytes(fit.smallest_bytes)})"
    reach = f"only n={fitted[0]} reaches" if fitted else "no row reaches"
    return f"{reach} {FLOOR_FACTOR} × the {least}; larger --sizes show how {what} grows"


def left_out_readings(fits: dict[str, Fit]) -> list[str]:
    """The rows left out of the fits, named per implementation, and why (one sentence for
    time, one for memory; none when no row was left out)."""
    time = [
        f"{impl} n={_sizes(fit.time_left_out, fit.time_sizes)} (under {_ms(fit.time_cutoff_ms)})"
        for impl, fit in fits.items()
        if fit.time_left_out
    ]
    memory = [
        f"{impl} n={_sizes(fit.memory_left_out, fit.memory_sizes)} (under "
        f"{_bytes(fit.memory_cutoff_bytes)})"
        for impl, fit in fits.items()
        if fit.memory_left_out
    ]
    lines = []
    if time:
        lines.append(
            f"Left out of the time fits, as the floor of fixed costs: the rows faster than "
            f"{FLOOR_FACTOR} × their implementation's fastest median (a fixed cost per call, "
            "such as a kernel launch or Python's overhead, is at most that median, so it could "
            f"be more than a third of these rows' time): {'; '.join(time)}."
        )
    if memory:
        lines.append(
            f"Left out of the memory fits likewise: the rows below {FLOOR_FACTOR} × their "
            "implementation's smallest peak (memory that does not grow with n, such as a "
            f"kernel's workspace, is at most that peak): {'; '.join(memory)}."
        )
    return lines


def _sizes(chosen: Sequence[int], others: Sequence[int]) -> str:
    """The sizes ``chosen`` among all of an implementation's (``chosen`` and ``others``), runs of
    three or more neighbours written low..high: 512..2048, or 512,1024."""
    every = sorted({*chosen, *others})
    picked = set(chosen)
    runs: list[list[int]] = [[]]
    for size in every:
        if size in picked:
            runs[-1].append(size)
        elif runs[-1]:
            runs.append([])
    parts = []
    for run in runs:
        if len(run) >= 3:
            parts.append(f"{run[0]}..{run[-1]}")
        else:
            parts.extend(str(size) for size in run)
    return ",".join(parts)


def fitted_sizes(fit: Fit, what: str) -> str:
    """The sizes of the time or memory fit, as _sizes writes them ("" when none)."""
    if what == "time":
        return _sizes(fit.time_sizes, fit.time_left_out)
    return _sizes(fit.memory_sizes, fit.memory_left_out)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g} ms"


def _bytes(value: float | None) -> str:
    return "—" if value is None else format_bytes(value, significant=3)


def flat_time(fit: Fit) -> bool:
    """The clock stayed on the floor: no median reached FLOOR_FACTOR × the fastest, at two
    sizes or more, while the work grew as n²."""
    return not fit.time_sizes and len(fit.time_left_out) >= 2


def diagnosis(result: BenchResult, fits: dict[str, Fit]) -> list[str]:
    """What stands between the timings and the algorithm: a busy machine, unstable rows,
    times on the floor across n while memory grows as n². Empty when nothing does."""
    lines = []
    load = result.load
    if load is not None and load.busy:
        lines.append(busy_sentence(load))
    noisy = [impl for impl, fit in fits.items() if not fit.time_reliable]
    over_n = result.config.variable == "n"  # else a sweep of d at one n (--dims)
    if noisy:
        lines.append(
            f"Time slopes of {', '.join(noisy)} are unreliable: some of their fitted rows stayed "
            "unstable (the runs' spread above a tenth of their median) when timed twice, so "
            f"their slopes say nothing about {'n²' if over_n else 'how time grows with d'}; the "
            "memory slopes still hold."
        )
    flat = [
        impl
        for impl, fit in fits.items()
        if over_n and flat_time(fit) and (fit.memory_exponent or 0) >= QUADRATIC
    ]
    if flat:
        lines.append(
            f"{', '.join(flat)}: memory grows as n² but no median reaches {FLOOR_FACTOR} × the "
            "fastest: these timings are not measuring the algorithm (a floor of fixed costs: "
            "start-up per call, or threads waiting for a core). Larger --sizes, or an idle "
            "machine, show the n²."
        )
    return lines


def busy_sentence(load: Load) -> str:
    """The machine was shared: what the load was, and what to do about it."""
    when = []
    if load.busy_before and load.before is not None:
        when.append(f"{load.before:.1f} before the sweep")
    if load.busy_during and load.during_max is not None:
        when.append(f"up to {load.during_max:.1f} during it")
    if load.on_gpu:
        return (
            f"The machine is busy: load average {' and '.join(when)} on {load.cores} cores "
            "leaves no core free for the host thread that launches the GPU's kernels (the GPU "
            f"does the arithmetic; {load.device} runs need that one core). Launches wait for a "
            "core, so times include those waits. Close other programs."
        )
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


def _time_word(fit: Fit, block: int | None = None) -> str:
    """What a time slope says for an implementation whose work grows as n²."""
    exponent = fit.time_exponent
    assert exponent is not None
    if not fit.time_reliable:
        return _unreliable(fit)
    if exponent >= STEEP:
        return (
            "steeper than the n² work alone: something else grows faster at these sizes, such "
            "as cache misses, memory traffic or waits for a busy core"
        )
    if exponent >= QUADRATIC:
        return "the n² work dominates"
    steps = fit.block_step_ms
    if block and steps is not None and exponent <= LINEAR and steps[1] <= STEADY_STEP * steps[0]:
        return (
            f"with the number of key blocks, n/{block}, more than n²: each step of the loop took "
            f"{_ms_range(steps)} at every fitted n, a cost per step that outweighs the n² work "
            "at these sizes"
        )
    steepest, fastest = fit.time_exponent_max, fit.fastest_ms
    if steepest is None or fastest is None:
        return "below n² at these sizes"
    if steepest >= QUADRATIC:
        return (
            f"below n², which a fixed cost per call, at most the fastest median ({_ms(fastest)}), "
            "can account for at these sizes"
        )
    return (
        f"below n², by more than a fixed cost per call (up to {_ms(fastest)}, the fastest "
        "median) can account for: a cost that grows slower than n² weighs at these sizes"
    )


def _ms_range(steps: tuple[float, float]) -> str:
    low, high = (f"{value:.2g}" for value in steps)
    return f"{low} ms" if low == high else f"{low}-{high} ms"


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
        steepest = fit.time_exponent_max
        if steepest is not None and steepest >= 1 - TABLE_TOLERANCE and fit.fastest_ms:
            return (
                "below linear, which a fixed cost per call, at most the fastest median "
                f"({_ms(fit.fastest_ms)}), can account for"
            )
        return "below linear at these sizes"
    return "above linear at these sizes"


def _unreliable(fit: Fit) -> str:
    sizes = ",".join(str(n) for n in fit.unstable_sizes)
    return f"unreliable: unstable timings at n={sizes}"
