"""One process of attn ulysses: what each of the P processes runs, on the ring's machinery
(attn_cli.course.ring: started, watched and stopped by its launch, linked by its rank's Link).

A process holds a contiguous shard of n / P positions of Q (H heads side by side), K and V (G
key/value heads). Three all-to-alls give it every position of its H / P query heads and G / P
key/value heads; it attends on those whole sequences, head by head, with nothing more to
exchange; a fourth all-to-all sends each shard of its outputs back to the process that holds
those positions. Then, for the bytes to set beside Ulysses's, the same process runs ring
attention on the same shard over every head (its K, V block passed round P − 1 times, each
head merged as attn ring merges), and both outputs are gathered on process 0. What the link
counted for each exchange is recorded with the values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attn_cli.core.backend import Array, Backend
from attn_cli.course.ring import rank as ranks
from attn_cli.course.ring.rank import Job, Link
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import masks, tiled, ulysses
from attn_cli.mechanisms.ring import merge, source

# The four all-to-alls, in order: what each carries.
EXCHANGES = ("q", "k", "v", "o")


def run(job: Job) -> dict[str, np.ndarray]:
    ring, rank = job.ring, job.rank
    processes, heads, kv_heads = ring.processes, ring.heads, ring.kv_heads
    backend = ranks.backend_of(ring, rank)
    q, k, v = (backend.asarray(array) for array in (job.q, job.k, job.v))
    d_k, d_v = job.q.shape[1] // heads, job.v.shape[1] // kv_heads
    mine = ulysses.heads_of(rank, heads, processes)
    arrays: dict[str, Any] = {"q": job.q, "k": job.k, "v": job.v}
    with ranks.link_of(job, backend) as link:
        exchanged = {}
        for name, x, count, width in (
            ("q", q, heads, d_k),
            ("k", k, kv_heads, d_k),
            ("v", v, kv_heads, d_v),
        ):
            parts = [
                x[:, ulysses.columns(ulysses.heads_of(j, count, processes), width)]
                for j in range(processes)
            ]
            exchanged[name] = _counted(
                link, arrays, name, lambda p=parts: _rows(backend, link.all_to_all(p))
            )
            arrays[f"heads.{name}"] = backend.to_numpy(exchanged[name])
        outputs = []
        first_kv = ulysses.heads_of(rank, kv_heads, processes).start
        for local, head in enumerate(mine):
            g = ulysses.kv_head_of(head, heads, kv_heads) - first_kv
            qh = exchanged["q"][:, local * d_k : (local + 1) * d_k]
            kh = exchanged["k"][:, g * d_k : (g + 1) * d_k]
            vh = exchanged["v"][:, g * d_v : (g + 1) * d_v]
            mask = masks.causal_additive(mech.scores(qh, kh)) if ring.causal else None
            result = mech.attention(qh, kh, vh, use_scale=ring.use_scale, mask=mask)
            arrays[f"head{head}.weights"] = backend.to_numpy(result.weights)
            outputs.append(result.output)
        attended = _columns(backend, outputs)
        arrays["attended"] = backend.to_numpy(attended)
        back = [  # contiguous shards: each a run of positions
            attended[int(shard.positions[0]) : int(shard.positions[-1]) + 1]
            for shard in ring.shards
        ]
        output = _counted(link, arrays, "o", lambda: _columns(backend, link.all_to_all(back)))
        arrays["output"] = backend.to_numpy(output)
        before = (link.bytes_sent, link.bytes_received)
        ring_output = _ring(job, backend, link, (q, k, v), (d_k, d_v))
        arrays["ring.sent"] = np.asarray(link.bytes_sent - before[0])
        arrays["ring.received"] = np.asarray(link.bytes_received - before[1])
        arrays["ring_output"] = backend.to_numpy(ring_output)
        for name, rows in (("gathered", output), ("ring_gathered", ring_output)):
            gathered = link.gather(rows, ring.shards)
            if gathered is not None:
                arrays[name] = gathered
    return arrays


def _counted(link: Link, arrays: dict[str, Any], name: str, exchange: Any) -> Any:
    """Run one all-to-all, recording the bytes the link counted for it."""
    sent, received = link.bytes_sent, link.bytes_received
    result = exchange()
    arrays[f"a2a.{name}.sent"] = np.asarray(link.bytes_sent - sent)
    arrays[f"a2a.{name}.received"] = np.asarray(link.bytes_received - received)
    return result


def _rows(backend: Backend, parts: list[Array]) -> Array:
    """The parts received, one per process in rank order, stacked: the contiguous shards are
    in sequence order, so the stack is the whole sequence."""
    return _join(backend, parts, axis=0)


def _columns(backend: Backend, parts: list[Array]) -> Array:
    return _join(backend, parts, axis=1)


def _join(backend: Backend, parts: list[Array], axis: int) -> Array:
    if backend.name == "numpy":
        return np.concatenate(parts, axis=axis)
    import torch

    return torch.cat(parts, dim=axis)


def _ring(
    job: Job, backend: Backend, link: Link, qkv: tuple[Array, Array, Array], widths: tuple[int, int]
) -> Array:
    """Ring attention on this process's shard over every head: the K, V block of all G heads
    passed on in each round but the last, each query head merged with its key/value head's
    columns (attn ring's merge)."""
    ring, rank = job.ring, job.rank
    processes, heads, kv_heads = ring.processes, ring.heads, ring.kv_heads
    q, k, v = qkv
    d_k, d_v = widths
    kv_width = kv_heads * d_k
    states = [tiled.initial_state(q[:, h * d_k : (h + 1) * d_k], v[:, :d_v]) for h in range(heads)]
    block = ranks.joined(backend, k, v)
    for t in range(processes):
        last = t == processes - 1
        if not last:
            link.start(block, ring.shards[source(rank, t + 1, processes)].size)
        held = ring.shards[source(rank, t, processes)]
        for h in range(heads):
            g = ulysses.kv_head_of(h, heads, kv_heads)
            merged = merge(
                states[h],
                q[:, h * d_k : (h + 1) * d_k],
                block[:, g * d_k : (g + 1) * d_k],
                block[:, kv_width + g * d_v : kv_width + (g + 1) * d_v],
                ring.shards[rank],
                held,
                causal=ring.causal,
                use_scale=ring.use_scale,
            )
            if merged.update is not None:
                states[h] = merged.update.state
        if not last:
            block = link.finish()
    return _columns(backend, [tiled.finish(state) for state in states])
