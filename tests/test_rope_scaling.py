"""RoPE scaling (attn_cli.mechanisms.rope_scaling): each scaling's frequencies against the
published formulas written again here, pair by pair in plain Python floats (Meta's
apply_scaling loop for Llama 3.1; the YaRN paper and Hugging Face's _compute_yarn_parameters;
position interpolation; NTK-aware), on the published configs: Llama 3.1 8B (rope_theta 500000,
head_dim 128, factor 8, low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings
8192) and Qwen2.5 with YaRN (rope_theta 1000000, head_dim 128, factor 4,
original_max_position_embeddings 32768, beta_fast 32, beta_slow 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attn_cli.mechanisms import rope_scaling, rotary

LLAMA31 = rope_scaling.Scaling("llama3", 8.0, 8192, low_freq_factor=1.0, high_freq_factor=4.0)
QWEN25_YARN = rope_scaling.Scaling("yarn", 4.0, 32768, beta_fast=32.0, beta_slow=1.0)


def plain_frequencies(base: float, dim: int) -> list[float]:
    """1 / base^(2i/d), i = 0 … d/2 − 1, as the models' code writes inv_freq."""
    return [1.0 / base ** (j / dim) for j in range(0, dim, 2)]


def llama3_reference(freqs, factor, low_freq_factor, high_freq_factor, old_context_len):
    """Llama 3.1's scaling as Meta's apply_scaling states it, one frequency at a time."""
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            out.append(freq)
        elif wavelen > low_freq_wavelen:
            out.append(freq / factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (
                high_freq_factor - low_freq_factor
            )
            out.append((1 - smooth) * freq / factor + smooth * freq)
    return out


def yarn_reference(base, dim, factor, context, beta_fast, beta_slow):
    """YaRN's frequencies and attention factor as Hugging Face's _compute_yarn_parameters states
    them (truncate: the correction range rounded outwards)."""

    def correction_dim(rotations):
        return dim * math.log(context / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    out = []
    for i, j in enumerate(range(0, dim, 2)):
        pos_freq = base ** (j / dim)
        extrapolation, interpolation = 1.0 / pos_freq, 1.0 / (factor * pos_freq)
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        extrapolation_factor = 1 - ramp
        out.append(
            interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor
        )
    return out, (0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0), (low, high)


def scaled(scaling: rope_scaling.Scaling, base: float, dim: int):
    pairs = np.arange(dim // 2, dtype=np.float64)
    theta = rotary.frequencies(pairs, dim, base)
    return rope_scaling.scale(theta, pairs, dim, base, scaling), theta


def regimes(result) -> list[str]:
    return [rope_scaling.regime(float(w)) for w in np.asarray(result.interpolated)]


def test_llama31_8b_against_metas_apply_scaling():
    result, theta = scaled(LLAMA31, 500000.0, 128)
    expected = llama3_reference(plain_frequencies(500000.0, 128), 8.0, 1.0, 4.0, 8192)
    np.testing.assert_allclose(result.theta, expected, rtol=1e-14, atol=0)
    words = regimes(result)
    # Wavelength 2π·500000^(i/64) below 8192/4 = 2048 up to pair 28 (i < 28.22), above 8192
    # from pair 35 (i > 34.98): 29 kept, 6 blended, 29 interpolated.
    assert words == ["kept"] * 29 + ["blended"] * 6 + ["interpolated"] * 29
    np.testing.assert_array_equal(result.theta[:29], theta[:29])
    np.testing.assert_allclose(result.theta[35:], theta[35:] / 8, rtol=1e-15)
    lengths = 2 * np.pi / theta
    assert lengths[28] < 2048 <= lengths[29] and lengths[34] <= 8192 < lengths[35]
    assert result.attention_factor == 1.0


def test_qwen25_yarn_against_the_formulas():
    result, _ = scaled(QWEN25_YARN, 1e6, 128)
    expected, attention, (low, high) = yarn_reference(1e6, 128, 4.0, 32768, 32.0, 1.0)
    np.testing.assert_allclose(result.theta, expected, rtol=1e-14, atol=0)
    # Pair i turns 32768 / (2π·10^(6i/64)) times in the original context: 32 times at
    # i = 23.60, once at i = 39.65; the ramp runs from pair 23 to pair 40.
    assert rope_scaling.yarn_correction_dim(32, 128, 1e6, 32768) == pytest.approx(23.595947608)
    assert rope_scaling.yarn_correction_dim(1, 128, 1e6, 32768) == pytest.approx(39.650880710)
    assert (low, high) == (23, 40) == rope_scaling.yarn_correction_range(32, 1, 128, 1e6, 32768)
    assert regimes(result) == ["kept"] * 24 + ["blended"] * 16 + ["interpolated"] * 24
    # The paper's temperature: √(1/t) = 0.1 ln s + 1 on cos and sin, its square on q·k.
    assert result.attention_factor == attention == pytest.approx(1.1386294361119890, rel=1e-15)
    assert result.attention_factor**2 == pytest.approx(1.2964769927807063, rel=1e-15)


def test_linear_is_positions_divided_by_the_factor():
    """Chen et al.: position m read as m / s; the angles m·θᵢ/s are those of position m/s."""
    result, theta = scaled(rope_scaling.Scaling("linear", 4.0, 2048), 10000.0, 8)
    np.testing.assert_allclose(result.theta, theta / 4, rtol=1e-15)
    positions = np.array([0.0, 5.0, 4096.0])
    np.testing.assert_allclose(
        rotary.angles(positions, result.theta), rotary.angles(positions / 4, theta), rtol=1e-15
    )
    assert regimes(result) == ["interpolated"] * 4


@pytest.mark.parametrize(("dim", "factor"), [(128, 4.0), (8, 2.0), (4, 8.0)])
def test_ntk_aware_raises_the_base(dim, factor):
    """base' = base · s^(d/(d−2)): pair 0 kept, the last pair divided by s exactly."""
    result, theta = scaled(rope_scaling.Scaling("ntk", factor, 4096), 10000.0, dim)
    new_base = 10000.0 * factor ** (dim / (dim - 2))
    np.testing.assert_allclose(result.theta, plain_frequencies(new_base, dim), rtol=1e-14)
    assert result.theta[0] == theta[0] == 1.0
    assert result.theta[-1] == pytest.approx(theta[-1] / factor, rel=1e-13)
    words = regimes(result)
    assert words[0] == "kept" and words[-1] == "interpolated"
    assert set(words[1:-1]) <= {"blended"}


@pytest.mark.parametrize("seed", range(6))
def test_random_configs_against_the_references(seed):
    rng = np.random.default_rng(seed)
    dim = 2 * int(rng.integers(2, 65))
    base = float(rng.choice([10000.0, 500000.0, 1e6, 2.0 + 1000 * rng.random()]))
    factor = float(rng.choice([1.0, 2.0, 4.0, 8.0, 1 + 31 * rng.random()]))
    context = int(rng.choice([512, 2048, 8192, 32768]))
    low, high = sorted(rng.uniform(0.5, 8.0, size=2))
    got, _ = scaled(rope_scaling.Scaling("llama3", factor, context, low, high), base, dim)
    want = llama3_reference(plain_frequencies(base, dim), factor, low, high, context)
    np.testing.assert_allclose(got.theta, want, rtol=1e-14)
    fast, slow = float(rng.uniform(8, 64)), float(rng.uniform(0.5, 4))
    got, _ = scaled(rope_scaling.Scaling("yarn", factor, context, beta_fast=fast, beta_slow=slow),
                    base, dim)  # fmt: skip
    want, attention, _ = yarn_reference(base, dim, factor, context, fast, slow)
    np.testing.assert_allclose(got.theta, want, rtol=1e-14)
    assert got.attention_factor == pytest.approx(attention, rel=1e-15)
    # Every scaled frequency lies between θᵢ / s and θᵢ.
    for kind in rope_scaling.SCALINGS:
        result, theta = scaled(rope_scaling.Scaling(kind, factor, context), base, dim)
        assert np.all(result.theta <= theta * (1 + 1e-15))
        assert np.all(result.theta >= theta / factor * (1 - 1e-13))


@pytest.mark.parametrize("kind", rope_scaling.SCALINGS)
def test_torch_agrees_with_numpy(torch, kind):
    scaling = rope_scaling.Scaling(kind, 8.0, 8192)
    pairs = np.arange(64, dtype=np.float64)
    want = rope_scaling.scale(
        rotary.frequencies(pairs, 128, 500000.0), pairs, 128, 500000.0, scaling
    )
    t_pairs = torch.arange(64, dtype=torch.float64)
    got = rope_scaling.scale(
        rotary.frequencies(t_pairs, 128, 500000.0), t_pairs, 128, 500000.0, scaling
    )
    np.testing.assert_allclose(got.theta.numpy(), want.theta, rtol=1e-15)
    np.testing.assert_allclose(got.interpolated.numpy(), want.interpolated, rtol=0, atol=1e-15)
    assert got.attention_factor == want.attention_factor
