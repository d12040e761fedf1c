"""Self-attention: queries, keys and values all projected from one sequence X.

Row convention, as on the slides: Q = X W_Q. Shapes: X (n, d) tokens as rows;
W_Q, W_K (d, d_k); W_V (d, d_v). The attention itself is attention.attention.
"""

from __future__ import annotations

from dataclasses import dataclass

from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms.attention import AttentionResult, attention


def project(x: Array, w: Array) -> Array:
    """X W: row i is token i seen through the projection W."""
    return namespace_of(x, w).matmul(x, w)  # (n, d) @ (d, d_k) -> (n, d_k)


@dataclass(frozen=True)
class SelfAttentionResult:
    q: Array  # (n, d_k)
    k: Array  # (n, d_k)
    v: Array  # (n, d_v)
    attention: AttentionResult  # scores, scaled, weights (n, n); output (n, d_v)


def self_attention(
    x: Array, wq: Array, wk: Array, wv: Array, *, use_scale: bool = True
) -> SelfAttentionResult:
    """softmax(X W_Q (X W_K)^T / sqrt(d_k)) X W_V with every intermediate."""
    q, k, v = project(x, wq), project(x, wk), project(x, wv)  # (n, d_k), (n, d_k), (n, d_v)
    return SelfAttentionResult(q, k, v, attention(q, k, v, use_scale=use_scale))
