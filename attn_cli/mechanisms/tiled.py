"""Tiled attention with an online softmax: the algorithm behind FlashAttention.

The keys and values are read in blocks of ``block`` rows. Each query row carries three
running quantities over the keys seen so far:

    m    the largest score so far (−∞ before the first block)      (..., m, 1)
    ℓ    Σ exp(score − m) over those scores                        (..., m, 1)
    acc  Σ exp(score − m) · v over the same scores                 (..., m, d_v)

When a block raises the max from m_old to m_new, every term already in ℓ and acc was taken
relative to m_old; multiplying both by exp(m_old − m_new) puts them on m_new. After the last
block, acc / ℓ equals softmax(S) V (up to rounding), yet at most one block of scores
(m × block) exists at any time, never the m × n matrix.

Causal masking (query i sees keys j ≤ i) must visit the blocks in order from the first key:
then every row meets its own key no later than in its own block, so no row is still at
m = −∞ when a block is fully masked for it (that would give exp(−∞ − (−∞)) = NaN).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms.attention import scale, scores, weighted_sum
from attn_cli.mechanisms.masks import causal_allowed


@dataclass(frozen=True)
class OnlineState:
    row_max: Array  # (..., m, 1) m: the largest score seen so far
    row_sum: Array  # (..., m, 1) ℓ: Σ exp(score − m) over the scores seen so far
    acc: Array  # (..., m, d_v) Σ exp(score − m) · v, not yet divided by ℓ


@dataclass(frozen=True)
class BlockUpdate:
    scores: Array  # (..., m, b) this block's scaled (and masked) scores
    block_max: Array  # (..., m, 1) row max of this block alone
    rescale: Array  # (..., m, 1) exp(m_old − m_new): 0 on the first block, 1 if m is unchanged
    p: Array  # (..., m, b) exp(scores − m_new), each in [0, 1]
    block_sum: Array  # (..., m, 1) row sum of p
    pv: Array  # (..., m, d_v) p @ v_block
    state: OnlineState  # after this block


@dataclass(frozen=True)
class BlockStep:
    """One block of the loop: which keys, the state before, and the update."""

    start: int  # first key of the block (0-based)
    stop: int  # one past its last key
    before: OnlineState
    update: BlockUpdate


def initial_state(q: Array, v: Array) -> OnlineState:
    """Before any key: m = −∞, ℓ = 0, acc = 0."""
    xp = namespace_of(q, v)
    column = q[..., :1]  # (..., m, 1), only for shape, dtype and device
    acc = xp.zeros((*q.shape[:-1], v.shape[-1]), dtype=q.dtype, device=q.device)  # (..., m, d_v)
    return OnlineState(xp.full_like(column, -math.inf), xp.zeros_like(column), acc)


def block_scores(
    q_rows: Array,
    k_block: Array,
    *,
    use_scale: bool = True,
    causal: bool = False,
    row0: int = 0,
    col0: int = 0,
) -> Array:
    """Scores of query rows row0.. against keys col0..: Q K_bᵀ (/ √d_k), −∞ where j > i if causal."""
    s = scores(q_rows, k_block)  # (..., r, b)
    if use_scale:
        s = scale(s, q_rows.shape[-1])  # (..., r, b)
    if causal:
        allowed = causal_allowed(s, row0, col0)  # (r, b): key col0 + j <= query row0 + i
        s = namespace_of(s).where(allowed, s, -math.inf)  # (..., r, b)
    return s


def update(state: OnlineState, s: Array, v_block: Array) -> BlockUpdate:
    """Fold one block of scores (..., m, b) and its values (..., b, d_v) into the state."""
    xp = namespace_of(s, v_block)
    block_max = xp.max(s, axis=-1, keepdims=True)  # (..., m, 1)
    row_max = xp.maximum(state.row_max, block_max)  # (..., m, 1) m_new
    rescale = xp.exp(state.row_max - row_max)  # (..., m, 1) exp(m_old − m_new), in [0, 1]
    p = xp.exp(s - row_max)  # (..., m, b), in [0, 1]
    block_sum = xp.sum(p, axis=-1, keepdims=True)  # (..., m, 1)
    row_sum = rescale * state.row_sum + block_sum  # (..., m, 1)
    pv = weighted_sum(p, v_block)  # (..., m, b) @ (..., b, d_v) -> (..., m, d_v)
    acc = rescale * state.acc + pv  # (..., m, d_v)
    state = OnlineState(row_max, row_sum, acc)
    return BlockUpdate(s, block_max, rescale, p, block_sum, pv, state)


def finish(state: OnlineState) -> Array:
    """The attention output: acc / ℓ, each row a convex combination of the values."""
    return state.acc / state.row_sum  # (..., m, d_v)


def block_steps(
    q: Array,
    k: Array,
    v: Array,
    *,
    block: int,
    causal: bool = False,
    use_scale: bool = True,
    row0: int = 0,
    skip_future: bool = False,
) -> Iterator[BlockStep]:
    """Every key block of the loop for the query rows ``q`` (rows row0.. of all queries), with
    the state before and after (lessons).

    With ``causal`` and ``skip_future``, the loop stops at the first key block that lies wholly
    in the future of every one of these rows (its first key is after their last row), as a
    FlashAttention kernel skips such blocks; every later block is in the future too.
    """
    state = initial_state(q, v)
    last_row = row0 + q.shape[-2] - 1 if causal and skip_future else None
    for start in visited_blocks(k.shape[-2], block, last_row=last_row):
        stop = min(start + block, k.shape[-2])
        s = block_scores(
            q, k[..., start:stop, :], use_scale=use_scale, causal=causal, row0=row0, col0=start
        )  # (..., r, b)
        step = update(state, s, v[..., start:stop, :])
        yield BlockStep(start, stop, state, step)
        state = step.state


@dataclass(frozen=True)
class QueryTile:
    """One pass of the outer loop: query rows start..stop−1 against the key blocks."""

    start: int  # first query row of the tile (0-based)
    stop: int  # one past its last row
    blocks: tuple[BlockStep, ...]  # the inner loop over key blocks, in order
    skipped: int  # key blocks left out: wholly in the future of every row (causal only)


def query_tiles(
    q: Array,
    k: Array,
    v: Array,
    *,
    block: int,
    query_block: int,
    causal: bool = False,
    use_scale: bool = True,
) -> Iterator[QueryTile]:
    """Both loops of FlashAttention: the outer over tiles of ``query_block`` query rows, the
    inner over blocks of ``block`` keys. Each tile keeps its own m, ℓ and acc and ends with its
    rows of the output, acc / ℓ; tiles are independent (a GPU runs them in parallel)."""
    blocks = math.ceil(k.shape[-2] / block)
    for start in range(0, q.shape[-2], query_block):
        stop = min(start + query_block, q.shape[-2])
        steps = tuple(
            block_steps(
                q[..., start:stop, :],
                k,
                v,
                block=block,
                causal=causal,
                use_scale=use_scale,
                row0=start,
                skip_future=True,
            )
        )
        yield QueryTile(start, stop, steps, blocks - len(steps))


def tiled_attention(
    q: Array, k: Array, v: Array, *, block: int = 128, causal: bool = False, use_scale: bool = True
) -> Array:
    """softmax(Q Kᵀ / √d_k) V computed block by block; the m × n scores never exist.

    Query rows are independent, so all of them are updated together for each key block (a
    GPU kernel runs query tiles in parallel the same way). With ``causal``, query rows before
    a block's first key see none of it and are left out of that block's work.
    """
    m, n = q.shape[-2], k.shape[-2]
    state = initial_state(q, v)
    for start in range(0, n, block):
        stop = min(start + block, n)
        first = start if causal else 0  # first query row that sees any key of this block
        if first >= m:
            break
        s = block_scores(
            q[..., first:, :],
            k[..., start:stop, :],
            use_scale=use_scale,
            causal=causal,
            row0=first,
            col0=start,
        )  # (..., m − first, b)
        rows = _rows(state, first)
        new = update(rows, s, v[..., start:stop, :]).state
        state = new if first == 0 else _set_rows(state, first, new)
    return finish(state)


def _rows(state: OnlineState, first: int) -> OnlineState:
    if first == 0:
        return state
    return OnlineState(
        state.row_max[..., first:, :], state.row_sum[..., first:, :], state.acc[..., first:, :]
    )


def _set_rows(state: OnlineState, first: int, rows: OnlineState) -> OnlineState:
    """Write the updated rows first.. back into the state's arrays (in place)."""
    state.row_max[..., first:, :] = rows.row_max
    state.row_sum[..., first:, :] = rows.row_sum
    state.acc[..., first:, :] = rows.acc
    return state


