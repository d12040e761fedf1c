"""RoPE scaling: the frequencies θᵢ = base^(−2i/r) changed so that a model trained on a context
of L positions (``original_max_position_embeddings``) reads positions past it.

Each scaling divides pair i's frequency by something between 1 (the pair is *kept*) and the
factor s (the pair is *interpolated*: position m turns it as far as position m/s did in
training); a pair in between is *blended*. ``interpolated`` below is pair i's share w ∈ [0, 1] of
the division: 0 kept, 1 interpolated.

* linear, position interpolation (Chen et al., 2023, "Extending Context Window of Large
  Language Models via Positional Interpolation"; Hugging Face's
  ``_compute_linear_scaling_rope_parameters``): θ'ᵢ = θᵢ / s, every pair interpolated, which
  is positions ÷ s.
* NTK-aware (bloc97, 2023; the YaRN paper's section 3.1; Hugging Face's dynamic NTK computes the
  same base from the current length): the base raised to base · s^(r/(r−2)), so that
  θ'ᵢ = θᵢ · s^(−2i/(r−2)): pair 0 kept, the last pair interpolated, the rest blended
  geometrically (w = 2i/(r − 2)).
* YaRN (Peng et al., 2023, "YaRN: Efficient Context Window Extension of Large Language
  Models"; Hugging Face's ``_compute_yarn_parameters``): pair i turns L/λᵢ times in the original
  context; pairs that turn more than β_fast times are kept, pairs that turn less than β_slow
  times interpolated, and a linear ramp over the pair index between them blends
  θ'ᵢ = (1 − w) θᵢ + w θᵢ / s. The ramp's ends are the pair indices where L/λ = β, rounded
  outwards (floor, ceil) as Hugging Face's default ``truncate`` does. Its attention factor
  0.1 ln s + 1 (``get_mscale``) multiplies cos and sin, so q·k by its square: the paper's
  temperature, √(1/t) = 0.1 ln s + 1.
* Llama 3.1 (Meta's ``apply_scaling`` in llama-models; Hugging Face's
  ``_compute_llama3_parameters``): a pair whose wavelength λᵢ = 2π/θᵢ is shorter than
  L / high_freq_factor is kept, one longer than L / low_freq_factor interpolated, and between
  them θ'ᵢ = (1 − γ) θᵢ / s + γ θᵢ with γ = (L/λᵢ − low_freq_factor) / (high_freq_factor −
  low_freq_factor), so w = 1 − γ.

Shapes: pairs (r/2,) (the pair indices 0 … r/2 − 1, as floats), frequencies (r/2,).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attn_cli.core import variants
from attn_cli.core.backend import Array, namespace_of

SCALINGS: tuple[str, ...] = variants.ROPE_SCALINGS
# Hugging Face's and the YaRN paper's defaults (α = 1, β = 32), and Meta's for Llama 3.1.
BETA_FAST, BETA_SLOW = 32.0, 1.0
LOW_FREQ_FACTOR, HIGH_FREQ_FACTOR = 1.0, 4.0


@dataclass(frozen=True)
class Scaling:
    """A model config's ``rope_scaling``, in its own names."""

    rope_type: str  # one of SCALINGS
    factor: float  # s
    original_max_position_embeddings: int  # L
    low_freq_factor: float = LOW_FREQ_FACTOR  # llama3
    high_freq_factor: float = HIGH_FREQ_FACTOR  # llama3
    beta_fast: float = BETA_FAST  # yarn
    beta_slow: float = BETA_SLOW  # yarn


@dataclass(frozen=True)
class Scaled:
    theta: Array  # θ'ᵢ (r/2,)
    interpolated: Array  # wᵢ ∈ [0, 1] (r/2,): 0 kept, 1 interpolated, between blended
    attention_factor: float  # multiplies cos and sin (YaRN's 0.1 ln s + 1, else 1)


