"""--valid-len on scaled and causal: the padding mask as its own step.

Values from a direct float64 formula written here; agreement with torch's
F.scaled_dot_product_attention given the boolean mask (True = may attend).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attn_cli as attn
from tests.conftest import assert_user_error, random_qkv, unwrap

BACKENDS = ("numpy", "torch")


def text(matrix: np.ndarray) -> str:
    return json.dumps(np.asarray(matrix).tolist())


def allowed(m: int, n: int, lengths: list[int], causal: bool = False) -> np.ndarray:
    """True where query i may see key j: j < its valid length (and j <= i when causal)."""
    per_row = np.broadcast_to(np.asarray(lengths), (m,))
    mask = np.arange(n)[None, :] < per_row[:, None]
    if causal:
        mask &= np.tril(np.ones((m, n), dtype=bool))
    return mask


def reference(q, k, v, visible: np.ndarray, scale: bool = True) -> tuple[np.ndarray, np.ndarray]:
    s = q @ k.T / (math.sqrt(q.shape[1]) if scale else 1.0)
    s = np.where(visible, s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    a = e / e.sum(axis=1, keepdims=True)
    return a, a @ v


CASES = [
    (0, 3, 5, 4, 2, [3]),
    (1, 4, 4, 8, 3, [1, 4, 2, 3]),
    (2, 2, 6, 2, 5, [6, 1]),
    (3, 5, 3, 3, 3, [2]),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("seed", "m", "n", "d_k", "d_v", "lengths"), CASES)
def test_scaled_matches_the_formula(backend, seed, m, n, d_k, d_v, lengths):
    if backend == "torch":
        pytest.importorskip("torch")
    q, k, v = random_qkv(seed, m, n, d_k, d_v)
    walk = attn.scaled(q, k, v, valid_len=",".join(map(str, lengths)), backend=backend)
    visible = allowed(m, n, lengths)
    weights, output = reference(q, k, v, visible)
    assert [step.key for step in walk.steps] == [
        "scores",
        "scaled",
        "padding",
        "masked",
        "weights",
        "output",
    ]
    np.testing.assert_array_equal(walk.step("padding"), np.where(visible, 0.0, -np.inf))
    masked = walk.step("masked")
    np.testing.assert_array_equal(np.isneginf(masked), ~visible)
    np.testing.assert_allclose(masked[visible], (q @ k.T / math.sqrt(d_k))[visible], atol=1e-14)
    np.testing.assert_allclose(walk.step("weights"), weights, rtol=0, atol=1e-14)
    np.testing.assert_allclose(walk.output, output, rtol=0, atol=1e-13)
    assert walk.meta["valid_lengths"] == list(np.broadcast_to(lengths, (m,)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("seed", "m", "n", "d_k", "d_v", "lengths"), CASES)
def test_scaled_agrees_with_sdpa_and_its_mask(torch, backend, seed, m, n, d_k, d_v, lengths):
    q, k, v = random_qkv(seed, m, n, d_k, d_v)
    walk = attn.scaled(q, k, v, valid_len=lengths, backend=backend)
    parts = {part.label: part.value for part in walk.find("padding").parts}
    sdpa_mask = parts["SDPA attn_mask (True = may attend)"]
    np.testing.assert_array_equal(sdpa_mask, allowed(m, n, lengths))
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=torch.from_numpy(sdpa_mask)
    )
    np.testing.assert_allclose(walk.output, expected.numpy(), rtol=0, atol=1e-13)
    if len(lengths) == 1:  # one length: nn.MultiheadAttention's key_padding_mask (True = pad)
        pad = parts["key_padding_mask (True = pad)"]
        np.testing.assert_array_equal(pad, np.arange(n)[None, :] >= lengths[0])
        assert walk.find("padding").title.endswith(f"valid length {lengths[0]}")
    else:  # per row: only an attn_mask can say it (True = blocked)
        np.testing.assert_array_equal(parts["MHA attn_mask (True = blocked)"], ~sdpa_mask)
        assert "one valid length per query row" in walk.find("padding").title


def test_scaled_without_scale():
    q, k, v = random_qkv(4, 2, 3, 2, 2)
    walk = attn.scaled(q, k, v, valid_len=2, scale=False)
    weights, _ = reference(q, k, v, allowed(2, 3, [2]), scale=False)
    np.testing.assert_allclose(walk.step("weights"), weights, rtol=0, atol=1e-15)
    assert walk.find("masked").title == "Masked scores  S + P"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("seed", "n", "d_k", "lengths"), [(0, 5, 3, [3]), (1, 4, 2, [1, 2, 4, 2]), (2, 6, 4, [6])]
)
def test_causal_combines_both_masks(torch, backend, seed, n, d_k, lengths):
    q, k, v = random_qkv(seed, n, n, d_k, d_k)
    walk = attn.causal(q, k, v, valid_len=lengths, backend=backend)
    keys = [step.key for step in walk.steps]
    assert keys == ["scores", "scaled", "mask", "padding", "masked", "weights", "output"]
    visible = allowed(n, n, lengths, causal=True)
    weights, output = reference(q, k, v, visible)
    np.testing.assert_array_equal(np.isneginf(walk.step("masked")), ~visible)
    np.testing.assert_allclose(walk.step("weights"), weights, rtol=0, atol=1e-14)
    np.testing.assert_allclose(walk.output, output, rtol=0, atol=1e-13)
    parts = {part.label: part.value for part in walk.find("padding").parts}
    sdpa_mask = parts["SDPA attn_mask (True = may attend), causal included"]
    np.testing.assert_array_equal(sdpa_mask, visible)
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=torch.from_numpy(sdpa_mask)
    )
    np.testing.assert_allclose(walk.output, expected.numpy(), rtol=0, atol=1e-13)
    assert "is_causal=True" in walk.find("padding").explanation


def test_causal_given_scores_by_hand(invoke_json):
    doc = invoke_json("causal", "--valid-len", "2")  # the three-tokens example's scores
    steps = {step["key"]: step for step in doc["steps"]}
    masked = unwrap(steps["masked"]["value"])
    assert masked[2] == [1.4, 0.7, "-inf"]  # row 3 loses key 3 to the padding
    e = math.exp(0.7)
    np.testing.assert_allclose(unwrap(steps["weights"]["value"])[2], [e / (e + 1), 1 / (e + 1), 0])
    assert doc["meta"]["valid_lengths"] == [2, 2, 2]
    assert doc["options"]["valid_len"] == "2"


def test_without_valid_len_nothing_changes(invoke_json):
    keys = [step["key"] for step in invoke_json("scaled")["steps"]]
    assert keys == ["scores", "scaled", "weights", "output"]
    keys = [step["key"] for step in invoke_json("causal")["steps"]]
    assert keys == ["scores", "mask", "masked", "weights"]


def test_rich_output_shows_the_padding_step(invoke):
    result = invoke("scaled", "--valid-len", "1")
    assert result.exit_code == 0, result.output
    for fragment in ("Padding mask  P", "key_padding_mask (True = pad)", "−∞", "S / √d_k + P"):
        assert fragment in result.stdout


@pytest.mark.parametrize(
    ("lesson", "args", "fragments"),
    [
        ("scaled", ("--valid-len", "0"), ("--valid-len 0", "no visible key", "no softmax", "NaN")),
        ("causal", ("--valid-len", "1,0,2"), ("--valid-len 0 (row 2)", "0 / 0 = NaN")),
        ("scaled", ("--valid-len", "3"), ("past the 2 keys", "at most 2, the number")),
        ("causal", ("--valid-len", "4"), ("past the 3 keys",)),
        ("scaled", ("--valid-len", "1,2,1"), ("gives 3 lengths but there are 2 query rows",)),
        ("causal", ("--valid-len", "1,2"), ("gives 2 lengths but there are 3 query rows",)),
        ("scaled", ("--valid-len", "1.5"), ("--valid-len 1.5:", "whole numbers")),
        ("scaled", ("--valid-len", "-1"), ("--valid-len -1", "no visible key")),
        ("causal", ("--valid-len", "2", "--fill", "zero"), ("--valid-len", "--fill zero")),
        ("scaled", ("--n", "4", "--m", "2", "--dk", "2", "--valid-len", "5"), ("past the 4 keys",)),
    ],
)
def test_user_errors(invoke, lesson, args, fragments):
    assert_user_error(invoke(lesson, *args), *fragments)


def test_lesson_file_valid_len_must_be_whole_numbers(invoke, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'lesson = "scaled"\n[[examples]]\nname = "mine"\noptions = { valid_len = [1.5] }\n'
        "[examples.inputs]\nQ = [[1, 0]]\nK = [[1, 0], [0, 1]]\nV = [[1, 0], [0, 1]]\n",
        encoding="utf-8",
    )
    assert_user_error(invoke("scaled", "--lesson", str(path)), "whole numbers")


def test_python_api_takes_lengths_as_an_array_on_an_example():
    walk = attn.scaled(example="two-tokens", valid_len=np.array([1, 2]))
    assert walk.meta["options"]["valid_len"] == [1, 2]
    np.testing.assert_array_equal(walk.step("weights")[0], [1.0, 0.0])
