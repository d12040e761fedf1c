"""Local (sliding-window), global and graph masks, and blockwise window attention."""

from __future__ import annotations

import numpy as np
import pytest

from attn_cli.mechanisms import local
from tests.conftest import random_qkv, softmax_rows


def band_by_loops(n: int, w: int, causal: bool) -> np.ndarray:
    """The band written out entry by entry."""
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            mask[i, j] = (0 <= i - j <= w) if causal else abs(i - j) <= w
    return mask


def masked_attention(q, k, v, allowed):
    """softmax over the allowed keys only, in float64, written without the mechanism."""
    s = q @ k.T / np.sqrt(q.shape[-1])
    return softmax_rows(np.where(allowed, s, -np.inf)) @ v


def test_window_of_one_on_four_tokens_by_hand():
    s = np.zeros((4, 4))
    assert local.window_allowed(s, 1).tolist() == [
        [True, True, False, False],
        [True, True, True, False],
        [False, True, True, True],
        [False, False, True, True],
    ]
    assert local.window_allowed(s, 1, causal=True).tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [False, True, True, False],
        [False, False, True, True],
    ]
    # 4 + 2·3 = 10 of 16 scores; causal 4 + 3 = 7
    assert local.computed_scores(local.window_allowed(s, 1)) == (10, 16)
    assert local.window_pairs(4, 1) == 10 and local.window_pairs(4, 1, causal=True) == 7


@pytest.mark.parametrize("seed", range(6))
def test_window_mask_and_pair_count_match_loops(seed):
    rng = np.random.default_rng(seed)
    n, w = int(rng.integers(1, 30)), int(rng.integers(0, 35))
    for causal in (False, True):
        expected = band_by_loops(n, w, causal)
        got = local.window_allowed(np.zeros((n, n)), w, causal=causal)
        assert np.array_equal(got, expected)
        assert local.window_pairs(n, w, causal) == int(expected.sum())


def test_a_block_of_the_window_mask_is_that_block_of_the_full_mask():
    full = band_by_loops(20, 3, False)
    block = local.window_allowed(np.zeros((5, 7)), 3, row0=8, col0=6)
    assert np.array_equal(block, full[8:13, 6:13])


def test_global_tokens_open_their_rows_and_columns():
    allowed = local.with_global(local.window_allowed(np.zeros((6, 6)), 0), [0, 4])
    expected = np.eye(6, dtype=bool)
    expected[[0, 4], :] = True
    expected[:, [0, 4]] = True
    assert np.array_equal(allowed, expected)


def neighbours(allowed: np.ndarray) -> list[list[int]]:
    """Each row's allowed columns, as lists: N(i) read off the mask."""
    return [[int(j) for j in np.flatnonzero(row)] for row in allowed]


def test_graph_mask_from_edges_and_from_adjacency():
    like = np.zeros((4, 4))
    edges = [(0, 1), (1, 2), (2, 0), (2, 3)]
    allowed = local.graph_allowed(like, edges)
    assert neighbours(allowed) == [[1, 2], [0, 2], [0, 1, 3], [2]]
    directed = local.graph_allowed(like, edges, directed=True)
    assert neighbours(directed) == [[1], [2], [0, 3], []]  # node 3 has no neighbour
    looped = local.graph_allowed(like, edges, directed=True, self_loops=True)
    assert neighbours(looped) == [[0, 1], [1, 2], [0, 2, 3], [3]]
    adjacency = np.array([[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 1], [0, 0, 1, 0]])
    assert np.array_equal(local.adjacency_allowed(adjacency), allowed)


@pytest.mark.parametrize(("n", "w", "block"), [(1, 0, 4), (13, 2, 4), (37, 5, 8), (20, 50, 7)])
@pytest.mark.parametrize("causal", [False, True])
def test_blockwise_window_attention_equals_the_dense_masked_one(n, w, block, causal):
    q, k, v = random_qkv(n * 7 + w, n, n, d_k=5, d_v=3)
    expected = masked_attention(q, k, v, band_by_loops(n, w, causal))
    got = local.window_attention(q, k, v, w, causal=causal, block=block)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)


