"""Bahdanau (additive) attention for one decoder step, and Luong's two multiplicative scores.

Column convention, as on the slides: ``W1 h_i`` is a matrix times a column vector.
Shapes: s_t (d_s,) the decoder state; H (n, d_h) the encoder states as rows;
W1 (d_a, d_h); W2 (d_a, d_s); v (d_a,); W_a (d_s, d_h) for Luong's general score.
Weights and context reuse attention.softmax and attention.weighted_sum.
"""

from __future__ import annotations

from attn_cli.backend import Array, namespace_of


def project_states(h: Array, w1: Array) -> Array:
    """Row i is W1 h_i: every encoder state projected into the attention space at once."""
    xp = namespace_of(h, w1)
    return xp.matmul(h, xp.matrix_transpose(w1))  # (n, d_h) @ (d_h, d_a) -> (n, d_a)


def project_decoder(s: Array, w2: Array) -> Array:
    """W2 s_t: the decoder state in the same attention space."""
    xp = namespace_of(s, w2)
    return xp.matmul(w2, s)  # (d_a, d_s) @ (d_s,) -> (d_a,)


def combine(projected_states: Array, projected_decoder: Array) -> Array:
    """U = W1 h_i + W2 s_t for every i: the same W2 s_t is added to each row."""
    return projected_states + projected_decoder  # (n, d_a) + (d_a,) -> (n, d_a)


def squash(u: Array) -> Array:
    """tanh, entry by entry: every value lands in (-1, 1)."""
    return namespace_of(u).tanh(u)  # (n, d_a)


def additive_scores(activated: Array, v: Array) -> Array:
    """e_i = v^T tanh(U_i): v reads one number out of each row."""
    xp = namespace_of(activated, v)
    return xp.matmul(activated, v)  # (n, d_a) @ (d_a,) -> (n,)


def dot_scores(s: Array, h: Array) -> Array:
    """Luong's dot score e_i = s_t . h_i (s_t and h_i share the width d)."""
    xp = namespace_of(s, h)
    return xp.matmul(h, s)  # (n, d) @ (d,) -> (n,)


def general_scores(s: Array, h: Array, wa: Array) -> Array:
    """Luong's general score e_i = s_t^T W_a h_i, with W_a^T s_t computed once for all i."""
    xp = namespace_of(s, h, wa)
    query = xp.matmul(xp.matrix_transpose(wa), s)  # (d_h, d_s) @ (d_s,) -> (d_h,)
    return xp.matmul(h, query)  # (n, d_h) @ (d_h,) -> (n,)
