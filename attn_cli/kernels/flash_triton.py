"""FlashAttention's forward pass as a Triton kernel: the `attn flash` lesson, on a GPU.

One program (a group of GPU threads) runs one query tile of the lesson: it loads its
``query_block`` query rows once, starts them at m = −∞, ℓ = 0, acc = 0, and streams the keys
and values past them ``block`` rows at a time, doing the lesson's six steps per key block
(scores, running max m, rescale factor c, exponentials P, running sum ℓ, accumulator acc).
Then it writes its rows of the output, acc / ℓ. The programs of all the tiles (and of every
batch item and head) run side by side. Each part of the kernel is marked ``# ── step KEY ──``
with the key of the lesson step it implements (``attn flash --kernel`` shows the marks).

Two things make it fast without changing the lesson's arithmetic:

* the scores are computed in base 2: log₂ e is folded into the scale, so that P = exp(S − m)
  is one ``exp2`` (the GPU's native exponential) per entry; m is kept in base 2 and converted
  back where the tests read it;
* masks only where a block needs one: the key blocks before ``whole`` are whole (every key
  real and, causal, no later than the tile's first query), and the loop over them carries no
  mask; only the last, ragged block and, causal, the blocks on the diagonal are masked.

In float16 and bfloat16 the products Q Kᵀ and P V run on the inputs' own type (tensor cores);
m, ℓ, acc and the scores are float32 whatever the inputs are.

Without a GPU, ``TRITON_INTERPRET=1`` (set before triton is imported) runs the same kernel on
the CPU through numpy: slowly, but step for step (the tests do this).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
import triton
import triton.language as tl

MAX_D = 128  # the widest Q, K and V rows: a tile of each stays in the program's fast memory
LOG2_E = 1.4426950408889634  # log₂ e: exp(x) = exp2(x · log₂ e)
LN_2 = tl.constexpr(0.6931471805599453)  # ln 2: a base-2 max back in the lesson's units


@triton.jit
def flash_forward(
    q_ptr,  # (B, m, d): B = batch × heads, each row contiguous
    k_ptr,  # (B, n, d)
    v_ptr,  # (B, n, d_v)
    o_ptr,  # (B, m, d_v): the output
    trace_ptr,  # (B, blocks, 2, m) float32: m and ℓ after each key block (only if TRACE)
    lse_ptr,  # (B, m) float32: L = m + ln ℓ per row, what the backward needs (only if LSE)
    m_rows,
    n_keys,
    stride_qb,
    stride_qm,
    stride_kb,
    stride_kn,
    stride_vb,
    stride_vn,
    stride_ob,
    stride_om,
    scale,  # (1/√d_k, or 1 without scaling) · log₂ e: scores in base 2
    D: tl.constexpr,  # d, the width of Q and K
    D_V: tl.constexpr,  # d_v, the width of V
    QUERY_BLOCK: tl.constexpr,  # the lesson's --query-block: query rows per tile
    BLOCK: tl.constexpr,  # the lesson's --block: keys per block
    # tl.arange and tl.dot need tile sides that are powers of two, and tl.dot at least 16: a
    # tile is padded up to TILE_M × TILE_N (TILE_D, TILE_DV wide); the padding is masked out.
    TILE_M: tl.constexpr,
    TILE_N: tl.constexpr,
    TILE_D: tl.constexpr,
    TILE_DV: tl.constexpr,
    CAUSAL: tl.constexpr,
    TRACE: tl.constexpr,
    DOT: tl.constexpr,  # the type tl.dot multiplies in (see flash_attention)
    PRECISION: tl.constexpr,  # "ieee" for float32 inputs: no TF32 rounding of the products
    LSE: tl.constexpr,  # also write L, for the backward (flash_attention_with_lse)
):
    # ── step tile ── this program's query tile: rows row0 .. row0 + QUERY_BLOCK − 1
    tile = tl.program_id(0)
    lane = tl.program_id(1)  # which batch item and head
    row0 = tile * QUERY_BLOCK
    rows = row0 + tl.arange(0, TILE_M)  # (TILE_M,)
    own = (tl.arange(0, TILE_M) < QUERY_BLOCK) & (rows < m_rows)  # not padding, not past m
    dims = tl.arange(0, TILE_D)
    dims_v = tl.arange(0, TILE_DV)
    q = tl.load(
        q_ptr + lane * stride_qb + rows[:, None] * stride_qm + dims[None, :],
        mask=own[:, None] & (dims[None, :] < D),
        other=0.0,
    )  # (TILE_M, TILE_D); padded entries 0, so they add nothing to a score
    m_i = tl.full((TILE_M,), float("-inf"), tl.float32)  # m = −∞ (base 2): no key seen yet
    l_i = tl.zeros((TILE_M,), tl.float32)  # ℓ = 0
    acc = tl.zeros((TILE_M, TILE_DV), tl.float32)  # acc = 0
    # Causal: stop before the first key block wholly in the future of every row of the tile
    # (its first key after the tile's last row); every later block is in the future too.
    stop = n_keys
    if CAUSAL:
        stop = tl.minimum(n_keys, tl.minimum(row0 + QUERY_BLOCK, m_rows))
    # Blocks before `whole` need no mask: all their keys are real and, causal, no later than
    # the tile's first row. A tile padded past its block (BLOCK not a power of two) masks all.
    whole = 0
    if BLOCK == TILE_N:
        whole = n_keys // BLOCK * BLOCK
        if CAUSAL:
            whole = tl.minimum(whole, (row0 + 1) // BLOCK * BLOCK)

    for masked in tl.static_range(2):  # the whole blocks, then the ragged and diagonal ones
        for start in tl.range(whole if masked else 0, stop if masked else whole, BLOCK):
            # ── step scores ── S = Q K_bᵀ (/ √d_k) for keys start .. start + BLOCK − 1
            keys = start + tl.arange(0, TILE_N)  # (TILE_N,)
            real = (tl.arange(0, TILE_N) < BLOCK) & (keys < n_keys)  # not padding, not past n
            loadable = dims[None, :] < D  # (1, TILE_D): padded columns load as 0
            if masked:
                loadable = loadable & real[:, None]  # (TILE_N, TILE_D): and keys past n
            k = tl.load(
                k_ptr + lane * stride_kb + keys[:, None] * stride_kn + dims[None, :],
                mask=loadable,
                other=0.0,
            )  # (TILE_N, TILE_D)
            s = tl.dot(q.to(DOT), tl.trans(k.to(DOT)), input_precision=PRECISION) * scale
            if masked:
                allowed = real[None, :]  # (1, TILE_N), broadcast over the rows
                if CAUSAL:
                    allowed = allowed & (keys[None, :] <= rows[:, None])  # key j ≤ query i
                s = tl.where(allowed, s, float("-inf"))  # (TILE_M, TILE_N)

            # ── step max ── m_new = max(m, row max of S)
            # Every row meets key 1 in the first block (causal or not), so m is finite from
            # then on and exp2(m − m_new) below never meets −∞ − (−∞).
            m_new = tl.maximum(m_i, tl.max(s, 1))  # (TILE_M,)

            # ── step rescale ── c = exp(m_old − m_new): 0 on the first block, 1 if m stayed
            c = tl.math.exp2(m_i - m_new)  # (TILE_M,)

            # ── step p ── P = exp(S − m_new): every entry in [0, 1], masked ones exactly 0
            p = tl.math.exp2(s - m_new[:, None])  # (TILE_M, TILE_N)

            # ── step sum ── ℓ = c · ℓ + row sum of P
            l_i = c * l_i + tl.sum(p, 1)  # (TILE_M,)

            # ── step acc ── acc = c · acc + P V_b
            loadable_v = dims_v[None, :] < D_V
            if masked:
                loadable_v = loadable_v & real[:, None]
            v = tl.load(
                v_ptr + lane * stride_vb + keys[:, None] * stride_vn + dims_v[None, :],
                mask=loadable_v,
                other=0.0,
            )  # (TILE_N, TILE_DV)
            # P is rounded to the values' type for the product, as FlashAttention does: in
            # float16 and bfloat16 that lets P V run on tensor cores; ℓ above used P unrounded.
            # The product adds onto the rescaled accumulator inside tl.dot.
            acc = tl.dot(
                p.to(v.dtype).to(DOT), v.to(DOT), c[:, None] * acc, input_precision=PRECISION
            )  # (TILE_M, TILE_DV)
            m_i = m_new

            if TRACE:  # for the tests: m (the lesson's units) and ℓ after this block
                at = trace_ptr + (lane * tl.cdiv(n_keys, BLOCK) + start // BLOCK) * 2 * m_rows
                tl.store(at + rows, m_i * LN_2, mask=own)
                tl.store(at + m_rows + rows, l_i, mask=own)

    # ── step tile_output ── this tile's rows of the output: acc / ℓ, written once
    o = acc / l_i[:, None]  # (TILE_M, TILE_DV)
    tl.store(
        o_ptr + lane * stride_ob + rows[:, None] * stride_om + dims_v[None, :],
        o.to(o_ptr.dtype.element_ty),
        mask=own[:, None] & (dims_v[None, :] < D_V),
    )
    if LSE:  # the backward recomputes P = exp(S − L) from this one number per row
        tl.store(lse_ptr + lane * m_rows + rows, m_i * LN_2 + tl.log(l_i), mask=own)


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block: int = 64,
    query_block: int | None = None,
    causal: bool = False,
    scale: bool = True,
) -> torch.Tensor:
    """softmax(Q Kᵀ / √d_k) V by the kernel: q (..., m, d), k (..., n, d), v (..., n, d_v).

    ``block`` and ``query_block`` are `attn flash`'s --block and --query-block (None: one tile
    holding every query, as the lesson without --query-block). The output has q's type. On a
    GPU, give a query_block (or use tuned_flash_attention): one tile of every query fits only a
    small m.
    """
    return _launch(q, k, v, block, query_block, causal, scale, trace=False)[0]


def flash_attention_traced(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block: int = 64,
    query_block: int | None = None,
    causal: bool = False,
    scale: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """flash_attention, and each query row's m and ℓ after each key block: (..., blocks, m)
    float32 each, NaN for a block the row's tile skipped (causal)."""
    output, trace = _launch(q, k, v, block, query_block, causal, scale, trace=True)
    return output, trace[..., 0, :], trace[..., 1, :]


