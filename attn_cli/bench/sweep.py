"""The sweep: every (implementation, n) becomes a row, whatever happens to it.

For each n: inputs are drawn once, a float64 reference is computed on a slice. For each
implementation: a static check (``unsupported``), a memory estimate against what is free
(``skipped``), uncounted warm-up runs (the first one's output is checked against the
reference), one run under the memory meter, then the timed runs. An out-of-memory error
gives an ``oom`` row and the larger sizes of that implementation are skipped; a forced
kernel that refuses the inputs gives ``unsupported`` with torch's reason. Ctrl-C ends the
sweep with the rows finished so far.

A row whose timed runs spread wider than UNSTABLE_SPREAD of their median is timed once more
(once: a busy machine would otherwise keep it going); the quieter of the two is kept, and the
row is marked unstable when both were. The load average is read before the sweep and after
every row (see machine.py).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from attn_cli.bench import backward as backward_registry
from attn_cli.bench import impls as registry
from attn_cli.bench.config import (
    UNSTABLE_SPREAD,
    BenchConfig,
    BenchResult,
    Row,
    is_unstable,
    spread_ratio,
)
from attn_cli.bench.devices import MIN_REPEATS, TARGET_TIMED_SECONDS, CpuOps, auto_repeats
from attn_cli.bench.machine import Load, load_average, thread_counts
from attn_cli.core import work
from attn_cli.core.backend import ITEMSIZE, format_bytes

# A run is skipped when its estimate exceeds this share of the free memory.
MEMORY_HEADROOM = 0.85

Progress = Callable[[str, int], None]


# The work guard's speeds: on a CPU, measured when the guard runs (a small attention, n = 256,
# best of three: the machine's speed as loaded now; larger n only run slower a FLOP); on a
# GPU its dense peak, or GPU_FLOPS_PER_SECOND when the peak is not known. A timed call costs
# at least CALL_SECONDS whatever its size (Python's and the library's overhead; attn bench
# measures some 50 µs a call at n = 16 on a 2-core machine, 2026).
GPU_FLOPS_PER_SECOND = 1e14
CALL_SECONDS = 2e-5
# The least CPU speed the guard assumes: on a machine shared with other work, numpy's threads
# can wait on each other and the measurement comes out 50 times below the machine's own
# (0.7 against 43 GFLOP/s, same 2-core machine, minutes apart), which would refuse ordinary
# sweeps; the guard only refuses what surely runs long.
CPU_FLOPS_FLOOR = 1e10


def cpu_flops_per_second(d: int, heads: int = 8, n: int = 256) -> float:
    """Attention FLOPs per second of numpy here, now: softmax(Q Kᵀ) V at (heads, n, d)."""
    import time

    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((heads, n, d)).astype(np.float32) for _ in range(3))
    best = math.inf
    for _ in range(4):  # the first warms the caches and the BLAS threads
        start = time.perf_counter()
        s = q @ k.transpose(0, 2, 1)  # (h, n, n)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        _ = (e / e.sum(axis=-1, keepdims=True)) @ v  # (h, n, d)
        best = min(best, time.perf_counter() - start)
    return 4.0 * heads * n * n * d / max(best, 1e-9)


def sweep_seconds(config: BenchConfig, ops: CpuOps) -> float:
    """The least time the sweep takes: every row that will run (not refused for memory or as
    unsupported) times its calls (warm-up, the memory run, the timed repeats: --repeats, or
    at least MIN_REPEATS) at this machine's speed."""
    if ops.name == "cpu":
        speed = max(cpu_flops_per_second(min(config.d, 256)), CPU_FLOPS_FLOOR)
    else:
        peak = ops.peak_tflops(config.dtype)
        speed = peak * 1e12 if peak else GPU_FLOPS_PER_SECOND
    limit = ops.memory_limit()
    itemsize = ITEMSIZE[config.dtype]
    calls = ops.warmup + 1 + (config.repeats or MIN_REPEATS)
    total = 0.0
    for n, d in config.points():
        point = replace(config, d=d)
        inputs = 3 * point.batch * point.heads * n * point.d * itemsize
        for impl in config.impls:
            if static_problem(config, impl, ops.name, d):
                continue
            needed = max(inputs, estimate_bytes(impl, point, n, itemsize))
            if limit is not None and needed > MEMORY_HEADROOM * limit:
                continue  # refused for memory at once
            total += calls * (CALL_SECONDS + registry.work_flops(impl, point, n) / speed)
    return total


def static_problem(config: BenchConfig, impl: str, device: str, d: int) -> str | None:
    """Why the implementation cannot run this sweep at all (forward, or with --backward the
    forward and backward), or None."""
    if config.backward:
        return backward_registry.backward_problem(impl, device, config.dtype, d)
    return registry.static_problem(impl, device, config.dtype, d)


