"""Array backends: numpy (the default, float64) and torch (imported only when asked for).

A mechanism is written once against an array namespace ``xp``, which :func:`namespace_of`
finds from the arrays themselves; a backend converts inputs to its dtype and device explicitly
(never silently), converts results back to numpy for display, times a computation on the
device that runs it (its own clock: see :meth:`Backend.timed`), summarises an array where it
lives (:meth:`Backend.summary`), and says how much memory is free so that a size that cannot fit
is refused before anything is allocated. Which backend a request names is chosen above this
module and the torch backend's (attn_cli.core.backend_choice.get_backend).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from attn_cli.core import variants
from attn_cli.core.errors import UserError
from attn_cli.core.model import Summary, summary
from attn_cli.core.numbers import format_bytes as format_bytes  # where it was; written there

T = TypeVar("T")
# An array of whichever backend runs the math (a numpy array or a torch tensor): mechanisms are
# written once against the array API, so no narrower static type fits both.
Array = Any

BACKENDS = variants.BACKENDS
TIMED_RUNS = variants.TIMED_RUNS
DEVICES = variants.DEVICES
NUMPY_DTYPES: dict[str, Any] = {"float64": np.float64, "float32": np.float32, "float16": np.float16}
TORCH_DTYPES = variants.DTYPES
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}
# Facts of each floating-point type: the gap between 1 and the next number (machine epsilon),
# the largest finite number, and the largest n such that every integer up to n is exact.
EPSILON = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}
LARGEST = {
    "float64": 1.7976931348623157e308,
    "float32": 3.4028234663852886e38,
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
}
EXACT_INTEGERS = {"float64": 2**53, "float32": 2**24, "float16": 2**11, "bfloat16": 2**8}


def namespace_of(*arrays: Any) -> Any:
    """The array namespace of the arrays: numpy itself for numpy arrays.

    numpy >= 2.1 implements the array API in its main namespace, so the numpy path needs no
    wrapper (array_api_compat.numpy costs ~0.1 s of start-up). Other arrays (torch) go
    through array_api_compat, imported here only when such an array exists.
    """
    if all(isinstance(array, np.ndarray | np.generic | float | int) for array in arrays):
        return np
    from array_api_compat import array_namespace

    return array_namespace(*[a for a in arrays if not isinstance(a, float | int)])


# What a computation may need without asking the machine for its free memory: far less than
# Python, numpy and rich took to start (a 2 × 2 example needs a few kilobytes).
FITS_ANYWHERE = 2**20


@dataclass(frozen=True)
class Backend:
    """Where and in what precision the math runs."""

    name: str
    device: str
    dtype: str

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    def asarray(self, array: np.ndarray) -> Any:
        """Convert a float64 numpy input to this backend's dtype and device (explicitly)."""
        return np.asarray(array, dtype=NUMPY_DTYPES[self.dtype])

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def synchronize(self) -> None:
        """Wait for queued device work (a no-op on the CPU)."""

    def available_bytes(self) -> int | None:
        return available_host_bytes()

    def normal_sampler(self, seed: int) -> Callable[[tuple[int, ...]], Any]:
        """A seeded stream of arrays with i.i.d. N(0, 1) entries, drawn where the math runs.

        numpy's SFC64 bit generator: it draws normals about 14% faster than default_rng's PCG64
        (float64, 2-core machine, 2026-11), and the variance lesson draws tens of millions."""
        rng = np.random.Generator(np.random.SFC64(seed))
        dtype = NUMPY_DTYPES[self.dtype]
        # numpy draws float64 or float32 only; float16 is drawn as float32 and rounded.
        drawn = np.float32 if dtype == np.float16 else dtype

        def draw(shape: tuple[int, ...]) -> np.ndarray:
            return rng.standard_normal(shape, dtype=drawn).astype(dtype, copy=False)

        return draw

    def dropout(self, weights: Any, p: float, seed: int) -> tuple[Any, Any]:
        """Inverted dropout on ``weights``: (the dropped weights, the keep mask, True = kept).

        numpy draws the mask from its own Generator, ``np.random.default_rng(seed)``: a weight
        is kept where a uniform draw in [0, 1) is below 1 − p, and a kept weight is divided by
        1 − p. That is not PyTorch's stream: the torch backend draws torch's own mask.
        """
        dtype = NUMPY_DTYPES[self.dtype]
        keep = np.random.default_rng(seed).random(np.shape(weights)) < 1 - p  # same shape, bool
        scaled_mask = keep.astype(dtype) / dtype(1 - p)  # 0 or 1/(1 − p), in the weights' dtype
        return weights * scaled_mask, keep

    def clock(self) -> Clock:
        """A clock that times one run of a computation on this backend's device."""
        return WallClock(self.synchronize)

    def timed(self, compute: Callable[[], T]) -> tuple[T, float]:
        """``compute``'s result and the device's time for it, warm: the median of TIMED_RUNS.

        ``compute`` must compute the step and nothing else (no copy to the host, no summary,
        no check): it runs once untimed first (the warm-up: a first call pays for loading
        kernels, starting cuBLAS, growing the allocator's pool, filling caches), then
        TIMED_RUNS times, each between the start and the stop of this backend's clock; the
        result of the last run is returned. Each run's result is dropped before the next one
        starts, so that no more than one is held at a time. ``compute`` must give the same
        result each time it runs (anything it draws at random, it draws from its own seed).
        """
        compute()  # the warm-up, untimed
        times = [self._time_once(compute)[1] for _ in range(TIMED_RUNS - 1)]
        result, seconds = self._time_once(compute)
        return result, median([*times, seconds])

    def _time_once(self, compute: Callable[[], T]) -> tuple[T, float]:
        clock = self.clock()
        clock.start()
        result = compute()
        return result, clock.stop()

    def summary(self, array: Any) -> Summary | None:
        """The statistics of ``array`` (:class:`~attn_cli.core.model.Summary`), computed where it
        lives, in float64, so that the renderers that show a corner of it read them instead of
        passing over its entries; None where this device cannot (the caller then summarises
        the host copy)."""
        return summary(self.to_numpy(array))

    def ensure_fits(self, needed_bytes: int, what: str, fix: str) -> None:
        """Refuse, before allocating, a computation that cannot fit in memory. The machine is
        asked (/proc/meminfo, the GPU) only for a computation that could not fit: above
        FITS_ANYWHERE."""
        if needed_bytes <= FITS_ANYWHERE:
            return
        available = self.available_bytes()
        if available is not None and needed_bytes > available:
            raise UserError(
                f"{what} needs about {format_bytes(needed_bytes)} but only "
                f"{format_bytes(available)} is free on {self.device}; {fix}."
            )


