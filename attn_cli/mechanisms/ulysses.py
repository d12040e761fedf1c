"""Ulysses context parallelism (DeepSpeed-Ulysses, Jacobs et al., 2023): the all-to-all that turns
sequence shards into head shards, and the bytes it and ring attention send.

P processes each hold a contiguous run of n / P positions of Q (H heads), K and V (G key/value
heads; G = H without grouped-query attention). An all-to-all of each gives process r every
position of its own heads: query heads r·H/P .. (r + 1)·H/P − 1 and key/value heads
r·G/P .. (r + 1)·G/P − 1 (query head h reads key/value head h // (H/G), one of those). Each process
then attends on whole sequences, head by head, with no further exchange, and a fourth
all-to-all sends each process's outputs back to the processes that hold those positions.

What a process sends, in entries (it keeps the 1/P of each shard that is its own):

    Ulysses  (P − 1)/P² · n · (H + G)(d_k + d_v)   Q, K, V out and O back
    ring     (P − 1)/P  · n · G (d_k + d_v)        its K, V block passed on in P − 1 rounds

and it receives as much. With D = H·d the model width (d_k = d_v = d, G = H) that is
4 n D (P − 1)/P² against 2 n D (P − 1)/P: for large P, 4 n D / P against 2 n D. Ulysses sends
fewer exactly when (H + G)/P < G, that is when P > 1 + H/G (P > 2 without grouping); at
P = 1 + H/G the two are equal.
"""

from __future__ import annotations

from fractions import Fraction


def heads_of(rank: int, heads: int, processes: int) -> range:
    """The heads process ``rank`` holds after the all-to-all (``processes`` divides ``heads``)."""
    each = heads // processes
    return range(rank * each, (rank + 1) * each)


def columns(heads: range, width: int) -> slice:
    """The columns of those heads in a matrix whose heads sit side by side, ``width`` each."""
    return slice(heads.start * width, heads.stop * width)


def kv_head_of(head: int, heads: int, kv_heads: int) -> int:
    """The key/value head query head ``head`` reads (grouped-query attention: H/G share one)."""
    return head // (heads // kv_heads)


def ulysses_entries(
    n: int, processes: int, heads: int, kv_heads: int, widths: tuple[int, int]
) -> int:
    """The entries one process sends over the four all-to-alls (and receives): of each of its
    shards of Q, K, V (n/P rows) and of its heads' outputs (n rows, H/P heads), all but its
    own 1/P."""
    d_k, d_v = widths
    per_shard = Fraction(n, processes) * (heads * d_k + kv_heads * d_k + kv_heads * d_v)
    back = n * Fraction(heads, processes) * d_v
    return int((per_shard + back) * Fraction(processes - 1, processes))


def ring_entries(n: int, processes: int, kv_heads: int, widths: tuple[int, int]) -> int:
    """The entries one process of the ring sends (and receives): a block of n/P positions of K
    and V, every key/value head, in each of the P − 1 rounds but the last."""
    d_k, d_v = widths
    return (processes - 1) * (n // processes) * kv_heads * (d_k + d_v)


def ulysses_sends_fewer(processes: int, heads: int, kv_heads: int) -> bool:
    """P > 1 + H/G: Ulysses's (H + G)/P² per entry against the ring's G/P (times P − 1)."""
    return processes * kv_heads > kv_heads + heads