def estimate_bytes(
    impl: str, config: BenchConfig, n: int, itemsize: int, dispatched: str | None = None
) -> int:
    """What a run allocates beyond its inputs: the forward's, or the forward and backward's."""
    if config.backward:
        return backward_registry.estimate_bytes(impl, config, n, itemsize, dispatched)
    return registry.estimate_bytes(impl, config, n, itemsize, dispatched)


def check_sweep_work(config: BenchConfig, ops: CpuOps) -> None:
    """Refuse, before the first row, a sweep that would run for more than a few minutes."""
    count, points = len(config.impls), len(config.points())
    repeats = f"{config.repeats:,}" if config.repeats else f"at least {MIN_REPEATS}"
    work.check_work(
        sweep_seconds(config, ops),
        1.0,
        f"this sweep would run {count} implementation{'s' if count != 1 else ''} at {points} "
        f"size{'s' if points != 1 else ''} up to n = {max(config.sizes):,} with {repeats} "
        "timed calls a row",
        "smaller or fewer --sizes, fewer --impl, or fewer --repeats (by default about "
        f"{TARGET_TIMED_SECONDS:g} s of calls a row)",
    )


def run_sweep(
    config: BenchConfig,
    ops: CpuOps,
    *,
    on_start: Progress | None = None,
    on_row: Callable[[Row], None] | None = None,
) -> BenchResult:
    result = BenchResult(config, ops.describe(config.dtype))
    families = [registry.family(impl) for impl in config.impls]
    result.load = Load(
        os.cpu_count() or 1, thread_counts(families), load_average(), device=ops.name
    )
    failed_at: dict[str, int] = {}  # impl -> the n where it ran out of memory
    peak = ops.peak_tflops(config.dtype)
    try:
        for n, d in config.points():
            point = replace(config, d=d)  # the d of this size (--dims sweeps it)
            context = _SizeContext(point, ops, n)
            for impl in config.impls:
                if on_start:
                    on_start(impl, n)
                row = _run_one(point, ops, impl, n, context, failed_at, peak)
                result.rows.append(row)
                now = load_average()
                if now is not None:
                    result.load.during.append(now)
                if on_row:
                    on_row(row)
            del context
    except KeyboardInterrupt:
        result.interrupted = True
    return result


