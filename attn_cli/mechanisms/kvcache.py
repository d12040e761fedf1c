"""Generation with a key-value cache: each new token appends one key and one value row and
attends once, instead of recomputing attention over the whole prefix.

Step t (0-based) has query q_t; the cache holds k_0..k_t and v_0..v_t after the append. Its
output, softmax(q_t K_{≤t}ᵀ / √d_k) V_{≤t}, is row t of full causal attention: the future keys
that the causal mask sends to −∞ are simply not in the cache yet. The arithmetic differs (a
1 × (t+1) product instead of row t of an n × n one, so BLAS may sum in another order), which
is why the two agree to rounding rather than bit for bit; see tests/test_mech_kvcache.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attn_cli.core.backend import ITEMSIZE, Array, namespace_of
from attn_cli.mechanisms.attention import attention
from attn_cli.mechanisms.masks import additive, causal_allowed


@dataclass(frozen=True)
class CacheStep:
    t: int  # 0-based position of the new token
    keys: Array  # (t + 1, d_k) the cache after appending k_t
    values: Array  # (t + 1, d_v)
    scaled: Array  # (1, t + 1) q_t K_{≤t}ᵀ / √d_k
    weights: Array  # (1, t + 1) sums to 1
    output: Array  # (1, d_v)


def generate(q: Array, k: Array, v: Array, *, use_scale: bool = True) -> list[CacheStep]:
    """Token by token: append (k_t, v_t) to the cache, then attend with q_t over it."""
    xp = namespace_of(q, k, v)
    keys, values = k[..., :0, :], v[..., :0, :]  # (0, d_k), (0, d_v): the empty cache
    steps = []
    for t in range(q.shape[-2]):
        keys = xp.concat([keys, k[..., t : t + 1, :]], axis=-2)  # (t + 1, d_k)
        values = xp.concat([values, v[..., t : t + 1, :]], axis=-2)  # (t + 1, d_v)
        result = attention(q[..., t : t + 1, :], keys, values, use_scale=use_scale)
        steps.append(CacheStep(t, keys, values, result.scaled, result.weights, result.output))
    return steps


def cached_outputs(steps: list[CacheStep]) -> Array:
    """The steps' outputs stacked: (n, d_v), comparable with full causal attention."""
    xp = namespace_of(steps[0].output)
    return xp.concat([step.output for step in steps], axis=-2)


def ordered_attention(
    q: Array,
    k: Array,
    v: Array,
    *,
    use_scale: bool = True,
    causal: bool = False,
    row0: int = 0,
) -> tuple[Array, Array]:
    """(weights, output) of softmax(Q Kᵀ / √d_k [+ M]) V with every sum taken left to right.

    Each score sums its d_k products in order c = 1..d_k, each row sum and each output entry
    sums over the keys in order j = 1..n; no BLAS, whose blocking depends on the shapes. Then
    row t of the causal n × n computation and the cache's 1 × (t + 1) step are the same
    operations on the same numbers: the masked keys j > t come after the visible ones and add
    exact zeros (exp(−∞) = 0, 0·v = ±0, x + ±0 = x), so the two agree bit for bit.
    ``row0``: with ``causal``, the rows of ``q`` are queries row0, row0 + 1, ... (row t of
    the n × n computation alone, over every key, is ``q[t : t + 1]`` with row0 = t).
    """
    xp = namespace_of(q, k, v)
    k_t = xp.matrix_transpose(k)  # (d_k, n)
    s = q[..., :, 0:1] * k_t[..., 0:1, :]  # (m, n): the first product of every dot product
    for c in range(1, q.shape[-1]):
        s = s + q[..., :, c : c + 1] * k_t[..., c : c + 1, :]
    if use_scale:
        s = s / math.sqrt(q.shape[-1])
    if causal:
        s = s + additive(causal_allowed(s, row0=row0), s)
    e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))  # (m, n); the max is exact in any order
    total = e[..., :, 0:1]
    for j in range(1, e.shape[-1]):
        total = total + e[..., :, j : j + 1]  # (m, 1), keys in order
    weights = e / total
    output = weights[..., :, 0:1] * v[..., 0:1, :]  # (m, d_v)
    for j in range(1, v.shape[-2]):
        output = output + weights[..., :, j : j + 1] * v[..., j : j + 1, :]
    return weights, output


def scores_with_cache(n: int) -> int:
    """Query-key dot products to generate n tokens with a cache: 1 + 2 + ... + n (O(n) each)."""
    return n * (n + 1) // 2


def scores_without_cache(n: int) -> int:
    """The same without a cache: step t recomputes causal attention over its whole prefix,
    (t + 1)(t + 2)/2 dot products, so Σ_t = n(n + 1)(n + 2)/6 in all (O(n²) per token)."""
    return n * (n + 1) * (n + 2) // 6