# --- HBM traffic: the FlashAttention paper's IO analysis (Dao et al., 2022) ------------------
# On a GPU, Q, K, V and O live in HBM (the large off-chip memory); arithmetic runs on data
# copied into SRAM (the small on-chip memory of M elements). Each function below runs an
# algorithm's loops and counts the elements it reads from HBM and writes to HBM.


@dataclass(frozen=True)
class Traffic:
    reads: int  # elements read from HBM
    writes: int  # elements written to HBM
    on_chip: int  # elements one tile holds on chip at once (0: not tiled, S lives in HBM)

    @property
    def total(self) -> int:
        return self.reads + self.writes


def visited_blocks(n: int, block: int, *, last_row: int | None = None) -> Iterator[int]:
    """The first key of each key block the loop visits; with ``last_row`` (causal), it stops
    before the first block lying wholly after that query row."""
    for start in range(0, n, block):
        if last_row is not None and start > last_row:
            return
        yield start


def standard_traffic(m: int, n: int, d_k: int, d_v: int) -> Traffic:
    """The standard implementation (the paper's Algorithm 0), pass by pass: read Q and K, write
    S = QKᵀ; read S, write P = softmax(S); read P and V, write O = PV. Θ(nd + n²) accesses."""
    reads = writes = 0
    reads += m * d_k + n * d_k  # pass 1: Q and K in ...
    writes += m * n  # ... S out
    reads += m * n  # pass 2: S in ...
    writes += m * n  # ... P out
    reads += m * n + n * d_v  # pass 3: P and V in ...
    writes += m * d_v  # ... O out
    return Traffic(reads, writes, 0)


