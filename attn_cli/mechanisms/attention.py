"""Scaled dot-product attention, step by step: softmax(Q K^T / sqrt(d_k)) V.

Shapes: Q (m, d_k) queries, K (n, d_k) keys, V (n, d_v) values; m may differ from n
(cross-attention) and d_k from d_v. Leading batch dimensions broadcast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attn_cli.core.backend import Array, namespace_of


def scores(q: Array, k: Array) -> Array:
    """S = Q K^T: one dot product per (query, key) pair."""
    xp = namespace_of(q, k)
    return xp.matmul(q, xp.matrix_transpose(k))  # (m, d_k) @ (d_k, n) -> (m, n)


def scale(s: Array, d_k: int) -> Array:
    """S / sqrt(d_k): keeps the scores' variance near 1 whatever d_k is."""
    return s / math.sqrt(d_k)  # (m, n)


@dataclass(frozen=True)
class SoftmaxParts:
    row_max: Array  # (m, 1)
    shifted: Array  # (m, n) scores minus their row max: every entry <= 0
    exp: Array  # (m, n) in (0, 1]
    row_sum: Array  # (m, 1) >= 1
    weights: Array  # (m, n) exp / row_sum: each row sums to 1


def softmax_parts(s: Array) -> SoftmaxParts:
    """Row-wise stable softmax, with its intermediates.

    Subtracting each row's max leaves the softmax unchanged (it cancels in the ratio) but makes
    every exponent <= 0, so exp never overflows. -inf entries (masked) become exactly 0. A row
    that is all -inf has no max to subtract and gives NaN, as it does in PyTorch.
    """
    xp = namespace_of(s)
    row_max = xp.max(s, axis=-1, keepdims=True)  # (m, 1)
    with np.errstate(
        invalid="ignore", over="ignore"
    ):  # -inf - -inf: the NaN row; -1e308 - 1e308: -inf, weight 0
        shifted = s - row_max  # (m, n), every entry <= 0
        exp = xp.exp(shifted)  # (m, n), in (0, 1]
        row_sum = xp.sum(exp, axis=-1, keepdims=True)  # (m, 1), >= 1
        return SoftmaxParts(row_max, shifted, exp, row_sum, exp / row_sum)


def exp_by_hand(s: Array) -> tuple[Array, Array]:
    """e^s and its row sums, as a softmax is worked on paper (no maximum subtracted): the same
    weights e^s / Σ e^s as the stable form, where they fit the dtype; inf where they overflow
    (float64 above s ≈ 709.78), which is why a program subtracts the row max first."""
    xp = namespace_of(s)
    with np.errstate(over="ignore"):
        exp = xp.exp(s)  # (m, n), -inf (masked) gives 0
        return exp, xp.sum(exp, axis=-1, keepdims=True)  # (m, 1)


def softmax(s: Array) -> Array:
    """Row-wise softmax (stable): each row of the result sums to 1."""
    return softmax_parts(s).weights  # (m, n)


def weighted_sum(weights: Array, v: Array) -> Array:
    """Output = A V: row i is the convex combination of value rows with weights A[i]."""
    xp = namespace_of(weights, v)
    return xp.matmul(weights, v)  # (m, n) @ (n, d_v) -> (m, d_v)


@dataclass(frozen=True)
class AttentionResult:
    scores: Array  # (m, n) Q K^T
    scaled: Array  # (m, n) after the scale (equal to scores when unscaled)
    weights: Array  # (m, n) rows sum to 1
    output: Array  # (m, d_v)


def attention(
    q: Array, k: Array, v: Array, *, use_scale: bool = True, mask: Array | None = None
) -> AttentionResult:
    """softmax(Q K^T / sqrt(d_k) + M) V with every intermediate.

    ``mask`` is additive: 0 where a query may attend, -inf where it may not.
    """
    raw = scores(q, k)  # (m, n)
    scaled_scores = scale(raw, q.shape[-1]) if use_scale else raw  # (m, n)
    logits = scaled_scores if mask is None else scaled_scores + mask  # (m, n)
    weights = softmax(logits)  # (m, n)
    return AttentionResult(raw, scaled_scores, weights, weighted_sum(weights, v))
