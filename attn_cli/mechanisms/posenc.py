"""Sinusoidal positional encoding (Vaswani et al., 2017) and the two facts that make it useful.

With h = d_model / 2 sine/cosine pairs, pair i turns at the angular frequency
w_i = base^(-2i / d_model) radians per position, and

    PE(pos, 2i) = sin(pos * w_i),    PE(pos, 2i + 1) = cos(pos * w_i)       (layout "interleaved")

The "split" layout holds the same numbers with the columns reordered: all h sines first, then
all h cosines. Shapes: positions (N,), pairs (h,), encodings (N, d_model), d_model = 2h.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from attn_cli.core import variants
from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms import attention

Layout = Literal["interleaved", "split"]
LAYOUTS: tuple[str, ...] = variants.LAYOUTS  # interleaved (the paper's) first: the default


def frequencies(pairs: Array, d_model: int, base: float) -> Array:
    """w_i = base^(-2i / d_model): pair 0 turns one radian per position, later pairs slower."""
    return base ** (-2.0 * pairs / d_model)  # (h,)


def wavelengths(omega: Array) -> Array:
    """Positions per full turn of each pair: 2π / w_i, from 2π up to 2π·base."""
    # A frequency that underflowed to 0 (base 1e30 in float16) never turns: its wavelength is
    # inf, and numpy's division by zero is no RuntimeWarning on the user's terminal.
    with np.errstate(divide="ignore"):
        return (2 * math.pi) / omega  # (h,)


def encoding(positions: Array, omega: Array, layout: Layout = "interleaved") -> Array:
    """PE: one row per position, one sine and one cosine column per pair."""
    xp = namespace_of(positions, omega)
    angles = positions[:, None] * omega[None, :]  # (N, h): pos * w_i
    sines, cosines = xp.sin(angles), xp.cos(angles)  # (N, h) each
    if layout == "split":
        return xp.concat((sines, cosines), axis=-1)  # (N, 2h): sin_0 .. sin_h-1, cos_0 .. cos_h-1
    pairs = xp.stack((sines, cosines), axis=-1)  # (N, h, 2): (sin_i, cos_i) side by side
    return xp.reshape(pairs, (angles.shape[0], 2 * angles.shape[1]))  # (N, 2h): sin_0, cos_0, ...


def rotation(offset: int, omega: Array, layout: Layout = "interleaved") -> Array:
    """M_k with PE(pos + k) = M_k PE(pos) for every pos: a rotation of each pair by k w_i.

    From sin(a + b) = sin a cos b + cos a sin b and cos(a + b) = cos a cos b - sin a sin b,
    the pair (sin, cos) at pos + k is [[cos kw, sin kw], [-sin kw, cos kw]] times the pair at
    pos. Interleaved, these 2 x 2 blocks sit on the diagonal; split, the same matrix has its
    rows and columns reordered like the encoding's columns.
    """
    xp = namespace_of(omega)
    h = omega.shape[0]
    cos, sin = xp.cos(offset * omega), xp.sin(offset * omega)  # (h,) each
    blocks = xp.stack(
        (xp.stack((cos, sin), axis=-1), xp.stack((-sin, cos), axis=-1)), axis=-2
    )  # (h, 2, 2): blocks[i, a, b], a and b = 0 for sin, 1 for cos
    same_pair = xp.eye(h, dtype=omega.dtype, device=omega.device)  # (h, h): 1 where i = j
    grid = same_pair[:, None, :, None] * blocks[:, :, None, :]  # (h, 2, h, 2): [i, a, j, b]
    if layout == "split":
        grid = xp.permute_dims(grid, (1, 0, 3, 2))  # (2, h, 2, h): [a, i, b, j]
    return xp.reshape(grid, (2 * h, 2 * h))  # (d_model, d_model)


def shift_error(pe: Array, pe_shifted: Array, m_k: Array) -> Array:
    """Largest |PE(pos + k) - M_k PE(pos)| over all positions: float rounding only.

    ``pe`` holds PE(pos) and ``pe_shifted`` PE(pos + k), both from the formula, row by row.
    """
    xp = namespace_of(pe, pe_shifted, m_k)
    moved = xp.matmul(pe, xp.matrix_transpose(m_k))  # (N, d): row p is (M_k PE(p))ᵀ
    return xp.max(xp.abs(pe_shifted - moved))  # scalar


def similarity(pe: Array) -> Array:
    """PE(i) . PE(j) for every pair of positions: the Gram matrix PE PEᵀ."""
    return attention.scores(pe, pe)  # (N, d) @ (d, N) -> (N, N)


def lag_similarity(lags: Array, omega: Array) -> Array:
    """Σ_i cos(w_i δ): what PE(i) . PE(j) equals when |i - j| = δ (sin·sin + cos·cos)."""
    xp = namespace_of(lags, omega)
    return xp.sum(xp.cos(lags[:, None] * omega[None, :]), axis=-1)  # (N,)


def diagonal_spread(s: Array) -> Array:
    """For each δ = |i - j|: max - min of the entries with that distance (both diagonals)."""
    xp = namespace_of(s)
    spreads = []
    for lag in range(s.shape[0]):
        entries = xp.concat(
            (xp.linalg.diagonal(s, offset=lag), xp.linalg.diagonal(s, offset=-lag))
        )  # (2 (N - δ),): the entries with j - i = δ and with i - j = δ
        spreads.append(xp.max(entries) - xp.min(entries))
    return xp.stack(spreads)  # (N,)
