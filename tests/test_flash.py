"""attn flash: the tiled walkthrough, checked against plain softmax attention written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import assert_user_error, data, unwrap


def plain_attention(q, k, v, *, use_scale, causal=False):
    s = q @ k.T / (math.sqrt(q.shape[1]) if use_scale else 1.0)
    if causal:
        s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def steps_by_key(doc):
    return {step["key"]: step for step in doc["steps"]}


def test_two_blocks_example(invoke_json):
    doc = invoke_json("flash")
    assert doc["lesson"] == "flash" and doc["example"] == "two-blocks"
    q = np.array([[1.0, 0], [0, 1]])
    k = np.array([[1.0, 0], [0, 1], [2, 1], [-1, 0]])
    v = np.array([[1.0, 2], [3, 0], [0, 1], [2, 2]])
    expected = plain_attention(q, k, v, use_scale=False)
    np.testing.assert_allclose(data(doc["output"]), expected, rtol=0, atol=1e-12)
    steps = steps_by_key(doc)
    keys = [step["key"] for step in doc["steps"]]
    assert keys == [
        f"block{b}.{name}"
        for b in (1, 2)
        for name in ("scores", "max", "rescale", "p", "sum", "acc")
    ] + ["output", "check"]
    # Block 1 starts from nothing: m = −∞ before, the rescale factor is 0.
    assert unwrap(steps["block1.max"]["parts"]["m before"]) == [["-inf"], ["-inf"]]
    assert unwrap(steps["block1.rescale"]["value"]) == [[0.0], [0.0]]
    # Block 2: q1's max rises from 1 to 2 (c = e^(1−2)); q2's stays at 1 (c = 1).
    assert unwrap(steps["block2.max"]["value"]) == [[2.0], [1.0]]
    np.testing.assert_allclose(unwrap(steps["block2.rescale"]["value"]), [[np.exp(-1.0)], [1.0]])
    # The running sum after the last block is the softmax denominator against the row max.
    s = q @ k.T
    denominators = np.exp(s - s.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(unwrap(steps["block2.sum"]["value"]), denominators, atol=1e-12)
    assert steps["block1.scores"]["col_labels"] == ["k1", "k2"]
    assert steps["block2.scores"]["col_labels"] == ["k3", "k4"]
    np.testing.assert_allclose(unwrap(steps["check"]["value"]), expected, atol=1e-12)
    assert doc["meta"]["max_abs_difference"] < 1e-14


def test_causal_three_example(invoke_json):
    doc = invoke_json("flash", "--example", "causal-three")
    x = np.array([[1.0, 0], [0, 1], [1, 1]])
    np.testing.assert_allclose(
        data(doc["output"]), plain_attention(x, x, x, use_scale=True, causal=True), atol=1e-12
    )
    steps = steps_by_key(doc)
    assert unwrap(steps["block1.scores"]["value"])[0][1] == "-inf"  # q1 may not see k2
    # The second block holds only k3: q1 and q2 see none of it.
    assert unwrap(steps["block2.p"]["value"])[:2] == [[0.0], [0.0]]
    assert unwrap(steps["block2.rescale"]["value"])[:2] == [[1.0], [1.0]]


@pytest.mark.parametrize(
    ("n", "block", "causal"), [(7, 3, False), (7, 3, True), (5, 5, False), (9, 2, True)]
)
def test_random_inputs_equal_plain_attention(invoke_json, n, block, causal):
    flag = "--causal" if causal else "--no-causal"
    doc = invoke_json(
        "flash", "--n", str(n), "--dk", "3", "--block", str(block), flag, "--seed", "4"
    )
    q, k, v = (np.array(data(doc["inputs"][name])) for name in ("Q", "K", "V"))
    expected = plain_attention(q, k, v, use_scale=True, causal=causal)
    np.testing.assert_allclose(data(doc["output"]), expected, rtol=0, atol=1e-12)
    blocks = math.ceil(n / block)
    assert len(doc["steps"]) == 6 * blocks + 2


def test_torch_backend_agrees(invoke_json, torch):
    doc = invoke_json("flash", "--backend", "torch", "--n", "6", "--m", "4", "--block", "4")
    q, k, v = (np.array(data(doc["inputs"][name])) for name in ("Q", "K", "V"))
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v))
    ).numpy()
    np.testing.assert_allclose(data(doc["output"]), expected, atol=1e-12)


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_other_formats(invoke, fmt):
    result = invoke("flash", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert "running max" in result.stdout


def test_rich_output(invoke):
    result = invoke("flash")
    assert result.exit_code == 0, result.output
    assert "Block 2 · rescale factor" in result.stdout
    assert "max |tiled − plain|" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--n", "40", "--block", "2"), ("20 blocks", "raise --block to 3")),
        (("--n", "5", "--m", "3", "--causal"), ("--causal needs as many queries as keys",)),
        (("--q", "1,0", "--k", "1,0,0", "--v", "1"), ("Q and K must share d_k",)),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("flash", *args), *fragments)


LABELLED = """\
lesson = "flash"
[[examples]]
name = "mine"
options = {{ block = 2 }}
labels = {{ {labels} }}
[examples.inputs]
Q = [[1, 0], [0, 1]]
K = [[1, 0], [0, 1], [1, 1]]
V = [[1], [2], [3]]
"""


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        ('keys = ["x"]', "labels.keys) gives 1 name but there are 3 rows"),
        ('queries = ["a", "b", "c"]', "labels.queries) gives 3 names but there are 2 rows"),
    ],
)
def test_label_counts_from_a_lesson_file(invoke, tmp_path, labels, fragment):
    path = tmp_path / "mine.toml"
    path.write_text(LABELLED.format(labels=labels), encoding="utf-8")
    assert_user_error(invoke("flash", "--lesson", str(path)), fragment)


def test_labels_from_a_lesson_file_name_the_blocks(invoke_json, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(LABELLED.format(labels='keys = ["x", "y", "z"]'), encoding="utf-8")
    steps = steps_by_key(invoke_json("flash", "--lesson", str(path)))
    assert steps["block1.scores"]["col_labels"] == ["x", "y"]
    assert steps["block2.scores"]["col_labels"] == ["z"]
    assert steps["block1.scores"]["row_labels"] == ["q1", "q2"]


@pytest.mark.parametrize(
    ("sizes", "shapes"),
    [
        ({"dv": 2}, ((6, 4), (6, 4), (6, 2))),  # n = 6, m = n, d_k = 4
        ({"m": 3}, ((3, 4), (3, 4), (3, 4))),
        ({"n": 5, "m": 2, "dv": 3}, ((2, 4), (5, 4), (5, 3))),
        ({"n": 7, "dk": 2}, ((7, 2), (7, 2), (7, 2))),
    ],
)
def test_random_shapes_defaults(invoke_json, sizes, shapes):
    args = [item for key, value in sizes.items() for item in (f"--{key}", str(value))]
    doc = invoke_json("flash", *args, "--block", "4")
    got = tuple(np.array(data(doc["inputs"][name])).shape for name in ("Q", "K", "V"))
    assert got == shapes
