"""Ring attention: the tiled algorithm's online softmax, with the key blocks passed round a ring.

P processes each hold a shard of one sequence: its queries, and the keys and values at the same
positions (a block). In round t (from 0) process r holds the block that started on process
(r − t) mod P: it folds that block into its running max m, running sum ℓ and accumulator acc
exactly as :func:`attn_cli.mechanisms.tiled.update` does, passes the block on to process
(r + 1) mod P and receives the next one from (r − 1) mod P. After P rounds every process has
seen every block, in its own order, and acc / ℓ is its rows of softmax(S) V.

Which positions a process holds (the sharding), for n positions and P processes:

    contiguous  process r: one run of about n / P positions, in order
    striped     process r: positions r, r + P, r + 2P, ...
    zigzag      the sequence cut in 2P runs; process r: runs r and 2P − 1 − r

When P (for zigzag 2P) does not divide n, the runs differ in length by one (the first ones are
longer, as numpy's array_split cuts them), and the work no longer evens out; the lesson (attn
ring) refuses such a layout, and every process holds n / P positions there.

With a causal mask a process skips, as FlashAttention skips a key block, each tile (a run of its
queries against a run of the held keys) that lies wholly in the future of those queries; the
scores it does compute are its work. Every process sees its own positions in round 0, so no
query row is still at m = −∞ once a later block is wholly masked for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attn_cli.core import variants
from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms.tiled import BlockUpdate, OnlineState, block_scores, update

SHARDINGS = variants.SHARDINGS


@dataclass(frozen=True)
class Shard:
    """The positions one process holds (0-based, ascending) and the runs a kernel tiles apart."""

    positions: np.ndarray  # (b,) int
    runs: tuple[tuple[int, int], ...]  # (start, stop) into ``positions``, each tiled on its own

    @property
    def size(self) -> int:
        return int(self.positions.shape[0])


def _cut(n: int, parts: int) -> list[np.ndarray]:
    """0..n − 1 in ``parts`` runs whose lengths differ by at most one, the longer ones first."""
    return [run.astype(np.int64) for run in np.array_split(np.arange(n), parts)]


def shards(n: int, processes: int, sharding: str) -> tuple[Shard, ...]:
    """The shard of each process, in rank order."""
    if sharding not in SHARDINGS:
        raise ValueError(f"unknown sharding {sharding!r}")
    if sharding == "contiguous":
        return tuple(Shard(run, ((0, run.shape[0]),)) for run in _cut(n, processes))
    if sharding == "striped":
        striped = (np.arange(rank, n, processes, dtype=np.int64) for rank in range(processes))
        return tuple(Shard(positions, ((0, positions.shape[0]),)) for positions in striped)
    runs = _cut(n, 2 * processes)
    result = []
    for rank in range(processes):
        first, second = runs[rank], runs[2 * processes - 1 - rank]
        result.append(
            Shard(
                np.concatenate([first, second]),
                ((0, first.shape[0]), (first.shape[0], first.shape[0] + second.shape[0])),
            )
        )
    return tuple(result)


def source(rank: int, round_: int, processes: int) -> int:
    """The process whose block process ``rank`` holds in round ``round_`` (from 0)."""
    return (rank - round_) % processes


def tiles(
    queries: Shard, keys: Shard, causal: bool
) -> tuple[tuple[tuple[int, int], tuple[int, int]], ...]:
    """The (query run, key run) tiles a process computes: all of them, or with ``causal`` those
    not wholly in the future (a run of keys whose first comes after the run's last query)."""
    kept = []
    for q0, q1 in queries.runs:
        for k0, k1 in keys.runs:
            if q1 <= q0 or k1 <= k0:
                continue
            if causal and keys.positions[k0] > queries.positions[q1 - 1]:
                continue  # every key of this run comes after every query of that run
            kept.append(((q0, q1), (k0, k1)))
    return tuple(kept)


def allowed(queries: Shard, keys: Shard) -> np.ndarray:
    """(rows, cols) True where the key's position is not after the query's (the causal mask)."""
    return keys.positions[None, :] <= queries.positions[:, None]


@dataclass(frozen=True)
class Work:
    """What one process computed for one held block."""

    computed: int  # scores computed: the entries of the tiles it did not skip
    kept: int  # of those, the scores the mask leaves (all of them without a mask)

    def flops(self, d_k: int, d_v: int) -> int:
        """The multiply-adds of the scores and of P V, two FLOPs each: 2 (d_k + d_v) per score."""
        return 2 * self.computed * (d_k + d_v)


def work(queries: Shard, keys: Shard, causal: bool) -> Work:
    """The work of one process holding ``keys``, counted from its tiles (no arithmetic)."""
    computed = sum((q1 - q0) * (k1 - k0) for (q0, q1), (k0, k1) in tiles(queries, keys, causal))
    if not causal:
        return Work(computed, computed)
    mask = allowed(queries, keys)
    kept = sum(int(mask[q0:q1, k0:k1].sum()) for (q0, q1), (k0, k1) in tiles(queries, keys, True))
    return Work(computed, kept)


def work_table(n: int, processes: int, sharding: str, causal: bool) -> list[list[Work]]:
    """work[rank][round]: each process's work in each round of the ring, counted from the
    shards (the same count a run makes as it goes)."""
    layout = shards(n, processes, sharding)
    return [
        [work(layout[rank], layout[source(rank, t, processes)], causal) for t in range(processes)]
        for rank in range(processes)
    ]


def block_bytes(keys: Shard, d_k: int, d_v: int, itemsize: int) -> int:
    """What passing a block on sends: its keys and its values."""
    return keys.size * (d_k + d_v) * itemsize


@dataclass(frozen=True)
class Merge:
    """One round of one process: the block's update of the running state (None: every tile of
    the block lies in the future of these queries and was skipped) and the work it took."""

    update: BlockUpdate | None
    work: Work


def merge(
    state: OnlineState,
    q: Array,
    k_block: Array,
    v_block: Array,
    queries: Shard,
    keys: Shard,
    *,
    causal: bool = False,
    use_scale: bool = True,
) -> Merge:
    """Fold the held block (k_block, v_block at ``keys``' positions) into the state of the
    queries ``q`` (at ``queries``' positions): the scores of the tiles not skipped (−∞ elsewhere,
    and where the causal mask forbids), then tiled.update, the flash lesson's merge."""
    xp = namespace_of(q, k_block, v_block)
    chosen = tiles(queries, keys, causal)
    counted = work(queries, keys, causal)
    if not chosen:
        return Merge(None, counted)
    rows, cols = queries.size, keys.size
    whole = len(chosen) == 1 and chosen[0] == ((0, rows), (0, cols))
    if whole:
        s = block_scores(q, k_block, use_scale=use_scale)  # (rows, cols)
    else:
        s = xp.full((rows, cols), -math.inf, dtype=q.dtype, device=q.device)
        for (q0, q1), (k0, k1) in chosen:
            s[q0:q1, k0:k1] = block_scores(q[q0:q1, :], k_block[k0:k1, :], use_scale=use_scale)
    if causal:
        mask = xp.asarray(allowed(queries, keys), device=q.device)  # (rows, cols)
        s = xp.where(mask, s, -math.inf)
    return Merge(update(state, s, v_block), counted)
