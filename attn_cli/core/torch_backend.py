"""The torch backend. The only module of the package that imports torch at module level."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attn_cli.core.backend import Backend, Clock
from attn_cli.core.errors import UserError, param
from attn_cli.core.install import declared, install_command
from attn_cli.core.model import Summary

TORCH_DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def install_problem(version: str | None = None) -> str | None:
    """What to install before the torch paths can run with this torch, or None when they can.

    A user who already has PyTorch installs attn without the [torch] extra, so their torch may
    be older than the extra asks for; array-api-compat is a core dependency, missing only from
    an install made without dependencies (pip install --no-deps).
    """
    version = version or str(torch.__version__)
    wanted = declared("torch", "torch")  # the [torch] extra's "torch>=2.1"
    oldest = re.search(r">=\s*(\d+)\.(\d+)", wanted)
    found = re.match(r"(\d+)\.(\d+)", version)
    if found and oldest and _numbers(found) < _numbers(oldest):
        least = ".".join(oldest.groups())
        return (
            f"PyTorch {version} is older than the {least} the torch backend needs; "
            f"upgrade it with: {install_command(packages=[wanted], upgrade=True)}"
        )
    if importlib.util.find_spec("array_api_compat") is None:
        return (
            "the torch backend needs array-api-compat, which is not installed; "
            f"install it with: {install_command(packages=[declared('array-api-compat')])}"
        )
    return None


def _numbers(version: re.Match[str]) -> tuple[int, int]:
    major, minor = version.groups()
    return int(major), int(minor)


def device_problem(device: str) -> str | None:
    """Why ``device`` cannot be used here, or None when it can (a UserError's words: the
    parameter unspelt, core.errors.param)."""
    cpu = param("device", "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        return f"CUDA is not available here (no NVIDIA GPU or a CPU-only torch build); use {cpu}"
    if device == "mps" and not torch.backends.mps.is_available():
        return f"MPS is not available here (it needs Apple silicon and macOS); use {cpu}"
    return None


@dataclass(frozen=True)
class TorchBackend(Backend):
    def asarray(self, array: np.ndarray) -> Any:
        return torch.as_tensor(array, dtype=TORCH_DTYPES[self.dtype], device=self.device)

    def to_numpy(self, array: Any) -> np.ndarray:
        if isinstance(array, torch.Tensor):
            tensor = array.detach().cpu()
            # numpy has no bfloat16: widen for display only (the JSON still says bfloat16).
            if tensor.dtype == torch.bfloat16:
                tensor = tensor.to(torch.float32)
            return tensor.numpy()
        return np.asarray(array)

    def synchronize(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()
        elif self.device == "mps":
            torch.mps.synchronize()

    def clock(self) -> Clock:
        """CUDA events on a CUDA device (the GPU's own time between them); elsewhere the wall
        clock, synchronised."""
        if self.device == "cuda":
            return CudaClock()
        return super().clock()

    def summary(self, array: Any) -> Summary | None:
        """On a GPU, the statistics computed on the device, in float64 (as numpy computes them
        from the host copy, up to the order of the sums); on the CPU numpy's own, from the
        tensor's memory; None on MPS, which has no float64 (its host copy is summarised)."""
        if self.device == "mps":
            return None
        if self.device == "cpu" or not isinstance(array, torch.Tensor):
            return super().summary(array)
        return tensor_summary(array)

    def normal_sampler(self, seed: int) -> Any:
        """Seeded N(0, 1) draws made on the device itself (a different stream from numpy's)."""
        generator = torch.Generator(device=self.device).manual_seed(seed)
        dtype = TORCH_DTYPES[self.dtype]

        def draw(shape: tuple[int, ...]) -> torch.Tensor:
            return torch.randn(shape, generator=generator, dtype=dtype, device=self.device)

        return draw

    def dropout(self, weights: Any, p: float, seed: int) -> tuple[Any, Any]:
        """torch.nn.Dropout(p) in training mode on ``weights`` after torch.manual_seed(seed).

        The dropped weights are torch's own result, so they equal what ``torch.manual_seed(seed);
        nn.Dropout(p)(weights)`` gives, bit for bit, on any device and dtype. The keep mask comes
        from the same call on a tensor of ones under the same seed (the mask does not depend on
        the values). The global generators are restored afterwards (torch.random.fork_rng), so
        a Python caller's own random stream is left as it was.
        """
        functional = torch.nn.functional
        # None: fork every device of that type
        forked: list[int] | None = [] if self.device == "cpu" else None
        device_type = "cuda" if self.device == "cpu" else self.device
        with torch.random.fork_rng(devices=forked, device_type=device_type):
            torch.manual_seed(seed)
            dropped = functional.dropout(weights, p, training=True)
            torch.manual_seed(seed)
            keep = functional.dropout(torch.ones_like(weights), p, training=True) != 0
        return dropped, keep

    def available_bytes(self) -> int | None:
        if self.device == "cuda":
            free, _total = torch.cuda.mem_get_info()
            return int(free)
        return super().available_bytes()


class CudaClock(Clock):
    """The GPU's time between two CUDA events recorded on the current stream: ``start`` waits
    for the work queued before, so that the time is the computation's alone."""

    def __init__(self) -> None:
        self.begin = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def start(self) -> None:
        torch.cuda.synchronize()
        self.begin.record()

    def stop(self) -> float:
        self.end.record()
        self.end.synchronize()
        return float(self.begin.elapsed_time(self.end)) / 1e3  # elapsed_time is in ms


def tensor_summary(tensor: torch.Tensor) -> Summary:
    """:func:`attn_cli.core.model.summary` on the device: the same statistics, in float64 (one copy
    of the entries, divided in place), with one wait for the numbers at the end (two when some
    entries are not finite)."""
    values = tensor.detach().reshape(-1).to(torch.float64, copy=True)
    count = int(values.numel())
    if not count:
        return Summary(count)
    low, high = torch.aminmax(values)  # NaN if any entry is NaN
    non_finite = positive_infinite = 0
    if not bool(torch.isfinite(low) & torch.isfinite(high)):
        positive_infinite = int(torch.count_nonzero(torch.isposinf(values)))
        values = values[torch.isfinite(values)]
        non_finite = count - int(values.numel())
        if not values.numel():
            return Summary(count, non_finite=non_finite, positive_infinite=positive_infinite)
        low, high = torch.aminmax(values)
    # Divided by the largest magnitude (1 when it is 0) and scaled back, as numpy's summary is.
    scale = torch.maximum(low.abs(), high.abs())
    scale = torch.where(scale == 0, torch.ones_like(scale), scale)
    values.div_(scale)
    numbers = torch.stack([low, high, values.mean(), values.std(correction=0), scale])
    low_, high_, mean, std, scale_ = numbers.tolist()
    return Summary(
        count,
        min=low_,
        max=high_,
        mean=mean * scale_,
        std=std * scale_,
        non_finite=non_finite,
        positive_infinite=positive_infinite,
    )


def make_torch_backend(device: str, dtype: str) -> TorchBackend:
    missing = install_problem()
    if missing:
        raise UserError(f"{missing}.")
    problem = device_problem(device)
    if problem:
        raise UserError(f"{param('device', device)}: {problem}.")
    return TorchBackend("torch", device, dtype)
