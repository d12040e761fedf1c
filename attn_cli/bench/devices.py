"""Per-device clocks, memory meters and memory limits for the bench.

* CPU: wall clock (``time.perf_counter``); peak memory of numpy code with ``tracemalloc``
  (numpy reports its buffers to it), of torch code from the allocation events the torch
  profiler records (``profile_memory=True``), replayed in order to find the high-water mark.
* CUDA: CUDA events around each run, one synchronisation after the batch;
  ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``.
* MPS: wall clock with ``torch.mps.synchronize``; no peak meter, so memory is the estimate.

Peaks are the bytes allocated during the call above what was allocated before it: the inputs
are excluded, the output is included. torch is imported inside functions only.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from attn_cli.bench.peaks import dense_peak_tflops, known_device
from attn_cli.core.backend import available_host_bytes, meminfo_bytes
from attn_cli.core.errors import UserError, param

TARGET_TIMED_SECONDS = 0.5
MIN_REPEATS, MAX_REPEATS = 5, 50


def auto_repeats(one_run_ms: float) -> int:
    """Enough runs for a stable median: about half a second of them, 5 to 50."""
    if one_run_ms <= 0:
        return MAX_REPEATS
    wanted = math.ceil(TARGET_TIMED_SECONDS * 1e3 / one_run_ms)
    return max(MIN_REPEATS, min(MAX_REPEATS, wanted))


class CpuOps:
    """The CPU: wall-clock timing, tracemalloc / torch-profiler memory."""

    name = "cpu"
    warmup = 1

    def __init__(self) -> None:
        self.tensor_device = self.name  # where inputs are created (tests may redirect it)

    def synchronize(self) -> None:
        """Nothing is queued on the CPU."""

    def clock_ms(self, fn: Callable[[], Any]) -> tuple[Any, float]:
        """One run with its wall time in ms (synchronised), for warm-up."""
        self.synchronize()
        start = time.perf_counter()
        out = fn()
        self.synchronize()
        return out, (time.perf_counter() - start) * 1e3

    def time_runs(self, fn: Callable[[], Any], repeats: int) -> list[float]:
        times = []
        for _ in range(repeats):
            _out, ms = self.clock_ms(fn)
            del _out
            times.append(ms)
        return times

    def measure_peak(self, fn: Callable[[], Any], family: str) -> tuple[Any, int | None, str]:
        """(output, peak bytes or None, method)."""
        if family == "numpy":
            return tracemalloc_peak(fn)
        return torch_profiler_peak(fn)

    def memory_limit(self) -> int | None:
        return available_host_bytes()

    def after_oom(self) -> None:
        gc.collect()

    def peak_tflops(self, dtype: str) -> float | None:
        return None  # no published dense peak is kept for CPUs

    def describe(self, dtype: str) -> dict[str, Any]:
        info = host_info()
        info.update(device="cpu", name=info["cpu"])
        return info


class CudaOps(CpuOps):
    """An NVIDIA GPU: CUDA events, the caching allocator's peak, the known-peak table."""

    name = "cuda"
    warmup = 3

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize()

    def time_runs(self, fn: Callable[[], Any], repeats: int) -> list[float]:
        """Each run between two recorded events; one synchronisation after all of them."""
        import torch

        starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        torch.cuda.synchronize()
        for start, end in zip(starts, ends, strict=True):
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [float(start.elapsed_time(end)) for start, end in zip(starts, ends, strict=True)]

    def measure_peak(self, fn: Callable[[], Any], family: str) -> tuple[Any, int | None, str]:
        import torch

        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = fn()
        torch.cuda.synchronize()
        return out, max(0, int(torch.cuda.max_memory_allocated()) - int(before)), "cuda allocator"

    def memory_limit(self) -> int | None:
        """Free device memory plus what the caching allocator holds but does not use."""
        import torch

        free, _total = torch.cuda.mem_get_info()
        cached = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        return int(free) + max(0, int(cached))

    def after_oom(self) -> None:
        import torch

        gc.collect()
        torch.cuda.empty_cache()

    def peak_tflops(self, dtype: str) -> float | None:
        import torch

        tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
        return dense_peak_tflops(torch.cuda.get_device_name(), dtype, tf32=tf32)

    def describe(self, dtype: str) -> dict[str, Any]:
        import torch

        name = torch.cuda.get_device_name()
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        known = known_device(name)
        info = host_info()
        info.update(
            device="cuda",
            name=name,
            gpu_memory_bytes=int(props.total_memory),
            compute_capability=f"{props.major}.{props.minor}",
            cuda=torch.version.cuda,
            peak_label=known[0] if known else None,
            peak_tflops=self.peak_tflops(dtype),
        )
        return info


