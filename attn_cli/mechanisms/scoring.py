"""What the 2026 models do to the scores besides scaling them: soft-capping and QK-norm.

* Soft-capping (Gemma 2): s ↦ cap·tanh(s / cap). Near 0 it is the identity (tanh x ≈ x); large
  scores are squeezed towards ±cap, so no logit exceeds the cap however large q·k grows. tanh
  is increasing and its slope is at most 1, so the order of the scores is kept and every gap
  between two scores shrinks or stays: the largest weight of a row can only fall or stay.
* QK-norm (ViT-22B with LayerNorm; OLMo 2, Qwen 3, Gemma 3 with RMSNorm): each query and key
  row normalised before the dot product, so its length is about √d and a scaled score lies
  within ±√d, whatever the scale of the inputs. Without a learned gain here (its value at
  initialisation: 1).

Shapes: scores (m, n); q, k (rows, d), normalised along the last axis.
"""

from __future__ import annotations

from attn_cli.core.backend import Array, namespace_of

# The epsilons inside the square roots: nn.LayerNorm's default, and the rms_norm_eps of the
# Llama 3 and Qwen 3 configurations.
LAYER_NORM_EPS = 1e-5
RMS_NORM_EPS = 1e-6


def softcap(scores: Array, cap: float) -> Array:
    """cap·tanh(s / cap), entry by entry: within (−cap, cap)."""
    xp = namespace_of(scores)
    return cap * xp.tanh(scores / cap)  # (m, n)


def layer_norm(x: Array, eps: float = LAYER_NORM_EPS) -> Array:
    """(x − mean) / √(var + ε) along each row (the biased variance, as nn.LayerNorm)."""
    xp = namespace_of(x)
    centred = x - xp.mean(x, axis=-1, keepdims=True)
    return centred / xp.sqrt(xp.mean(centred * centred, axis=-1, keepdims=True) + eps)


def rms_norm(x: Array, eps: float = RMS_NORM_EPS) -> Array:
    """x / √(mean(x²) + ε) along each row: no centring (as nn.RMSNorm and Llama's RMSNorm)."""
    xp = namespace_of(x)
    return x / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + eps)


NORMS = {"layernorm": layer_norm, "rmsnorm": rms_norm}
EPSILONS = {"layernorm": LAYER_NORM_EPS, "rmsnorm": RMS_NORM_EPS}


def qk_norm(x: Array, kind: str) -> Array:
    """Row ``x`` normalised by ``kind`` ("layernorm" or "rmsnorm")."""
    return NORMS[kind](x)
