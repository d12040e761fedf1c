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
    """dZ = A ∘ (dA − D), with D = rowsum(dA ∘ A) given (the FlashAttention-2 form)."""
    return weights * (d_weights - d)  # (m, n) ∘ ((m, n) − (m, 1))


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