class _SizeContext:
    """What every implementation shares at one n: the inputs and the reference (made lazily)."""

    def __init__(self, config: BenchConfig, ops: CpuOps, n: int) -> None:
        self.config, self.ops, self.n = config, ops, n
        self.itemsize = ITEMSIZE[config.dtype]
        arrays = 4 if config.backward else 3  # Q, K, V (and dO)
        self.input_bytes = arrays * config.batch * config.heads * n * config.d * self.itemsize
        self._inputs: registry.Inputs | None = None
        self._references: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def inputs(self) -> registry.Inputs:
        if self._inputs is None:
            self._inputs = registry.make_inputs(self.config, self.n, self.ops.tensor_device)
        return self._inputs

    def reference(self, impl: str) -> tuple[np.ndarray, np.ndarray]:
        """(query rows checked, their float64 outputs) for what ``impl`` computes."""
        kind = registry.reference_kind(impl)
        if kind not in self._references:
            rows = registry.reference_rows(self.n)
            output = registry.reference_output(
                self.inputs, rows, self.config.causal, kind, self.config.window
            )
            self._references[kind] = (rows, output)
        return self._references[kind]

    def gradient_reference(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows checked, float64 dQ, dK, dV at those rows: (3, heads, rows, d))."""
        if "backward" not in self._references:
            rows = registry.reference_rows(self.n)
            grads = backward_registry.reference_gradients(self.inputs, rows, self.config.causal)
            self._references["backward"] = (rows, grads)
        return self._references["backward"]


def _run_one(
    config: BenchConfig,
    ops: CpuOps,
    impl: str,
    n: int,
    context: _SizeContext,
    failed_at: dict[str, int],
    peak: float | None,
) -> Row:
    problem = static_problem(config, impl, ops.name, config.d)
    if problem:
        return Row.for_run(config, impl, n, status="unsupported", note=problem)
    if impl in failed_at:
        return Row.for_run(
            config, impl, n, status="skipped", note=f"ran out of memory at n={failed_at[impl]}"
        )
    dispatched = None
    limit = ops.memory_limit()
    if limit is not None and context.input_bytes > MEMORY_HEADROOM * limit:
        return _skipped(config, impl, n, context.input_bytes, limit, "the inputs alone")
    if impl == "sdpa":
        dispatched = registry.sdpa_choice(context.inputs, config.causal)
    estimate = estimate_bytes(impl, config, n, context.itemsize, dispatched)
    if limit is not None and estimate > MEMORY_HEADROOM * limit:
        return _skipped(config, impl, n, estimate, limit, "this run")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # torch says why a forced kernel refused, as warnings
        try:
            return _measure(config, ops, impl, n, context, estimate, dispatched, peak)
        except KeyboardInterrupt:
            raise
        except Exception as error:
            failure = error
            messages = [str(w.message) for w in caught]
    return _failure_row(config, ops, impl, n, failure, messages, estimate, failed_at)


def _failure_row(
    config: BenchConfig,
    ops: CpuOps,
    impl: str,
    n: int,
    error: Exception,
    messages: list[str],
    estimate: int,
    failed_at: dict[str, int],
) -> Row:
    """unsupported (a forced kernel refused), oom, or error (any other torch RuntimeError)."""
    reason = registry.unsupported_reason(error, messages)
    if reason:
        return Row.for_run(config, impl, n, status="unsupported", note=reason)
    if registry.is_out_of_memory(error):
        ops.after_oom()
        failed_at[impl] = n
        note = f"out of memory (estimate was {format_bytes(estimate)})"
        return Row.for_run(config, impl, n, status="oom", note=note)
    if isinstance(error, RuntimeError):
        return Row.for_run(config, impl, n, status="error", note=_one_line(error))
    raise error  # a bug of ours, not a result


def _skipped(config: BenchConfig, impl: str, n: int, needed: int, limit: int, what: str) -> Row:
    note = (
        f"{what} needs ≈{format_bytes(needed)}; {format_bytes(limit)} free "
        f"(limit {MEMORY_HEADROOM:.0%} of it)"
    )
    return Row.for_run(
        config,
        impl,
        n,
        status="skipped",
        note=note,
        peak_mem_bytes=needed,
        memory_method="estimate",
    )


def _measure(
    config: BenchConfig,
    ops: CpuOps,
    impl: str,
    n: int,
    context: _SizeContext,
    estimate: int,
    dispatched: str | None,
    peak: float | None,
) -> Row:
    if config.backward:
        run: Callable[[], object] = backward_registry.make_runner(impl, config, context.inputs)
        rows, expected = context.gradient_reference()
    else:
        run = registry.make_runner(impl, config, context.inputs)
        rows, expected = context.reference(impl)
    output, one_run_ms = ops.clock_ms(run)  # warm-up 1: also the one checked for accuracy
    if config.backward:  # dQ, dK, dV
        error_max = float(np.max(np.abs(backward_registry.gradient_rows(output, rows) - expected)))
    else:
        error_max = float(np.max(np.abs(registry.output_rows(output, rows) - expected)))
    del output
    for _ in range(ops.warmup - 1):
        _output, one_run_ms = ops.clock_ms(run)
        del _output
    output, peak_bytes, method = ops.measure_peak(run, registry.family(impl))
    del output
    repeats = config.repeats or auto_repeats(one_run_ms)
    median, spread, unstable = timed(lambda: ops.time_runs(run, repeats))
    if peak_bytes is None:
        peak_bytes, method = estimate, "estimate"
    notes = [f"dispatched to {dispatched}"] if dispatched else []
    if config.backward:
        chosen = backward_registry.launch_note(impl)
        if impl == "numpy":
            notes.append(BY_HAND_NOTE)
    else:
        chosen = registry.chosen_launch(impl, context.inputs, config.causal)
    if chosen:
        notes.append(chosen)
    if unstable:
        notes.append(UNSTABLE_NOTE)
    work = registry.work_flops(impl, config, n)
    tflops = work / (median / 1e3) / 1e12 if median > 0 else None
    return Row.for_run(
        config,
        impl,
        n,
        ms_median=median,
        ms_spread=spread,
        tflops=tflops,
        peak_fraction=tflops / peak if (tflops is not None and peak) else None,
        peak_mem_bytes=int(peak_bytes),
        max_abs_err=error_max,
        memory_method=method,
        repeats=repeats,
        note="; ".join(notes),
        unstable=unstable,
    )


BY_HAND_NOTE = "the lesson's forward, then its backward by hand (attn backward's numpy code)"
UNSTABLE_NOTE = (
    f"unstable: the spread of the timed runs exceeded {UNSTABLE_SPREAD:.0%} of their median, "
    "measured twice"
)


def timed(time_runs: Callable[[], list[float]]) -> tuple[float, float, bool]:
    """(median, interquartile range, unstable) of the timed runs; an unstable batch is timed
    once more and the quieter of the two kept."""
    best = _summary(time_runs())
    if is_unstable(*best):
        again = _summary(time_runs())
        best = min(best, again, key=lambda summary: spread_ratio(*summary) or 0.0)
    return best[0], best[1], is_unstable(*best)


def _summary(times: list[float]) -> tuple[float, float]:
    values = np.asarray(times)
    return float(np.median(values)), float(np.percentile(values, 75) - np.percentile(values, 25))


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 160 else text[:157] + "..."
