"""Attention masks: which keys each query may see, in the three conventions libraries use.

Every mask is (n, n) for n tokens: row i is query i, column j is key j (a block of it in tiled
attention, see causal_allowed).

* additive M: 0 where query i may attend key j, -inf where it may not; the logits are S + M.
* allowed (bool): True = may attend. The convention of torch's F.scaled_dot_product_attention.
* blocked (bool): True = may not attend. The convention of torch's nn.MultiheadAttention
  (``attn_mask`` and ``key_padding_mask``).

Masks are built from the scores they apply to, so they share their dtype and device.
"""

from __future__ import annotations

import math
from typing import Any

from attn_cli.core.backend import Array, namespace_of


def causal_allowed(s: Array, row0: int = 0, col0: int = 0) -> Array:
    """True on and below the diagonal: query i may attend keys 1..i (itself and the past).

    ``s`` may be one block of the scores, as in tiled attention: its rows are then queries
    row0, row0 + 1, ... and its columns keys col0, col0 + 1, ... (0-based).
    """
    xp = namespace_of(s)
    query = xp.arange(row0, row0 + s.shape[-2], device=s.device)  # (r,)
    key = xp.arange(col0, col0 + s.shape[-1], device=s.device)  # (b,)
    return key[None, :] <= query[:, None]  # (r, b): key j <= query i


def valid_allowed(s: Array, lengths: Any) -> Array:
    """True where key j lies before row i's valid length: j < lengths[i] (a padding mask).

    ``lengths`` holds one valid length per row of ``s`` (m,): keys at positions >= it are
    padding. This is the textbooks' masked_softmax(valid_lens) with a 2-D valid_lens; with one
    length for every row it is PyTorch's key_padding_mask, negated (there True = pad).
    """
    xp = namespace_of(s)
    key = xp.arange(s.shape[-1], device=s.device)  # (n,)
    valid = xp.asarray(lengths, device=s.device)  # (m,)
    return key[None, :] < valid[:, None]  # (m, n): key j < valid length of row i


def causal_blocked(s: Array) -> Array:
    """True strictly above the diagonal: the future keys that query i must not see."""
    xp = namespace_of(s)
    return xp.logical_not(causal_allowed(s))  # (n, n)


def additive(allowed: Array, like: Array, fill: float = -math.inf) -> Array:
    """The additive mask M of a boolean one: 0 where allowed, ``fill`` (default -inf) elsewhere."""
    xp = namespace_of(like)
    return xp.where(allowed, xp.zeros_like(like), xp.full_like(like, fill))  # (n, n)


def causal_additive(s: Array) -> Array:
    """M for a causal mask: 0 on and below the diagonal, -inf above."""
    return additive(causal_allowed(s), s)  # (n, n)


def fill_blocked(s: Array, blocked: Array, value: float) -> Array:
    """Overwrite the blocked entries of ``s`` with ``value`` (what masked_fill does).

    With value -inf this equals S + M. With 0 it is the classic bug: exp(0) = 1, so a blocked
    key keeps a share of the weight. A value beyond the dtype's range becomes +-inf, as a cast
    would make it (-1e9 in float16 is -inf).
    """
    xp = namespace_of(s)
    if math.isfinite(value) and abs(value) > float(xp.finfo(s.dtype).max):
        value = math.copysign(math.inf, value)
    return xp.where(blocked, xp.full_like(s, value), s)  # (n, n)


def weight_on(weights: Array, blocked: Array) -> Array:
    """Per query, the total weight that lands on blocked keys (0 when the mask works)."""
    xp = namespace_of(weights)
    return xp.sum(xp.where(blocked, weights, xp.zeros_like(weights)), axis=-1)  # (n,)


def leading_keys(s: Array, count: int) -> Array:
    """True in the first ``count`` columns: keys that are left padding (True = blocked)."""
    xp = namespace_of(s)
    key = xp.arange(s.shape[-1], device=s.device)  # (n,)
    return xp.broadcast_to(key[None, :] < count, s.shape)  # (n, n), same in every row


def diagonal(s: Array) -> Array:
    """True on the diagonal: each query's own key."""
    xp = namespace_of(s)
    position = xp.arange(s.shape[-1], device=s.device)  # (n,)
    return position[None, :] == position[:, None]  # (n, n)


def zero_empty_rows(weights: Array, allowed: Array) -> Array:
    """Weights with every row that may attend no key set to 0 instead of NaN.

    A row whose keys are all masked is softmax of all -inf: 0 / 0 = NaN. Zeroing such rows is
    what PyTorch's scaled_dot_product_attention does since version 2.5.
    """
    xp = namespace_of(weights)
    has_key = xp.any(allowed, axis=-1, keepdims=True)  # (n, 1)
    return xp.where(has_key, weights, xp.zeros_like(weights))  # (n, n)


def with_left_padding(blocked: Array, padded: int) -> Array:
    """``blocked`` with the first ``padded`` keys blocked for every query (left padding)."""
    xp = namespace_of(blocked)
    return xp.logical_or(blocked, leading_keys(blocked, padded))  # (n, n)


def unblock_diagonal(blocked: Array) -> Array:
    """``blocked`` with each query allowed its own key, so that no row is empty."""
    xp = namespace_of(blocked)
    return xp.logical_and(blocked, xp.logical_not(diagonal(blocked)))  # (n, n)


def negate(mask: Array) -> Array:
    """Switch conventions: allowed <-> blocked (True = may attend <-> True = may not)."""
    return namespace_of(mask).logical_not(mask)  # (n, n)
