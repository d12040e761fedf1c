"""Linear attention: feature maps, both orders of the product, FLOPs, the causal running sum."""

from __future__ import annotations

import numpy as np
import pytest

from attn_cli.mechanisms import linear
from tests.conftest import random_qkv


def elu1(x: np.ndarray) -> np.ndarray:
    return np.array([[xi + 1 if xi > 0 else np.exp(xi) for xi in row] for row in x])


def relu_loops(x: np.ndarray) -> np.ndarray:
    return np.array([[xi if xi > 0 else 0.0 for xi in row] for row in x])


def leaky_squared_loops(x: np.ndarray) -> np.ndarray:
    """(leaky_relu(x) + 0.05)², slope 0.01 below 0."""
    return np.array([[((xi if xi >= 0 else 0.01 * xi) + 0.05) ** 2 for xi in row] for row in x])


def direct(q, k, v, phi):
    """out_i = Σ_j (φ(q_i)·φ(k_j)) v_j / Σ_j φ(q_i)·φ(k_j), with loops, in float64; a row whose
    similarities are all 0 is 0 (the lesson's convention for 0 / 0)."""
    fq, fk = phi(q), phi(k)
    out = np.zeros((q.shape[0], v.shape[1]))
    for i in range(q.shape[0]):
        sims = [sum(fq[i, c] * fk[j, c] for c in range(fq.shape[1])) for j in range(k.shape[0])]
        if sum(sims) != 0:
            out[i] = sum(s * v[j] for j, s in enumerate(sims)) / sum(sims)
    return out


def direct_causal(q, k, v, phi):
    fq, fk = phi(q), phi(k)
    out = np.zeros((q.shape[0], v.shape[1]))
    for i in range(q.shape[0]):
        sims = [float(fq[i] @ fk[j]) for j in range(i + 1)]
        if sum(sims) != 0:
            out[i] = sum(s * v[j] for j, s in enumerate(sims)) / sum(sims)
    return out


def test_elu_plus_one_by_hand():
    x = np.array([[-1.0, 0.0, 2.0, -800.0]])
    np.testing.assert_array_equal(linear.elu_plus_one(x), [[np.exp(-1.0), 1.0, 3.0, 0.0]])


def test_relu_and_leaky_squared_by_hand():
    x = np.array([[-1.0, 0.0, 2.0, -5.0, -10.0]])
    np.testing.assert_array_equal(linear.relu(x), [[0.0, 0.0, 2.0, 0.0, 0.0]])
    # (−0.01 + 0.05)², 0.05², 2.05², (−0.05 + 0.05)² = 0, (−0.1 + 0.05)² = 0.05²
    np.testing.assert_allclose(
        linear.leaky_squared(x), [[0.0016, 0.0025, 4.2025, 0.0, 0.0025]], rtol=1e-13, atol=1e-18
    )


@pytest.mark.parametrize("seed", range(3))
def test_the_feature_maps_against_loops_and_torch(seed, torch):
    x = np.random.default_rng(seed).standard_normal((5, 4)) * 3
    np.testing.assert_array_equal(linear.relu(x), relu_loops(x))
    np.testing.assert_allclose(linear.leaky_squared(x), leaky_squared_loops(x), rtol=1e-15)
    t = torch.from_numpy(x)
    functional = torch.nn.functional
    np.testing.assert_array_equal(linear.relu(t).numpy(), functional.relu(t).numpy())
    np.testing.assert_allclose(
        linear.leaky_squared(t).numpy(),
        ((functional.leaky_relu(t, negative_slope=0.01) + 0.05) ** 2).numpy(),
        rtol=1e-15,
    )
    assert functional.leaky_relu(t).numpy().tolist() == (
        functional.leaky_relu(t, negative_slope=linear.LEAKY_SLOPE).numpy().tolist()
    )  # the slope is PyTorch's default