def tuned_flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    tuner: Any = None,
) -> torch.Tensor:
    """flash_attention with its tile sides, warps and pipeline stages chosen by timing each
    launch setting of TUNING on this device, once per shape (``tuned_setting`` says which won).

    ``tuner``: flash_forward behind Triton's autotuner (make_tuner); default: one made on
    first use, timing with CUDA events, so a GPU only.
    """
    checked = _checked(q, k, v, causal)
    q3, k3, v3, o3 = _flat(q, k, v)
    m, n = q3.shape[1], k3.shape[1]

    def grid(meta: dict[str, Any]) -> tuple[int, int]:
        return (math.ceil(m / meta["QUERY_BLOCK"]), q3.shape[0])

    dot = _dot_type(q.dtype)
    (tuner or _default_tuner())[grid](
        q3, k3, v3, o3, o3, o3,  # no trace, no L: any pointer will do
        m, n, *_strides(q3, k3, v3, o3), _scale(checked.d, True),
        D=checked.d, D_V=checked.d_v, TILE_D=_tile(checked.d), TILE_DV=_tile(checked.d_v),
        CAUSAL=causal, TRACE=False, DOT=dot, PRECISION=_precision(q.dtype), LSE=False,
    )  # fmt: skip
    return o3.reshape(*q.shape[:-1], checked.d_v)