def projection_flops(tokens: int, layers: int, heads: int, kv_heads: int, d_head: int) -> int:
    """FLOPs to project ``tokens`` tokens' queries, keys and values in every layer: each token
    has ``heads`` query rows and ``kv_heads`` key and value rows of width d_head, each a
    (1 × d_model)(d_model × d_head) product, 2·d_model·d_head FLOPs, d_model = heads·d_head."""
    d_model = heads * d_head
    return tokens * layers * (heads + 2 * kv_heads) * 2 * d_model * d_head


def score_flops(dot_products: int, layers: int, heads: int, d_head: int) -> int:
    """FLOPs of ``dot_products`` query-key dot products per head, in every layer and query
    head: 2·d_head each (d_head multiplications and d_head additions, counted as 2·d_head)."""
    return dot_products * layers * heads * 2 * d_head


def cache_bytes_per_token(
    layers: int, heads: int, d_head: int, dtype: str = "float16", kv_heads: int | None = None
) -> int:
    """Bytes the cache grows by per token: a key and a value (2) per layer per K/V head.

    Multi-head attention has one K/V head per query head (kv_heads = heads); grouped-query
    attention shares each K/V head among heads / kv_heads query heads; multi-query, kv_heads = 1.
    """
    kv = heads if kv_heads is None else kv_heads
    if kv < 1 or heads % kv:
        raise ValueError(f"kv_heads must divide heads ({heads}); got {kv}")
    return 2 * layers * kv * d_head * ITEMSIZE[dtype]


def windowed_cache_bytes(
    tokens: int,
    layers: int,
    window_layers: int,
    window: int,
    kv_heads: int,
    d_head: int,
    dtype: str = "float16",
) -> int:
    """Bytes of the cache after ``tokens`` tokens when ``window_layers`` of the ``layers`` keep
    only the last ``window`` tokens (sliding-window attention) and the rest keep all of them:
    a key and a value per K/V head per token kept, min(n, W) in a windowed layer, n elsewhere."""
    if not 0 <= window_layers <= layers:
        raise ValueError(f"window_layers must be in 0..{layers}; got {window_layers}")
    kept = window_layers * min(tokens, window) + (layers - window_layers) * tokens  # tokens kept
    return 2 * kept * kv_heads * d_head * ITEMSIZE[dtype]


def latent_cache_bytes_per_token(
    layers: int, latent_width: int, rope_width: int = 0, dtype: str = "float16"
) -> int:
    """Bytes per token of a latent (MLA-style) cache: one compressed vector c_t of
    ``latent_width`` per layer, from which every head's key and value are re-projected, plus
    the decoupled RoPE key of ``rope_width`` (shared by the heads) where it is counted."""
    return layers * (latent_width + rope_width) * ITEMSIZE[dtype]


def cached_rows(q: Array, k: Array, v: Array, *, use_scale: bool = True) -> Array:
    """(n, d_v): each token's output over a full cache, one step at a time, keeping no step's
    cache (the cache of step t is k[:t + 1], v[:t + 1]): O(n · d) memory at any length."""
    xp = namespace_of(q, k, v)
    rows = [
        attention(
            q[..., t : t + 1, :], k[..., : t + 1, :], v[..., : t + 1, :], use_scale=use_scale
        ).output
        for t in range(q.shape[-2])
    ]
    return xp.concat(rows, axis=-2)


def blocked_causal_attention(q: Array, k: Array, v: Array, block: int = 256) -> Array:
    """(n, d_v): full causal attention, ``block`` query rows at a time against the keys up to
    the block's last row: the same rows as the n × n computation, holding block × n scores."""
    xp = namespace_of(q, k, v)
    rows = []
    for start in range(0, q.shape[-2], block):
        stop = min(start + block, q.shape[-2])
        scores = q[..., start:stop, :] @ xp.matrix_transpose(k[..., :stop, :])
        mask = additive(causal_allowed(scores, row0=start), scores)
        rows.append(
            attention(q[..., start:stop, :], k[..., :stop, :], v[..., :stop, :], mask=mask).output
        )
    return xp.concat(rows, axis=-2)


def held(t: int, window: int | None, sinks: int = 0) -> tuple[range, ...]:
    """The 0-based positions a cache holds after token t (1-based) arrives: all 0..t − 1 when
    ``window`` is None; else the first ``sinks`` and the last ``window`` (StreamingLLM's
    S + W; sinks = 0: a sliding window). As runs of positions, never a list of n."""
    if window is None or t <= sinks + window:
        return (range(t),)
    return tuple(part for part in (range(sinks), range(t - window, t)) if len(part))


def evicted_at(t: int, window: int | None, sinks: int = 0) -> int | None:
    """The 0-based position token t's arrival evicts (None: none): t − 1 − W, the oldest
    recent token, once the cache holds S + W."""
    if window is None or t <= sinks + window:
        return None
    return t - 1 - window