@pytest.mark.parametrize(
    ("phi", "loops"), [(linear.relu, relu_loops), (linear.leaky_squared, leaky_squared_loops)]
)
@pytest.mark.parametrize("seed", range(4))
def test_both_orders_and_the_running_sum_with_relu_and_leaky_squared(phi, loops, seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    q, k, v = random_qkv(seed, n, n, d_k=d, d_v=2)
    expected = direct(q, k, v, loops)
    np.testing.assert_allclose(linear.linear_attention(q, k, v, phi).output, expected, rtol=1e-12)
    np.testing.assert_allclose(
        linear.quadratic_order(q, k, v, phi).output, expected, rtol=1e-12, atol=1e-15
    )
    causal = direct_causal(q, k, v, loops)
    np.testing.assert_allclose(
        linear.causal_linear_attention(q, k, v, phi).output, causal, rtol=1e-12, atol=1e-15
    )
    np.testing.assert_allclose(
        linear.chunked_causal_linear(q, k, v, phi, chunk=3), causal, rtol=1e-12, atol=1e-15
    )


def test_relu_rows_with_no_shared_feature_are_zero_not_nan():
    """q2 = [−1, −1]: φ(q2) = 0. q3 = [0, 1] against keys whose only positive entry is the
    first: φ(q3)·φ(k_j) = 0 for every j. Both normalisers are 0: output 0, weights 0, no NaN
    and no warning; the first row as usual."""
    q = np.array([[1.0, 0.0], [-1.0, -1.0], [0.0, 1.0]])
    k = np.array([[1.0, 0.0], [2.0, -1.0], [0.5, -3.0]])
    v = np.array([[1.0], [3.0], [5.0]])
    with np.errstate(all="raise"):
        result = linear.linear_attention(q, k, v, linear.relu)
        quadratic = linear.quadratic_order(q, k, v, linear.relu)
        running = linear.causal_linear_attention(q, k, v, linear.relu)
        chunked = linear.chunked_causal_linear(q, k, v, linear.relu, chunk=2)
    np.testing.assert_array_equal(result.normaliser, [[3.5], [0.0], [0.0]])  # 1 + 2 + 0.5
    np.testing.assert_allclose(result.output, [[(1 + 6 + 2.5) / 3.5], [0.0], [0.0]], rtol=1e-15)
    np.testing.assert_allclose(quadratic.weights, [[1 / 3.5, 2 / 3.5, 0.5 / 3.5], [0] * 3, [0] * 3])
    np.testing.assert_allclose(running.output, [[1.0], [0.0], [0.0]], rtol=1e-15)
    np.testing.assert_allclose(chunked, [[1.0], [0.0], [0.0]], rtol=1e-15)


def test_divide_or_zero(torch):
    numerator, normaliser = np.array([[2.0, 4.0], [1.0, 0.0]]), np.array([[2.0], [0.0]])
    expected = [[1.0, 2.0], [0.0, 0.0]]
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(linear.divide_or_zero(numerator, normaliser), expected)
    tn, td = torch.from_numpy(numerator), torch.from_numpy(normaliser)
    np.testing.assert_array_equal(linear.divide_or_zero(tn, td).numpy(), expected)


def test_a_small_case_by_hand():
    # φ(Q) = [[2, 1]] (q = [1, 0]), φ(K) = [[1, 1], [2, 1]] (k = [0, 0], [1, 0]); V = [[1], [3]]
    q, k, v = np.array([[1.0, 0.0]]), np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[1.0], [3.0]])
    result = linear.linear_attention(q, k, v)
    np.testing.assert_array_equal(result.kv, [[7.0], [4.0]])  # φ(K)ᵀV = [1+6, 1+3]
    np.testing.assert_array_equal(result.k_sum, [[3.0], [2.0]])
    np.testing.assert_array_equal(result.normaliser, [[8.0]])  # 2·3 + 1·2
    np.testing.assert_array_equal(result.output, [[18.0 / 8.0]])  # (2·7 + 1·4) / 8