# The launch settings tuned_flash_attention times: (query rows per tile, keys per block, warps,
# pipeline stages). Tiles of 64 or 128 queries and 32 to 128 keys; 8 warps only on tiles of
# 128 queries (on Hopper a warp group, 4 warps, runs one 64-row matrix product); 2 to 4 key
# blocks loading while one is computed on. A setting whose tiles do not fit in the GPU's
# shared memory is passed over by the tuner.
TUNING: tuple[tuple[int, int, int, int], ...] = (
    *((128, 128, 8, stages) for stages in (2, 3)),
    *((128, 64, warps, stages) for warps in (4, 8) for stages in (2, 3, 4)),
    *((128, 32, 4, stages) for stages in (3, 4)),
    *((64, 128, 4, stages) for stages in (2, 3)),
    *((64, 64, 4, stages) for stages in (3, 4)),
)


def make_tuner(do_bench: Callable[..., Any] | None = None) -> Any:
    """flash_forward behind Triton's autotuner, over the settings of TUNING, tuned again for
    each shape (m, n, d, d_v, causal and the type). ``do_bench`` times one launch (default:
    Triton's, with CUDA events)."""
    configs = [
        triton.Config(
            {"QUERY_BLOCK": rows, "BLOCK": keys, "TILE_M": rows, "TILE_N": keys},
            num_warps=warps,
            num_stages=stages,
        )
        for rows, keys, warps, stages in TUNING
    ]
    keys = ["m_rows", "n_keys", "D", "D_V", "CAUSAL"]
    return triton.autotune(configs, key=keys, do_bench=do_bench)(flash_forward)