def random_band_case(seed: int) -> tuple[int, int, int, bool]:
    """(n, w, block, causal) drawn so that every edge comes up: n not a multiple of the block,
    w = 0, w ≥ n, a block larger than n, a block smaller than w."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 90))
    w = int(rng.choice([0, rng.integers(1, 12), n - 1, n, n + int(rng.integers(0, 20))]))
    block = int(rng.choice([1, rng.integers(2, 40), n, n + 5]))
    return n, max(w, 0), block, bool(rng.integers(2))


@pytest.mark.parametrize("seed", range(24))
def test_window_attention_on_random_shapes_equals_the_dense_masked_softmax(seed):
    """Heads and a batch in front, float64, against the dense masked softmax to 1e-12."""
    n, w, block, causal = random_band_case(seed)
    rng = np.random.default_rng(1000 + seed)
    q, k, v = (rng.standard_normal((2, 3, n, size)) for size in (4, 4, 5))  # (batch, heads, n, d)
    allowed = band_by_loops(n, w, causal)
    expected = softmax_rows(np.where(allowed, q @ np.swapaxes(k, -1, -2) / 2.0, -np.inf)) @ v
    got = local.window_attention(q, k, v, w, causal=causal, block=block)
    assert got.shape == (2, 3, n, 5)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_window_attention_in_torch_equals_sdpa_with_the_band_mask(torch, seed):
    """The torch path of the same code, against torch's sdpa given the dense band (float64)."""
    n, w, block, causal = random_band_case(100 + seed)
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, n, 8, generator=generator, dtype=torch.float64) for _ in range(3))
    band = torch.from_numpy(band_by_loops(n, w, causal))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=band)
    got = local.window_attention(q, k, v, w, causal=causal, block=block)
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=0, atol=1e-12)
    numpy_path = local.window_attention(
        q.numpy(), k.numpy(), v.numpy(), w, causal=causal, block=block
    )
    np.testing.assert_allclose(got.numpy(), numpy_path, rtol=0, atol=1e-13)


def test_window_blocks_by_hand():
    """n = 10, w = 2, blocks of 4: three blocks (the last with two stand-in rows), each seeing
    4 + 2·2 = 8 keys (causal 4 + 2 = 6): 96 (72) scores, against the 100 of the full matrix."""
    blocks = local.window_blocks(10, 2, block=4)
    assert (blocks.size, blocks.count, blocks.span, blocks.reach) == (4, 3, 8, 2)
    assert blocks.scores == 96 and local.window_blocks(10, 2, True, 4).scores == 72
    wide = local.window_blocks(5, 50, block=8)  # a window past both ends reaches n − 1 = 4
    assert (wide.size, wide.count, wide.span, wide.reach) == (5, 1, 13, 4)


def test_the_scores_grow_as_n_times_the_span():
    """O(n·(block + 2w)) scores, not n²: doubling n doubles them."""
    counts = [local.window_blocks(n, 64, block=128).scores for n in (4096, 8192, 16384)]
    assert counts == [4096 * 256, 8192 * 256, 16384 * 256]


def test_window_and_graph_masks_agree_with_torch_sdpa(torch):
    F = torch.nn.functional
    rng = np.random.default_rng(3)
    for n, w, causal in [(9, 2, False), (16, 3, True), (12, 0, False)]:
        q, k, v = (rng.standard_normal((2, n, 4)) for _ in range(3))  # (heads, n, d)
        allowed = local.window_allowed(np.zeros((n, n)), w, causal=causal)
        expected = F.scaled_dot_product_attention(
            *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=torch.from_numpy(allowed)
        ).numpy()
        np.testing.assert_allclose(
            local.window_attention(q, k, v, w, causal=causal, block=4), expected, atol=1e-14
        )
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        torch_mask = local.window_allowed(torch.zeros(n, n, dtype=torch.float64), w, causal=causal)
        assert torch.equal(torch_mask, torch.from_numpy(allowed))
        torch_out = local.window_attention(tq, tk, tv, w, causal=causal, block=5)
        np.testing.assert_allclose(torch_out.numpy(), expected, atol=1e-14)
    edges = [(0, 1), (1, 2), (2, 0), (2, 3), (4, 4)]
    graph = local.graph_allowed(np.zeros((5, 5)), edges, self_loops=True)
    q, k, v = (rng.standard_normal((5, 3)) for _ in range(3))
    expected = F.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=torch.from_numpy(graph)
    ).numpy()
    np.testing.assert_allclose(masked_attention(q, k, v, graph), expected, atol=1e-14)
    torch_graph = local.graph_allowed(torch.zeros(5, 5), edges, self_loops=True)
    assert torch.equal(torch_graph, torch.from_numpy(graph))
