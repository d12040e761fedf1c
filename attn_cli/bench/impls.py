"""The implementations a sweep compares, their memory estimates and what they cannot run on.

Every implementation takes Q, K, V of shape (batch, heads, n, d) and returns the attention
output of the same shape. torch is imported inside functions only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attn_cli.bench.config import BenchConfig
from attn_cli.core.backend import Array
from attn_cli.core.errors import UserError
from attn_cli.core.install import install_command
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import linear as linear_mech
from attn_cli.mechanisms.local import window_attention, window_blocks, window_pairs
from attn_cli.mechanisms.tiled import tiled_attention

# --impl sdpa-X -> the torch.nn.attention.SDPBackend member it forces.
SDPA_BACKENDS = {
    "sdpa-flash": "FLASH_ATTENTION",
    "sdpa-efficient": "EFFICIENT_ATTENTION",
    "sdpa-cudnn": "CUDNN_ATTENTION",
    "sdpa-math": "MATH",
}
SHORT_NAMES = {member: impl.removeprefix("sdpa-") for impl, member in SDPA_BACKENDS.items()}
CUDA_ONLY = ("sdpa-efficient", "sdpa-cudnn")
PYTHON_OVERHEAD = 64 * 1024

# What each implementation computes, so its output is checked against the right float64 one.
WINDOW_IMPLS = ("sdpa-window", "flex-window", "window", "window-numpy")
LINEAR_IMPLS = ("linear", "linear-numpy")


def reference_kind(impl: str) -> str:
    """softmax (full attention), window (banded softmax) or linear (linear attention)."""
    if impl in WINDOW_IMPLS:
        return "window"
    return "linear" if impl in LINEAR_IMPLS else "softmax"


def family(impl: str) -> str:
    """numpy or torch: the array library the implementation computes with."""
    return "numpy" if impl in (*NUMPY_IMPLS, "window-numpy", "linear-numpy") else "torch"


def require_torch(impls: Sequence[str], with_torch: bool) -> None:
    """A user error when an implementation that needs PyTorch is asked for without it, or with a
    torch the torch paths cannot use (too old, or array-api-compat missing: see
    torch_backend.install_problem); the numpy implementations need neither."""
    needing = [impl for impl in impls if family(impl) == "torch"]
    if not needing:
        return
    numpy_only = f"or run --impl {','.join(NUMPY_IMPLS)}, which needs only numpy"
    if not with_torch:
        raise UserError(
            f"--impl {','.join(needing)} needs PyTorch, which is not installed; install it with: "
            f"{install_command('torch')} ({numpy_only})."
        )
    from attn_cli.core.torch_backend import install_problem

    problem = install_problem()
    if problem:
        raise UserError(f"--impl {','.join(needing)}: {problem} ({numpy_only}).")


def has_flex_attention() -> bool:
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def has_sdpa_backend(member: str) -> bool:
    from torch.nn.attention import SDPBackend

    return hasattr(SDPBackend, member)


NUMPY_IMPLS = ("numpy", "tiled-numpy")


def default_impls(device: str, with_torch: bool = True) -> tuple[str, ...]:
    """Everything the device can run: forced kernels it has no version of are left out.

    Without PyTorch only the numpy implementations can run (on the CPU).
    """
    if not with_torch:
        return NUMPY_IMPLS
    if device == "cpu":
        return ("naive", "sdpa", "sdpa-flash", "sdpa-math", "tiled", "numpy", "tiled-numpy")
    if device == "mps":
        return ("naive", "sdpa", "sdpa-math", "tiled")
    forced = [impl for impl, member in SDPA_BACKENDS.items() if has_sdpa_backend(member)]
    kernel = ("triton-flash",) if has_triton() else ()
    return ("naive", "sdpa", *forced, "tiled", *kernel)


def has_triton() -> bool:
    """Whether triton is installed (found, not imported)."""
    import importlib.util

    return importlib.util.find_spec("triton") is not None


def static_problem(impl: str, device: str, dtype: str, d: int | None = None) -> str | None:
    """Why the implementation cannot run at all here (same answer for every n), or None."""
    if impl == "triton-flash":
        return kernel_problem(device, dtype, d)
    if family(impl) == "numpy":
        if device != "cpu":
            return "numpy runs on the CPU only"
        if dtype == "bfloat16":
            return "numpy has no bfloat16; use float32"
    if impl in SDPA_BACKENDS and not has_sdpa_backend(SDPA_BACKENDS[impl]):
        return f"this PyTorch has no {SDPA_BACKENDS[impl]} backend"
    if impl == "flex-window" and not has_flex_attention():
        return "this PyTorch has no torch.nn.attention.flex_attention (it needs 2.5 or later)"
    if impl in CUDA_ONLY and device == "cpu":
        return (
            f"{SHORT_NAMES[SDPA_BACKENDS[impl]]} is a CUDA-only kernel (PyTorch has no CPU version)"
        )
    return None


def kernel_problem(device: str, dtype: str, d: int | None) -> str | None:
    """Why triton-flash cannot run here, or None."""
    if device != "cuda":
        return (
            "Triton kernels need a CUDA GPU; TRITON_INTERPRET=1 runs them on the CPU for the "
            "tests only, far too slowly to time"
        )
    if not has_triton():
        return f"triton is not installed; install it with: {install_command('kernel')}"
    if dtype not in ("float32", "float16", "bfloat16"):
        return "the kernel takes float32, float16 or bfloat16"
    from attn_cli.kernels.flash_triton import MAX_D

    if d is not None and d > MAX_D:
        return f"the kernel takes d up to {MAX_D}"
    return None


@dataclass
class Inputs:
    """Q, K, V (batch, heads, n, d) in the bench dtype: torch tensors on the device, or numpy
    arrays when every implementation of the sweep is a numpy one (then torch is not needed)."""

    q: Array
    k: Array
    v: Array
    d_out: Array | None = None  # with --backward: the upstream gradient dO, shaped as O
    _numpy: tuple[np.ndarray, ...] | None = field(default=None, repr=False)

    def numpy(self) -> tuple[np.ndarray, ...]:
        """The same values as numpy arrays (CPU; converted once): Q, K, V, and dO when drawn."""
        if self._numpy is None:
            arrays = (self.q, self.k, self.v) + (() if self.d_out is None else (self.d_out,))
            self._numpy = tuple(_host(t) for t in arrays)
        return self._numpy

    @property
    def nbytes(self) -> int:
        return sum(_nbytes(t) for t in (self.q, self.k, self.v))


def _host(array: Array) -> np.ndarray:
    if isinstance(array, np.ndarray):
        return array
    return array.detach().cpu().numpy()


def _nbytes(array: Array) -> int:
    if isinstance(array, np.ndarray):
        return int(array.nbytes)
    return int(array.numel() * array.element_size())


def make_inputs(config: BenchConfig, n: int, device: str) -> Inputs:
    """Standard-normal Q, K, V, the same for every implementation at this n (seeded).

    A sweep of numpy implementations only draws them with numpy (no torch needed); otherwise
    torch draws them on the device. With --backward a fourth, dO (the upstream gradient, one
    entry per entry of the output), is drawn after them, and torch's Q, K, V require their
    gradients (autograd records the forward).
    """
    shape = (config.batch, config.heads, n, config.d)
    count = 4 if config.backward else 3
    if all(family(impl) == "numpy" for impl in config.impls):
        rng = np.random.default_rng(config.seed * 1_000_003 + n)
        arrays = [
            rng.standard_normal(shape, dtype=np.float32).astype(config.dtype) for _ in range(count)
        ]
        d_out = arrays[3] if config.backward else None
        return Inputs(arrays[0], arrays[1], arrays[2], d_out)
    import torch

    from attn_cli.core.torch_backend import TORCH_DTYPES

    # torch's generator takes seeds below 2**64: a larger one (--seed up to 18 digits) wraps
    seed = (config.seed * 1_000_003 + n) % 2**63
    generator = torch.Generator(device=device).manual_seed(seed)
    tensors = [
        torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(
            TORCH_DTYPES[config.dtype]
        )
        for _ in range(count)
    ]
    if config.backward:
        for tensor in tensors[:3]:
            tensor.requires_grad_(True)
    return Inputs(tensors[0], tensors[1], tensors[2], tensors[3] if config.backward else None)


def sdpa_choice(inputs: Inputs, causal: bool) -> str | None:
    """The kernel PyTorch's default dispatch picks for these inputs (private API; None if absent)."""
    import torch
    from torch.nn.attention import SDPBackend

    try:
        choice = torch._fused_sdp_choice(inputs.q, inputs.k, inputs.v, is_causal=causal)
        return SHORT_NAMES.get(SDPBackend(choice).name)
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None