@functools.cache
def _default_tuner() -> Any:
    return make_tuner()


def tuned_setting(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False, tuner: Any = None
) -> dict[str, int]:
    """The launch setting tuned_flash_attention chose for this shape (once it has run on it):
    query rows per tile, keys per block, warps and pipeline stages."""
    wanted = (q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1], causal)
    for key, config in (tuner or _default_tuner()).cache.items():
        if tuple(key[: len(wanted)]) == wanted and str(q.dtype) in key:
            return {
                "query_block": config.kwargs["QUERY_BLOCK"],
                "block": config.kwargs["BLOCK"],
                "warps": config.num_warps,
                "stages": config.num_stages,
            }
    raise LookupError("tuned_flash_attention has not run on this shape")


class _Checked(NamedTuple):
    d: int  # the width of Q and K
    d_v: int  # the width of V


def _checked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> _Checked:
    """The shapes and type the kernel takes, or a ValueError saying what it does not."""
    m, d = q.shape[-2:]
    n, d_v = k.shape[-2], v.shape[-1]
    if k.shape[-1] != d or v.shape[-2] != n or not (q.dtype == k.dtype == v.dtype):
        raise ValueError("q (..., m, d), k (..., n, d) and v (..., n, d_v) of one dtype")
    if q.dtype not in _TL_TYPES:
        raise ValueError(f"{q.dtype}: the kernel takes float32, float16 or bfloat16")
    if max(d, d_v) > MAX_D or min(m, n, d, d_v) < 1:
        raise ValueError(f"need m, n, block >= 1 and 1 <= d, d_v <= {MAX_D}")
    if causal and m != n:
        raise ValueError("causal attention here is self-attention: m = n")
    return _Checked(d, d_v)