def median(values: list[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


class Clock:
    """Times one run of a computation on a device: ``start()`` just before it, ``stop()`` just
    after it, which returns the seconds the device spent between the two."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> float:
        raise NotImplementedError


class WallClock(Clock):
    """The wall clock, read once the device has finished what was queued before (``start``)
    and what the computation queued (``stop``): on the CPU, where nothing is queued, the
    computation's wall time."""

    def __init__(self, synchronize: Callable[[], None]) -> None:
        self.synchronize = synchronize
        self.started = 0.0

    def start(self) -> None:
        self.synchronize()
        self.started = time.perf_counter()

    def stop(self) -> float:
        self.synchronize()
        return time.perf_counter() - self.started


def available_host_bytes() -> int | None:
    """Free host memory (MemAvailable on Linux), less where this process's address-space limit
    (``ulimit -v``) allows less; None when neither can be read."""
    free = _free_memory()
    headroom = _address_space_headroom()
    if free is None or headroom is None:
        return free if headroom is None else headroom
    return min(free, headroom)


def _address_space_headroom() -> int | None:
    """What RLIMIT_AS still allows this process to map, or None without a limit."""
    try:
        import resource

        limit, _ = resource.getrlimit(resource.RLIMIT_AS)
        if limit == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm", encoding="ascii") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        return max(limit - mapped, 0)
    except (ImportError, OSError, ValueError):
        return None


def meminfo_bytes(field: str) -> int | None:
    """A field of Linux's /proc/meminfo ("MemAvailable", "MemTotal") in bytes; None elsewhere."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _free_memory() -> int | None:
    available = meminfo_bytes("MemAvailable")
    if available is not None:
        return available
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
