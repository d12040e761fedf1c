"""Softmax's alternatives: sparsemax (against the paper's algorithm), sigmoid, hardmax."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attn_cli.mechanisms import normalise
from tests.conftest import sparsemax_reference


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
