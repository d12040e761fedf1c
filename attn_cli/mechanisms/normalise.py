"""Softmax's alternatives: other row-wise maps from scores to weights that sum to 1.

* sparsemax (Martins & Astudillo, 2016): the Euclidean projection of the scores onto the
  probability simplex, p = max(s − τ, 0) with the threshold τ chosen so that Σ p = 1. Scores
  below τ get weight exactly 0.
* 1.5-entmax (Peters, Niculae & Martins, 2019): the middle ground between softmax (α = 1) and
  sparsemax (α = 2) of the α-entmax family, p = max(z/2 − τ, 0)² (the paper's
  [(α − 1)z − τ]_+^{1/(α−1)} at α = 1.5), τ chosen so that Σ p = 1. Sparse like sparsemax (a
  score with z/2 ≤ τ gets exactly 0), but curved above τ like softmax, so its support is
  usually wider than sparsemax's.
* sigmoid, then normalise: w_j = σ(s_j) / Σ_k σ(s_k). Every weight positive, like softmax, but
  not unchanged by adding a constant to the row.
* hardmax: all weight on the row's maximum. Ties share it evenly (the limit of softmax(s / T)
  as T → 0, and symmetric in the tied keys). Piecewise constant: its gradient is 0 almost
  everywhere, undefined at ties, so nothing can be learnt through it.

Masked (−∞) scores get weight exactly 0 in all four; a row with no finite score is NaN, as
softmax gives (0 / 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attn_cli.core import variants
from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms.attention import softmax


@dataclass(frozen=True)
class SparsemaxParts:
    tau: Array  # (m, 1) the threshold: weights are max(s − τ, 0)
    support: Array  # (m, 1) how many keys have a nonzero weight (k(z) of the paper)
    weights: Array  # (m, n) rows sum to 1; some entries exactly 0
    excess: Array  # (m, n) s − τ, from the shifted row (weights are its positive part)


def sparsemax_parts(s: Array) -> SparsemaxParts:
    """Sparsemax by sorting (Martins & Astudillo's algorithm 1), row-wise.

    Sort each row decreasingly: z_(1) ≥ z_(2) ≥ ... The support size is the largest k with
    1 + k·z_(k) > z_(1) + ... + z_(k) (that condition holds exactly for k = 1..k(z)); then
    τ = (z_(1) + ... + z_(k) − 1) / k. −∞ entries sort last and never meet the condition.

    The test runs on the row less its max (sparsemax(s − c) = sparsemax(s) − 0 for any c, and
    τ moves by c): on 1e16 and 1e16 the 1 of the test would be lost against the sums, and on
    1e308 the sums would overflow; shifted, the largest entry is 0.
    """
    xp = namespace_of(s)
    row_max = xp.max(s, axis=-1, keepdims=True)  # (m, 1)
    finite_max = xp.isfinite(row_max)  # (m, 1) False for a row with no finite score
    shift = xp.where(finite_max, row_max, xp.zeros_like(row_max))  # (m, 1)
    with np.errstate(over="ignore"):  # 1e308 − (−1e308): far below the support, weight 0
        z = s - shift  # (m, n) the largest entry 0
    ordered = -xp.sort(-z, axis=-1)  # (m, n) decreasing
    cumulative = xp.cumulative_sum(ordered, axis=-1)  # (m, n) z_(1) + ... + z_(k)
    ks = xp.arange(1, s.shape[-1] + 1, dtype=s.dtype, device=s.device)  # (n,) 1..n
    with np.errstate(invalid="ignore", over="ignore"):  # −∞ entries: never inside
        inside = 1 + ks * ordered > cumulative  # (m, n) True for k = 1..k(z)
    support = xp.sum(xp.astype(inside, s.dtype), axis=-1, keepdims=True)  # (m, 1)
    at_support = ks == support  # (m, n) True in column k(z) only
    with np.errstate(invalid="ignore"):  # past the support the sums may be −∞ or NaN: not picked
        candidates = (cumulative - 1) / ks  # (m, n)
    picked = xp.where(at_support, candidates, xp.zeros_like(candidates))
    tau_z = xp.sum(picked, axis=-1, keepdims=True)  # (m, 1) τ of the shifted row
    tau_z = xp.where(support > 0, tau_z, xp.full_like(tau_z, math.nan))  # no finite score: NaN
    zero = xp.zeros_like(s)
    with np.errstate(invalid="ignore"):  # the NaN row stays NaN
        excess = z - tau_z  # (m, n) s − τ without the rounding of 1e16 − (1e16 − 0.5)
    return SparsemaxParts(tau_z + shift, support, xp.maximum(excess, zero), excess)


def sparsemax(s: Array) -> Array:
    """Row-wise sparsemax weights (m, n)."""
    return sparsemax_parts(s).weights


@dataclass(frozen=True)
class EntmaxParts:
    tau: Array  # (m, 1) the threshold: weights are max(z/2 − τ, 0)²
    support: Array  # (m, 1) how many keys have a nonzero weight (k* of the paper)
    weights: Array  # (m, n) rows sum to 1; some entries exactly 0


def entmax15_parts(s: Array) -> EntmaxParts:
    """1.5-entmax by sorting (Peters, Niculae & Martins 2019, algorithm 2), row-wise.

    With x = z/2, sorted decreasingly x_(1) ≥ x_(2) ≥ ..., the top k keys alone would need the
    τ_k that solves Σ_(j≤k) (x_(j) − τ)² = 1, the smaller root:
    τ_k = M_k − √((1 − S_k) / k), M_k the mean of the top k and S_k = Σ_(j≤k) (x_(j) − M_k)².
    The support size k* is the largest k with τ_k < x_(k), and τ = τ_(k*). (The paper has ≤;
    a key with x_(k) = τ_k gets weight 0 and leaves τ as it was, so < gives the same τ and counts
    only the nonzero weights, as sparsemax's k(z) does.)

    The row's maximum is subtracted first (τ moves with it). A weight is at most 1, so
    x_(1) − τ ≤ 1 and no x more than 1 below the maximum is in the support: the sorted values
    are floored at −2 below it (−∞ included), which changes no τ_(k*) and keeps every sum of
    squares small and finite.
    """
    xp = namespace_of(s)
    x = s / 2  # (m, n) (α − 1)·z with α = 1.5
    top = xp.max(x, axis=-1, keepdims=True)  # (m, 1)
    any_finite = top > -math.inf  # (m, 1) False: the row is all −∞
    top = xp.where(any_finite, top, xp.zeros_like(top))
    shifted = x - top  # (m, n) at most 0; −∞ where masked
    floor = xp.full_like(shifted, -2.0)  # (m, n) never in the support
    ordered = xp.maximum(-xp.sort(-shifted, axis=-1), floor)  # (m, n) decreasing, in [−2, 0]
    ks = xp.arange(1, s.shape[-1] + 1, dtype=s.dtype, device=s.device)  # (n,) 1..n
    mean = xp.cumulative_sum(ordered, axis=-1) / ks  # (m, n) M_k
    mean_square = xp.cumulative_sum(ordered * ordered, axis=-1) / ks  # (m, n)
    spread = ks * (mean_square - mean * mean)  # (m, n) S_k = Σ_(j≤k) (x_(j) − M_k)²
    room = xp.maximum((1 - spread) / ks, xp.zeros_like(spread))  # (m, n) < 0: k too large
    taus = mean - xp.sqrt(room)  # (m, n) τ_k
    picked_k = xp.where(taus < ordered, xp.broadcast_to(ks, taus.shape), xp.zeros_like(taus))
    support = xp.max(picked_k, axis=-1, keepdims=True)  # (m, 1) k*: the largest k with τ_k < x_(k)
    at_support = ks == support  # (m, n) True in column k* only
    tau = xp.sum(xp.where(at_support, taus, xp.zeros_like(taus)), axis=-1, keepdims=True)
    tau = xp.where(any_finite, tau, xp.full_like(tau, math.nan))  # no finite score: NaN row
    support = xp.where(any_finite, support, xp.zeros_like(support))  # (m, 1)
    zero = xp.zeros_like(s)
    gap = xp.maximum(shifted - tau, zero)  # (m, n) max(z/2 − τ, 0), from the shifted scores
    return EntmaxParts(tau + top, support, gap * gap)  # (m, n)


def entmax15(s: Array) -> Array:
    """Row-wise 1.5-entmax weights (m, n)."""
    return entmax15_parts(s).weights


def sigmoid(s: Array) -> Array:
    """σ(s) = 1 / (1 + e^−s), computed without overflow: e^−|s| is at most 1. σ(−∞) = 0."""
    xp = namespace_of(s)
    e = xp.exp(-xp.abs(s))  # (m, n) in [0, 1]
    return xp.where(s >= 0, 1 / (1 + e), e / (1 + e))


def log_sigmoid(s: Array) -> Array:
    """log σ(s) = −log(1 + e^−s), without overflow or underflow: s − log(1 + e^s) for s < 0
    (log σ(−1000) = −1000, where σ itself is 0). log σ(−∞) = −∞."""
    xp = namespace_of(s)
    e = xp.exp(-xp.abs(s))  # (m, n) in [0, 1]
    return xp.where(s >= 0, -xp.log1p(e), s - xp.log1p(e))  # (m, n)


def sigmoid_normalise(s: Array) -> Array:
    """w_j = σ(s_j) / Σ_k σ(s_k), row-wise: each row sums to 1.

    Computed as softmax(log σ(s)), the same ratio: on scores of −1000 every σ is 0 in float64
    and σ / Σ σ would be 0 / 0, while the weights (equal here) are plain numbers.
    """
    return softmax(log_sigmoid(s))  # (m, n)


def hardmax(s: Array) -> Array:
    """1 on each row's maximum, 0 elsewhere; a tie of c keys gives each 1/c."""
    xp = namespace_of(s)
    row_max = xp.max(s, axis=-1, keepdims=True)  # (m, 1)
    top = xp.logical_and(s == row_max, row_max > -math.inf)  # (m, n): an all −∞ row has no max
    hits = xp.astype(top, s.dtype)  # (m, n) 1 on the maxima
    with np.errstate(invalid="ignore"):  # 0 / 0 = NaN when the row has no max
        return hits / xp.sum(hits, axis=-1, keepdims=True)  # (m, n)


# Each normaliser by its name (attn_cli.core.variants lists the names, for the command line's choices).
NORMALISERS: dict[str, Callable[[Array], Array]] = dict(
    zip(
        variants.NORMALISERS,
        (softmax, sparsemax, entmax15, sigmoid_normalise, hardmax),
        strict=True,
    )
)
