"""ALiBi, attention with linear biases (Press, Smith and Lewis, 2022): no positional encoding;
each head adds −m·distance to its scores, a penalty that grows linearly with how far back a key
is, with a fixed slope m per head.

The slopes are a geometric sequence: for H heads, H a power of two, m_h = 2^(−8h/H) for
h = 1..H (8 heads: 1/2, 1/4, ..., 1/256). For another H, the paper's code takes the slopes of
the power of two p just below H, then every other slope of 2p until there are H. Shapes:
distances and biases (n, n), row i a query, column j a key.
"""

from __future__ import annotations

from attn_cli.core.backend import Array, namespace_of


def power_of_two_slopes(heads: int) -> list[float]:
    """2^(−8h/H) for h = 1..H: the geometric sequence for a power-of-two head count."""
    return [2.0 ** (-8.0 * h / heads) for h in range(1, heads + 1)]


def power_below(heads: int) -> int:
    """2^⌊log₂ H⌋: the largest power of two not above H (exact, from the bits of H)."""
    return 1 << (heads.bit_length() - 1)


def slopes(heads: int) -> list[float]:
    """One slope per head: the geometric sequence, with the paper's rule for H not a power of
    two (the slopes of p = 2^⌊log₂ H⌋, then every other slope of 2p for the H − p left)."""
    below = power_below(heads)
    if below == heads:
        return power_of_two_slopes(heads)
    return power_of_two_slopes(below) + power_of_two_slopes(2 * below)[0::2][: heads - below]


def distances(like: Array, causal: bool) -> Array:
    """|i − j| (or, causal, i − j: how far back key j is from query i), as ``like``'s dtype."""
    xp = namespace_of(like)
    n, m = like.shape[-2], like.shape[-1]
    query = xp.astype(xp.arange(n, device=like.device), like.dtype)[:, None]  # (n, 1)
    key = xp.astype(xp.arange(m, device=like.device), like.dtype)[None, :]  # (1, n)
    return query - key if causal else xp.abs(query - key)  # (n, n)


def bias(slope: float, distance: Array) -> Array:
    """−m·distance: 0 on the diagonal, more negative the further the key."""
    return -slope * distance  # (n, n)
