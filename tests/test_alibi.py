"""attn alibi: the slopes against the paper's slope function (head counts that are not powers
of two included), each head's weights against PyTorch's SDPA given BLOOM's bias (the slope
times the key's position, which the softmax makes the same as −m·(i − j)) or −m·|i − j|, the
claims, and the user errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.lessonfiles.loader import bundled_lessons_dir
from tests.conftest import assert_user_error, unwrap
from tests.lesson_runs import Batch, Runs

# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "6", "--dk", "3", "--heads", "3", "--seed", "2"),
    sized=lambda s: {"n": s, "dk": s, "heads": 3, "causal": True},
    large=("--n", "101", "--dk", "2", "--heads", "1"),
    variants=(
        (),
        ("--example", "six-heads"),
        ("--example", "both-directions"),
        ("--heads", "1"),
        ("--n", "3", "--train-length", "5"),
        ("--q", "0;0", "--k", "0;0", "--heads", "2", "--no-causal"),
        ("--q", "1", "--k", "1", "--heads", "2"),  # one key: every head alike
    ),
    options=({"causal": True, "heads": 3}, {"heads": 1}),
    figure=(
        ("alibi", "--example", "both-directions"),
        ("q0", "k7", "head 1, m = 0.0625", "head 2, m = 0.00390625"),
    ),
    batch=Batch(lambda draw: {"q": draw(3, 2), "k": draw(3, 2)}, ("q", "k")),
)


def paper_slopes(heads: int) -> list[float]:
    """The ALiBi paper's slope function, as its repository writes it: a start of
    2^(−2^−(log₂ n − 3)) and a ratio equal to it; for n not a power of two, the slopes of the
    power of two below and every other slope of twice that."""

    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(heads).is_integer():
        return power_of_2(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_2(closest) + paper_slopes(2 * closest)[0::2][: heads - closest]


@pytest.mark.parametrize("heads", [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 40])
def test_slopes_are_the_papers(heads):
    walk = attn.alibi(n=2, dk=1, heads=heads)
    got = [row["slope"] for row in walk.step("slopes")]
    np.testing.assert_allclose(got, paper_slopes(heads), rtol=1e-14, atol=0)
    assert len(set(got)) == heads  # every head its own slope


@pytest.mark.parametrize("causal", [True, False])
def test_random_shapes_against_sdpa_with_the_bias(torch, causal):
    """SDPA with V = I returns the weights. Causal: BLOOM's bias m·j plus the causal mask (row
    by row a constant away from −m·(i − j)); else −m·|i − j| as the float mask."""
    functional = torch.nn.functional
    rng = np.random.default_rng(44)
    for _ in range(10):
        n, d, heads = (int(x) for x in rng.integers(1, 10, size=3))
        q, k = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        walk = attn.alibi(q, k, heads=heads, causal=causal)
        m = torch.tensor(paper_slopes(heads), dtype=torch.float64)[:, None, None]
        position = torch.arange(n, dtype=torch.float64)
        if causal:
            future = position[None, :] > position[:, None]
            mask = (m * position[None, None, :]).masked_fill(future, float("-inf"))
        else:
            mask = -m * (position[:, None] - position[None, :]).abs()
        tq, tk = (torch.tensor(a).expand(heads, n, d) for a in (q, k))
        eye = torch.eye(n, dtype=torch.float64).expand(heads, n, n)
        weights = functional.scaled_dot_product_attention(tq, tk, eye, attn_mask=mask)
        for h in range(heads):
            np.testing.assert_allclose(
                walk.step(f"head{h + 1}.weights"), weights[h].numpy(), rtol=0, atol=1e-13
            )
        np.testing.assert_allclose(walk.output, weights.numpy(), rtol=0, atol=1e-13)


def test_the_bias_is_minus_the_slope_times_the_distance(invoke_json):
    doc = invoke_json("alibi")
    steps = {step["key"]: step for step in doc["steps"]}
    distance = np.array(unwrap(steps["distances"]["value"]))
    i, j = np.indices((8, 8))
    np.testing.assert_array_equal(distance, i - j)
    scaled = np.array(unwrap(steps["scaled"]["value"]))
    for h, m in enumerate((1 / 4, 1 / 16, 1 / 64, 1 / 256), start=1):
        biased = np.array(unwrap(steps[f"head{h}.biased"]["value"]), dtype=float)
        below = i >= j
        np.testing.assert_allclose(biased[below], (scaled - m * (i - j))[below], atol=1e-15)
        assert np.all(np.isneginf(biased[~below]))
    table = steps["past_length"]["value"]
    assert [row["bias_at_length"] for row in table] == [-1.0, -0.25, -0.0625, -0.015625]
    # The steepest head gives the least weight to keys 4 or more positions back.
    far = [row["largest_far"] for row in table]
    assert far == sorted(far) and far[0] < far[-1]


def test_the_steeper_head_keeps_its_weight_nearer(invoke_json):
    doc = invoke_json("alibi", "--example", "six-heads")
    notes = {note["key"]: note for step in doc["steps"] for note in step.get("notes", ())}
    assert "not_power_of_two" in notes
    near = notes["nearer_when_steeper"]["values"]
    assert (near["steep"], near["flat"]) == (5, 4)  # slopes 1/2 and 1/256
    assert near["steep_distance"] < near["flat_distance"]


def test_equal_heads_when_no_key_is_farther_than_another(invoke_json):
    doc = invoke_json("alibi", "--q", "1;1", "--k", "1;1", "--heads", "2", "--causal")
    notes = {note["key"] for step in doc["steps"] for note in step.get("notes", ())}
    assert "nearer_when_steeper" in notes  # q1 sees k0 at distance 1: the heads differ
    doc = invoke_json("alibi", "--q", "1", "--k", "1", "--heads", "2")
    notes = {note["key"] for step in doc["steps"] for note in step.get("notes", ())}
    assert "same_reach" in notes and "none_past" in notes


def test_torch_backend_agrees_with_numpy(invoke_json, torch):
    args = ("alibi", "--n", "7", "--dk", "3", "--heads", "5", "--causal")
    numpy_doc, torch_doc = invoke_json(*args), invoke_json(*args, "--backend", "torch")
    np.testing.assert_allclose(
        unwrap(torch_doc["output"]), unwrap(numpy_doc["output"]), rtol=0, atol=1e-13
    )


def test_check_passes_on_the_bundled_file(invoke):
    result = invoke("check", str(bundled_lessons_dir() / "alibi.toml"))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--heads", "0"), "--heads"),
        (("--train-length", "0"), "--train-length must be a whole number >= 1"),
        (("--q", "1,0;0,1", "--k", "1,0"), "give Q and K the same number of rows"),
        (("--q", "1,0;0,1", "--k", "1;0"), "Q and K must share d"),
    ],
)
def test_user_errors(invoke, args, fragment):
    assert_user_error(invoke("alibi", *args), fragment)


def test_past_the_training_length_a_key_exactly_l_away_gets_minus_m_l(invoke_json):
    """The table's 'bias at L' is −m·L itself (head 1: −0.25·4 = −1): the step once said keys
    L or more away get "a bias below −m·L"; a key exactly L away gets −m·L."""
    doc = invoke_json("alibi")
    step = doc["steps"][-1]
    assert step["key"] == "past_length"
    row = step["value"][0]
    assert row["slope"] * 4 == -row["bias_at_length"] == 1.0
    assert "a bias below −m·L" not in step["explanation"]
    assert "a bias of −m·L or lower" in step["explanation"]


def test_distances_float16_cannot_hold_are_refused(invoke):
    """float16 holds whole numbers exactly only up to 2048: with --n 2100 the distance step once
    printed 2100 for i − j = 2099 and 2048 for 2049, under "growing by 1 with each step"."""
    assert_user_error(
        invoke("alibi", "--dtype", "float16", "--n", "2100", "--heads", "1"),
        "float16 holds whole numbers exactly only up to 2048, and the distance 2099",
    )
