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

from attn_cli.backend import Array, namespace_of
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
    return xp.where(empty, xp.zeros_like(numerator), numerator / safe)


def random_projection(d: int, features: int, seed: int) -> np.ndarray:
    """W (d, r): standard-normal directions for random features, seeded (float64)."""
    return np.random.default_rng(seed).standard_normal((d, features))


def positive_random_features(x: Array, projection: np.ndarray) -> Array:
    """φ(x) = exp(xW − |x|²/2) / √r (Performer's positive random features).

    E[φ(q)·φ(k)] = exp(q·k) over the random W: the softmax kernel (unscaled; divide q and k by
    d_k^¼ first for the √d_k version), approximated with r = W.shape[1] features.
    """
    xp = namespace_of(x)
    w = xp.asarray(projection, dtype=x.dtype, device=x.device)  # (d, r)
    half_norm = xp.sum(x * x, axis=-1, keepdims=True) / 2  # (..., n, 1)
    return xp.exp(xp.matmul(x, w) - half_norm) / math.sqrt(w.shape[-1])  # (..., n, r)


@dataclass(frozen=True)
class LinearResult:
    phi_q: Array  # (..., m, r) φ(Q)
    phi_k: Array  # (..., n, r) φ(K)
    kv: Array  # (..., r, d_v) φ(K)ᵀ V: the n keys summarised in r × d_v numbers
    k_sum: Array  # (..., r, 1) φ(K)ᵀ 1
    numerator: Array  # (..., m, d_v) φ(Q) (φ(K)ᵀ V)
    normaliser: Array  # (..., m, 1) φ(Q) (φ(K)ᵀ 1)
    output: Array  # (..., m, d_v)


def linear_attention(q: Array, k: Array, v: Array, phi: FeatureMap = elu_plus_one) -> LinearResult:
    """φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1): the linear order, no n × n matrix."""
    xp = namespace_of(q, k, v)
    phi_q, phi_k = phi(q), phi(k)  # (..., m, r), (..., n, r)
    phi_k_t = xp.matrix_transpose(phi_k)  # (..., r, n)
    kv = xp.matmul(phi_k_t, v)  # (..., r, d_v)
    k_sum = xp.sum(phi_k_t, axis=-1, keepdims=True)  # (..., r, 1)
    numerator = xp.matmul(phi_q, kv)  # (..., m, d_v)
    normaliser = xp.matmul(phi_q, k_sum)  # (..., m, 1)
    output = divide_or_zero(numerator, normaliser)  # (..., m, d_v)
    return LinearResult(phi_q, phi_k, kv, k_sum, numerator, normaliser, output)


@dataclass(frozen=True)
class QuadraticOrder:
    similarity: Array  # (..., m, n) φ(Q) φ(K)ᵀ
    weights: Array  # (..., m, n) rows divided by their sums: each row sums to 1
    output: Array  # (..., m, d_v)


def quadratic_order(q: Array, k: Array, v: Array, phi: FeatureMap = elu_plus_one) -> QuadraticOrder:
    """The same attention in the other order, (φ(Q)φ(K)ᵀ) V: the n × n weights, for comparison."""
    xp = namespace_of(q, k, v)
    similarity = xp.matmul(phi(q), xp.matrix_transpose(phi(k)))  # (..., m, n)
    weights = divide_or_zero(similarity, xp.sum(similarity, axis=-1, keepdims=True))  # (..., m, n)
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
    q: Array, k: Array, v: Array, phi: FeatureMap = elu_plus_one
) -> RunningSum:
    """Causal linear attention as a recurrence: one state update and one read per token."""
    xp = namespace_of(q, k, v)
    phi_q, phi_k = phi(q), phi(k)  # (..., n, r)
    lead, r, d_v = phi_k.shape[:-2], phi_k.shape[-1], v.shape[-1]
    state = xp.zeros((*lead, r, d_v), dtype=v.dtype, device=v.device)  # S_0 = 0
    total = xp.zeros((*lead, r), dtype=v.dtype, device=v.device)  # z_0 = 0
    states, sums, outputs = [], [], []
    for t in range(q.shape[-2]):
        key, value, query = phi_k[..., t, :], v[..., t, :], phi_q[..., t, :]  # (..., r|d_v)
        state = state + key[..., :, None] * value[..., None, :]  # S_t = S_{t−1} + φ(k_t) v_tᵀ
        total = total + key  # z_t = z_{t−1} + φ(k_t)
        read = xp.sum(query[..., :, None] * state, axis=-2)  # (..., d_v) φ(q_t)ᵀ S_t
        outputs.append(divide_or_zero(read, xp.sum(query * total, axis=-1, keepdims=True)))
        states.append(state)
        sums.append(total)
    stack = xp.stack
    return RunningSum(stack(states, axis=-3), stack(sums, axis=-2), stack(outputs, axis=-2))


def chunked_causal_linear(
    q: Array, k: Array, v: Array, phi: FeatureMap = elu_plus_one, chunk: int = 128
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
