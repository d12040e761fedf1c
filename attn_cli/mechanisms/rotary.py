"""Rotary position embedding (RoPE; Su et al., RoFormer, 2021): q and k rotated by their position.

Pair i of a query or key at position m is turned by the angle m·θ_i, θ_i = base^(−2i/r), where r
is the rotary width (the whole head, or its first r dimensions: partial rotary). A rotation
keeps lengths and q_m·k_n = (R_m q)·(R_n k) = q·R_{n−m} k: the score depends on the offset
n − m only, never on where the pair sits.

Two conventions pair the dimensions differently (the same numbers rotated, in other places):

* "interleaved": pair i is dimensions (2i, 2i + 1), as the RoFormer paper and Meta's Llama code
  (complex numbers over consecutive pairs) write it;
* "split": pair i is dimensions (i, i + r/2), the two halves of the head, as Hugging Face's
  ``rotate_half`` (Llama, Qwen, Mistral, GPT-NeoX) writes it.

Shapes: x (n, d) with r ≤ d (d − r dimensions pass through unrotated); positions (n,);
frequencies (r/2,); angles (n, r/2).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from attn_cli.core import variants
from attn_cli.core.backend import Array, namespace_of

Layout = Literal["interleaved", "split"]
LAYOUTS: tuple[str, ...] = variants.LAYOUTS  # interleaved (the paper's) first


def frequencies(pairs: Array, rotary_dim: int, base: float) -> Array:
    """θ_i = base^(−2i/r): pair 0 turns one radian per position, each later pair slower."""
    return base ** (-2.0 * pairs / rotary_dim)  # (r/2,)


def wavelengths(theta: Array) -> Array:
    """Positions per full turn of each pair: 2π / θ_i."""
    # A frequency that underflowed to 0 (base 1e30 in float16) never turns: its wavelength is
    # inf, and numpy's division by zero is no RuntimeWarning on the user's terminal.
    with np.errstate(divide="ignore"):
        return (2 * math.pi) / theta  # (r/2,)


def angles(positions: Array, theta: Array) -> Array:
    """The angle table m·θ_i: one row per position, one column per pair."""
    return positions[:, None] * theta[None, :]  # (n, r/2)


def pair_columns(pairs: int, layout: Layout) -> tuple[tuple[int, int], ...]:
    """The two dimensions (from 0) that pair i turns: (2i, 2i + 1) interleaved, (i, i + r/2)
    split."""
    if layout == "split":
        return tuple((i, i + pairs) for i in range(pairs))
    return tuple((2 * i, 2 * i + 1) for i in range(pairs))


def rotate(x: Array, table: Array, layout: Layout) -> Array:
    """Each row of ``x`` turned by its row of the angle ``table``: in every pair (a, b),
    a' = a cos − b sin and b' = a sin + b cos; the dimensions past the rotary width unchanged."""
    xp = namespace_of(x, table)
    half = table.shape[-1]
    rotary, rest = x[..., : 2 * half], x[..., 2 * half :]
    cos, sin = xp.cos(table), xp.sin(table)  # (n, r/2)
    if layout == "split":
        a, b = rotary[..., :half], rotary[..., half:]  # (n, r/2) each: the two halves
        turned = xp.concat((a * cos - b * sin, a * sin + b * cos), axis=-1)
    else:
        a, b = rotary[..., 0::2], rotary[..., 1::2]  # (n, r/2) each: even and odd dimensions
        pairs = xp.stack((a * cos - b * sin, a * sin + b * cos), axis=-1)  # (n, r/2, 2)
        turned = xp.reshape(pairs, (*pairs.shape[:-2], 2 * half))  # back to 0, 1, 2, 3, ...
    return xp.concat((turned, rest), axis=-1)  # (n, d)
