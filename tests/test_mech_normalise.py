"""Softmax's alternatives: sparsemax (against the paper's algorithm), 1.5-entmax (against a
bisection), sigmoid, hardmax."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attn_cli.mechanisms import normalise
from tests.conftest import entmax15_reference, sparsemax_reference


def test_sparsemax_by_hand():
    parts = normalise.sparsemax_parts(
        np.array([[1.0, 0.5, -1.0], [0.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    )
    # row 1: k = 2, τ = (1 + 0.5 − 1) / 2 = 0.25 → [0.75, 0.25, 0]; row 2: τ = −1/3, all 1/3;
    # row 3: only the 3 survives: τ = 2 → [1, 0, 0]
    np.testing.assert_allclose(parts.tau, [[0.25], [-1 / 3], [2.0]], rtol=1e-15)
    np.testing.assert_allclose(parts.weights, [[0.75, 0.25, 0], [1 / 3] * 3, [1, 0, 0]], rtol=1e-15)
    np.testing.assert_array_equal(parts.support, [[2], [3], [1]])


@pytest.mark.parametrize("seed", range(8))
def test_sparsemax_against_the_papers_algorithm_with_ties_and_masks(seed):
    rng = np.random.default_rng(seed)
    s = rng.standard_normal((6, int(rng.integers(1, 12)))) * rng.choice([0.1, 1.0, 5.0])
    s[1] = np.round(s[1])  # ties
    s[2, : s.shape[1] // 2] = -np.inf  # a mask
    s[3] = 1.0  # all tied
    parts = normalise.sparsemax_parts(s)
    for row, weights, tau in zip(s, parts.weights, parts.tau, strict=True):
        expected, expected_tau = sparsemax_reference(row.tolist())
        np.testing.assert_allclose(weights, expected, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(tau[0], expected_tau, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(parts.weights.sum(axis=-1), 1.0, rtol=1e-13)
    assert (parts.weights[2, : s.shape[1] // 2] == 0).all()


def test_entmax15_by_hand():
    parts = normalise.entmax15_parts(
        np.array([[1.0, 1.0, -2.0], [-1.0, -1.0, 2.0], [3.0, 3.0, 3.0]])
    )
    # x = z/2. Row 1: x = 0.5, 0.5, −1; the top two: mean 0.5, no spread, so
    # τ = 0.5 − √(1/2) and each weight is (1/√2)² = 1/2; the third, −1 < τ: 0.
    # Row 2: x = −0.5, −0.5, 1: the top one alone, τ = 1 − 1 = 0, weight 1.
    # Row 3: all tied at 1.5: τ = 1.5 − √(1/3), each weight 1/3.
    tau = [[0.5 - math.sqrt(0.5)], [0.0], [1.5 - math.sqrt(1 / 3)]]
    np.testing.assert_allclose(parts.tau, tau, rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(
        parts.weights, [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [1 / 3] * 3], rtol=1e-15
    )
    np.testing.assert_array_equal(parts.support, [[2], [1], [3]])
    assert parts.weights[0, 2] == 0 and parts.weights[1, 0] == 0  # exactly 0, not tiny


def test_entmax15_reference_by_hand():
    """The bisection reference itself, on the row worked above: (1/√2)² each."""
    weights, tau = entmax15_reference([1.0, 1.0, -2.0])
    assert weights[2] == 0.0
    np.testing.assert_allclose(weights[:2], [0.5, 0.5], rtol=1e-15)
    assert tau == pytest.approx(0.5 - math.sqrt(0.5), rel=1e-15)


@pytest.mark.parametrize("seed", range(10))
def test_entmax15_against_a_bisection_with_ties_and_masks(seed):
    rng = np.random.default_rng(seed)
    s = rng.standard_normal((7, int(rng.integers(1, 12)))) * rng.choice([0.1, 1.0, 5.0, 1e3])
    s[1] = np.round(s[1])  # ties
    s[2, : s.shape[1] // 2] = -np.inf  # a mask
    s[3] = 1.0  # all tied
    s[4, 1:] = -np.inf  # one finite score: weight 1
    s[5] = np.round(s[5] * 4) / 4 + 1e6  # ties far from 0 (τ moves with the row)
    parts = normalise.entmax15_parts(s)
    for row, weights, tau in zip(s, parts.weights, parts.tau, strict=True):
        expected, expected_tau = entmax15_reference(row.tolist())
        np.testing.assert_allclose(weights, expected, rtol=1e-9, atol=1e-12)
        assert tau[0] == pytest.approx(expected_tau, rel=1e-12, abs=1e-12)
        assert all(w == 0 for w, e in zip(weights, expected, strict=True) if e == 0)
    np.testing.assert_allclose(parts.weights.sum(axis=-1), 1.0, rtol=1e-13)
    assert (parts.weights[2, : s.shape[1] // 2] == 0).all()
    assert parts.weights[4, 0] == 1.0 and parts.support[4, 0] == 1
    nonzero = np.count_nonzero(parts.weights, axis=-1)
    np.testing.assert_array_equal(parts.support[:, 0], nonzero)


def test_entmax15_is_between_softmax_and_sparsemax():
    """1.5-entmax keeps every key sparsemax keeps (its cut-off 2τ lies below sparsemax's τ)
    and drops only keys softmax would keep; on random rows, often strictly more than
    sparsemax keeps."""
    rng = np.random.default_rng(7)
    s = rng.standard_normal((400, 6)) * 2
    entmax = normalise.entmax15_parts(s)
    sparse = normalise.sparsemax_parts(s)
    assert (entmax.weights[sparse.weights > 0] > 0).all()
    assert (2 * entmax.tau < sparse.tau).all()
    assert (entmax.support > sparse.support).sum() > 100


def test_entmax15_is_finite_on_huge_scores():
    with np.errstate(all="raise"):
        weights = normalise.entmax15(np.array([[1e300, -1e300, 0.0], [1e308, 1e308, -1e308]]))
    np.testing.assert_allclose(weights, [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]], rtol=1e-15)


def test_entmax15_against_the_entmax_package_if_installed():
    """The reference implementation of Peters, Niculae & Martins (pip package entmax), only
    where it is already installed: nothing here installs it."""
    entmax = pytest.importorskip("entmax")
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    s = rng.standard_normal((6, 9)) * 3
    theirs = entmax.entmax15(torch.from_numpy(s), dim=-1).numpy()
    np.testing.assert_allclose(normalise.entmax15(s), theirs, rtol=1e-10, atol=1e-12)


def test_sigmoid_normalise_and_hardmax_by_hand():
    s = np.array([[0.0, math.log(3.0), -np.inf]])  # σ: 1/2, 3/4, 0 → sum 5/4
    np.testing.assert_allclose(normalise.sigmoid_normalise(s), [[0.4, 0.6, 0.0]], rtol=1e-15)
    np.testing.assert_array_equal(normalise.sigmoid(np.array([-1000.0, 1000.0])), [0.0, 1.0])
    ties = np.array([[2.0, 1.0, 2.0, 2.0], [-np.inf, 0.0, -1.0, -np.inf]])
    np.testing.assert_array_equal(normalise.hardmax(ties), [[1 / 3, 0, 1 / 3, 1 / 3], [0, 1, 0, 0]])


def test_every_normaliser_gives_rows_of_one_and_nan_for_an_empty_row():
    rng = np.random.default_rng(2)
    s = rng.standard_normal((5, 7))
    s[0, 2:] = -np.inf
    s[4] = -np.inf
    for name, normalise_rows in normalise.NORMALISERS.items():
        weights = normalise_rows(s)
        np.testing.assert_allclose(weights[:4].sum(axis=-1), 1.0, rtol=1e-14, err_msg=name)
        assert (weights[0, 2:] == 0).all(), name
        assert np.isnan(weights[4]).all(), name


def test_torch_agrees(torch):
    rng = np.random.default_rng(5)
    s = rng.standard_normal((4, 9))
    s[1, ::2] = -np.inf
    for name, normalise_rows in normalise.NORMALISERS.items():
        got = normalise_rows(torch.from_numpy(s)).numpy()
        np.testing.assert_allclose(got, normalise_rows(s), rtol=1e-14, atol=1e-16, err_msg=name)
    np.testing.assert_allclose(
        normalise.NORMALISERS["softmax"](torch.from_numpy(s)).numpy(),
        torch.softmax(torch.from_numpy(s), dim=-1).numpy(),
        rtol=1e-14,
    )