def chosen_launch(impl: str, inputs: Inputs, causal: bool) -> str | None:
    """What an implementation chose for itself while it ran, for its row's note (after the
    runs): the launch setting triton-flash's tuner kept for this shape; None for the others."""
    if impl != "triton-flash":
        return None
    from attn_cli.kernels.flash_triton import tuned_setting

    chosen = tuned_setting(inputs.q, inputs.k, inputs.v, causal=causal)
    return (
        f"tuned for this shape: query tiles of {chosen['query_block']}, key blocks of "
        f"{chosen['block']}, {chosen['warps']} warps, {chosen['stages']} pipeline stages"
    )


def estimate_bytes(
    impl: str, config: BenchConfig, n: int, itemsize: int, dispatched: str | None = None
) -> int:
    """Bytes an implementation allocates beyond its inputs (output included), analytically.

    Calibrated against the measured peaks (see docs/benchmarks.md): the n × n terms are what
    matter; a fused kernel or the tiled loop only holds O(n) per head.
    """
    heads = config.batch * config.heads
    square, rows = n * n, n * config.d
    causal = 1 if config.causal else 0
    if impl == "sdpa":
        impl = "sdpa-math" if dispatched in (None, "math") else "sdpa-flash"
    if impl == "naive":  # scores, scaled scores (then weights), a mask when causal
        return heads * ((2 + causal) * square * itemsize + rows * itemsize) + causal * square
    if impl == "sdpa-math":
        return heads * ((3 + causal) * square * itemsize + 2 * rows * itemsize)
    if impl == "sdpa-window":
        return sdpa_window_bytes(config, n, itemsize)
    # tracemalloc also counts numpy's small Python-side allocations: a fixed allowance
    overhead = PYTHON_OVERHEAD if family(impl) == "numpy" else 0
    if impl in ("window", "window-numpy"):
        shared = window_shared_bytes(config, n, itemsize)
        return heads * window_head_bytes(config, n, itemsize) + shared + overhead
    if impl == "flex-window":  # the block mask (built first, then kept), then one call
        building, kept = band_block_mask_bytes(n)
        return max(building, kept + heads * flex_call_bytes(config, n, itemsize))
    if impl in LINEAR_IMPLS:  # φ(Q), φ(K), output (n × d each), φ(K)ᵀV (d × d), a chunk
        per_head = itemsize * (4 * rows + config.d**2 + causal * 3 * config.block**2)
        return heads * per_head + overhead
    if impl == "numpy":  # scores, scaled, (masked,) shifted, exp, weights held together
        per_head = (5 + causal) * square * itemsize + rows * itemsize
        return heads * per_head + causal * square * itemsize + overhead
    if impl in ("tiled", "tiled-numpy"):  # state + output + a few (n × block) arrays
        per_head = itemsize * (4 * rows + (4 + causal) * n * min(config.block, n) + 4 * n)
        return heads * per_head + overhead
    # fused kernels: output, log-sum-exp per row, a workspace
    return heads * (2 * rows * itemsize + 8 * n) + (1 << 20)


