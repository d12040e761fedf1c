"""Can this machine be trusted with a timing: the threads a run uses, the load around it.

A run of torch or numpy (BLAS) code splits its work over threads, and waits for the slowest:
when other processes hold the cores, a thread that is descheduled holds every run up by a
scheduler tick. Times then stop following the algorithm (a floor of fixed delays). The sweep
compares the load average (``os.getloadavg()``: processes running or waiting for a core,
averaged over a minute) with the cores left once its own threads run, before and during.

On a GPU (cuda, mps) the device does the arithmetic: the run's one host thread launches the
kernels and waits for them, and torch's CPU threads sit idle. There the sweep needs one core,
not one per thread: a load that leaves a core free does not hold a GPU run up.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Load beyond the cores our threads leave free before the machine counts as busy: a
# tenth of a core is the background of an idle desktop; half a core is another program.
BUSY_MARGIN = 0.5
# Variables that set the thread count of OpenBLAS, MKL and OpenMP (torch reads OMP too).
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")
# Devices whose kernels one host thread launches (the arithmetic runs on the device).
GPU_DEVICES = ("cuda", "mps")


@dataclass
class Load:
    """The load around a sweep and the threads its runs use."""

    cores: int
    threads: dict[str, int]  # array library -> threads one run uses
    before: float | None  # 1-minute load average before the first run (None: not available)
    during: list[float] = field(default_factory=list)  # after each row
    device: str = "cpu"  # where the runs compute

    @property
    def most_threads(self) -> int:
        return max(self.threads.values(), default=1)

    @property
    def on_gpu(self) -> bool:
        return self.device in GPU_DEVICES

    @property
    def cores_needed(self) -> int:
        """The cores a run keeps busy: on the CPU every thread of its array library; on a GPU
        the one host thread that launches the kernels and waits for them."""
        return 1 if self.on_gpu else self.most_threads

    @property
    def during_max(self) -> float | None:
        return max(self.during) if self.during else None

    @property
    def busy_before(self) -> bool:
        """Other processes already held cores our threads need."""
        return self.before is not None and busy(self.before, self.cores_needed, self.cores)

    @property
    def busy_during(self) -> bool:
        """The load left too few cores: the load counts our own threads, which run all the time
        (on a GPU, the host thread that launches the kernels)."""
        peak = self.during_max
        needed = self.cores_needed
        return peak is not None and busy(peak - needed, needed, self.cores)

    @property
    def busy(self) -> bool:
        return self.busy_before or self.busy_during

    def as_dict(self) -> dict[str, Any]:
        return {
            "cores": self.cores,
            "before": _rounded(self.before),
            "during_max": _rounded(self.during_max),
            "busy": self.busy,
        }


def busy(others: float, threads: int, cores: int) -> bool:
    """Whether ``others`` runnable processes (a load average) leave too few of ``cores`` for
    ``threads`` threads."""
    return others + min(threads, cores) > cores + BUSY_MARGIN


def load_average() -> float | None:
    """The 1-minute load average, or None where the system keeps none (Windows)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def thread_counts(families: Sequence[str]) -> dict[str, int]:
    """Threads one run of each array library in ``families`` uses: torch's intra-op pool
    (torch is imported already when a torch implementation runs), numpy's BLAS pool."""
    counts: dict[str, int] = {}
    if "numpy" in families:
        counts["numpy"] = numpy_threads()
    if "torch" in families and "torch" in sys.modules:
        counts["torch"] = int(sys.modules["torch"].get_num_threads())
    return counts


def numpy_threads() -> int:
    """The BLAS threads numpy's matrix products use: threadpoolctl's answer when it is
    installed; else the first of the thread variables that is set; else every core."""
    with contextlib.suppress(ImportError, Exception):  # threadpoolctl inspects native libraries
        from threadpoolctl import threadpool_info

        pools = [pool["num_threads"] for pool in threadpool_info() if pool.get("num_threads")]
        if pools:
            return int(max(pools))
    for variable in THREAD_VARIABLES:
        value = os.environ.get(variable, "")
        if value.strip().isdigit() and int(value) > 0:
            return int(value)
    return os.cpu_count() or 1


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
