"""Bahdanau (additive) attention for one decoder step, and Luong's two multiplicative scores.

Column convention, as on the slides: ``W1 h_i`` is a matrix times a column vector.
Shapes: s_t (d_s,) the decoder state; H (n, d_h) the encoder states as rows;
W1 (d_a, d_h); W2 (d_a, d_s); v (d_a,); W_a (d_s, d_h) for Luong's general score.
Weights and context reuse attention.softmax and attention.weighted_sum.

Over decoder steps (``attn bahdanau --steps T``), as Bahdanau et al. write it: step t scores
with the previous state s_{t-1}, then a tanh RNN cell updates
s_t = tanh(W_s s_{t-1} + W_y y_{t-1} + W_c c_t), with W_s (d_s, d_s), W_y (d_s, d_y) reading the
previous output's embedding y_{t-1} (d_y,), W_c (d_s, d_c) reading the context c_t (d_c,).
"""

from __future__ import annotations

from dataclasses import dataclass

from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms.masks import additive


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


def step_scores(projected_states: Array, projected_previous: Array, v: Array) -> Array:
    """One decoder step's scores e_t,i = v^T tanh(W1 h_i + W2 s_{t-1}), from W1 h_i (computed
    once for every step) and this step's W2 s_{t-1}."""
    summed = combine(projected_states, projected_previous)  # (n, d_a) + (d_a,) -> (n, d_a)
    return additive_scores(squash(summed), v)  # (n, d_a) @ (d_a,) -> (n,)


@dataclass(frozen=True)
class CellTerms:
    """The three terms of the decoder cell's update, and the new state."""

    recurrent: Array  # (d_s,) W_s s_{t-1}
    previous: Array  # (d_s,) W_y y_{t-1}
    read: Array  # (d_s,) W_c c_t
    state: Array  # (d_s,) s_t = tanh(sum of the three)


def cell(
    s_prev: Array, y_prev: Array, context: Array, w_s: Array, w_y: Array, w_c: Array
) -> CellTerms:
    """s_t = tanh(W_s s_{t-1} + W_y y_{t-1} + W_c c_t): a plain tanh RNN cell (the lectures'
    f in s_t = f(s_{t-1}, y_{t-1}, c_t), usually a GRU or an LSTM), without bias."""
    xp = namespace_of(s_prev, y_prev, context, w_s, w_y, w_c)
    recurrent = xp.matmul(w_s, s_prev)  # (d_s, d_s) @ (d_s,) -> (d_s,)
    previous = xp.matmul(w_y, y_prev)  # (d_s, d_y) @ (d_y,) -> (d_s,)
    read = xp.matmul(w_c, context)  # (d_s, d_c) @ (d_c,) -> (d_s,)
    state = xp.tanh(recurrent + previous + read)  # (d_s,), every entry in (-1, 1)
    return CellTerms(recurrent, previous, read, state)


def padding_mask(scores: Array, length: int) -> Array:
    """0 for the encoder states before the valid length, −∞ for the padding after it."""
    xp = namespace_of(scores)
    position = xp.arange(scores.shape[-1], device=scores.device)  # (n,)
    return additive(position < length, scores)  # (n,)