def sdpa_window_bytes(config: BenchConfig, n: int, itemsize: int) -> int:
    """sdpa with the n × n band mask (built before the call, like the inputs).

    With a mask, sdpa takes a fused kernel that never stores a head's scores: on CUDA below
    float64 its peak is the mask once in the inputs' dtype plus the output, n²·itemsize +
    lanes·n·d·itemsize + 1536 bytes on an H200 in bfloat16 at every n of beyond.json; on the CPU
    (torch 2.13) between 0.6 and 1.3 × n²·(itemsize + 1) plus the output from n = 256 to 2048,
    the same for 1, 2 or 4 heads: n²·(itemsize + 2), twice the output and 256 KiB bound it. Where
    no fused kernel takes the mask (float64 on CUDA; mps, unmeasured), the math path: every
    head's scores and weights, plus the mask."""
    lanes = config.batch * config.heads
    square, rows = n * n, n * config.d
    if config.device == "cuda" and itemsize < 8:
        return square * itemsize + lanes * rows * itemsize + (1 << 20)
    if config.device == "cpu":
        return square * (itemsize + 2) + 2 * lanes * rows * itemsize + (1 << 18)
    causal = 1 if config.causal else 0
    return lanes * ((4 + causal) * square * itemsize + 2 * rows * itemsize) + square


