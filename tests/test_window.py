"""attn window: the worked example computed by hand, the masks against PyTorch's SDPA with a
boolean mask, the JSON contract, quiz and check, and the user errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.lesson_files import bundled_lessons_dir
from tests.conftest import assert_user_error, unwrap

# The bundled default example (lessons/window.toml, "five-tokens").
X = [[1, 0], [0, 1], [1, 1], [1, 0], [0, 1]]
V = [[1, 0], [0, 1], [1, 1], [2, 0], [0, 2]]


def steps_of(doc: dict) -> dict[str, dict]:
    return {step["key"]: step for step in doc["steps"]}


def allowed_by_hand(n: int, w: int, causal: bool, global_tokens: tuple[int, ...] = ()) -> list:
    """The band, written out with loops: |i − j| ≤ w (causal: 0 ≤ i − j ≤ w), plus the rows
    and columns of the global tokens."""
    mask = []
    for i in range(n):
        row = []
        for j in range(n):
            near = 0 <= i - j <= w if causal else abs(i - j) <= w
            row.append(near or i in global_tokens or j in global_tokens)
        mask.append(row)
    return mask


def attention_by_hand(q, k, v, mask) -> tuple[list, list]:
    """Weights and output with plain loops: scaled scores of the allowed keys, softmax, sum."""
    d_k = len(q[0])
    weights, output = [], []
    for i, query in enumerate(q):
        scores = {
            j: sum(a * b for a, b in zip(query, key, strict=True)) / math.sqrt(d_k)
            for j, key in enumerate(k)
            if mask[i][j]
        }
        top = max(scores.values())
        exps = {j: math.exp(s - top) for j, s in scores.items()}
        total = sum(exps.values())
        row = [exps.get(j, 0.0) / total for j in range(len(k))]
        weights.append(row)
        output.append([sum(row[j] * v[j][c] for j in range(len(k))) for c in range(len(v[0]))])
    return weights, output


@pytest.mark.parametrize(
    ("example", "causal", "global_tokens"),
    [("five-tokens", False, ()), ("five-tokens-causal", True, ())],
)
def test_worked_example_matches_loops(invoke_json, example, causal, global_tokens):
    doc = invoke_json("window", "--example", example)
    steps = steps_of(doc)
    assert list(steps) == [
        "scores", "scaled", "band", "masked", "weights", "output", "count", "difference",
    ]  # fmt: skip
    mask = allowed_by_hand(5, 1, causal, global_tokens)
    assert np.array_equal(np.array(unwrap(steps["band"]["value"]), dtype=bool), mask)
    weights, output = attention_by_hand(X, X, V, mask)
    np.testing.assert_allclose(unwrap(steps["weights"]["value"]), weights, atol=1e-12)
    np.testing.assert_allclose(unwrap(doc["output"]), output, atol=1e-12)
    full_mask = [[True] * 5 for _ in range(5)]
    _, full = attention_by_hand(X, X, V, full_mask)
    np.testing.assert_allclose(
        unwrap(steps["difference"]["value"]), np.subtract(output, full), atol=1e-12
    )
    needed = sum(map(sum, mask))
    assert doc["meta"]["scores_computed"] == needed and doc["meta"]["scores_full"] == 25
    assert [row["computed"] for row in steps["count"]["value"]] == [sum(row) for row in mask]
    count, band = steps["count"]["notes"]
    assert count["values"]["computed"] == needed
    assert band["values"]["band"] == needed  # the closed form agrees with the count


def test_worked_example_by_hand_first_row(invoke_json):
    """Query 0 sees keys 0 and 1: scores 1/√2 and 0, so its weights are e^(1/√2) : 1."""
    doc = invoke_json("window")
    first = unwrap(steps_of(doc)["weights"]["value"])[0]
    top = math.exp(1 / math.sqrt(2))
    assert first == pytest.approx([top / (top + 1), 1 / (top + 1), 0, 0, 0], abs=1e-12)
    assert steps_of(doc)["count"]["value"][0]["keys"] == "k0–k1"


def test_global_tokens_see_and_are_seen(invoke_json):
    doc = invoke_json("window", "--example", "global-first")
    steps = steps_of(doc)
    q = [[1, 1], [1, 0], [0, 1], [1, 1], [1, 0], [0, 1]]
    v = [[1, 1], [1, 0], [0, 1], [2, 0], [0, 2], [1, -1]]
    mask = allowed_by_hand(6, 1, False, (0,))
    assert np.array_equal(np.array(unwrap(steps["band"]["value"]), dtype=bool), mask)
    _, output = attention_by_hand(q, q, v, mask)
    np.testing.assert_allclose(unwrap(doc["output"]), output, atol=1e-12)
    # Global token 0 sees every key: its row equals full attention's (no difference).
    assert unwrap(steps["difference"]["value"])[0] == pytest.approx([0, 0], abs=1e-12)
    assert doc["meta"]["global"] == [0]
    extra = steps["count"]["notes"][2]["values"]["extra"]
    assert extra == sum(map(sum, mask)) - sum(map(sum, allowed_by_hand(6, 1, False)))


def test_random_shapes_against_sdpa_with_a_boolean_mask(torch):
    """Random sizes, windows, causal and global tokens: the lesson's output against PyTorch's
    F.scaled_dot_product_attention given the band as a boolean "may attend" mask."""
    rng = np.random.default_rng(16)
    for trial in range(12):
        n, d_k, d_v = (int(x) for x in rng.integers(1, 12, size=3))
        window = int(rng.integers(0, n + 1))
        causal = bool(trial % 2)
        chosen = tuple(sorted({int(x) for x in rng.integers(0, n, size=trial % 3)}))
        q, k = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k))
        v = rng.standard_normal((n, d_v))
        walk = attn.window(
            q, k, v, window=window, causal=causal, global_tokens=",".join(map(str, chosen))
        )
        mask = torch.tensor(allowed_by_hand(n, window, causal, chosen))
        expected = torch.nn.functional.scaled_dot_product_attention(
            *(torch.tensor(a) for a in (q, k, v)), attn_mask=mask
        )
        np.testing.assert_allclose(walk.output, expected.numpy(), rtol=0, atol=1e-12)


def test_torch_backend_agrees_with_numpy(invoke_json, torch):
    args = ("window", "--n", "9", "--dk", "3", "--window", "2", "--causal", "--global", "4")
    numpy_doc = invoke_json(*args)
    torch_doc = invoke_json(*args, "--backend", "torch")
    assert torch_doc["backend"] == "torch"
    np.testing.assert_allclose(
        unwrap(torch_doc["output"]), unwrap(numpy_doc["output"]), rtol=0, atol=1e-12
    )


def test_json_output_is_the_attention_output(invoke_json):
    doc = invoke_json("window", "--n", "7", "--dk", "3", "--dv", "5", "--window", "7")
    assert doc["output"]["shape"] == [7, 5]
    # A window wider than the sequence is full attention: attn scaled's output, no difference.
    scaled = attn.scaled(*(np.array(unwrap(doc["inputs"][name])) for name in ("Q", "K", "V")))
    np.testing.assert_allclose(unwrap(doc["output"]), scaled.output, atol=1e-12)
    assert doc["meta"]["max_abs_difference_from_full"] < 1e-12


def test_blockwise_note_agrees(invoke_json):
    doc = invoke_json("window", "--n", "10", "--window", "2", "--causal")
    (note,) = steps_of(doc)["output"]["notes"]
    assert note["key"] == "blockwise" and note["values"]["difference"] < 1e-12


def test_check_passes_on_the_bundled_file(invoke):
    result = invoke("check", str(bundled_lessons_dir() / "window.toml"))
    assert result.exit_code == 0, result.output
    assert "five-tokens" in result.stdout and "global-first" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--window", "-1"), "--window must be a whole number ≥ 0"),
        (("--global", "0,x"), "--global '0,x'"),
        (("--global", "9"), "positions run 0..4"),
        (("--q", "1,0;0,1", "--k", "1,0", "--v", "1;2"), "give Q and K the same n"),
        (("--q", "1,0;0,1", "--k", "1,0;0,1", "--v", "1;2;3"), "K has 2 rows but V has 3"),
    ],
)
def test_user_errors(invoke, args, fragment):
    assert_user_error(invoke("window", *args), fragment)
