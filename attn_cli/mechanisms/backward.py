"""The backward pass of scaled dot-product attention, step by step.

Forward: S = Q Kᵀ, Z = S / √d_k (+ M), A = softmax(Z) row by row, O = A V. Given the upstream
gradient dO = ∂L/∂O (one entry per entry of O), the chain rule runs the same steps backwards:

    dV = Aᵀ dO                      (n, d_v)  each value row collects the weight it was given
    dA = dO Vᵀ                      (m, n)    how the loss moves with each weight
    D  = rowsum(dA ∘ A)             (m, 1)    = rowsum(dO ∘ O), FlashAttention-2's D
    dZ = A ∘ (dA − D)               (m, n)    the softmax's Jacobian diag(a) − a aᵀ, row by row
    dS = dZ / √d_k                  (m, n)    the scale, backwards
    dQ = dS K,  dK = dSᵀ Q          (m, d_k), (n, d_k)

A masked entry has A = 0, so its dZ is exactly 0: no gradient reaches a score the mask hid.
Shapes as in mechanisms/attention.py: Q (m, d_k), K (n, d_k), V (n, d_v), dO (m, d_v).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms import attention as mech


def log_sum_exp(z: Array) -> Array:
    """L = m + log ℓ per row (m the row max, ℓ = Σ e^(z − m)): all the forward needs to keep to
    recompute A = e^(Z − L) in the backward, as FlashAttention-2 does."""
    xp = namespace_of(z)
    parts = mech.softmax_parts(z)
    return parts.row_max + xp.log(parts.row_sum)  # (m, 1)


def softmax_jacobian(a: Array) -> Array:
    """J = diag(a) − a aᵀ for one row of weights a (n,): J[i, j] = ∂a_i/∂z_j, whose diagonal is
    the lectures' w_i (1 − w_i)."""
    xp = namespace_of(a)
    n = a.shape[-1]
    eye = xp.eye(n, dtype=a.dtype)
    return eye * a[:, None] - a[:, None] * a[None, :]  # (n, n)


def value_gradient(weights: Array, d_out: Array) -> Array:
    """dV = Aᵀ dO."""
    xp = namespace_of(weights, d_out)
    return xp.matmul(xp.matrix_transpose(weights), d_out)  # (n, m) @ (m, d_v) -> (n, d_v)


def weight_gradient(d_out: Array, v: Array) -> Array:
    """dA = dO Vᵀ."""
    xp = namespace_of(d_out, v)
    return xp.matmul(d_out, xp.matrix_transpose(v))  # (m, d_v) @ (d_v, n) -> (m, n)


def row_dot(x: Array, y: Array) -> Array:
    """rowsum(x ∘ y): D = rowsum(dA ∘ A), or rowsum(dO ∘ O), the same numbers."""
    xp = namespace_of(x, y)
    return xp.sum(x * y, axis=-1, keepdims=True)  # (m, 1)


def logit_gradient(weights: Array, d_weights: Array, d: Array) -> Array:
    """dZ = A ∘ (dA − D), with D = rowsum(dA ∘ A) given (the FlashAttention-2 form). A weight
    of exactly 0 (a masked key) gives exactly 0: + 0.0 turns 0 × (a negative) = −0 into 0."""
    return weights * (d_weights - d) + 0.0  # (m, n) ∘ ((m, n) − (m, 1))


def softmax_backward(weights: Array, d_weights: Array) -> Array:
    """dZ = A ∘ (dA − rowsum(dA ∘ A)): each row's dA times its Jacobian diag(a) − a aᵀ, without
    forming the n × n Jacobian."""
    return logit_gradient(weights, d_weights, row_dot(d_weights, weights))  # (m, n)


def score_gradient(d_logits: Array, d_k: int, use_scale: bool = True) -> Array:
    """dS = dZ / √d_k: the scale, backwards (dS = dZ when the scores were not scaled)."""
    return d_logits / math.sqrt(d_k) if use_scale else d_logits  # (m, n)


def query_gradient(d_scores: Array, k: Array) -> Array:
    """dQ = dS K: each query moves along the keys, by how much its scores should change."""
    xp = namespace_of(d_scores, k)
    return xp.matmul(d_scores, k)  # (m, n) @ (n, d_k) -> (m, d_k)


def key_gradient(d_scores: Array, q: Array) -> Array:
    """dK = dSᵀ Q: each key moves along the queries that scored it."""
    xp = namespace_of(d_scores, q)
    return xp.matmul(xp.matrix_transpose(d_scores), q)  # (n, m) @ (m, d_k) -> (n, d_k)


@dataclass(frozen=True)
class Gradients:
    weights: Array  # (m, n) A, the forward's
    output: Array  # (m, d_v) O = A V
    d_v: Array  # (n, d_v)
    d_weights: Array  # (m, n) dA
    d_logits: Array  # (m, n) dZ, the gradient of the softmax's input
    d_scores: Array  # (m, n) dS, the gradient of Q Kᵀ (dZ / √d_k when scaled)
    d_q: Array  # (m, d_k)
    d_k: Array  # (n, d_k)


def attention_backward(
    q: Array, k: Array, v: Array, d_out: Array, *, use_scale: bool = True, mask: Array | None = None
) -> Gradients:
    """Every gradient of softmax(Q Kᵀ / √d_k + M) V for the upstream gradient ``d_out``."""
    forward = mech.attention(q, k, v, use_scale=use_scale, mask=mask)
    a = forward.weights  # (m, n)
    d_v = value_gradient(a, d_out)  # (n, d_v)
    d_a = weight_gradient(d_out, v)  # (m, n)
    d_z = softmax_backward(a, d_a)  # (m, n)
    d_s = score_gradient(d_z, q.shape[-1], use_scale)  # (m, n)
    return Gradients(
        a, forward.output, d_v, d_a, d_z, d_s, query_gradient(d_s, k), key_gradient(d_s, q)
    )


