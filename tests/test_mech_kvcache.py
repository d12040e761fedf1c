"""Generation with a KV cache: the same rows as full causal attention, less work, its bytes."""

from __future__ import annotations

import numpy as np
import pytest

from attn_cli.mechanisms import kvcache
from attn_cli.mechanisms.attention import attention
from attn_cli.mechanisms.masks import causal_additive
from tests.conftest import random_qkv, softmax_rows


@pytest.mark.parametrize(("n", "d_k", "d_v"), [(1, 2, 3), (5, 3, 2), (17, 8, 4), (33, 16, 16)])
def test_cached_rows_equal_full_causal_attention(n, d_k, d_v):
    q, k, v = random_qkv(n, n, n, d_k=d_k, d_v=d_v)
    steps = kvcache.generate(q, k, v)
    assert [step.keys.shape for step in steps] == [(t + 1, d_k) for t in range(n)]
    full = attention(q, k, v, mask=causal_additive(q @ k.T))
    # Same math, other arithmetic: a 1 × (t+1) product instead of row t of an n × n one, so
    # BLAS may sum in another order: equal to a few units in the last place, not bit for bit.
    np.testing.assert_allclose(kvcache.cached_outputs(steps), full.output, rtol=1e-12, atol=1e-15)
    for step in steps:
        np.testing.assert_array_equal(step.keys, k[: step.t + 1])
        expected = softmax_rows(q[step.t] @ k[: step.t + 1].T / np.sqrt(d_k))
        np.testing.assert_allclose(step.weights[0], expected, rtol=1e-13)


def test_cached_rows_are_bit_for_bit_when_the_arithmetic_is_the_same():
    """With integer scores every product and sum is exact, whatever the order: equality."""
    rng = np.random.default_rng(4)
    n = 6
    q, k, v = (rng.integers(-2, 3, size=(n, 4)).astype(np.float64) for _ in range(3))
    steps = kvcache.generate(q, k, v, use_scale=False)
    full = attention(q, k, v, use_scale=False, mask=causal_additive(q @ k.T))
    for step in steps:
        np.testing.assert_array_equal(step.scaled[0], full.scaled[step.t, : step.t + 1])


def test_kvcache_agrees_with_torch_causal_sdpa(torch):
    q, k, v = random_qkv(9, 12, 12, d_k=4, d_v=3)
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), is_causal=True
    )
    steps = kvcache.generate(*(torch.from_numpy(a) for a in (q, k, v)))
    np.testing.assert_allclose(kvcache.cached_outputs(steps).numpy(), expected.numpy(), rtol=1e-12)


def test_work_with_and_without_the_cache():
    for n in (1, 2, 7, 30):
        assert kvcache.scores_with_cache(n) == sum(t + 1 for t in range(n))
        assert kvcache.scores_without_cache(n) == sum(
            sum(s + 1 for s in range(t + 1)) for t in range(n)
        )


def test_cache_bytes_per_token_mha_gqa_mqa():
    # 32 layers, 32 heads of 128, float16: 2 (K and V) · 32 · 32 · 128 · 2 bytes = 512 KiB
    assert kvcache.cache_bytes_per_token(32, 32, 128, "float16") == 2 * 32 * 32 * 128 * 2
    assert kvcache.cache_bytes_per_token(32, 32, 128, "float16", kv_heads=8) == 2 * 32 * 8 * 128 * 2
    assert kvcache.cache_bytes_per_token(32, 32, 128, "float32", kv_heads=1) == 2 * 32 * 128 * 4
    with pytest.raises(ValueError, match="divide"):
        kvcache.cache_bytes_per_token(2, 8, 64, kv_heads=3)