def _flat(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(B, rows, width) with unit stride along the width, batch and heads flattened; and the
    output to fill, (B, m, d_v)."""
    q3, k3, v3 = (t.reshape(-1, *t.shape[-2:]).contiguous() for t in (q, k, v))
    o3 = torch.empty((q3.shape[0], q3.shape[1], v3.shape[2]), dtype=q.dtype, device=q.device)
    return q3, k3, v3, o3


def _strides(*tensors: torch.Tensor) -> list[int]:
    return [stride for t in tensors for stride in (t.stride(0), t.stride(1))]


def _scale(d: int, scale: bool) -> float:
    """The scores' factor: 1/√d_k (or 1), times log₂ e for exp2."""
    return (1 / math.sqrt(d) if scale else 1.0) * LOG2_E


def _precision(dtype: torch.dtype) -> str:
    return "ieee" if dtype == torch.float32 else "tf32"


def _dot_type(dtype: torch.dtype) -> Any:
    """The type the products' tiles are given to tl.dot: the inputs' own. The interpreter
    (numpy) holds bfloat16 as 16-bit integers and its tl.dot would multiply those: there, and
    only there, bfloat16 tiles are widened to float32 for the products (the same products: two
    bfloat16 numbers multiply exactly in float32)."""
    return tl.float32 if interpreted() and dtype == torch.bfloat16 else _TL_TYPES[dtype]


def _launch(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block: int,
    query_block: int | None,
    causal: bool,
    scale: bool,
    *,
    trace: bool,
    lse: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward's launch; ``lse`` (B, m) float32, when given, receives each row's L."""
    checked = _checked(q, k, v, causal)
    if block < 1:
        raise ValueError(f"need m, n, block >= 1 and 1 <= d, d_v <= {MAX_D}")
    q3, k3, v3, o3 = _flat(q, k, v)
    lanes, m, n = q3.shape[0], q3.shape[1], k3.shape[1]
    query_block = query_block or m
    blocks = math.ceil(n / block)
    shape = (lanes, blocks, 2, m) if trace else (1,)
    trace_out = torch.full(shape, math.nan, dtype=torch.float32, device=q.device)
    dot = _dot_type(q.dtype)
    tile_m, tile_n = _tile(query_block), _tile(block)
    grid = (math.ceil(m / query_block), lanes)
    flash_forward[grid](
        q3, k3, v3, o3, trace_out, trace_out if lse is None else lse,
        m, n, *_strides(q3, k3, v3, o3), _scale(checked.d, scale),
        D=checked.d, D_V=checked.d_v, QUERY_BLOCK=query_block, BLOCK=block,
        TILE_M=tile_m, TILE_N=tile_n, TILE_D=_tile(checked.d), TILE_DV=_tile(checked.d_v),
        CAUSAL=causal, TRACE=trace, DOT=dot, PRECISION=_precision(q.dtype), LSE=lse is not None,
        num_warps=8 if tile_m * tile_n >= 128 * 64 else 4,
    )  # fmt: skip
    output = o3.reshape(*q.shape[:-1], checked.d_v)
    return output, trace_out.reshape(*q.shape[:-2], blocks, 2, m) if trace else trace_out


# --- FlashAttention-2's backward (Dao, 2023, Algorithm 2), as `attn backward --block` -------
#
# Two kernels, no atomic additions (so the same inputs give the same bits every run): one
# program per key block accumulates that block's dK and dV over every query block; one program
# per query block accumulates its dQ over every key block. Each recomputes its tiles' P from
# the forward's L alone and uses D = rowsum(dO ∘ O), computed once before them. In float32 the
# products are exact ("ieee"): the kernel is the lesson's arithmetic, tile for tile. In float16
# and bfloat16 the products run on the inputs' type, as the forward's do (P and dS are rounded
# to it for theirs, as FlashAttention-2's backward rounds them); S, P, dP, dS and the sums dQ,
# dK, dV are float32, and the gradients are rounded to the inputs' type once, when stored.


@triton.jit
def _backward_tile(
    q, k, v, d_o, lse, delta, rows, keys, own, real,
    scale, CAUSAL: tl.constexpr, PRECISION: tl.constexpr, DOT: tl.constexpr,
):  # fmt: skip
    """One tile's P, dS (as attn backward --block shows them), for queries ``rows`` and keys
    ``keys``: P = exp(S − L), dP = dO Vᵀ, dS = P ∘ (dP − D), float32."""
    s = tl.dot(q.to(DOT), tl.trans(k.to(DOT)), input_precision=PRECISION) * scale  # S's tile
    allowed = own[:, None] & real[None, :]
    if CAUSAL:
        allowed = allowed & (keys[None, :] <= rows[:, None])  # key j ≤ query i
    p = tl.where(allowed, tl.exp(s - lse[:, None]), 0.0)  # A's tile, recomputed from L
    d_p = tl.dot(d_o.to(DOT), tl.trans(v.to(DOT)), input_precision=PRECISION)  # dA's tile
    return p, p * (d_p - delta[:, None])  # dS = P ∘ (dP − D)


@triton.jit
def flash_backward_dk_dv(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr,
    m_rows, n_keys, scale,
    D: tl.constexpr, D_V: tl.constexpr, QUERY_BLOCK: tl.constexpr, BLOCK: tl.constexpr,
    TILE_M: tl.constexpr, TILE_N: tl.constexpr, TILE_D: tl.constexpr, TILE_DV: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr, DOT: tl.constexpr,
):  # fmt: skip
    """One key block j: dV_j = Σ_i P_ijᵀ dO_i and dK_j = Σ_i dS_ijᵀ Q_i (÷ √d_k), over the query
    blocks i (causal: from the first that sees key block j). Rows are contiguous, of widths D
    (Q, K, dK) and D_V (V, dO, dV), each array (B, rows, width) contiguous."""
    j, lane = tl.program_id(0), tl.program_id(1)
    keys = j * BLOCK + tl.arange(0, TILE_N)
    real = (tl.arange(0, TILE_N) < BLOCK) & (keys < n_keys)
    dims, dims_v = tl.arange(0, TILE_D), tl.arange(0, TILE_DV)
    at_k = lane * n_keys * D + keys[:, None] * D + dims[None, :]  # (TILE_N, TILE_D)
    at_v = lane * n_keys * D_V + keys[:, None] * D_V + dims_v[None, :]  # (TILE_N, TILE_DV)
    fits_k, fits_v = real[:, None] & (dims[None, :] < D), real[:, None] & (dims_v[None, :] < D_V)
    k = tl.load(k_ptr + at_k, mask=fits_k, other=0.0)
    v = tl.load(v_ptr + at_v, mask=fits_v, other=0.0)
    d_k = tl.zeros((TILE_N, TILE_D), tl.float32)
    d_v = tl.zeros((TILE_N, TILE_DV), tl.float32)
    first = (j * BLOCK) // QUERY_BLOCK * QUERY_BLOCK if CAUSAL else 0
    for row0 in tl.range(first, m_rows, QUERY_BLOCK):
        rows = row0 + tl.arange(0, TILE_M)
        own = (tl.arange(0, TILE_M) < QUERY_BLOCK) & (rows < m_rows)
        at_q = lane * m_rows * D + rows[:, None] * D + dims[None, :]
        at_o = lane * m_rows * D_V + rows[:, None] * D_V + dims_v[None, :]
        q = tl.load(q_ptr + at_q, mask=own[:, None] & (dims[None, :] < D), other=0.0)
        d_o = tl.load(do_ptr + at_o, mask=own[:, None] & (dims_v[None, :] < D_V), other=0.0)
        lse = tl.load(lse_ptr + lane * m_rows + rows, mask=own, other=0.0)
        delta = tl.load(delta_ptr + lane * m_rows + rows, mask=own, other=0.0)
        p, d_s = _backward_tile(
            q, k, v, d_o, lse, delta, rows, keys, own, real, scale, CAUSAL, PRECISION, DOT
        )
        p_in, d_s_in = p.to(q.dtype).to(DOT), d_s.to(q.dtype).to(DOT)  # the products' type
        d_v += tl.dot(tl.trans(p_in), d_o.to(DOT), input_precision=PRECISION)  # dV_j += Pᵀ dO_i
        d_k += tl.dot(tl.trans(d_s_in), q.to(DOT), input_precision=PRECISION) * scale  # += dSᵀ Q_i
    tl.store(dk_ptr + at_k, d_k.to(dk_ptr.dtype.element_ty), mask=fits_k)
    tl.store(dv_ptr + at_v, d_v.to(dv_ptr.dtype.element_ty), mask=fits_v)


@triton.jit
def flash_backward_dq(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
    m_rows, n_keys, scale,
    D: tl.constexpr, D_V: tl.constexpr, QUERY_BLOCK: tl.constexpr, BLOCK: tl.constexpr,
    TILE_M: tl.constexpr, TILE_N: tl.constexpr, TILE_D: tl.constexpr, TILE_DV: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr, DOT: tl.constexpr,
):  # fmt: skip
    """One query block i: dQ_i = Σ_j dS_ij K_j (÷ √d_k), over the key blocks j (causal: up to
    the last that block i sees)."""
    i, lane = tl.program_id(0), tl.program_id(1)
    rows = i * QUERY_BLOCK + tl.arange(0, TILE_M)
    own = (tl.arange(0, TILE_M) < QUERY_BLOCK) & (rows < m_rows)
    dims, dims_v = tl.arange(0, TILE_D), tl.arange(0, TILE_DV)
    at_q = lane * m_rows * D + rows[:, None] * D + dims[None, :]
    at_o = lane * m_rows * D_V + rows[:, None] * D_V + dims_v[None, :]
    fits_q = own[:, None] & (dims[None, :] < D)
    q = tl.load(q_ptr + at_q, mask=fits_q, other=0.0)
    d_o = tl.load(do_ptr + at_o, mask=own[:, None] & (dims_v[None, :] < D_V), other=0.0)
    lse = tl.load(lse_ptr + lane * m_rows + rows, mask=own, other=0.0)
    delta = tl.load(delta_ptr + lane * m_rows + rows, mask=own, other=0.0)
    d_q = tl.zeros((TILE_M, TILE_D), tl.float32)
    stop = n_keys
    if CAUSAL:
        stop = tl.minimum(n_keys, tl.minimum((i + 1) * QUERY_BLOCK, m_rows))
    for col0 in tl.range(0, stop, BLOCK):
        keys = col0 + tl.arange(0, TILE_N)
        real = (tl.arange(0, TILE_N) < BLOCK) & (keys < n_keys)
        at_k = lane * n_keys * D + keys[:, None] * D + dims[None, :]
        at_v = lane * n_keys * D_V + keys[:, None] * D_V + dims_v[None, :]
        k = tl.load(k_ptr + at_k, mask=real[:, None] & (dims[None, :] < D), other=0.0)
        v = tl.load(v_ptr + at_v, mask=real[:, None] & (dims_v[None, :] < D_V), other=0.0)
        _, d_s = _backward_tile(
            q, k, v, d_o, lse, delta, rows, keys, own, real, scale, CAUSAL, PRECISION, DOT
        )
        d_s_in = d_s.to(k.dtype).to(DOT)  # the product's type
        d_q += tl.dot(d_s_in, k.to(DOT), input_precision=PRECISION) * scale  # dQ_i += dS K_j
    tl.store(dq_ptr + at_q, d_q.to(dq_ptr.dtype.element_ty), mask=fits_q)


def flash_attention_with_lse(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block: int = 64,
    query_block: int | None = None,
    causal: bool = False,
    scale: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """flash_attention, and each row's L = m + ln ℓ (..., m) float32: what the backward keeps."""
    lanes = math.prod(q.shape[:-2])
    lse = torch.empty((lanes, q.shape[-2]), dtype=torch.float32, device=q.device)
    output, _ = _launch(q, k, v, block, query_block, causal, scale, trace=False, lse=lse)
    return output, lse.reshape(q.shape[:-1])


def flash_attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    output: torch.Tensor,
    lse: torch.Tensor,
    d_out: torch.Tensor,
    *,
    block: int = 64,
    query_block: int | None = None,
    causal: bool = False,
    scale: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV of softmax(Q Kᵀ / √d_k) V for the upstream gradient ``d_out``, from the
    forward's ``output`` and ``lse`` (flash_attention_with_lse): q (..., m, d), k (..., n, d),
    v (..., n, d_v), ``output`` and ``d_out`` (..., m, d_v), all of one type (float32, float16
    or bfloat16), ``lse`` float32; ``block`` keys and ``query_block`` queries per tile. The
    gradients have the inputs' type."""
    checked = _checked(q, k, v, causal)
    if not (output.dtype == d_out.dtype == q.dtype) or block < 1:
        raise ValueError("the backward kernel takes output and d_out of q's dtype, and block >= 1")
    q3, k3, v3 = (t.reshape(-1, *t.shape[-2:]).contiguous() for t in (q, k, v))
    d_o3 = d_out.reshape(q3.shape[0], q3.shape[1], checked.d_v).contiguous()
    o3 = output.reshape(d_o3.shape)
    lanes, m, n = q3.shape[0], q3.shape[1], k3.shape[1]
    delta = (d_o3.float() * o3.float()).sum(dim=-1).contiguous()  # D = rowsum(dO ∘ O), (B, m)
    lse3 = lse.reshape(lanes, m).contiguous()
    d_q, d_k, d_v = torch.empty_like(q3), torch.empty_like(k3), torch.empty_like(v3)
    query_block = query_block or min(m, 64)
    sizes = dict(
        D=checked.d, D_V=checked.d_v, QUERY_BLOCK=query_block, BLOCK=block,
        TILE_M=_tile(query_block), TILE_N=_tile(block), TILE_D=_tile(checked.d),
        TILE_DV=_tile(checked.d_v), CAUSAL=causal, PRECISION=_precision(q.dtype), DOT=_dot_type(q.dtype),
    )  # fmt: skip
    factor = 1 / math.sqrt(checked.d) if scale else 1.0
    common = (q3, k3, v3, d_o3, lse3, delta)
    flash_backward_dk_dv[(math.ceil(n / block), lanes)](*common, d_k, d_v, m, n, factor, **sizes)
    flash_backward_dq[(math.ceil(m / query_block), lanes)](*common, d_q, m, n, factor, **sizes)
    return d_q.reshape(q.shape), d_k.reshape(k.shape), d_v.reshape(v.shape)


_TL_TYPES = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}


def interpreted() -> bool:
    """Whether the kernel runs on Triton's interpreter: triton was asked for it
    (TRITON_INTERPRET=1) when this module was imported and the kernel was decorated."""
    return not isinstance(flash_forward, triton.runtime.JITFunction)


def _tile(size: int) -> int:
    """A tile side for ``size`` rows or columns: a power of two, at least 16 (tl.dot's least)."""
    return max(16, triton.next_power_of_2(size))
