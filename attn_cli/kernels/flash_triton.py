"""FlashAttention's forward pass as a Triton kernel: the `attn flash` lesson, on a GPU.

One program (a group of GPU threads) runs one query tile of the lesson: it loads its
``query_block`` query rows once, starts them at m = −∞, ℓ = 0, acc = 0, and streams the keys
and values past them ``block`` rows at a time, doing the lesson's six steps per key block
(scores, running max m, rescale factor c, exponentials P, running sum ℓ, accumulator acc).
Then it writes its rows of the output, acc / ℓ. The programs of all the tiles (and of every
batch item and head) run side by side. Each part of the kernel is marked ``# ── step KEY ──``
with the key of the lesson step it implements (``attn flash --kernel`` shows the marks).

In float16 and bfloat16 the products Q Kᵀ and P V run on the inputs' own type (tensor cores);
m, ℓ, acc and the scores are float32 whatever the inputs are.

Without a GPU, ``TRITON_INTERPRET=1`` (set before triton is imported) runs the same kernel on
the CPU through numpy: slowly, but step for step (the tests do this).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

MAX_D = 128  # the widest Q, K and V rows: a tile of each stays in the program's fast memory


@triton.jit
def flash_forward(
    q_ptr,  # (B, m, d): B = batch × heads, each row contiguous
    k_ptr,  # (B, n, d)
    v_ptr,  # (B, n, d_v)
    o_ptr,  # (B, m, d_v): the output
    trace_ptr,  # (B, blocks, 2, m) float32: m and ℓ after each key block (only if TRACE)
    m_rows,
    n_keys,
    d,
    d_v,
    stride_qb,
    stride_qm,
    stride_kb,
    stride_kn,
    stride_vb,
    stride_vn,
    stride_ob,
    stride_om,
    scale,  # 1/√d_k, or 1 without scaling
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
        mask=own[:, None] & (dims[None, :] < d),
        other=0.0,
    )  # (TILE_M, TILE_D); padded entries 0, so they add nothing to a score
    m_i = tl.full((TILE_M,), float("-inf"), tl.float32)  # m = −∞: no key seen yet
    l_i = tl.zeros((TILE_M,), tl.float32)  # ℓ = 0
    acc = tl.zeros((TILE_M, TILE_DV), tl.float32)  # acc = 0
    # Causal: stop before the first key block wholly in the future of every row of the tile
    # (its first key after the tile's last row); every later block is in the future too.
    stop = n_keys
    if CAUSAL:
        stop = tl.minimum(n_keys, tl.minimum(row0 + QUERY_BLOCK, m_rows))

    for start in range(0, stop, BLOCK):
        # ── step scores ── S = Q K_bᵀ (/ √d_k) for keys start .. start + BLOCK − 1
        keys = start + tl.arange(0, TILE_N)  # (TILE_N,)
        real = (tl.arange(0, TILE_N) < BLOCK) & (keys < n_keys)  # not padding, not past n
        k = tl.load(
            k_ptr + lane * stride_kb + keys[:, None] * stride_kn + dims[None, :],
            mask=real[:, None] & (dims[None, :] < d),
            other=0.0,
        )  # (TILE_N, TILE_D)
        s = tl.dot(q.to(DOT), tl.trans(k.to(DOT)), input_precision=PRECISION) * scale
        allowed = real[None, :]  # (1, TILE_N), broadcast over the rows
        if CAUSAL:
            allowed = allowed & (keys[None, :] <= rows[:, None])  # key j ≤ query i
        s = tl.where(allowed, s, float("-inf"))  # (TILE_M, TILE_N)

        # ── step max ── m_new = max(m, row max of S)
        # Every row meets key 1 in the first block (causal or not), so m is finite from then on
        # and exp(m − m_new) below never meets −∞ − (−∞).
        m_new = tl.maximum(m_i, tl.max(s, 1))  # (TILE_M,)

        # ── step rescale ── c = exp(m_old − m_new): 0 on the first block, 1 if m stayed put
        c = tl.exp(m_i - m_new)  # (TILE_M,)

        # ── step p ── P = exp(S − m_new): every entry in [0, 1], masked ones exactly 0
        p = tl.exp(s - m_new[:, None])  # (TILE_M, TILE_N)

        # ── step sum ── ℓ = c · ℓ + row sum of P
        l_i = c * l_i + tl.sum(p, 1)  # (TILE_M,)

        # ── step acc ── acc = c · acc + P V_b
        v = tl.load(
            v_ptr + lane * stride_vb + keys[:, None] * stride_vn + dims_v[None, :],
            mask=real[:, None] & (dims_v[None, :] < d_v),
            other=0.0,
        )  # (TILE_N, TILE_DV)
        # P is rounded to the values' type for the product, as FlashAttention does: in float16
        # and bfloat16 that is what lets P V run on tensor cores; ℓ above used P unrounded.
        pv = tl.dot(p.to(v.dtype).to(DOT), v.to(DOT), input_precision=PRECISION)
        acc = c[:, None] * acc + pv  # (TILE_M, TILE_DV)
        m_i = m_new

        if TRACE:  # for the tests: m and ℓ after this block, beside the lesson's own
            at = trace_ptr + (lane * tl.cdiv(n_keys, BLOCK) + start // BLOCK) * 2 * m_rows
            tl.store(at + rows, m_i, mask=own)
            tl.store(at + m_rows + rows, l_i, mask=own)

    # ── step tile_output ── this tile's rows of the output: acc / ℓ, written once
    o = acc / l_i[:, None]  # (TILE_M, TILE_DV)
    tl.store(
        o_ptr + lane * stride_ob + rows[:, None] * stride_om + dims_v[None, :],
        o.to(o_ptr.dtype.element_ty),
        mask=own[:, None] & (dims_v[None, :] < d_v),
    )


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
    GPU, give a query_block (attn bench uses 128): one tile of every query fits only a small m.
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
) -> tuple[torch.Tensor, torch.Tensor]:
    *batch, m, d = q.shape
    n, d_v = k.shape[-2], v.shape[-1]
    if k.shape[-1] != d or v.shape[-2] != n or not (q.dtype == k.dtype == v.dtype):
        raise ValueError("q (..., m, d), k (..., n, d) and v (..., n, d_v) of one dtype")
    if q.dtype not in _TL_TYPES:
        raise ValueError(f"{q.dtype}: the kernel takes float32, float16 or bfloat16")
    if max(d, d_v) > MAX_D or min(m, n, d, d_v, block) < 1:
        raise ValueError(f"need m, n, block >= 1 and 1 <= d, d_v <= {MAX_D}")
    if causal and m != n:
        raise ValueError("causal attention here is self-attention: m = n")
    query_block = query_block or m
    # (B, rows, width) with unit stride along the width: batch and heads flattened
    q3, k3, v3 = (t.reshape(-1, *t.shape[-2:]).contiguous() for t in (q, k, v))
    lanes = q3.shape[0]
    o3 = torch.empty((lanes, m, d_v), dtype=q.dtype, device=q.device)
    blocks = math.ceil(n / block)
    shape = (lanes, blocks, 2, m) if trace else (1,)
    trace_out = torch.full(shape, math.nan, dtype=torch.float32, device=q.device)
    # The interpreter (numpy) holds bfloat16 as 16-bit integers and its tl.dot would multiply
    # those: there, and only there, bfloat16 tiles are widened to float32 for the products
    # (the same products: two bfloat16 numbers multiply exactly in float32).
    dot = tl.float32 if interpreted() and q.dtype == torch.bfloat16 else _TL_TYPES[q.dtype]
    tile_m, tile_n = _tile(query_block), _tile(block)
    grid = (math.ceil(m / query_block), lanes)
    flash_forward[grid](
        q3, k3, v3, o3, trace_out,
        m, n, d, d_v,
        q3.stride(0), q3.stride(1), k3.stride(0), k3.stride(1),
        v3.stride(0), v3.stride(1), o3.stride(0), o3.stride(1),
        1 / math.sqrt(d) if scale else 1.0,
        QUERY_BLOCK=query_block, BLOCK=block,
        TILE_M=tile_m, TILE_N=tile_n, TILE_D=_tile(d), TILE_DV=_tile(d_v),
        CAUSAL=causal, TRACE=trace, DOT=dot,
        PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=8 if tile_m * tile_n >= 128 * 64 else 4,
    )  # fmt: skip
    output = o3.reshape(*batch, m, d_v)
    return output, trace_out.reshape(*batch, blocks, 2, m) if trace else trace_out


_TL_TYPES = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}


def interpreted() -> bool:
    """Whether the kernel runs on Triton's interpreter: triton was asked for it
    (TRITON_INTERPRET=1) when this module was imported and the kernel was decorated."""
    return not isinstance(flash_forward, triton.runtime.JITFunction)


def _tile(size: int) -> int:
    """A tile side for ``size`` rows or columns: a power of two, at least 16 (tl.dot's least)."""
    return max(16, triton.next_power_of_2(size))
