"""Time the sliding-window attention of `attn bench --impl window`: all query blocks at once
(attn_cli.mechanisms.local.window_attention) against the loop over query blocks it replaced.

    python benchmarks/window.py [--sizes 8192,32768] [--heads 8] [--d 64] [--window 64]
                                [--block 128] [--runs 7] [--device cpu]

Both compute the same band |i − j| ≤ w on standard-normal Q, K, V (1, heads, n, d), float32
(bfloat16 with --device cuda), with torch and with numpy. The loop scores one block of queries at a time against its
keys (block × (block + 2w) scores alive at once, one Python iteration a block); the blocked
form scores every block in one batched matmul (n × (block + 2w) scores alive at once). Each
round times one call of each, in turn; the first round is a warm-up and is left out. It prints
the median and the interquartile range of each, in milliseconds, the ratio loop / blocked
round by round (median and IQR), the largest difference between the two outputs, and the load
average before and after (os.getloadavg): a timing is trusted only beside its spread and the
load, and the ratio, measured in one run, more than either time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from attn_cli.core.backend import namespace_of
from attn_cli.mechanisms.attention import scale, scores, softmax, weighted_sum
from attn_cli.mechanisms.local import window_allowed, window_attention
from attn_cli.mechanisms.masks import additive


def loop_window_attention(q: Any, k: Any, v: Any, window: int, block: int) -> Any:
    """The loop this benchmark compares with (the bench's `window` and `window-numpy` until
    2026-11, not causal): one query block at a time, scored against the keys it reaches."""
    xp = namespace_of(q, k, v)
    n, outputs = q.shape[-2], []
    for row0 in range(0, n, block):
        row1 = min(row0 + block, n)
        col0, col1 = max(0, row0 - window), min(n, row1 + window)
        s = scale(scores(q[..., row0:row1, :], k[..., col0:col1, :]), q.shape[-1])  # (..., r, c)
        band = window_allowed(s, window, row0=row0, col0=col0)  # (r, c)
        weights = softmax(s + additive(band, s))
        outputs.append(weighted_sum(weights, v[..., col0:col1, :]))  # (..., r, d)
    return xp.concat(outputs, axis=-2)  # (..., n, d)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    low, median, high = statistics.quantiles(values, n=4, method="inclusive")
    return median, low, high


def clocked(fn: Callable[[], Any], synchronize: Callable[[], None]) -> tuple[Any, float]:
    synchronize()
    start = time.perf_counter()
    out = fn()
    synchronize()
    return out, (time.perf_counter() - start) * 1e3


def inputs(backend: str, device: str, shape: tuple[int, ...], seed: int) -> tuple[Any, ...]:
    """Standard-normal Q, K, V: numpy float32, torch float32 on the CPU, bfloat16 on CUDA."""
    if backend == "numpy":
        rng = np.random.default_rng(seed)
        return tuple(rng.standard_normal(shape, dtype=np.float32) for _ in range(3))
    import torch

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    generator = torch.Generator(device=device).manual_seed(seed)
    return tuple(torch.randn(shape, generator=generator, device=device).to(dtype) for _ in range(3))


def largest_difference(a: Any, b: Any) -> float:
    return float(np.max(np.abs(np.asarray(to_host(a), float) - np.asarray(to_host(b), float))))


def to_host(array: Any) -> Any:
    return array if isinstance(array, np.ndarray) else array.float().cpu().numpy()


def time_both(
    qkv: tuple[Any, ...], window: int, block: int, rounds: int, synchronize: Callable[[], None]
) -> tuple[dict[str, list[float]], float]:
    """Milliseconds of each call ({loop, blocked}: one list each) and their largest difference;
    one call of each a round, in turn, after a round of warm-up."""
    runs: dict[str, list[float]] = {"loop": [], "blocked": []}
    gap = 0.0
    for round_ in range(rounds + 1):
        looped, loop_ms = clocked(lambda: loop_window_attention(*qkv, window, block), synchronize)
        blocked, blocked_ms = clocked(
            lambda: window_attention(*qkv, window, block=block), synchronize
        )
        gap = max(gap, largest_difference(looped, blocked))
        del looped, blocked
        if round_:  # the first round warms up
            runs["loop"].append(loop_ms)
            runs["blocked"].append(blocked_ms)
    return runs, gap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="8192,32768")
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--block", type=int, default=128)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--backends", default="torch,numpy", help="torch, numpy or both")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args()
    backends = args.backends.split(",")
    synchronize: Callable[[], None] = lambda: None  # noqa: E731
    if "torch" in backends:
        import torch

        threads = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
        if args.device == "cuda":
            synchronize = torch.cuda.synchronize
            threads += f", {torch.cuda.get_device_name()}"
    else:
        threads = "numpy only"
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores; {threads})")
    print(f"{args.heads} heads, d {args.d}, w {args.window}, block {args.block}, {args.device}")
    for n in (int(size) for size in args.sizes.split(",")):
        for backend in backends:
            device = args.device if backend == "torch" else "cpu"
            q, k, v = inputs(backend, device, (1, args.heads, n, args.d), n)
            runs, gap = time_both((q, k, v), args.window, args.block, args.runs, synchronize)
            label = f"n = {n:>6}  {backend:<5}"
            for name, times in runs.items():
                median, low, high = quartiles(times)
                print(f"{label}  {name:<7} median {median:9.2f} ms (IQR {low:.2f}-{high:.2f})")
            ratios = [a / b for a, b in zip(runs["loop"], runs["blocked"], strict=True)]
            median, low, high = quartiles(ratios)
            print(
                f"{label}  loop / blocked: median {median:.2f} (IQR {low:.2f}-{high:.2f}), "
                f"largest difference {gap:.1e}"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
