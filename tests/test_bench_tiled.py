"""The tiled online-softmax mechanism equals plain softmax attention (numpy and torch)."""

from __future__ import annotations

import numpy as np
import pytest

from attn_cli.mechanisms.masks import causal_allowed
from attn_cli.mechanisms.tiled import block_scores, block_steps, finish, tiled_attention


def plain_attention(q, k, v, causal=False, use_scale=True):
    """Written out here, independently of the package: softmax(Q Kᵀ / √d + mask) V."""
    s = q @ np.swapaxes(k, -1, -2)
    if use_scale:
        s = s / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


CASES = [
    # (m, n, block, causal)
    (7, 7, 3, False),
    (7, 7, 3, True),
    (16, 16, 4, True),
    (16, 16, 16, False),
    (5, 5, 8, True),  # one block larger than n
    (33, 33, 5, True),  # n not divisible by the block
    (4, 9, 2, False),  # cross-attention: m != n
    (10, 10, 1, True),  # one key per block
]


@pytest.mark.parametrize(("m", "n", "block", "causal"), CASES)
def test_tiled_equals_plain_numpy(m, n, block, causal):
    rng = np.random.default_rng(m * 100 + n + block)
    q = rng.standard_normal((2, 3, m, 8))
    k = rng.standard_normal((2, 3, n, 8))
    v = rng.standard_normal((2, 3, n, 5))
    expected = plain_attention(q, k, v, causal)
    out = tiled_attention(q, k, v, block=block, causal=causal)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("m", "n", "block", "causal"), CASES)
def test_tiled_equals_torch_sdpa(torch, m, n, block, causal):
    generator = torch.Generator().manual_seed(n * 7 + block)
    q = torch.randn(2, 3, m, 8, generator=generator, dtype=torch.float64)
    k = torch.randn(2, 3, n, 8, generator=generator, dtype=torch.float64)
    v = torch.randn(2, 3, n, 8, generator=generator, dtype=torch.float64)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out = tiled_attention(q, k, v, block=block, causal=causal)
    assert isinstance(out, torch.Tensor)
    assert torch.allclose(out, expected, rtol=0, atol=1e-12)


def test_unscaled_and_float32():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((12, 4)).astype(np.float32) for _ in range(3))
    out = tiled_attention(q, k, v, block=5, use_scale=False)
    assert out.dtype == np.float32
    expected = plain_attention(*(a.astype(np.float64) for a in (q, k, v)), use_scale=False)
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_block_steps_track_running_max_and_sum():
    rng = np.random.default_rng(5)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((7, 4)), rng.standard_normal((7, 2))
    steps = list(block_steps(q, k, v, block=3))
    assert [(step.start, step.stop) for step in steps] == [(0, 3), (3, 6), (6, 7)]
    s = q @ k.T / 2.0  # √4 = 2
    first = steps[0]
    assert np.all(np.isneginf(first.before.row_max)) and np.all(first.update.rescale == 0)
    for step in steps:
        seen = s[:, : step.stop]
        np.testing.assert_allclose(step.update.state.row_max[:, 0], seen.max(axis=1))
        row_sum = np.exp(seen - seen.max(axis=1, keepdims=True)).sum(axis=1)
        np.testing.assert_allclose(step.update.state.row_sum[:, 0], row_sum)
        np.testing.assert_allclose(
            step.update.rescale, np.exp(step.before.row_max - step.update.state.row_max)
        )
        assert np.all(step.update.p <= 1.0)
    np.testing.assert_allclose(finish(steps[-1].update.state), plain_attention(q, k, v), atol=1e-12)


@pytest.mark.parametrize(
    ("row0", "col0", "rows", "cols"), [(0, 0, 5, 5), (3, 0, 4, 2), (2, 4, 3, 3)]
)
def test_causal_mask_of_a_block_is_that_block_of_the_full_mask(row0, col0, rows, cols):
    full = np.tril(np.ones((8, 8), dtype=bool))  # key j <= query i, written out here
    block = np.zeros((2, rows, cols))  # a batch dimension in front, as in the bench
    expected = full[row0 : row0 + rows, col0 : col0 + cols]
    np.testing.assert_array_equal(causal_allowed(block, row0, col0), expected)
    rng = np.random.default_rng(row0 + col0)
    q, k = rng.standard_normal((2, rows, 4)), rng.standard_normal((2, cols, 4))
    s = block_scores(q, k, causal=True, row0=row0, col0=col0)
    plain = q @ np.swapaxes(k, -1, -2) / 2.0  # √d_k = 2
    np.testing.assert_array_equal(np.isneginf(s), np.broadcast_to(~expected, s.shape))
    np.testing.assert_allclose(s[..., expected], plain[..., expected], rtol=1e-15)
