"""Kernelised linear attention (Katharopoulos et al., "Transformers are RNNs", 2020).

Softmax attention weighs value j by exp(q_i·k_j / √d_k). Replace that similarity with a kernel
φ(q_i)·φ(k_j) for a feature map φ with positive outputs (r features):

    out_i = Σ_j (φ(q_i)·φ(k_j)) v_j / Σ_j φ(q_i)·φ(k_j)

Written with matrices this is (φ(Q) φ(K)ᵀ) V, normalised by (φ(Q) φ(K)ᵀ) 1: an n × n matrix
again. But matrix products reassociate: φ(Q) (φ(K)ᵀ V) and φ(Q) (φ(K)ᵀ 1) give the same numbers
through an r × d_v matrix and an r-vector, in O(n·r·d_v) time instead of O(n²·(r + d_v)).
There is no √d_k: φ is applied to Q and K as they are.

A feature map that can be 0 (relu) can leave a query with φ(q_i)·φ(k_j) = 0 for every key: its
normaliser is 0 and 0 / 0 has no value. Such a row gets no weights and a 0 output here
(:func:`divide_or_zero`), never NaN; the lesson says so where it happens.

Causal, the sums run over j ≤ i, so they become running states (the RNN view):
S_t = S_{t−1} + φ(k_t) v_tᵀ (r × d_v), z_t = z_{t−1} + φ(k_t) (r,), out_t = φ(q_t)ᵀS_t / φ(q_t)ᵀz_t.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms.attention import softmax
from attn_cli.mechanisms.masks import causal_allowed

FeatureMap = Callable[[Array], Array]


def elu_plus_one(x: Array) -> Array:
    """φ(x) = elu(x) + 1: x + 1 for x > 0, exp(x) for x ≤ 0. Always positive."""
    xp = namespace_of(x)
    return xp.where(x > 0, x + 1, xp.exp(xp.minimum(x, xp.zeros_like(x))))  # exp never overflows


def relu(x: Array) -> Array:
    """φ(x) = max(x, 0): every entry ≤ 0 becomes 0, so φ(q)·φ(k) can be 0."""
    xp = namespace_of(x)
    return xp.maximum(x, xp.zeros_like(x))


# The squared leaky ReLU as a published comparison of linear-attention feature maps writes it,
# (F.leaky_relu(x) + 0.05) ** 2: PyTorch's default negative slope, shifted up before squaring.
LEAKY_SLOPE = 0.01
LEAKY_SHIFT = 0.05


def leaky_squared(x: Array) -> Array:
    """φ(x) = (leaky_relu(x) + 0.05)², leaky_relu(x) = x for x ≥ 0 and 0.01·x below.

    Never negative; 0 only at x = −5 (where 0.01·x + 0.05 = 0), and growing again below it.
    """
    xp = namespace_of(x)
    leaky = xp.where(x >= 0, x, LEAKY_SLOPE * x)  # (..., r)
    shifted = leaky + LEAKY_SHIFT
    return shifted * shifted


def divide_or_zero(numerator: Array, normaliser: Array) -> Array:
    """numerator / normaliser, and 0 where the normaliser is 0 (no key shares a positive
    feature with the query: relu's empty rows), instead of 0 / 0 = NaN."""
    xp = namespace_of(numerator, normaliser)
    empty = normaliser == 0  # (..., m, 1)
    safe = xp.where(empty, xp.ones_like(normaliser), normaliser)
    with np.errstate(invalid="ignore", over="ignore"):  # ∞ / ∞ from φ overflowing: see below
        return xp.where(empty, xp.zeros_like(numerator), numerator / safe)


def out_of_range(phi: FeatureMap, ratio: Array, normaliser: Array) -> bool:
    """Whether φ under- or overflowed: a ratio that is not finite, or, for a map that is positive
    everywhere (one with a log), a normaliser of 0 (its exact value is never 0). A map that can
    be 0 (relu) gives a true 0 there: divide_or_zero's row of zeros."""
    xp = namespace_of(ratio, normaliser)
    positive = getattr(phi, "log", None) is not None
    return not _finite(ratio) or (positive and not bool(xp.all(normaliser > 0)))


def log_elu_plus_one(x: Array) -> Array:
    """log φ(x) for elu + 1: log(1 + x) for x > 0, x itself for x ≤ 0 (where φ(−750) is 0 in
    float64, its log is −750)."""
    xp = namespace_of(x)
    return xp.where(x > 0, xp.log1p(xp.maximum(x, xp.zeros_like(x))), x)


def random_projection(d: int, features: int, seed: int) -> np.ndarray:
    """W (d, r): standard-normal directions for random features, seeded (float64)."""
    return np.random.default_rng(seed).standard_normal((d, features))


def positive_random_features(x: Array, projection: np.ndarray) -> Array:
    """φ(x) = exp(xW − |x|²/2) / √r (Performer's positive random features).

    E[φ(q)·φ(k)] = exp(q·k) over the random W: the softmax kernel (unscaled; divide q and k by
    d_k^¼ first for the √d_k version), approximated with r = W.shape[1] features.
    """
    xp = namespace_of(x)
    return xp.exp(log_positive_random_features(x, projection))  # (..., n, r)


def log_positive_random_features(x: Array, projection: np.ndarray) -> Array:
    """log φ(x) = xW − |x|²/2 − log √r for positive random features (..., n, r)."""
    xp = namespace_of(x)
    w = xp.asarray(projection, dtype=x.dtype, device=x.device)  # (d, r)
    half_norm = xp.sum(x * x, axis=-1, keepdims=True) / 2  # (..., n, 1)
    return xp.matmul(x, w) - half_norm - math.log(math.sqrt(w.shape[-1]))  # (..., n, r)


@dataclass(frozen=True)
class Features:
    """A feature map with its logarithm: φ for the steps, log φ for the range-safe output."""

    phi: FeatureMap
    log: FeatureMap

    def __call__(self, x: Array) -> Array:
        return self.phi(x)


ELU_PLUS_ONE = Features(elu_plus_one, log_elu_plus_one)


def random_features(projection: np.ndarray, divide_by: float = 1.0) -> Features:
    """Positive random features of x / ``divide_by`` (d_k^¼ aims them at the scaled softmax)."""
    return Features(
        lambda x: positive_random_features(x / divide_by, projection),
        lambda x: log_positive_random_features(x / divide_by, projection),
    )


def _log_features(phi: FeatureMap, x: Array) -> Array:
    """log φ(x): the map's own log when it has one, else the log of its values."""
    log = getattr(phi, "log", None)
    if log is not None:
        return log(x)
    xp = namespace_of(x)
    with np.errstate(divide="ignore"):  # a feature of 0: log −∞, a weight of 0
        return xp.log(phi(x))


def _shift(values: Array, axes: tuple[int, ...]) -> Array:
    """``values`` less their max over ``axes`` (a max that is not finite: no shift)."""
    xp = namespace_of(values)
    top = xp.max(values, axis=axes, keepdims=True)
    top = xp.where(xp.isfinite(top), top, xp.zeros_like(top))
    return values - top


def stable_weights(q: Array, k: Array, phi: FeatureMap, causal: bool = False) -> Array:
    """The weights φ(q_i)·φ(k_j) / Σ_j φ(q_i)·φ(k_j) (..., m, n), finite whenever they exist.

    Each φ(q_i) may be scaled by any positive number and all of φ(K) by one number: both
    cancel in the ratio. So log φ(q_i) is shifted by its row's max and log φ(K) by its overall
    max before exp (φ(−750) = 0 and φ(x) = 10³⁰⁰ both come back near 1). A row whose sums
    still vanish (its features and the keys' peak on different features) is done in log space:
    log(φ(q_i)·φ(k_j)) = logsumexp_r(log φ(q_i)_r + log φ(k_j)_r), then a softmax over j.
    """
    xp = namespace_of(q, k)
    lq, lk = _log_features(phi, q), _log_features(phi, k)  # (..., m, r), (..., n, r)
    fq, fk = xp.exp(_shift(lq, (-1,))), xp.exp(_shift(lk, (-2, -1)))  # largest entries 1
    similarity = xp.matmul(fq, xp.matrix_transpose(fk))  # (..., m, n)
    if causal:
        similarity = xp.where(causal_allowed(similarity), similarity, xp.zeros_like(similarity))
    total = xp.sum(similarity, axis=-1, keepdims=True)  # (..., m, 1)
    with np.errstate(invalid="ignore", divide="ignore"):  # rows of 0 / 0: redone below
        weights = similarity / total  # (..., m, n)
    fine = xp.logical_and(xp.isfinite(total), total > 0)  # (..., m, 1)
    if bool(xp.all(fine)):
        return weights
    return xp.where(fine, weights, _log_space_weights(lq, lk, causal))


def _log_space_weights(lq: Array, lk: Array, causal: bool) -> Array:
    """softmax_j(logsumexp_r(log φ(q_i)_r + log φ(k_j)_r)), a block of query rows at a time."""
    xp = namespace_of(lq, lk)
    n, r = lk.shape[-2], lk.shape[-1]
    block = max(1, (1 << 22) // max(1, n * r))
    rows = []
    for start in range(0, lq.shape[-2], block):
        both = lq[..., start : start + block, None, :] + lk[..., None, :, :]  # (..., c, n, r)
        top = xp.max(both, axis=-1)  # (..., c, n)
        top = xp.where(xp.isfinite(top), top, xp.zeros_like(top))
        with np.errstate(divide="ignore"):  # no feature at all: log 0 = −∞, weight 0
            log_similarity = top + xp.log(xp.sum(xp.exp(both - top[..., None]), axis=-1))
        rows.append(log_similarity)
    logits = xp.concat(rows, axis=-2)  # (..., m, n)
    if causal:
        blocked = xp.full_like(logits, -math.inf)
        logits = xp.where(causal_allowed(logits), logits, blocked)
    return softmax(logits)


def _finite(*arrays: Array) -> bool:
    xp = namespace_of(*arrays)
    return all(bool(xp.all(xp.isfinite(a))) for a in arrays)


@dataclass(frozen=True)
class LinearResult:
    phi_q: Array  # (..., m, r) φ(Q)
    phi_k: Array  # (..., n, r) φ(K)
    kv: Array  # (..., r, d_v) φ(K)ᵀ V: the n keys summarised in r × d_v numbers
    k_sum: Array  # (..., r, 1) φ(K)ᵀ 1
    numerator: Array  # (..., m, d_v) φ(Q) (φ(K)ᵀ V)
    normaliser: Array  # (..., m, 1) φ(Q) (φ(K)ᵀ 1)
    output: Array  # (..., m, d_v)


def linear_attention(q: Array, k: Array, v: Array, phi: FeatureMap = ELU_PLUS_ONE) -> LinearResult:
    """φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1): the linear order, no n × n matrix."""
    xp = namespace_of(q, k, v)
    phi_q, phi_k = phi(q), phi(k)  # (..., m, r), (..., n, r)
    phi_k_t = xp.matrix_transpose(phi_k)  # (..., r, n)
    kv = xp.matmul(phi_k_t, v)  # (..., r, d_v)
    k_sum = xp.sum(phi_k_t, axis=-1, keepdims=True)  # (..., r, 1)
    numerator = xp.matmul(phi_q, kv)  # (..., m, d_v)
    normaliser = xp.matmul(phi_q, k_sum)  # (..., m, 1)
    output = divide_or_zero(numerator, normaliser)  # (..., m, d_v)
    if out_of_range(phi, output, normaliser):  # the same ratio, range-safe
        output = xp.matmul(stable_weights(q, k, phi), v)  # (..., m, d_v)
    return LinearResult(phi_q, phi_k, kv, k_sum, numerator, normaliser, output)


@dataclass(frozen=True)
class QuadraticOrder:
    similarity: Array  # (..., m, n) φ(Q) φ(K)ᵀ
    weights: Array  # (..., m, n) rows divided by their sums: each row sums to 1
    output: Array  # (..., m, d_v)


def quadratic_order(q: Array, k: Array, v: Array, phi: FeatureMap = ELU_PLUS_ONE) -> QuadraticOrder:
    """The same attention in the other order, (φ(Q)φ(K)ᵀ) V: the n × n weights, for comparison."""
    xp = namespace_of(q, k, v)
    similarity = xp.matmul(phi(q), xp.matrix_transpose(phi(k)))  # (..., m, n)
    total = xp.sum(similarity, axis=-1, keepdims=True)  # (..., m, 1)
    weights = divide_or_zero(similarity, total)  # (..., m, n)
    if out_of_range(phi, weights, total):  # the same ratio, range-safe
        weights = stable_weights(q, k, phi)
    return QuadraticOrder(similarity, weights, xp.matmul(weights, v))


def linear_flops(m: int, n: int, r: int, d_v: int) -> int:
    """FLOPs of the linear order, counting a product of (a × b)(b × c) as 2·a·b·c.

    φ(K)ᵀV 2·n·r·d_v, φ(K)ᵀ1 2·n·r, φ(Q)(φ(K)ᵀV) 2·m·r·d_v, φ(Q)(φ(K)ᵀ1) 2·m·r, and m·d_v
    divisions: 2·r·(n + m)·(d_v + 1) + m·d_v. Linear in n.
    """
    return 2 * r * (n + m) * (d_v + 1) + m * d_v


def quadratic_flops(m: int, n: int, r: int, d_v: int) -> int:
    """FLOPs of (φ(Q)φ(K)ᵀ)V with the same counting: φ(Q)φ(K)ᵀ 2·m·n·r, its row sums 2·m·n,
    the product with V 2·m·n·d_v, and m·d_v divisions: 2·m·n·(r + d_v + 1) + m·d_v."""
    return 2 * m * n * (r + d_v + 1) + m * d_v


@dataclass(frozen=True)
class RunningSum:
    states: Array  # (..., n, r, d_v) S_t after step t
    sums: Array  # (..., n, r) z_t after step t
    output: Array  # (..., n, d_v)


def causal_linear_attention(
    q: Array, k: Array, v: Array, phi: FeatureMap = ELU_PLUS_ONE
) -> RunningSum:
    """Causal linear attention as a recurrence: one state update and one read per token."""
    xp = namespace_of(q, k, v)
    phi_q, phi_k = phi(q), phi(k)  # (..., n, r)
    lead, r, d_v = phi_k.shape[:-2], phi_k.shape[-1], v.shape[-1]
    state = xp.zeros((*lead, r, d_v), dtype=v.dtype, device=v.device)  # S_0 = 0
    total = xp.zeros((*lead, r), dtype=v.dtype, device=v.device)  # z_0 = 0
    states, sums, outputs, normalisers = [], [], [], []
    for t in range(q.shape[-2]):
        key, value, query = phi_k[..., t, :], v[..., t, :], phi_q[..., t, :]  # (..., r|d_v)
        state = state + key[..., :, None] * value[..., None, :]  # S_t = S_{t−1} + φ(k_t) v_tᵀ
        total = total + key  # z_t = z_{t−1} + φ(k_t)
        read = xp.sum(query[..., :, None] * state, axis=-2)  # (..., d_v) φ(q_t)ᵀ S_t
        normaliser = xp.sum(query * total, axis=-1, keepdims=True)  # (..., 1) φ(q_t)ᵀ z_t
        outputs.append(divide_or_zero(read, normaliser))
        normalisers.append(normaliser)
        states.append(state)
        sums.append(total)
    stack = xp.stack
    output = stack(outputs, axis=-2)  # (..., n, d_v)
    if out_of_range(phi, output, stack(normalisers, axis=-2)):  # the same ratios, range-safe
        output = xp.matmul(stable_weights(q, k, phi, causal=True), v)
    return RunningSum(stack(states, axis=-3), stack(sums, axis=-2), output)


def chunked_causal_linear(
    q: Array, k: Array, v: Array, phi: FeatureMap = ELU_PLUS_ONE, chunk: int = 128
) -> Array:
    """Causal linear attention in chunks: the state carries the past chunks (r × d_v), and
    within a chunk the c × c similarities are masked to j ≤ i. Equal to the running sum up to
    rounding; O(n·(c + d_v)·r) time and O(c² + r·d_v + n·d_v) memory."""
    xp = namespace_of(q, k, v)
    phi_q, phi_k = phi(q), phi(k)  # (..., n, r)
    lead, r, d_v = phi_k.shape[:-2], phi_k.shape[-1], v.shape[-1]
    state = xp.zeros((*lead, r, d_v), dtype=v.dtype, device=v.device)  # past chunks' S
    total = xp.zeros((*lead, r, 1), dtype=v.dtype, device=v.device)  # past chunks' z
    outputs = []
    for start in range(0, q.shape[-2], chunk):
        stop = min(start + chunk, q.shape[-2])
        pq, pk, vc = phi_q[..., start:stop, :], phi_k[..., start:stop, :], v[..., start:stop, :]
        a = xp.matmul(pq, xp.matrix_transpose(pk))  # (..., c, c) φ(q_i)·φ(k_j) in the chunk
        a = xp.where(causal_allowed(a), a, xp.zeros_like(a))  # keep j ≤ i
        numerator = xp.matmul(pq, state) + xp.matmul(a, vc)  # (..., c, d_v)
        normaliser = xp.matmul(pq, total) + xp.sum(a, axis=-1, keepdims=True)  # (..., c, 1)
        outputs.append(divide_or_zero(numerator, normaliser))
        pk_t = xp.matrix_transpose(pk)  # (..., r, c)
        state = state + xp.matmul(pk_t, vc)
        total = total + xp.sum(pk_t, axis=-1, keepdims=True)
    return xp.concat(outputs, axis=-2)  # (..., n, d_v)