@pytest.mark.parametrize("seed", range(5))
def test_both_orders_equal_the_direct_sum(seed):
    rng = np.random.default_rng(seed)
    m, n, d = (int(x) for x in rng.integers(1, 12, size=3))
    q, k, v = random_qkv(seed, m, n, d_k=d, d_v=int(rng.integers(1, 6)))
    expected = direct(q, k, v, elu1)
    np.testing.assert_allclose(linear.linear_attention(q, k, v).output, expected, rtol=1e-13)
    quadratic = linear.quadratic_order(q, k, v)
    np.testing.assert_allclose(quadratic.output, expected, rtol=1e-13)
    np.testing.assert_allclose(quadratic.weights.sum(axis=-1), 1.0, rtol=1e-14)


def test_random_features_are_seeded_positive_and_approximate_the_softmax_kernel():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 4, 3)) * 0.5

    def features(count: int, seed: int) -> linear.FeatureMap:
        projection = linear.random_projection(3, count, seed)
        return lambda x: linear.positive_random_features(x, projection)

    phi, again = features(20000, 7), features(20000, 7)
    np.testing.assert_array_equal(phi(q), again(q))
    assert (phi(q) > 0).all()
    np.testing.assert_allclose(phi(q) @ phi(k).T, np.exp(q @ k.T), rtol=0.05)
    v = rng.standard_normal((4, 2))
    small = features(8, 1)
    np.testing.assert_allclose(
        linear.linear_attention(q, k, v, small).output, direct(q, k, v, small), rtol=1e-13
    )


def test_torch_agrees_with_the_direct_float64_sum(torch):
    q, k, v = random_qkv(11, 9, 13, d_k=4, d_v=3)
    expected = direct(q, k, v, elu1)
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    np.testing.assert_allclose(
        linear.linear_attention(tq, tk, tv).output.numpy(), expected, rtol=1e-13
    )
    q, k, v = random_qkv(12, 10, 10, d_k=4, d_v=3)
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    causal = direct_causal(q, k, v, elu1)
    np.testing.assert_allclose(
        linear.causal_linear_attention(tq, tk, tv).output.numpy(), causal, rtol=1e-13
    )
    np.testing.assert_allclose(
        linear.chunked_causal_linear(tq, tk, tv, chunk=3).numpy(), causal, rtol=1e-13
    )


def test_flop_counts_term_by_term():
    m, n, r, d_v = 3, 5, 2, 4
    linear_terms = 2 * n * r * d_v + 2 * n * r + 2 * m * r * d_v + 2 * m * r + m * d_v
    quadratic_terms = 2 * m * n * r + 2 * m * n + 2 * m * n * d_v + m * d_v
    assert linear.linear_flops(m, n, r, d_v) == linear_terms
    assert linear.quadratic_flops(m, n, r, d_v) == quadratic_terms
    # doubling n doubles the linear order's n-terms and the quadratic order's n² terms ×4
    assert (
        linear.linear_flops(1024, 1024, 64, 64) * 2 < linear.linear_flops(2048, 2048, 64, 64) * 1.01
    )
    assert linear.quadratic_flops(2048, 2048, 64, 64) > 3.9 * linear.quadratic_flops(
        1024, 1024, 64, 64
    )


@pytest.mark.parametrize(("n", "chunk"), [(1, 4), (7, 3), (16, 16), (20, 6)])
def test_causal_running_sum_and_its_state(n, chunk):
    q, k, v = random_qkv(n, n, n, d_k=3, d_v=2)
    running = linear.causal_linear_attention(q, k, v)
    expected = direct_causal(q, k, v, elu1)
    np.testing.assert_allclose(running.output, expected, rtol=1e-13)
    np.testing.assert_allclose(
        linear.chunked_causal_linear(q, k, v, chunk=chunk), expected, rtol=1e-12
    )
    fk = elu1(k)
    t = n - 1  # the last state holds every key: S_t = Σ_j φ(k_j) v_jᵀ, z_t = Σ_j φ(k_j)
    np.testing.assert_allclose(running.states[t], fk.T @ v, rtol=1e-13)
    np.testing.assert_allclose(running.sums[t], fk.sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(running.states[0], np.outer(fk[0], v[0]), rtol=0)
