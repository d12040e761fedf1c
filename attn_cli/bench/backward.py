"""attn bench --backward: each implementation's forward and backward, timed as one call.

A call computes O from Q, K, V and then dQ, dK, dV for a fixed upstream gradient dO (drawn
with the inputs, the same for every implementation at an n):

* the torch implementations through autograd: Q, K, V require their gradients, the forward
  runs, and ``torch.autograd.grad(O, (Q, K, V), dO)`` runs its backward (what O.backward(dO)
  computes, without accumulating into .grad). naive's forward is the explicit
  softmax(Q Kᵀ / √d) V, so autograd records (and keeps) its n × n weights; sdpa's backward is
  the backward of the kernel its forward dispatched to (a forced one stays forced for both);
* triton-flash: the kernel's forward with each row's L = m + ln ℓ (flash_attention_with_lse),
  then its backward kernel (flash_attention_backward), FlashAttention-2's Algorithm 2, which
  recomputes P tile by tile from L, in the inputs' type (float32, float16 or bfloat16), on CUDA;
* numpy: the lesson's forward and its backward by hand, `attn backward`'s code
  (mechanisms.backward.attention_backward: dV = Aᵀ dO, dA = dO Vᵀ, dZ = A ∘ (dA − D),
  dS = dZ / √d, dQ = dS K, dK = dSᵀ Q).

The others have no backward here, and their rows say why (BACKWARD_PROBLEMS).

The check: dQ, dK and dV of batch 0, every head, on sampled rows (the same rows of queries and
of keys), against float64 gradients computed from the same inputs by the formulas above, after
one pass over every row for its L and D = rowsum(dO ∘ O) (reference_gradients).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from attn_cli.bench import impls as registry
from attn_cli.bench.config import BenchConfig
from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms.backward import attention_backward

# What times a backward, in the order of IMPLS.
BACKWARD_IMPLS = (
    "naive",
    "sdpa",
    "sdpa-flash",
    "sdpa-efficient",
    "sdpa-cudnn",
    "sdpa-math",
    "triton-flash",
    "numpy",
)
# Why the others have none here.
BACKWARD_PROBLEMS = {
    "tiled": (
        "no backward of its own: FlashAttention's tiled backward is attn backward --block "
        "(and triton-flash on CUDA)"
    ),
    "tiled-numpy": (
        "no backward of its own: attn backward --block shows the tiled backward, one head at a time"
    ),
}
NO_BACKWARD = "--backward times softmax attention over every key; this one has no backward here"
# The launch of triton-flash's forward (with L) and backward: the backward kernel has no tuner.
KERNEL_BLOCK = 64
KERNEL_QUERY_BLOCK = 64
# The reference's pass over every row holds a chunk of rows × n scores per head at a time.
REFERENCE_CHUNK_ENTRIES = 2**24


def backward_problem(impl: str, device: str, dtype: str, d: int | None = None) -> str | None:
    """Why ``impl`` cannot time its backward here (the same for every n), or None."""
    if impl not in BACKWARD_IMPLS:
        return BACKWARD_PROBLEMS.get(impl, NO_BACKWARD)
    return registry.static_problem(impl, device, dtype, d)  # the forward's, for the rest


def default_impls(device: str, with_torch: bool = True) -> tuple[str, ...]:
    """The device's default implementations that time a backward."""
    return tuple(
        impl for impl in registry.default_impls(device, with_torch) if impl in BACKWARD_IMPLS
    )


def launch_note(impl: str) -> str | None:
    """What a row's note says of how it ran: triton-flash's fixed launch."""
    if impl != "triton-flash":
        return None
    return (
        f"forward with L and the backward kernel, query tiles of {KERNEL_QUERY_BLOCK} and key "
        f"blocks of {KERNEL_BLOCK} (not tuned: the backward kernel has no tuner)"
    )


