"""The mistakes students make, each a small function: given a step's inputs, what a student who
made that mistake would have written (issue 56). numpy float64 only: they read the numbers a
walkthrough shows and a student's typed answers, never a device's arrays.

A function returns None where the mistake cannot be told from the right answer or is impossible
at these shapes (K instead of Kᵀ needs d_k = n); the quiz names a mistake only when the
student's numbers match its result to the student's own decimals.
"""

from __future__ import annotations

import math

import numpy as np

from attn_cli.mechanisms import posenc


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """The right softmax, along each row (stable)."""
    shifted = s - np.max(s, axis=-1, keepdims=True)  # (m, n)
    exp = np.exp(shifted)
    return exp / np.sum(exp, axis=-1, keepdims=True)


# --- the scores S = Q Kᵀ ------------------------------------------------------------------------


def k_not_transposed(q: np.ndarray, k: np.ndarray) -> np.ndarray | None:
    """Q K for Q Kᵀ: rows of Q against columns of K (possible only where d_k = n)."""
    return q @ k if q.shape[1] == k.shape[0] else None  # (m, d_k) @ (n, d_k) with d_k = n


def keys_times_queries(q: np.ndarray, k: np.ndarray) -> np.ndarray | None:
    """Kᵀ Q's entries, K Qᵀ: row j is key j against every query (the scores transposed),
    told apart only where m = n."""
    return k @ q.T if q.shape[0] == k.shape[0] else None  # (n, d_k) @ (d_k, m) -> (n, m)


def times_transposed(x: np.ndarray, w: np.ndarray) -> np.ndarray | None:
    """X Wᵀ for X W: the weight transposed (told apart only where W is square, not symmetric)."""
    if w.shape[0] != w.shape[1] or np.allclose(w, w.T):
        return None
    return x @ w.T  # (n, d) @ (d, d)


# --- the scale S / √d_k -------------------------------------------------------------------------


def not_scaled(s: np.ndarray, d_k: int) -> np.ndarray:
    """The scores as they were: the ÷ √d_k forgotten."""
    return s


def divided_by_d_k(s: np.ndarray, d_k: int) -> np.ndarray:
    """S / d_k: divided by d_k instead of √d_k."""
    return s / d_k


def multiplied_by_root(s: np.ndarray, d_k: int) -> np.ndarray:
    """S · √d_k: multiplied where it divides."""
    return s * math.sqrt(d_k)


# --- the weights softmax(rows) ------------------------------------------------------------------


def softmax_down_columns(s: np.ndarray) -> np.ndarray:
    """The softmax of each column, where each row (a query's scores) is the distribution."""
    return softmax_rows(s.T).T


def normalised_by_the_sum(s: np.ndarray) -> np.ndarray | None:
    """s / Σ s: each score divided by the row's sum of scores, not of their exps (None where a
    row sums to 0)."""
    sums = np.sum(s, axis=-1, keepdims=True)
    return None if np.any(sums == 0) else s / sums


def not_normalised(s: np.ndarray) -> np.ndarray:
    """e^s: the exps, never divided by their row's sum."""
    return np.exp(s)


# --- the masks: causal M, padding P --------------------------------------------------------------


def mask_on_the_wrong_triangle(m: np.ndarray) -> np.ndarray | None:
    """Mᵀ: −∞ below the diagonal, so each query sees the keys after it (square masks only)."""
    return m.T if m.shape[0] == m.shape[1] else None