def window_head_bytes(config: BenchConfig, n: int, itemsize: int) -> int:
    """What window_attention holds per head at its peak (the softmax): the logits, the shifted
    logits, their exp and the weights (every block's scores, n × (block + 2w) in all), each
    block's gathered keys and values (span × d), Q/√d and the output (n × d each)."""
    blocks = window_blocks(n, config.window, config.causal, config.block)
    padded = blocks.count * blocks.size
    gathered = 2 * blocks.count * blocks.span * config.d
    return itemsize * (4 * blocks.scores + gathered + 2 * padded * config.d)


def window_shared_bytes(config: BenchConfig, n: int, itemsize: int) -> int:
    """What window_attention holds once for all heads: the additive mask (a score each), the
    boolean band and its intermediate (a byte each), the key indices (int64, three arrays of
    count × span)."""
    blocks = window_blocks(n, config.window, config.causal, config.block)
    return blocks.scores * (itemsize + 2) + 3 * 8 * blocks.count * blocks.span


def make_runner(impl: str, config: BenchConfig, inputs: Inputs) -> Callable[[], Array]:
    """A zero-argument function that computes the attention output once."""
    causal, block, window = config.causal, config.block, config.window
    if impl in ("window", "window-numpy"):
        q, k, v = inputs.numpy() if impl == "window-numpy" else (inputs.q, inputs.k, inputs.v)
        return lambda: window_attention(q, k, v, window, causal=causal, block=block)
    if impl in LINEAR_IMPLS:
        q, k, v = inputs.numpy() if impl == "linear-numpy" else (inputs.q, inputs.k, inputs.v)
        if causal:
            return lambda: linear_mech.chunked_causal_linear(q, k, v, chunk=block)
        return lambda: linear_mech.linear_attention(q, k, v).output
    if impl == "numpy":
        q, k, v = inputs.numpy()
        return lambda: _numpy_lesson(q, k, v, causal)
    if impl == "tiled-numpy":
        q, k, v = inputs.numpy()
        return lambda: tiled_attention(q, k, v, block=block, causal=causal)
    q, k, v = inputs.q, inputs.k, inputs.v
    if impl == "naive":
        return lambda: _naive(q, k, v, causal)
    if impl == "tiled":
        return lambda: tiled_attention(q, k, v, block=block, causal=causal)
    if impl == "triton-flash":  # its tiles, warps and stages tuned on the device, per shape
        from attn_cli.kernels.flash_triton import tuned_flash_attention

        return lambda: tuned_flash_attention(q, k, v, causal=causal)
    import torch.nn.functional as F

    if impl == "sdpa":
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    if impl == "sdpa-window":
        band = _band(q.shape[-2], window, causal, q.device)  # built once, like the inputs
        return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=band)
    if impl == "flex-window":
        return _flex_window(q, k, v, window, causal)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, SDPA_BACKENDS[impl])

    def forced() -> Array:
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return forced


def _band(n: int, window: int, causal: bool, device: Array) -> Array:
    """The (n, n) boolean band: True where |i − j| ≤ w (causal: 0 ≤ i − j ≤ w)."""
    import torch

    offset = torch.arange(n, device=device)[:, None] - torch.arange(n, device=device)[None, :]
    return (offset >= 0) & (offset <= window) if causal else offset.abs() <= window


# FlexAttention's block (its default): the block mask says which FLEX_BLOCK × FLEX_BLOCK tiles
# of the scores hold a pair of the band.
FLEX_BLOCK = 128


def _flex_window(q: Array, k: Array, v: Array, window: int, causal: bool) -> Callable[[], Array]:
    """FlexAttention with the band as a block mask: blocks outside the band are skipped.

    Compiled (eager FlexAttention materialises the n × n scores); the first call compiles, in
    the uncounted warm-up. The block mask is built from the tiles' index ranges
    (band_block_mask), not with create_block_mask, which evaluates the mask function on every
    one of the n² pairs (16 bytes a pair for |i − j| ≤ w: 256 GiB at n = 131072).
    """
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    block_mask = band_block_mask(q.shape[-2], window, causal, q.device)
    compiled = torch.compile(flex_attention, dynamic=False)
    return lambda: compiled(q, k, v, block_mask=block_mask)