def make_runner(
    impl: str, config: BenchConfig, inputs: registry.Inputs
) -> Callable[[], tuple[Array, Array, Array]]:
    """A zero-argument function that runs the forward and the backward once: (dQ, dK, dV)."""
    causal = config.causal
    if impl == "numpy":
        q, k, v, d_out = inputs.numpy()
        mask = None
        if causal:
            n = q.shape[-2]
            mask = np.triu(np.full((n, n), -np.inf, dtype=q.dtype), 1)  # (n, n) additive

        def by_hand() -> tuple[Array, Array, Array]:
            grads = attention_backward(q, k, v, d_out, mask=mask)
            return grads.d_q, grads.d_k, grads.d_v

        return by_hand
    assert inputs.d_out is not None  # drawn with the inputs under --backward
    if impl == "triton-flash":
        return _kernel_runner(inputs, causal)
    import torch

    forward = _forward(impl, inputs, causal)
    leaves, d_out = (inputs.q, inputs.k, inputs.v), inputs.d_out

    def autograd() -> tuple[Array, Array, Array]:
        with _forced(impl):
            output = forward()
            d_q, d_k, d_v = torch.autograd.grad(output, leaves, d_out)
        return d_q, d_k, d_v

    return autograd


def _forward(impl: str, inputs: registry.Inputs, causal: bool) -> Callable[[], Array]:
    q, k, v = inputs.q, inputs.k, inputs.v
    if impl == "naive":
        return lambda: registry._naive(q, k, v, causal)
    import torch.nn.functional as F

    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _forced(impl: str) -> Any:
    """sdpa held to one kernel (forward and backward), or nothing."""
    import contextlib

    if impl not in registry.SDPA_BACKENDS:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([getattr(SDPBackend, registry.SDPA_BACKENDS[impl])])


def _kernel_runner(
    inputs: registry.Inputs, causal: bool
) -> Callable[[], tuple[Array, Array, Array]]:
    from attn_cli.kernels.flash_triton import flash_attention_backward, flash_attention_with_lse

    q, k, v = (t.detach() for t in (inputs.q, inputs.k, inputs.v))
    d_out = inputs.d_out
    assert d_out is not None
    block, query_block = KERNEL_BLOCK, KERNEL_QUERY_BLOCK

    def kernel() -> tuple[Array, Array, Array]:
        output, lse = flash_attention_with_lse(
            q, k, v, block=block, query_block=query_block, causal=causal
        )
        return flash_attention_backward(
            q, k, v, output, lse, d_out, block=block, query_block=query_block, causal=causal
        )

    return kernel


def estimate_bytes(
    impl: str, config: BenchConfig, n: int, itemsize: int, dispatched: str | None = None
) -> int:
    """Bytes a forward and backward allocate beyond the inputs and dO (the three gradients
    included), analytically: the n × n arrays each holds at its peak, per head."""
    heads = config.batch * config.heads
    square, rows = n * n, n * config.d
    causal = 1 if config.causal else 0
    if impl == "sdpa":
        impl = "sdpa-math" if dispatched in (None, "math") else "sdpa-flash"
    # naive: the weights autograd keeps, then dA, dZ and dS (and a mask when causal);
    # sdpa-math likewise with its own scores; numpy: attn backward's A, dA, dZ, dS kept
    # together with the forward's scores, shifted scores and exponentials.
    squares = {"naive": 5, "sdpa-math": 6, "numpy": 9}.get(impl)
    if squares is not None:
        overhead = registry.PYTHON_OVERHEAD if impl == "numpy" else 0
        per_head = (squares + causal) * square * itemsize + 6 * rows * itemsize
        return heads * per_head + causal * square * itemsize + overhead
    # fused: the output, dO's copies, the three gradients, L and D per row, a workspace
    return heads * (8 * rows * itemsize + 16 * n) + (1 << 20)