@dataclass(frozen=True)
class ProjectionGradients:
    d_w_q: Array  # (d, d_k) Xᵀ dQ
    d_w_k: Array  # (d, d_k) Xᵀ dK
    d_w_v: Array  # (d, d_v) Xᵀ dV
    d_x: Array  # (n, d) dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ


def projection_gradients(
    x: Array, weights: tuple[Array, Array, Array], grads: tuple[Array, Array, Array]
) -> ProjectionGradients:
    """Self-attention's Q = X W_Q, K = X W_K, V = X W_V, backwards: each weight's gradient is
    Xᵀ times its projection's, and X, used three times, adds up all three paths back."""
    xp = namespace_of(x, *weights, *grads)
    x_t = xp.matrix_transpose(x)  # (d, n)
    d_w = [xp.matmul(x_t, g) for g in grads]  # (d, n) @ (n, d_k) -> (d, d_k), and for V
    paths = [xp.matmul(g, xp.matrix_transpose(w)) for g, w in zip(grads, weights, strict=True)]
    return ProjectionGradients(d_w[0], d_w[1], d_w[2], paths[0] + paths[1] + paths[2])  # (n, d)


# --- FlashAttention-2's backward, tiled ----------------------------------------------------


@dataclass(frozen=True)
class Tile:
    """One (query block, key block) tile of the tiled backward: its rows and columns (0-based,
    stop excluded) and what it computes there."""

    rows: tuple[int, int]
    cols: tuple[int, int]
    p: Array  # (b_q, b_k) exp(Z − L): A's tile, recomputed from L
    d_p: Array  # (b_q, b_k) dO_i V_jᵀ: dA's tile
    d_s: Array  # (b_q, b_k) P ∘ (dP − D_i): dZ's tile


@dataclass(frozen=True)
class TiledGradients:
    d_q: Array  # (m, d_k)
    d_k: Array  # (n, d_k)
    d_v: Array  # (n, d_v)
    tiles: tuple[Tile, ...]  # in the order visited: key blocks outside, query blocks inside


def tiled_backward(
    q: Array,
    k: Array,
    v: Array,
    output: Array,
    lse: Array,
    d_out: Array,
    *,
    block: int,
    use_scale: bool = True,
    causal: bool = False,
) -> TiledGradients:
    """FlashAttention-2's backward (its Algorithm 2), from what the forward kept: O and L.

    D = rowsum(dO ∘ O) once; then for each block of keys j (outer loop) and each block of
    queries i (inner loop): P = exp(Z_ij − L_i) recomputed, dV_j += Pᵀ dO_i, dP = dO_i V_jᵀ,
    dS = P ∘ (dP − D_i), dQ_i += dS K_j / √d_k, dK_j += dSᵀ Q_i / √d_k. At most one tile of
    b × b numbers exists at a time besides O(n) ones; the last blocks may be shorter (ragged).
    With ``causal``, tiles wholly above the diagonal are skipped and the rest masked.
    """
    xp = namespace_of(q, k, v, d_out)
    (m, d_k), n = q.shape, k.shape[0]
    factor = 1.0 / math.sqrt(d_k) if use_scale else 1.0
    d = row_dot(d_out, output)  # (m, 1)
    d_q = [xp.zeros_like(q[i : i + block]) for i in range(0, m, block)]  # per query block
    d_k_blocks, d_v_blocks, tiles = [], [], []
    for j in range(0, n, block):  # outer: a block of keys and values, b_k rows
        k_j, v_j = k[j : j + block], v[j : j + block]  # (b_k, d_k), (b_k, d_v)
        d_k_j, d_v_j = xp.zeros_like(k_j), xp.zeros_like(v_j)
        for index, i in enumerate(range(0, m, block)):  # inner: a block of queries
            if causal and j > i + block - 1:
                continue  # every key of this block comes after every query of that one
            q_i, d_o_i = q[i : i + block], d_out[i : i + block]  # (b_q, d_k), (b_q, d_v)
            z = mech.scores(q_i, k_j) * factor  # (b_q, b_k)
            if causal:
                rows = xp.arange(i, i + z.shape[0])[:, None]
                cols = xp.arange(j, j + z.shape[1])[None, :]
                z = xp.where(cols <= rows, z, -math.inf)
            p = xp.exp(z - lse[i : i + block])  # (b_q, b_k): A's tile, from L
            d_v_j = d_v_j + xp.matmul(xp.matrix_transpose(p), d_o_i)  # (b_k, d_v)
            d_p = xp.matmul(d_o_i, xp.matrix_transpose(v_j))  # (b_q, b_k)
            d_s = p * (d_p - d[i : i + block]) + 0.0  # (b_q, b_k), a masked entry 0, not −0
            d_q[index] = d_q[index] + xp.matmul(d_s, k_j) * factor  # (b_q, d_k)
            d_k_j = d_k_j + xp.matmul(xp.matrix_transpose(d_s), q_i) * factor  # (b_k, d_k)
            tiles.append(Tile((i, i + z.shape[0]), (j, j + z.shape[1]), p, d_p, d_s))
        d_k_blocks.append(d_k_j)
        d_v_blocks.append(d_v_j)
    return TiledGradients(
        xp.concat(d_q, axis=0),
        xp.concat(d_k_blocks, axis=0),
        xp.concat(d_v_blocks, axis=0),
        tuple(tiles),
    )