def band_block_mask(n: int, window: int, causal: bool, device: Any) -> Any:
    """FlexAttention's BlockMask of the band |i − j| ≤ w (causal: 0 ≤ i − j ≤ w) on n tokens,
    the same as create_block_mask gives, built on the (n/128)² tiles rather than the n² pairs.

    Tile (a, b) holds query rows r0..r1 − 1 and keys c0..c1 − 1, so its offsets i − j fill
    r0 − (c1 − 1) .. (r1 − 1) − c0: the tile holds a pair of the band when that range meets the
    band's offsets, and is full (its mask need not be applied) when the range lies inside them
    and the tile is whole (a tile cut by the end of the sequence is only partly real).
    """
    import torch
    from torch.nn.attention.flex_attention import BlockMask

    def band(_b: Any, _h: Any, i: Any, j: Any) -> Any:
        return ((i - j >= 0) & (i - j <= window)) if causal else (i - j).abs() <= window

    start = torch.arange(0, n, FLEX_BLOCK, device=device)  # (tiles,) first row (or key)
    last = torch.clamp(start + FLEX_BLOCK, max=n) - 1  # (tiles,) last row (or key)
    low = start[:, None] - last[None, :]  # (tiles, tiles) least i − j in the tile
    high = last[:, None] - start[None, :]  # most i − j in the tile
    floor = 0 if causal else -window  # least i − j of the band
    whole = last - start == FLEX_BLOCK - 1
    touches = (low <= window) & (high >= floor)
    full = (low >= floor) & (high <= window) & whole[:, None] & whole[None, :]
    partial = touches & ~full

    def ordered(tiles: Any) -> tuple[Any, Any]:
        """(count, key tiles) of each query tile's row, its tiles first in ascending order."""
        dense = tiles.to(torch.int32)[None, None]  # (1, 1, tiles, tiles)
        order = torch.argsort(dense, dim=-1, descending=True, stable=True)
        return dense.sum(dim=-1).to(torch.int32), order.to(torch.int32)

    kv_num_blocks, kv_indices = ordered(partial)
    full_kv_num_blocks, full_kv_indices = ordered(full)
    return BlockMask.from_kv_blocks(
        kv_num_blocks,
        kv_indices,
        full_kv_num_blocks,
        full_kv_indices,
        BLOCK_SIZE=FLEX_BLOCK,
        mask_mod=band,
        seq_lengths=(n, n),
    )


def band_block_mask_bytes(n: int) -> tuple[int, int]:
    """(peak while band_block_mask builds, what the BlockMask keeps), in bytes.

    Both grow as the (n/128)² tile pairs: the ranges, the ordering and from_kv_blocks'
    transposes hold a few int64 and int32 tensors of that size at once (measured: 56 bytes a
    pair on the CPU with torch 2.13, 72 on an H200 with torch 2.11); the mask keeps four int32
    index tensors (16 bytes a pair) and four int32 counts (16 bytes a tile).
    """
    tiles = -(-n // FLEX_BLOCK)
    return 80 * tiles**2 + 64 * tiles + BLOCK_MASK_ALLOWANCE, 16 * tiles**2 + 16 * tiles


# The small tensors of the construction (a few hundred bytes measured) and allocator rounding.
BLOCK_MASK_ALLOWANCE = 4096


def flex_call_bytes(config: BenchConfig, n: int, itemsize: int) -> int:
    """One head's allocations in a compiled FlexAttention call: the output (n × d) and two
    float32 numbers a row (the log-sum-exp and the row max); 142,606,336 bytes measured for 8
    heads at n = 131072, d = 64, bfloat16 on an H200, which is this exactly."""
    return n * config.d * itemsize + 8 * n


def work_flops(impl: str, config: BenchConfig, n: int) -> float:
    """The FLOPs an implementation's algorithm needs (the useful work, for TFLOP/s).

    Softmax attention: config.flops. A window: 4·d per allowed pair (Q Kᵀ and A V). Linear
    attention: the linear order's count (mechanisms/linear.py) with r = d_v = d.
    """
    lanes = config.batch * config.heads
    if impl in WINDOW_IMPLS and impl != "sdpa-window":
        return 4.0 * lanes * config.d * window_pairs(n, config.window, config.causal)
    if impl in LINEAR_IMPLS:
        return float(lanes * linear_mech.linear_flops(n, n, config.d, config.d))
    return config.flops(n)


def _naive(q: Array, k: Array, v: Array, causal: bool) -> Array:
    """The textbook code: every one of the n × n scores is stored."""
    import torch

    s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (b, h, n, n)
    if causal:
        n = s.shape[-1]
        future = torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1)  # (n, n) j > i
        s = s.masked_fill(future, -math.inf)
    return torch.matmul(torch.softmax(s, dim=-1), v)  # (b, h, n, d)