def reference_gradients(inputs: registry.Inputs, rows: np.ndarray, causal: bool) -> np.ndarray:
    """float64 (dQ, dK, dV) of batch 0, every head, at query rows and key rows ``rows``:
    (3, heads, len(rows), d), computed where the inputs are (numpy, or torch on the device).

    One pass over every query row, a chunk of rows at a time, gives each row's L = m + ln ℓ
    and D = rowsum(dO ∘ O); then A's sampled rows and columns are recomputed from L:
    dQ_r = dS_r K, dK_r = dS_rᵀ Q and dV_r = A_rᵀ dO, with dS = A ∘ (dO Vᵀ − D) / √d.
    """
    assert inputs.d_out is not None
    q, k, v, d_out = (_float64(t[0]) for t in (inputs.q, inputs.k, inputs.v, inputs.d_out))
    xp = namespace_of(q)
    heads, n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    keys_t = xp.matrix_transpose(k)  # (heads, d, n)
    chunk = max(1, min(n, REFERENCE_CHUNK_ENTRIES // (heads * n)))
    sums, deltas = [], []
    for start in range(0, n, chunk):
        z = _masked(xp, xp.matmul(q[:, start : start + chunk], keys_t) * scale, start, 0, causal)
        top = xp.max(z, axis=-1, keepdims=True)
        e = xp.exp(z - top)
        total = xp.sum(e, axis=-1, keepdims=True)
        output = xp.matmul(e / total, v)  # (heads, chunk, d)
        sums.append((top + xp.log(total))[..., 0])
        deltas.append(xp.sum(d_out[:, start : start + chunk] * output, axis=-1))
    lse, delta = xp.concat(sums, axis=-1), xp.concat(deltas, axis=-1)  # (heads, n)
    picked = [int(row) for row in rows]
    # rows of A: the sampled queries against every key
    z_rows = xp.matmul(q[:, picked], keys_t) * scale  # (heads, r, n)
    z_rows = _masked(xp, z_rows, picked, 0, causal)
    a_rows = xp.exp(z_rows - lse[:, picked][..., None])
    d_a_rows = xp.matmul(d_out[:, picked], xp.matrix_transpose(v))  # (heads, r, n)
    d_s_rows = a_rows * (d_a_rows - delta[:, picked][..., None]) * scale
    d_q = xp.matmul(d_s_rows, k)  # (heads, r, d)
    # columns of A: every query against the sampled keys
    z_cols = xp.matmul(q, xp.matrix_transpose(k[:, picked])) * scale  # (heads, n, r)
    z_cols = _masked(xp, z_cols, 0, picked, causal)
    a_cols = xp.exp(z_cols - lse[..., None])
    d_v = xp.matmul(xp.matrix_transpose(a_cols), d_out)  # (heads, r, d)
    d_a_cols = xp.matmul(d_out, xp.matrix_transpose(v[:, picked]))  # (heads, n, r)
    d_s_cols = a_cols * (d_a_cols - delta[..., None]) * scale
    d_k = xp.matmul(xp.matrix_transpose(d_s_cols), q)  # (heads, r, d)
    return np.stack([_host64(g) for g in (d_q, d_k, d_v)])


def _masked(xp: Any, z: Array, rows: int | list[int], cols: int | list[int], causal: bool) -> Array:
    """z with the causal mask applied: −∞ where key j comes after query i. ``rows`` and
    ``cols`` give the rows' and the columns' indices: a list, or the first of a run."""
    if not causal:
        return z
    device = getattr(z, "device", None)
    kwargs = {} if device is None or isinstance(z, np.ndarray) else {"device": device}

    def indices(where: int | list[int], count: int) -> Array:
        if isinstance(where, list):
            return xp.asarray(where, **kwargs)
        return xp.arange(where, where + count, **kwargs)

    i = indices(rows, z.shape[-2])[:, None]
    j = indices(cols, z.shape[-1])[None, :]
    return xp.where(j <= i, z, -math.inf)


def gradient_rows(grads: tuple[Array, Array, Array], rows: np.ndarray) -> np.ndarray:
    """Batch 0, the given rows of an implementation's dQ, dK, dV: (3, heads, rows, d) float64."""
    picked = [int(row) for row in rows]
    return np.stack([_host64(g[0][:, picked]) for g in grads])


def _float64(array: Array) -> Array:
    """A float64 copy where the array is: numpy, or torch on its device (autograd detached)."""
    if isinstance(array, np.ndarray):
        return array.astype(np.float64)
    import torch

    tensor = array.detach()
    if tensor.device.type == "mps":  # no float64 there
        tensor = tensor.cpu()
    return tensor.to(torch.float64)


def _host64(array: Array) -> np.ndarray:
    if isinstance(array, np.ndarray):
        return array.astype(np.float64)
    import torch

    return array.detach().to(device="cpu", dtype=torch.float64).numpy()