def tiled_traffic(
    m: int, n: int, d_k: int, d_v: int, *, block: int, query_block: int, causal: bool = False
) -> Traffic:
    """The loops of this lesson: for each tile of ``query_block`` queries, read the tile's Q,
    then every key block it visits (its K and V rows), then write the tile's O rows. Scores and
    exponentials stay on chip; causal tiles skip the key blocks wholly in their future."""
    reads = writes = 0
    for start in range(0, m, query_block):
        rows = min(query_block, m - start)
        reads += rows * d_k  # Q tile
        last_row = start + rows - 1 if causal else None
        for first in visited_blocks(n, block, last_row=last_row):
            reads += min(block, n - first) * (d_k + d_v)  # K and V block
        writes += rows * d_v  # O tile, once
    return Traffic(reads, writes, _working_set(min(query_block, m), min(block, n), d_k, d_v))


def paper_blocks(sram: int, d: int) -> tuple[int, int]:
    """The paper's block sizes for M = ``sram`` elements: B_c = ⌈M / 4d⌉ keys, B_r =
    min(B_c, d) queries (Algorithm 1, line 1)."""
    b_c = max(1, math.ceil(sram / (4 * d)))
    return b_c, min(b_c, d)


def paper_traffic(m: int, n: int, d_k: int, d_v: int, *, sram: int) -> Traffic:
    """The paper's Algorithm 1 with its block sizes for M = ``sram`` elements: O, ℓ and m
    start in HBM; the outer loop reads each K, V block once; the inner loop reads every Q, O,
    ℓ, m block and writes O, ℓ, m back. Θ(n²d²/M) accesses (its Theorem 2)."""
    b_c, b_r = paper_blocks(sram, max(d_k, d_v))
    reads = 0
    writes = m * d_v + 2 * m  # O = 0, ℓ = 0, m = −∞ initialised in HBM
    for first in visited_blocks(n, b_c):
        reads += min(b_c, n - first) * (d_k + d_v)  # K_j, V_j
        for start in range(0, m, b_r):
            rows = min(b_r, m - start)
            reads += rows * (d_k + d_v + 2)  # Q_i, O_i, ℓ_i, m_i
            writes += rows * (d_v + 2)  # O_i, ℓ_i, m_i
    return Traffic(reads, writes, _working_set(min(b_r, m), min(b_c, n), d_k, d_v))


def _working_set(rows: int, keys: int, d_k: int, d_v: int) -> int:
    """On chip at once: a Q tile, a K and a V block, its scores (then exponentials), acc, m, ℓ."""
    return rows * d_k + keys * (d_k + d_v) + rows * keys + rows * d_v + 2 * rows
