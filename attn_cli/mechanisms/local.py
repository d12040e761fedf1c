"""Local and graph attention: masks that let each query see only some keys.

* sliding window (local): query i sees key j when |i − j| ≤ w; causal: when 0 ≤ i − j ≤ w.
  Each row then has at most 2w + 1 (causal: w + 1) allowed keys instead of n, so only
  O(n·w) scores need exist (window_attention computes, in blocks of queries, only those
  near the band).
* global tokens (Longformer): a few positions attend to every key and are attended by every
  query: their rows and columns are fully allowed on top of the window.
* graph (graph attention): node i attends only to its neighbours N(i), from an edge list or a
  0/1 adjacency; optionally itself (a self-loop), so that no row is empty.

Masks here are boolean "allowed" masks (True = may attend, the convention of
F.scaled_dot_product_attention); masks.additive turns one into the −∞ mask the logits take.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from attn_cli.core.backend import Array, namespace_of
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


@dataclass(frozen=True)
class WindowBlocks:
    """How window_attention cuts n queries: ``count`` blocks of ``size`` rows, each scored
    against the ``span`` keys its window can reach (all blocks at once)."""

    size: int  # query rows a block (the last one padded)
    count: int  # query blocks: ⌈n / size⌉
    span: int  # keys a block sees: size + 2·reach (causal: size + reach)
    reach: int  # min(w, n − 1): a window wider than the sequence reaches no further

    @property
    def scores(self) -> int:
        """Scores computed (and held at once): count × size × span, O(n·(size + 2w))."""
        return self.count * self.size * self.span


def window_blocks(n: int, window: int, causal: bool = False, block: int = 128) -> WindowBlocks:
    """The blocks of window_attention for n tokens (n ≥ 1): see WindowBlocks."""
    reach = min(window, n - 1)
    size = min(block, n)
    span = size + (reach if causal else 2 * reach)
    return WindowBlocks(size=size, count=-(-n // size), span=span, reach=reach)


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
    """Sliding-window attention on all query blocks at once: n × (block + 2w) scores, not n².

    Query rows i0..i0 + b − 1 can only see keys i0 − w .. i0 + b − 1 + w (causal: up to
    i0 + b − 1), so each block of b queries is scored against that slice of b + 2w keys alone
    (gathered for every block in one step: key t of block c is key c·b − w + t). One batched
    matmul makes every block's scores, the band mask (with keys outside 0..n − 1) sets the rest
    to −∞, a softmax and one batched matmul with the gathered values give the output. Memory
    O(n·(b + 2w)) scores plus O(n·d); time O(n·(b + 2w)·d). Self-attention (m = n). Equal to
    the dense masked attention up to rounding.
    """
    xp = namespace_of(q, k, v)
    *lead, n, d_k = q.shape
    blocks = window_blocks(n, window, causal, block)
    size, count, span, reach = blocks.size, blocks.count, blocks.span, blocks.reach
    device = q.device
    # Key t of block c is key c·size − reach + t; outside 0..n − 1 it is a stand-in, masked.
    first = xp.arange(count, device=device) * size - reach  # (count,)
    key = first[:, None] + xp.arange(span, device=device)[None, :]  # (count, span)
    gather = xp.reshape(xp.clip(key, 0, n - 1), (count * span,))
    k_blocks = xp.reshape(xp.take(k, gather, axis=-2), (*lead, count, span, d_k))
    v_blocks = xp.reshape(xp.take(v, gather, axis=-2), (*lead, count, span, v.shape[-1]))
    padded = count * size  # the last block's missing rows: stand-ins, dropped at the end
    rows = xp.arange(padded, device=device)  # (padded,) query positions
    q_blocks = q if padded == n else xp.take(q, xp.clip(rows, 0, n - 1), axis=-2)
    if use_scale:  # Q/√d_k before the product: the same scores, one pass over n·d, not n·span
        q_blocks = scale(q_blocks, d_k)
    q_blocks = xp.reshape(q_blocks, (*lead, count, size, d_k))
    # Row r of a block against its key t: i − j = r + reach − t, the same in every block.
    like = xp.empty((size, span), dtype=q.dtype, device=device)
    band = window_allowed(like, window, causal=causal, col0=-reach)  # (size, span)
    inside = xp.logical_and(key >= 0, key < n)  # (count, span): a real key
    allowed = xp.logical_and(band[None, :, :], inside[:, None, :])  # (count, size, span)
    if padded != n:  # a stand-in row sees every key: no row is empty, so no NaN appears
        allowed = xp.logical_or(allowed, xp.reshape(rows >= n, (count, size, 1)))
    # One additive mask (0 or −∞) for every head: adding it is one pass over the scores.
    mask = additive(allowed, xp.zeros((), dtype=q.dtype, device=device))  # (count, size, span)
    logits = scores(q_blocks, k_blocks) + mask  # (..., count, size, span)
    weights = softmax(logits)  # (..., count, size, span)
    output = xp.reshape(weighted_sum(weights, v_blocks), (*lead, padded, v.shape[-1]))
    return output if padded == n else output[..., :n, :]  # (..., n, d_v)


@dataclass(frozen=True)
class Reach:
    """How far each position's information travels through layers of one mask (the receptive
    field): position j's information reaches position i after l layers when some chain
    j = k_0 → k_1 → … → k_l = i has each step allowed by the mask (the mask composed with
    itself l times: a boolean matrix power)."""

    earliest: np.ndarray  # (shown, n) ints: row l − 1, the earliest j reaching i after l layers
    latest: np.ndarray  # (shown, n) ints: the latest such j
    layers_needed: np.ndarray  # (n, n): the fewest layers (0: itself) from j to i; nan past them
    settled: int | None  # the first layer l < L after which one more changes nothing, else None


def composed_reach(allowed: Array, layers: int) -> Reach:
    """The mask's reach after 1, 2, …, ``layers`` layers, by composing it: R_0 = I,
    R_l = A ∘ R_(l−1) (i hears k, k has heard j). Stops at the first layer after which the
    reach no longer changes (the rows after it would repeat it). O(min(L, n) · n³)."""
    step = np.asarray(allowed, dtype=bool)
    n = step.shape[-1]
    hears = step.astype(np.float64)
    reached = np.eye(n, dtype=bool)
    needed = np.where(reached, 0.0, np.nan)
    earliest: list[np.ndarray] = []
    latest: list[np.ndarray] = []
    settled = None
    for layer in range(1, layers + 1):
        after = (hears @ reached.astype(np.float64)) > 0
        if layer > 1 and np.array_equal(after, reached):
            settled = layer - 1
            break
        needed[after & np.isnan(needed)] = layer
        reached = after
        any_key = reached.any(axis=-1)
        earliest.append(np.where(any_key, np.argmax(reached, axis=-1), -1))
        latest.append(np.where(any_key, n - 1 - np.argmax(reached[:, ::-1], axis=-1), -1))
    return Reach(np.array(earliest), np.array(latest), needed, settled)


def window_span(layers: int, window: int) -> int:
    """How many positions back (and, not causal, ahead) information travels through ``layers``
    layers of a window of ``window`` keys before the token: L·w (each layer one window)."""
    return layers * window


def window_earliest(position: int, layers: int, window: int) -> int:
    """The earliest position whose information reaches ``position`` after ``layers`` layers of
    a sliding window of w keys before the token (causal or not, no global tokens):
    max(0, position − L·w). Computed without any n × n matrix, so at any length."""
    return max(0, position - window_span(layers, window))


def window_latest(position: int, layers: int, window: int, n: int, causal: bool) -> int:
    """The latest position whose information reaches ``position`` after ``layers`` layers: the
    position itself when causal, else min(n − 1, position + L·w)."""
    return position if causal else min(n - 1, position + window_span(layers, window))