class MpsOps(CpuOps):
    """Apple silicon: wall clock after torch.mps.synchronize; memory is estimated."""

    name = "mps"
    warmup = 3

    def synchronize(self) -> None:
        import torch

        torch.mps.synchronize()

    def measure_peak(self, fn: Callable[[], Any], family: str) -> tuple[Any, int | None, str]:
        return fn(), None, "estimate"

    def describe(self, dtype: str) -> dict[str, Any]:
        info = host_info()
        info.update(device="mps", name=f"Apple GPU ({info['cpu']})")
        return info


def torch_available() -> bool:
    """Whether PyTorch can be imported here (it is an optional extra)."""
    try:
        import attn_cli.core.torch_backend  # noqa: F401  (imports torch)
    except ImportError:
        return False
    return True


def device_ops(device: str) -> CpuOps:
    """The ops for --device; a user error if the device is absent or needs the missing torch.

    The CPU needs no torch: its numpy implementations are timed with the wall clock and
    measured with tracemalloc.
    """
    if not torch_available():
        if device == "cpu":
            return CpuOps()
        from attn_cli.core.install import install_command

        raise UserError(
            f"{param('device', device)} needs PyTorch, which is not installed; install it with: "
            f"{install_command('torch')}."
        )
    from attn_cli.core.torch_backend import device_problem

    problem = device_problem(device)
    if problem:
        raise UserError(f"{param('device', device)}: {problem}.")
    return {"cpu": CpuOps, "cuda": CudaOps, "mps": MpsOps}[device]()


def tracemalloc_peak(fn: Callable[[], Any]) -> tuple[Any, int, str]:
    """Peak bytes traced during fn (numpy reports its array buffers to tracemalloc)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if started:
            tracemalloc.stop()
    return out, max(0, peak - before), "tracemalloc"


@contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null for a moment (C++ logging bypasses sys.stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def torch_profiler_peak(fn: Callable[[], Any]) -> tuple[Any, int | None, str]:
    """Peak bytes from the torch profiler's allocation events, replayed in time order.

    This reads profiler internals (the experimental event tree); if they are missing, the
    caller falls back to the analytic estimate (method None).
    """
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with native_stderr_silenced():  # Kineto logs "profiler_start" there, whatever its log level
        prof.__enter__()
    try:
        out = fn()
    finally:
        with native_stderr_silenced():
            prof.__exit__(None, None, None)
    try:
        from torch._C._profiler import _EventType

        events = []
        # Profiler internals (typed Optional): any failure here falls back, see below.
        stack = list(prof.profiler.kineto_results.experimental_event_tree())  # type: ignore[union-attr]
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            if node.tag == _EventType.Allocation:
                events.append((node.start_time_ns, int(node.extra_fields.alloc_size)))
    except (AttributeError, ImportError, RuntimeError, TypeError):
        return out, None, "estimate"
    current = peak = 0
    for _time, size in sorted(events):
        current += size
        peak = max(peak, current)
    return out, peak, "torch profiler"


def host_info() -> dict[str, Any]:
    """CPU model, cores, memory and library versions of this machine."""
    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": total_host_bytes(),
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    try:
        import torch

        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    except ImportError:
        pass
    return info


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def total_host_bytes() -> int | None:
    return meminfo_bytes("MemTotal")
