"""One Transformer layer (Vaswani et al., 2017): the sublayers, the residual sums and LayerNorm.

Shapes: X (n, d_model) tokens as rows; memory M (m, d_model), the encoder output the decoder's
cross-attention reads. Row convention throughout, Q = X W_Q + b_Q with W_Q (d_model, d_model),
split column-wise into h heads of d_k = d_model / h (as attn multihead); with g key/value heads
(grouped-query attention; g = 1: multi-query) W_K and W_V are (d_model, g d_k), and query head i
reads key/value head ⌊i / (h/g)⌋, as PyTorch's enable_gqa pairs them; FFN(X) = act(X W_1 +
b_1) W_2 + b_2 with W_1 (d_model, d_ff), b_1 (d_ff,), W_2 (d_ff, d_model), b_2 (d_model,), act
ReLU or GELU (exact, or its tanh approximation). Every bias may be absent (PyTorch's bias=False).

Post-norm (the paper): Y = LN(X + Sublayer(X)); pre-norm: Y = X + Sublayer(LN(X)). A layer is
these pieces in order; the lesson (attn_cli/course/block) records each one as a step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms import attention, posenc
from attn_cli.mechanisms import multihead as mh

BASE = 10000.0  # the paper's base of the sinusoids' wavelengths


def positional_encoding(positions: Array, pairs: Array, d_model: int) -> Array:
    """The paper's sinusoidal PE (interleaved sin, cos), one row per position: attn posenc's."""
    omega = posenc.frequencies(pairs, d_model, BASE)  # (d_model / 2,)
    return posenc.encoding(positions, omega)  # (n, d_model)


def residual(x: Array, sublayer: Array) -> Array:
    """X + Sublayer(X): the sublayer adds to the stream instead of replacing it."""
    return x + sublayer  # (n, d_model)


@dataclass(frozen=True)
class NormParts:
    mean: Array  # (n, 1) μ of each row
    variance: Array  # (n, 1) σ² of each row, dividing by d_model (not d_model - 1)
    root: Array  # (n, 1) √(σ² + ε)
    normalised: Array  # (n, d_model) x̂ = (x - μ) / √(σ² + ε)
    output: Array  # (n, d_model) γ ⊙ x̂ + β (γ ⊙ x̂ without β)


def layer_norm(x: Array, gamma: Array, beta: Array | None, eps: float) -> NormParts:
    """LayerNorm over each row's d_model features, with the statistics it divides by; ``beta``
    None: no shift (nn.LayerNorm(bias=False)).

    Each row is scaled by a power of two near its largest entry before it is summed or squared
    (and the result scaled back): exact, so the numbers are those of the plain formulas, but a
    row of entries near 1e155 (whose squares pass float64's 1.8e308) still gives its true root
    √(σ² + ε) and x̂. σ² itself is then beyond float64 and shows as ∞ (the lesson says so)."""
    xp = namespace_of(x)
    scale = _row_scale(x)  # (n, 1)
    mean = xp.mean(x / scale, axis=-1, keepdims=True) * scale  # (n, 1)
    centred = x - mean  # (n, d_model)
    spread = _row_scale(centred)  # (n, 1)
    shrunk = centred / spread
    scaled_variance = xp.mean(shrunk * shrunk, axis=-1, keepdims=True)  # σ² / spread²
    variance = scaled_variance * spread * spread  # (n, 1), biased: / d_model; ∞ past 1.8e308
    root = xp.sqrt(scaled_variance + eps / (spread * spread)) * spread  # (n, 1) √(σ² + ε) > 0
    normalised = centred / root  # (n, d_model): each row mean 0, variance σ² / (σ² + ε)
    scaled = normalised * gamma  # γ (d,) scales each feature
    return NormParts(mean, variance, root, normalised, scaled if beta is None else scaled + beta)


def _row_scale(a: Array) -> Array:
    """(n, 1): for each row, the power of two at or below its largest |entry| where that is
    above 1 (dividing by it is exact, and leaves every entry below 2 in size), else 1 (a row
    of small numbers is left as it is; so is one holding ∞ or NaN)."""
    xp = namespace_of(a)
    largest = xp.max(xp.abs(a), axis=-1, keepdims=True)
    ordinary = (largest > 1) & xp.isfinite(largest)
    exponent = xp.floor(xp.log2(xp.where(ordinary, largest, xp.ones_like(largest))))
    return xp.where(ordinary, xp.pow(xp.full_like(largest, 2.0), exponent), xp.ones_like(largest))


@dataclass(frozen=True)
class MultiHeadParts:
    q: Array  # (n, d_model) every head's queries side by side
    k: Array  # (m, g d_k) keys, from the source (X itself, or the memory); g d_k = d_model for g = h
    v: Array  # (m, g d_k) values, from the source
    heads: tuple[attention.AttentionResult, ...]  # h results: weights (n, m), output (n, d_k)
    concat: Array  # (n, d_model) [Y_1 | ... | Y_h]
    output: Array  # (n, d_model) concat W_O


Biases = tuple[Array | None, Array | None, Array | None, Array | None]
NO_BIASES: Biases = (None, None, None, None)


def multi_head(
    x: Array,
    source: Array,
    weights: tuple[Array, Array, Array, Array],
    heads: int,
    mask: Array | None = None,
    biases: Biases = NO_BIASES,
    kv_heads: int | None = None,
) -> MultiHeadParts:
    """MultiHead(Q = X W_Q + b_Q, K = S W_K + b_K, V = S W_V + b_V) W_O + b_O: self-attention
    when S is X, the decoder's cross-attention when S is the encoder's memory. ``mask`` is
    additive (n, m); a bias None is no bias. ``kv_heads`` g (None: h) divides h: W_K and W_V
    hold g blocks of d_k columns, and query head i reads block ⌊i / (h/g)⌋ of K and V."""
    w_q, w_k, w_v, w_o = weights  # W_Q, W_O (d_model, d_model); W_K, W_V (d_model, g d_k)
    b_q, b_k, b_v, b_o = biases  # b_Q, b_O (d_model,); b_K, b_V (g d_k,); or None
    group = heads // (heads if kv_heads is None else kv_heads)  # query heads per K/V head
    kv = heads // group  # g
    q = mh.affine(x, w_q, b_q)  # (n, d) @ (d, d) + (d,) -> (n, d)
    k = mh.affine(source, w_k, b_k)  # (m, d) @ (d, g d_k) -> (m, g d_k)
    v = mh.affine(source, w_v, b_v)  # (m, d) @ (d, g d_k) -> (m, g d_k)
    results = tuple(
        attention.attention(
            mh.head_block(q, i, heads),  # (n, d_k): head i's columns of Q
            mh.head_block(k, i // group, kv),  # (m, d_k): its key/value head's columns of K
            mh.head_block(v, i // group, kv),  # (m, d_k)
            mask=mask,  # (n, m) or None
        )
        for i in range(heads)
    )
    joined = mh.concat([result.output for result in results])  # h x (n, d_k) -> (n, d)
    return MultiHeadParts(q, k, v, results, joined, mh.affine(joined, w_o, b_o))  # (n, d)


ACTIVATIONS = ("relu", "gelu", "gelu-tanh")
_SQRT_HALF = 1 / math.sqrt(2)  # GELU(x) = x Φ(x), Φ(x) = (1 + erf(x / √2)) / 2
_SQRT_2_OVER_PI = math.sqrt(2) * (2 / math.sqrt(math.pi)) * 0.5  # √(2/π), as PyTorch writes it
_KAPPA = 0.044715  # and its cubic coefficient


def erf(x: Array) -> Array:
    """The error function entry by entry: torch's own for a tensor; math.erf for numpy, which
    has none (to within an ulp or two of each other in float64)."""
    if hasattr(x, "erf"):  # a torch tensor
        return x.erf()
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=x.dtype)


def activation(x: Array, name: str) -> Array:
    """The FFN's nonlinearity: ReLU max(0, x); GELU x Φ(x) with the exact normal CDF, as
    nn.GELU() and F.gelu compute it; or its tanh approximation, nn.GELU(approximate="tanh"):
    x (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2. Written in PyTorch's order of operations."""
    xp = namespace_of(x)
    if name == "relu":
        return xp.maximum(x, xp.zeros_like(x))  # NaN stays NaN
    if name == "gelu":
        return x * 0.5 * (1.0 + erf(x * _SQRT_HALF))
    if name == "gelu-tanh":
        inner = _SQRT_2_OVER_PI * (x + _KAPPA * (x * x * x))
        return 0.5 * x * (1.0 + xp.tanh(inner))
    raise ValueError(f"unknown activation {name!r}; one of {ACTIVATIONS}")


@dataclass(frozen=True)
class FeedForwardParts:
    pre: Array  # (n, d_ff) X W_1 + b_1
    hidden: Array  # (n, d_ff) the activation of it (ReLU: the negative entries set to 0)
    output: Array  # (n, d_model) hidden W_2 + b_2


def feed_forward(
    x: Array,
    w1: Array,
    b1: Array | None,
    w2: Array,
    b2: Array | None,
    act: str = "relu",
) -> FeedForwardParts:
    """The position-wise FFN: the same two-layer network applied to every row on its own; a
    bias None is no bias."""
    pre = mh.affine(x, w1, b1)  # (n, d) @ (d, d_ff) + (d_ff,) -> (n, d_ff)
    hidden = activation(pre, act)  # (n, d_ff)
    return FeedForwardParts(pre, hidden, mh.affine(hidden, w2, b2))  # (n, d_ff) -> (n, d)