def masked_with_zeros(s: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The masked entries set to 0 where the mask adds −∞: a 0 still has weight e⁰ = 1."""
    return np.where(np.isneginf(m), 0.0, s)


def softmax_masked_with_zeros(s: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The softmax of the scores with the masked entries set to 0 (their weight not 0)."""
    return softmax_rows(masked_with_zeros(s, m))


def padding_on_the_queries(p: np.ndarray) -> np.ndarray | None:
    """Pᵀ: the rows of the padded queries blocked, where the padded keys' columns are."""
    return p.T if p.shape[0] == p.shape[1] else None


# --- multi-head: the concatenation and W_O ---------------------------------------------------------


def heads_in_reverse_order(outputs: list[np.ndarray]) -> np.ndarray | None:
    """[Y_h | … | Y_1]: the heads' outputs side by side, last head first (None for one head)."""
    return np.concatenate(outputs[::-1], axis=-1) if len(outputs) > 1 else None  # (n, d_model)


def w_o_left_out(concat: np.ndarray) -> np.ndarray:
    """The concatenation itself, never multiplied by W_O."""
    return concat


def w_o_transposed(concat: np.ndarray, w_o: np.ndarray) -> np.ndarray | None:
    """Concat · W_Oᵀ, where the output is Concat · W_O (told apart only where W_O is square
    and not symmetric)."""
    if w_o.shape[0] != w_o.shape[1] or np.allclose(w_o, w_o.T):
        return None
    return concat @ w_o.T  # (n, d_model) @ (d_model, d_model)


# --- LayerNorm ------------------------------------------------------------------------------------


def layer_norm_unbiased(normalised: np.ndarray, variance: np.ndarray, eps: float) -> np.ndarray:
    """The rows normalised with the n − 1 (unbiased) variance, where LayerNorm divides by n:
    x − μ is recovered from the right N = (x − μ) / √(σ² + ε) and the row's σ²."""
    width = normalised.shape[-1]
    centred = normalised * np.sqrt(variance[:, None] + eps)  # (n, d): x − μ
    unbiased = variance * width / (width - 1)  # (n,): Σ(x − μ)² / (d − 1)
    return centred / np.sqrt(unbiased[:, None] + eps)


# --- the positional encoding ----------------------------------------------------------------------


def sin_and_cos_swapped(pe: np.ndarray, layout: posenc.Layout) -> np.ndarray:
    """Each pair's cosine where its sine goes and the sine where its cosine goes."""
    half = pe.shape[-1] // 2
    if layout == "split":
        return np.concatenate((pe[:, half:], pe[:, :half]), axis=-1)  # cos_0.., sin_0..
    swapped = pe.copy()
    swapped[:, 0::2], swapped[:, 1::2] = pe[:, 1::2], pe[:, 0::2]  # cos_0, sin_0, cos_1, ...
    return swapped


def exponent_without_the_2(positions: int, omega: np.ndarray, layout: posenc.Layout) -> np.ndarray:
    """PE with w_i = base^(−i/d_model), the exponent's 2i read as i: each w_i its square root."""
    return np.asarray(
        posenc.encoding(np.arange(positions, dtype=np.float64), np.sqrt(omega), layout)
    )


# --- the output A V -----------------------------------------------------------------------------


def scores_times_values(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """S V: the scores, not the weights, times the values."""
    return s @ v  # (m, n) @ (n, d_v)


# --- the backward pass (attn backward) --------------------------------------------------------


def value_gradient_untransposed(a: np.ndarray, d_out: np.ndarray) -> np.ndarray | None:
    """A dO for Aᵀ dO (possible only where m = n)."""
    return a @ d_out if a.shape[1] == d_out.shape[0] else None  # (m, n) @ (m, d_v), n = m


def weight_gradient_untransposed(d_out: np.ndarray, v: np.ndarray) -> np.ndarray | None:
    """dO V for dO Vᵀ (possible only where d_v = n)."""
    return d_out @ v if d_out.shape[1] == v.shape[0] else None  # (m, d_v) @ (n, d_v), d_v = n


def softmax_backward_without_d(a: np.ndarray, d_a: np.ndarray) -> np.ndarray:
    """A ∘ dA: the row's average D never subtracted (the Jacobian's −a aᵀ part left out)."""
    return a * d_a


def softmax_backward_diagonal(a: np.ndarray, d_a: np.ndarray) -> np.ndarray:
    """A ∘ (1 − A) ∘ dA: the Jacobian's diagonal w (1 − w) alone, as if each weight moved with
    its own score only (+ 0.0: a weight of exactly 1 gives 0, never −0, as the right dZ does)."""
    return a * (1.0 - a) * d_a + 0.0


def softmax_backward_not_weighted(a: np.ndarray, d_a: np.ndarray) -> np.ndarray:
    """dA − D: the row's average subtracted, but not multiplied by A."""
    return d_a - np.sum(d_a * a, axis=-1, keepdims=True)
