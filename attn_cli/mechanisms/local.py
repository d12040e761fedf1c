"""Local and graph attention: masks that let each query see only some keys.

* sliding window (local): query i sees key j when |i − j| ≤ w; causal: when 0 ≤ i − j ≤ w.
  Each row then has at most 2w + 1 (causal: w + 1) allowed keys instead of n, so only
  O(n·w) scores need exist (window_attention computes just those, block by block).
* global tokens (Longformer): a few positions attend to every key and are attended by every
  query: their rows and columns are fully allowed on top of the window.
* graph (graph attention): node i attends only to its neighbours N(i), from an edge list or a
  0/1 adjacency; optionally itself (a self-loop), so that no row is empty.

Masks here are boolean "allowed" masks (True = may attend, the convention of
F.scaled_dot_product_attention); masks.additive turns one into the −∞ mask the logits take.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from attn_cli.backend import Array, namespace_of
from attn_cli.mechanisms.attention import scale, scores, softmax, weighted_sum
from attn_cli.mechanisms.masks import additive


def window_allowed(
    s: Array, window: int, *, causal: bool = False, row0: int = 0, col0: int = 0
) -> Array:
    """True inside the band: |i − j| ≤ window, or 0 ≤ i − j ≤ window when causal.

    ``s`` may be one block of the scores: its rows are then queries row0, row0 + 1, ... and its
    columns keys col0, col0 + 1, ... (0-based), as in masks.causal_allowed.
    """
    xp = namespace_of(s)
    query = xp.arange(row0, row0 + s.shape[-2], device=s.device)  # (r,)
    key = xp.arange(col0, col0 + s.shape[-1], device=s.device)  # (b,)
    offset = query[:, None] - key[None, :]  # (r, b): i − j, positive for keys in the past
    if causal:
        return xp.logical_and(offset >= 0, offset <= window)  # (r, b)
    return xp.abs(offset) <= window  # (r, b)


def with_global(allowed: Array, tokens: Iterable[int]) -> Array:
    """``allowed`` with the rows and columns of the global tokens fully allowed (Longformer)."""
    xp = namespace_of(allowed)
    chosen = sorted(set(tokens))
    position = xp.arange(allowed.shape[-1], device=allowed.device)  # (n,)
    is_global = xp.zeros(allowed.shape[-1], dtype=xp.bool, device=allowed.device)  # (n,)
    for token in chosen:
        is_global = xp.logical_or(is_global, position == token)
    spread = xp.logical_or(is_global[:, None], is_global[None, :])  # (n, n) its row or column
    return xp.logical_or(allowed, spread)  # (n, n)


def graph_allowed(
    like: Array,
    edges: Sequence[tuple[int, int]],
    *,
    directed: bool = False,
    self_loops: bool = False,
) -> Array:
    """The neighbour mask of a graph on n = like.shape[-1] nodes: True at (i, j) when j ∈ N(i).

    An edge (i, j) makes j a neighbour of i, and (unless ``directed``) i a neighbour of j.
    ``self_loops`` adds each node to its own neighbourhood.
    """
    n = like.shape[-1]
    adjacency = np.zeros((n, n), dtype=bool)  # (n, n), built on the host: edges are few
    for i, j in edges:
        adjacency[i, j] = True
        if not directed:
            adjacency[j, i] = True
    return adjacency_allowed(namespace_of(like).asarray(adjacency, device=like.device), self_loops)


def adjacency_allowed(adjacency: Array, self_loops: bool = False) -> Array:
    """The mask of a 0/1 (or boolean) adjacency matrix: True where the entry is nonzero."""
    xp = namespace_of(adjacency)
    allowed = adjacency != 0  # (n, n)
    if self_loops:
        position = xp.arange(adjacency.shape[-1], device=adjacency.device)  # (n,)
        allowed = xp.logical_or(allowed, position[:, None] == position[None, :])
    return allowed  # (n, n)


def computed_scores(allowed: Array) -> tuple[int, int]:
    """(scores a sparse kernel needs, all m·n scores): the allowed entries against the full grid."""
    xp = namespace_of(allowed)
    total = allowed.shape[-2] * allowed.shape[-1]
    return int(xp.sum(xp.astype(allowed, xp.int64))), total


def window_pairs(n: int, window: int, causal: bool = False) -> int:
    """Allowed (query, key) pairs of the band on n tokens, counted in closed form.

    Causal: row i has min(i, w) + 1 keys. Not causal: the diagonal, plus w off-diagonals on
    each side, the k-th of length n − k (for k ≤ min(w, n − 1)).
    """
    reach = min(window, n - 1)
    side = sum(n - offset for offset in range(1, reach + 1))  # pairs with i − j = 1..reach
    return n + side if causal else n + 2 * side


def window_attention(
    q: Array,
    k: Array,
    v: Array,
    window: int,
    *,
    causal: bool = False,
    block: int = 128,
    use_scale: bool = True,
) -> Array:
    """Sliding-window attention, block by block: never more than block × (block + 2w) scores.

    Query rows i0..i1 can only see keys i0 − w .. i1 + w (causal: i0 − w .. i1), so each block
    of queries is scored against that slice of keys alone; the band mask inside the slice does
    the rest. Memory is O(block · (block + w)) scores plus the O(n·d) output; time O(n·(b + w)·d).
    Self-attention (m = n). Equal to the dense masked attention up to rounding.
    """
    xp = namespace_of(q, k, v)
    n = q.shape[-2]
    outputs = []
    for row0 in range(0, n, block):
        row1 = min(row0 + block, n)
        col0 = max(0, row0 - window)
        col1 = row1 if causal else min(n, row1 + window)  # last query i1 − 1 sees i1 − 1 + w
        s = scores(q[..., row0:row1, :], k[..., col0:col1, :])  # (..., r, c)
        if use_scale:
            s = scale(s, q.shape[-1])
        band = window_allowed(s, window, causal=causal, row0=row0, col0=col0)  # (r, c)
        weights = softmax(s + additive(band, s))  # (..., r, c)
        outputs.append(weighted_sum(weights, v[..., col0:col1, :]))  # (..., r, d_v)
    return xp.concat(outputs, axis=-2)  # (..., n, d_v)