def ntk_base(base: float, factor: float, rotary_dim: int) -> float:
    """NTK-aware scaling's new base: base · s^(r/(r−2)) (needs r ≥ 4)."""
    return base * factor ** (rotary_dim / (rotary_dim - 2))


def yarn_correction_dim(rotations: float, rotary_dim: int, base: float, context: int) -> float:
    """The pair index (not rounded) whose wavelength fits ``rotations`` times into the
    context: L / (2π base^(2i/r)) = rotations, solved for i."""
    return rotary_dim * math.log(context / (rotations * 2 * math.pi)) / (2 * math.log(base))


def yarn_correction_range(
    beta_fast: float, beta_slow: float, rotary_dim: int, base: float, context: int
) -> tuple[int, int]:
    """The ramp's ends: the pair index of β_fast turns rounded down, that of β_slow rounded up,
    kept within 0 … r − 1 (Hugging Face's bound; the ramp clamps at the last pair anyway)."""
    low = math.floor(yarn_correction_dim(beta_fast, rotary_dim, base, context))
    high = math.ceil(yarn_correction_dim(beta_slow, rotary_dim, base, context))
    return max(low, 0), min(high, rotary_dim - 1)


def yarn_ramp(pairs: Array, low: float, high: float) -> Array:
    """(i − low) / (high − low) clamped to [0, 1]; equal ends are moved 0.001 apart."""
    xp = namespace_of(pairs)
    if low == high:
        high += 0.001
    ramp = (pairs - low) / (high - low)
    return xp.minimum(xp.maximum(ramp, xp.zeros_like(ramp)), xp.ones_like(ramp))


def yarn_attention_factor(factor: float) -> float:
    """YaRN's factor on cos and sin, √(1/t) = 0.1 ln s + 1 (1 where s ≤ 1)."""
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0


def llama3_interpolated(theta: Array, scaling: Scaling) -> Array:
    """Llama 3.1's share w of the division, by wavelength: 0 below L / high_freq_factor, 1 above
    L / low_freq_factor, 1 − γ between."""
    xp = namespace_of(theta)
    context = scaling.original_max_position_embeddings
    wavelength = 2 * math.pi / theta
    smooth = (context / wavelength - scaling.low_freq_factor) / (
        scaling.high_freq_factor - scaling.low_freq_factor
    )
    zeros, ones = xp.zeros_like(theta), xp.ones_like(theta)
    share = xp.where(wavelength > context / scaling.low_freq_factor, ones, 1 - smooth)
    return xp.where(wavelength < context / scaling.high_freq_factor, zeros, share)


def scale(theta: Array, pairs: Array, rotary_dim: int, base: float, scaling: Scaling) -> Scaled:
    """The scaled frequencies of ``theta`` = base^(−2i/r), and each pair's share w."""
    xp = namespace_of(theta, pairs)
    s, kind = scaling.factor, scaling.rope_type
    if kind == "linear":
        return Scaled(theta / s, xp.ones_like(theta), 1.0)
    if kind == "ntk":
        new_base = ntk_base(base, s, rotary_dim)
        return Scaled(new_base ** (-2.0 * pairs / rotary_dim), 2.0 * pairs / (rotary_dim - 2), 1.0)
    if kind == "yarn":
        low, high = yarn_correction_range(
            scaling.beta_fast,
            scaling.beta_slow,
            rotary_dim,
            base,
            scaling.original_max_position_embeddings,
        )
        share = yarn_ramp(pairs, low, high)
        blended = (theta / s) * share + theta * (1 - share)
        return Scaled(blended, share, yarn_attention_factor(s))
    if kind == "llama3":
        share = llama3_interpolated(theta, scaling)
        return Scaled((1 - share) * theta + share * theta / s, share, 1.0)
    raise ValueError(f"unknown RoPE scaling {kind!r}; one of {SCALINGS}")


def regime(share: float) -> str:
    """A pair's share w in words: kept (0), interpolated (1) or blended."""
    if share == 0:
        return "kept"
    if share == 1:
        return "interpolated"
    return "blended"