def _numpy_lesson(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """The lesson's own code (attn scaled), on the whole batch at once."""
    mask = None
    if causal:
        n = q.shape[-2]
        mask = np.triu(np.full((n, n), -np.inf, dtype=q.dtype), 1)  # (n, n) additive
    return mech.attention(q, k, v, mask=mask).output


_FORCED_FAILURE = re.compile(r"No available kernel|No viable backend", re.IGNORECASE)
_TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?", re.DOTALL)


def unsupported_reason(error: BaseException, messages: Sequence[str]) -> str | None:
    """If a forced sdpa kernel refused these inputs, why (from torch's warnings); else None."""
    if not isinstance(error, RuntimeError) or not _FORCED_FAILURE.search(str(error)):
        return None
    reasons = []
    for message in messages:
        text = _TRIGGERED.sub("", message).strip()
        if not text or text.endswith("because:") or "runtime disabled" in text:
            continue
        if text not in reasons:
            reasons.append(text)
    if not reasons:
        return "PyTorch has no such kernel for this device, dtype and shape"
    reason = "; ".join(reasons[:2])
    return reason if len(reason) <= 200 else reason[:197] + "..."


_OOM_TEXT = re.compile(r"out of memory|can't allocate memory|not enough memory", re.IGNORECASE)


def is_out_of_memory(error: BaseException) -> bool:
    """MemoryError (numpy), torch.cuda.OutOfMemoryError, or an allocator's out-of-memory text."""
    if isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryError":
        return True
    return isinstance(error, RuntimeError) and bool(_OOM_TEXT.search(str(error)))


def reference_rows(n: int, count: int = 16) -> np.ndarray:
    """Query rows checked against float64: spread over 0..n−1, first and last included."""
    return np.unique(np.linspace(0, n - 1, min(n, count)).round().astype(int))


def reference_output(
    inputs: Inputs, rows: np.ndarray, causal: bool, kind: str = "softmax", window: int = 0
) -> np.ndarray:
    """float64 attention for batch 0, every head, the given query rows: (heads, rows, d).

    ``kind`` (see reference_kind): full softmax attention, the banded one (|i − j| ≤ window),
    or linear attention (the rows one by one over their prefix when causal).
    """
    q, k, v = (_float64(t[0]) for t in (inputs.q, inputs.k, inputs.v))  # (heads, n, d)
    if kind == "linear":
        if not causal:
            return linear_mech.linear_attention(q[:, rows], k, v).output
        parts = [
            linear_mech.linear_attention(q[:, [i]], k[:, : i + 1], v[:, : i + 1]).output
            for i in rows
        ]
        return np.concatenate(parts, axis=-2)
    offset = rows[:, None] - np.arange(k.shape[-2])[None, :]  # (rows, n): i − j
    allowed = offset >= 0 if causal else np.ones(offset.shape, dtype=bool)
    if kind == "window":
        allowed &= np.abs(offset) <= window
    mask = None if allowed.all() else np.where(allowed, 0.0, -np.inf)  # (rows, n)
    return mech.attention(q[:, rows], k, v, mask=mask).output


def output_rows(output: Array, rows: np.ndarray) -> np.ndarray:
    """Batch 0, the given query rows of an implementation's output, as float64."""
    if isinstance(output, np.ndarray):
        return np.asarray(output[0][:, rows], dtype=np.float64)
    return _float64(output[0][:, rows])


def _float64(tensor: Array) -> np.ndarray:
    if isinstance(tensor, np.ndarray):
        return tensor.astype(np.float64)
    import torch

    return tensor.detach().to(device="cpu", dtype=torch.float64).numpy()
