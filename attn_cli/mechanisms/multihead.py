"""Multi-head attention: h scaled dot-product attentions side by side, concatenated, projected.

Shapes: X (n, d_in) tokens as rows; W_Q, W_K, W_V (d_in, d_out), each split column-wise
into h blocks of d_k = d_out / h (block i belongs to head i), with optional biases b_Q, b_K, b_V
(d_out,) split the same way; W_O (d_out, d_o) with optional bias b_O (d_o,), or no W_O at all.
Row convention: Q = X W_Q + b_Q. Head i: Y_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i, (n, d_k);
MultiHead(X) = [Y_1 | ... | Y_h] W_O + b_O, (n, d_o); without W_O the concatenation itself,
(n, d_out). The transformer paper has d_in = d_out = d_model; Raschka's book's
MultiHeadAttention projects d_in to d_out and its wrapper has no W_O.

Inside a head nothing is new: it is attention.attention on Q_i = X W_Q^(i), K_i, V_i. This module
holds only what multi-head adds: the column blocks, the concatenation, the comparison of heads.
"""

from __future__ import annotations

from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms.selfattn import project

# project (X W) is re-exported: it makes each head's Q_i, K_i, V_i and the output [Y] W_O.
__all__ = ["affine", "concat", "head_block", "parameter_count", "project", "weight_differences"]


def head_block(w: Array, head: int, heads: int) -> Array:
    """Columns of head ``head`` (0-based) in a d_in x d_out weight: W[:, i d_k : (i+1) d_k].

    A bias (d_out,) is split the same way: entries i d_k ... (i+1) d_k - 1.
    """
    d_k = w.shape[-1] // heads
    return w[..., head * d_k : (head + 1) * d_k]  # (d_in, d_k), or (d_k,) for a bias


def affine(x: Array, w: Array, b: Array | None = None) -> Array:
    """X W + b: a projection with an optional bias (added to every row), as nn.Linear does."""
    projected = project(x, w)  # (n, d_in) @ (d_in, d_k) -> (n, d_k)
    return projected if b is None else projected + b  # b (d_k,) broadcasts over the rows


def concat(outputs: list[Array]) -> Array:
    """[Y_1 | ... | Y_h]: the head outputs side by side."""
    xp = namespace_of(*outputs)
    return xp.concat(outputs, axis=-1)  # h x (n, d_k) -> (n, h d_k) = (n, d_out)


def weight_differences(weights: list[Array]) -> Array:
    """(h, h): entry (i, j) is max |A_i - A_j|, how differently heads i and j attend."""
    xp = namespace_of(*weights)
    heads = len(weights)
    # Each pair once (|a - b| = |b - a| exactly), one (n, n) difference at a time.
    pairs = {
        (i, j): xp.max(xp.abs(weights[i] - weights[j]))
        for i in range(heads)
        for j in range(i + 1, heads)
    }

    def entry(i: int, j: int) -> Array:
        if i == j:
            # max |a - a| without a difference: 0, or NaN where a holds a NaN or an infinity
            # (x * 0 is NaN exactly then; abs turns a -0.0 into 0).
            a = weights[i]
            return xp.abs(xp.max(a) * 0 + xp.min(a) * 0)
        return pairs[min(i, j), max(i, j)]

    rows = [xp.stack([entry(i, j) for j in range(heads)]) for i in range(heads)]  # h x (h,)
    return xp.stack(rows)  # (h, h)


def parameter_count(d_model: int, kv_width: int | None = None) -> int:
    """W_Q, W_K, W_V and W_O, each d_model x d_model, without biases: 4 d_model^2 for any h;
    with grouped-query heads W_K and W_V are d_model x g d_k (``kv_width``): 2 d_model^2 +
    2 d_model g d_k.

    (The walkthrough counts the entries of the weights and biases it was given, whatever their
    shapes; this is the square case the transformer paper uses.)
    """
    kv_width = d_model if kv_width is None else kv_width
    return 2 * d_model * d_model + 2 * d_model * kv_width
