"""attn multihead as the books write it: d_in → d_out, biases, causal, padding, no W_O.

Values come from a direct float64 formula written here, and agree with torch's
nn.MultiheadAttention (bias=True, attn_mask, key_padding_mask, per-head weights) where it can
express the case, and with the from-scratch book's MultiHeadAttention written in torch.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attn_cli as attn
from tests.conftest import assert_user_error, data, unwrap

BACKENDS = ("numpy", "torch")
WEIGHTS = ("W_Q", "W_K", "W_V", "W_O")
BIASES = ("b_Q", "b_K", "b_V", "b_O")


def text(matrix: np.ndarray) -> str:
    return json.dumps(np.asarray(matrix).tolist())


def reference(
    x: np.ndarray,
    p: dict[str, np.ndarray],
    heads: int,
    *,
    causal: bool = False,
    lengths: list[int] | None = None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Multi-head attention in float64, written out: the output and each head's weights."""
    n, d_out = x.shape[0], p["W_Q"].shape[1]
    d_k = d_out // heads
    q, k, v = (
        x @ p[w] + p.get(b, np.zeros(d_out)) for w, b in zip(WEIGHTS[:3], BIASES[:3], strict=True)
    )
    hidden = np.zeros((n, n), dtype=bool)
    if causal:
        hidden |= np.triu(np.ones((n, n), dtype=bool), k=1)  # the book's torch.triu(…, 1)
    if lengths is not None:
        per_row = np.broadcast_to(np.asarray(lengths), (n,))
        hidden |= np.arange(n)[None, :] >= per_row[:, None]
    outputs, weights = [], []
    for i in range(heads):
        cols = slice(i * d_k, (i + 1) * d_k)
        s = q[:, cols] @ k[:, cols].T / math.sqrt(d_k)
        s = np.where(hidden, -np.inf, s)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        weights.append(a)
        outputs.append(a @ v[:, cols])
    joined = np.hstack(outputs)
    if "W_O" not in p:
        return joined, weights
    return joined @ p["W_O"] + p.get("b_O", 0.0), weights


def random_case(
    seed: int, n: int, d_in: int, d_out: int, *, bias: bool = True, w_o: bool = True
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_in))
    p = {name: rng.standard_normal((d_in, d_out)) / d_in**0.5 for name in WEIGHTS[:3]}
    if w_o:
        p["W_O"] = rng.standard_normal((d_out, d_out)) / d_out**0.5
    if bias:
        for name in BIASES[: 3 + w_o]:
            p[name] = rng.standard_normal(d_out)
    return x, p


def run(x: np.ndarray, p: dict[str, np.ndarray], heads: int, backend: str = "numpy", **options):
    keywords = {name.lower().replace("_", ""): value for name, value in p.items()}
    return attn.multihead(x, **keywords, heads=heads, backend=backend, **options)


# --- direct formula ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("seed", "n", "d_in", "d_out", "heads", "causal", "lengths", "w_o"),
    [
        (0, 6, 3, 2, 2, True, None, True),  # the book's d_in=3 → d_out=2, head_dim 1
        (1, 5, 4, 6, 3, False, [3], True),
        (2, 4, 5, 4, 2, True, [2, 4, 3, 1], False),  # the wrapper: no W_O
        (3, 7, 8, 8, 4, True, [5], True),
        (4, 3, 2, 6, 1, False, [1, 3, 2], False),
    ],
)
def test_values_match_the_formula(backend, seed, n, d_in, d_out, heads, causal, lengths, w_o):
    if backend == "torch":
        pytest.importorskip("torch")
    x, p = random_case(seed, n, d_in, d_out, w_o=w_o)
    valid_len = None if lengths is None else ",".join(map(str, lengths))
    walk = run(x, p, heads, backend, causal=causal, valid_len=valid_len)
    output, weights = reference(x, p, heads, causal=causal, lengths=lengths)
    np.testing.assert_allclose(walk.output, output, rtol=0, atol=1e-12)
    assert walk.output.shape == (n, d_out)  # W_O here is d_out × d_out, or absent
    for i, expected in enumerate(weights, start=1):
        np.testing.assert_allclose(walk.step(f"head{i}.weights"), expected, rtol=0, atol=1e-12)
        masked = walk.step(f"head{i}.masked") if causal or lengths else None
        if masked is not None:
            np.testing.assert_array_equal(np.isneginf(masked), expected == 0)
    keys = [step.key for step in walk.steps]
    assert ("mask" in keys) == causal and ("padding" in keys) == (lengths is not None)
    assert (keys[-1] == "output") == w_o and ("concat" in keys)


def test_heads_show_biased_projections_per_head():
    x, p = random_case(7, 4, 3, 4)
    walk = run(x, p, 2)
    q = x @ p["W_Q"] + p["b_Q"]
    np.testing.assert_allclose(walk.step("head2.Q"), q[:, 2:], rtol=0, atol=1e-15)
    assert walk.find("head2.Q").title == "Head 2 · queries  Q2 = X W_Q^(2) + b_Q^(2)"
    assert walk.find("output").title == "Output  Concat · W_O + b_O"
    assert walk.meta["parameters"] == 3 * 3 * 4 + 4 * 4 + 4 * 4
    assert [item.name for item in walk.inputs] == ["X", *WEIGHTS, *BIASES]


def test_without_w_o_the_concatenation_is_the_result_and_says_so():
    x, p = random_case(8, 4, 3, 2, w_o=False)
    walk = run(x, p, 2)
    np.testing.assert_array_equal(walk.output, walk.step("concat"))
    assert [step.key for step in walk.steps][-2:] == ["differences", "concat"]
    assert any("MultiHeadAttentionWrapper" in str(note) for note in walk.find("concat").notes)
    assert any("no output projection" in str(note) for note in walk.notes)
    assert "no W_O was given" in walk.find("split").explanation
    split = walk.step("split")
    assert "concat_columns" in split[0] and "concat_wo_rows" not in split[0]


def test_a_vaswani_w_o_back_to_d_in():
    """W_O may be d_out × d_o with any d_o (h d_v × d_model in the paper), b_O d_o wide."""
    x, p = random_case(9, 5, 3, 4)
    p["W_O"] = np.random.default_rng(1).standard_normal((4, 3))
    p["b_O"] = np.array([0.1, 0.2, 0.3])
    walk = run(x, p, 2)
    np.testing.assert_allclose(walk.output, reference(x, p, 2)[0], rtol=0, atol=1e-13)
    assert walk.output.shape == (5, 3)


# --- the book's example -------------------------------------------------------------------


def test_book_causal_example_by_hand(invoke_json):
    doc = invoke_json("multihead", "--example", "book-causal")
    steps = {step["key"]: step for step in doc["steps"]}
    x = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [1.0, 1.0, 0.0]])
    # Head 1 (width 1): q = x·(1, 0, 1) + 0, k = x·(1, 0, 1) + 0.5, v = x·(1, 0, .5) + .1
    q1, k1, v1 = np.array([1.5, 0.5, 1.0]), np.array([2.0, 1.0, 1.5]), np.array([1.35, 0.35, 1.1])
    np.testing.assert_allclose(np.ravel(unwrap(steps["head1.Q"]["value"])), q1, atol=1e-15)
    np.testing.assert_allclose(np.ravel(unwrap(steps["head1.K"]["value"])), k1, atol=1e-15)
    np.testing.assert_allclose(np.ravel(unwrap(steps["head1.V"]["value"])), v1, atol=1e-15)
    # Causal, √1 = 1: row 2 is softmax(0.5·2, 0.5·1) = softmax(1, 0.5).
    e = math.exp(0.5)
    row2 = [e / (e + 1), 1 / (e + 1), 0.0]
    weights = np.array(unwrap(steps["head1.weights"]["value"]))
    np.testing.assert_allclose(weights[1], row2, atol=1e-15)
    np.testing.assert_array_equal(weights[0], [1.0, 0.0, 0.0])
    assert unwrap(steps["head1.masked"]["value"])[0][1:] == ["-inf", "-inf"]
    p = {
        "W_Q": np.array([[1, 0], [0, 1], [1, -1]], dtype=float),
        "W_K": np.array([[1, 1], [0, 1], [1, 0]], dtype=float),
        "W_V": np.array([[1, 0], [0, 1], [0.5, 0.5]]),
        "W_O": np.array([[0.5, 0.5], [0.5, -0.5]]),
        "b_Q": np.array([0, 0.5]),
        "b_K": np.array([0.5, 0]),
        "b_V": np.array([0.1, -0.1]),
        "b_O": np.array([0, 0.1]),
    }
    np.testing.assert_allclose(data(doc["output"]), reference(x, p, 2, causal=True)[0], atol=1e-15)
    assert doc["meta"]["parameters"] == 3 * 6 + 4 + 3 * 2 + 2


# --- PyTorch -------------------------------------------------------------------------------


def torch_mha(torch, x, p, heads, *, attn_mask=None, key_padding_mask=None):
    """nn.MultiheadAttention (bias=True) holding our weights: it computes x @ W^T + b."""
    d_model = x.shape[1]
    module = torch.nn.MultiheadAttention(
        d_model, heads, bias=True, batch_first=True, dtype=torch.float64
    )
    with torch.no_grad():
        weight = np.concatenate([p[name].T for name in WEIGHTS[:3]])
        module.in_proj_weight.copy_(torch.from_numpy(weight))
        module.in_proj_bias.copy_(torch.from_numpy(np.concatenate([p[b] for b in BIASES[:3]])))
        module.out_proj.weight.copy_(torch.from_numpy(p["W_O"].T))
        module.out_proj.bias.copy_(torch.from_numpy(p["b_O"]))
    tokens = torch.from_numpy(x)[None]
    output, per_head = module(
        tokens,
        tokens,
        tokens,
        attn_mask=attn_mask,
        key_padding_mask=key_padding_mask,
        need_weights=True,
        average_attn_weights=False,
    )
    return output[0].detach().numpy(), per_head[0].detach().numpy()  # (n, d), (h, n, n)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("seed", "n", "d_model", "heads", "causal", "lengths"),
    [
        (0, 5, 4, 2, True, None),
        (1, 6, 6, 3, False, [4]),  # key_padding_mask
        (2, 7, 8, 4, True, [5]),  # attn_mask and key_padding_mask together
        (3, 5, 6, 2, True, [1, 2, 5, 3, 4]),  # per-row lengths: only attn_mask can say so
        (4, 4, 3, 1, False, None),
    ],
)
def test_agrees_with_torch_multihead_attention(
    torch, backend, seed, n, d_model, heads, causal, lengths
):
    x, p = random_case(seed, n, d_model, d_model)
    valid_len = None if lengths is None else lengths  # a list, as from Python
    walk = run(x, p, heads, backend, causal=causal, valid_len=valid_len)
    blocked = np.zeros((n, n), dtype=bool)
    if causal:
        blocked |= np.triu(np.ones((n, n), dtype=bool), k=1)
    padding = None
    if lengths is not None and len(lengths) == 1:
        padding = torch.from_numpy(np.arange(n)[None, :] >= lengths[0])  # (1, n) True = pad
    elif lengths is not None:
        blocked |= np.arange(n)[None, :] >= np.array(lengths)[:, None]
    attn_mask = torch.from_numpy(blocked) if blocked.any() else None
    output, per_head = torch_mha(torch, x, p, heads, attn_mask=attn_mask, key_padding_mask=padding)
    np.testing.assert_allclose(walk.output, output, rtol=0, atol=1e-12)
    for i in range(heads):
        np.testing.assert_allclose(
            walk.step(f"head{i + 1}.weights"), per_head[i], rtol=0, atol=1e-12
        )


def test_padding_parts_are_the_masks_torch_takes(torch):
    x, p = random_case(5, 5, 4, 4)
    walk = run(x, p, 2, causal=True, valid_len=3)
    parts = {part.label: part.value for part in walk.find("padding").parts}
    np.testing.assert_array_equal(parts["key_padding_mask (True = pad)"], [[0, 0, 0, 1, 1]])
    sdpa = parts["SDPA attn_mask (True = may attend), causal included"]
    expected = np.tril(np.ones((5, 5), dtype=bool)) & (np.arange(5)[None, :] < 3)
    np.testing.assert_array_equal(sdpa, expected)
    # SDPA with that boolean mask gives head 1's weights (through its output).
    q, k, v = (x @ p[w] + p[b] for w, b in zip(WEIGHTS[:3], BIASES[:3], strict=True))
    out = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a[:, :2])[None] for a in (q, k, v)), attn_mask=torch.from_numpy(sdpa)
    )
    np.testing.assert_allclose(walk.step("head1.output"), out[0].numpy(), rtol=0, atol=1e-12)


def book_multihead_attention(torch, x, p, heads, *, causal, w_o):
    """The from-scratch book's MultiHeadAttention (ch. 3), with our weights, in torch."""
    nn = torch.nn
    d_out = p["W_Q"].shape[1]
    head_dim = d_out // heads

    def linear(w, b):
        layer = nn.Linear(w.shape[0], w.shape[1], bias=b is not None, dtype=torch.float64)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(w.T))
            if b is not None:
                layer.bias.copy_(torch.from_numpy(b))
        return layer

    w_query, w_key, w_value = (
        linear(p[w], p.get(b)) for w, b in zip(WEIGHTS[:3], BIASES[:3], strict=True)
    )
    inputs = torch.from_numpy(x)[None]  # (b, num_tokens, d_in)
    b, num_tokens, _ = inputs.shape
    keys = w_key(inputs).view(b, num_tokens, heads, head_dim).transpose(1, 2)
    queries = w_query(inputs).view(b, num_tokens, heads, head_dim).transpose(1, 2)
    values = w_value(inputs).view(b, num_tokens, heads, head_dim).transpose(1, 2)
    attn_scores = queries @ keys.transpose(2, 3)
    if causal:
        mask = torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1).bool()
        attn_scores.masked_fill_(mask, -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
    context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, d_out)
    if w_o:
        context = linear(p["W_O"], p.get("b_O"))(context)
    return context[0].detach().numpy()


@pytest.mark.parametrize(
    ("seed", "n", "d_in", "d_out", "heads", "causal", "bias", "w_o"),
    [
        (0, 6, 3, 2, 2, True, False, True),  # the book's own shapes, qkv_bias=False
        (1, 6, 3, 2, 2, True, True, True),
        (2, 5, 4, 6, 3, False, True, False),
        (3, 4, 6, 4, 4, True, False, False),
    ],
)
def test_agrees_with_the_books_module(torch, seed, n, d_in, d_out, heads, causal, bias, w_o):
    x, p = random_case(seed, n, d_in, d_out, bias=bias, w_o=w_o)
    walk = run(x, p, heads, causal=causal)
    expected = book_multihead_attention(torch, x, p, heads, causal=causal, w_o=w_o)
    np.testing.assert_allclose(walk.output, expected, rtol=0, atol=1e-12)


# --- random inputs -----------------------------------------------------------------------------


def test_random_rectangular_with_drawn_biases(invoke_json):
    args = ("multihead", "--n", "5", "--d-in", "3", "--d-out", "4", "--heads", "2", "--bias")
    doc = invoke_json(*args, "--causal", "--seed", "3")
    assert list(doc["inputs"]) == ["X", *WEIGHTS, *BIASES]
    x = np.array(data(doc["inputs"]["X"]))
    p = {name: np.array(data(doc["inputs"][name])) for name in (*WEIGHTS, *BIASES)}
    assert x.shape == (5, 3) and p["W_Q"].shape == (3, 4) and p["W_O"].shape == (4, 4)
    assert p["b_Q"].shape == (4,) and p["b_O"].shape == (4,)
    np.testing.assert_allclose(data(doc["output"]), reference(x, p, 2, causal=True)[0], atol=1e-12)
    assert any(
        "weights and biases were drawn with random seed 3" in note["text"] for note in doc["notes"]
    )
    # --bias draws from its own stream: X and the weights are those of the run without it.
    plain = invoke_json(*args[:-1], "--causal", "--seed", "3")
    for name in ("X", *WEIGHTS):
        assert plain["inputs"][name] == doc["inputs"][name]


def test_d_model_is_d_in_and_d_out_together(invoke_json):
    square = invoke_json("multihead", "--n", "4", "--d-model", "6", "--heads", "3")
    split = invoke_json("multihead", "--n", "4", "--d-in", "6", "--d-out", "6", "--heads", "3")
    assert square["inputs"] == split["inputs"] and square["output"] == split["output"]


def test_biases_on_drawn_weights(invoke_json):
    doc = invoke_json("multihead", "--x", "1,0,0,0;0,1,0,0", "--bq", "1,2,3,4", "--seed", "1")
    p = {name: np.array(data(doc["inputs"][name])) for name in (*WEIGHTS, "b_Q")}
    x = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0]])
    np.testing.assert_allclose(data(doc["output"]), reference(x, p, 2)[0], atol=1e-13)


def test_lesson_file_options(invoke_json, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'lesson = "multihead"\n[[examples]]\nname = "mine"\n'
        "options = { heads = 1, causal = true, valid_len = [1, 2, 2] }\n"
        "[examples.inputs]\nX = [[1, 0], [0, 1], [1, 1]]\n"
        "W_Q = [[1, 0, 1], [0, 1, 1]]\nW_K = [[1, 0, 1], [0, 1, 1]]\nW_V = [[1, 0, 1], [0, 1, 1]]\n",
        encoding="utf-8",
    )
    doc = invoke_json("multihead", "--lesson", str(path))
    assert doc["meta"]["valid_lengths"] == [1, 2, 2]
    weights = np.array(unwrap({s["key"]: s for s in doc["steps"]}["head1.weights"]["value"]))
    assert weights[0].tolist() == [1.0, 0.0, 0.0] and weights[2][2] == 0.0


# --- errors ----------------------------------------------------------------------------------

X3 = "1,0,1;0,1,1;1,1,0"
W32 = "1,0;0,1;1,1"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--valid-len", "0"), ("--valid-len 0", "no visible key", "no softmax", "NaN")),
        (("--valid-len", "2,0,1,3"), ("--valid-len 0 (row 2)", "no softmax")),
        (("--valid-len", "5"), ("--valid-len 5 is past the 4 keys", "at most 4, the number of")),
        # m = 3 keys for n = 6 queries: the bound is m, once printed as "at most n = 3".
        (("--n", "6", "--m", "3", "--valid-len", "4"), ("is past the 3 keys", "at most 3, the")),
        (("--valid-len", "1,2"), ("gives 2 lengths but there are 4 query rows",)),
        (("--valid-len", "two"), ("--valid-len two:", "whole numbers")),
        (
            ("--x", X3, "--wq", W32, "--wk", W32, "--wv", W32, "--bq", "1,2,3"),
            ("--bq has 3 entries but must have 2", "d_out"),
        ),
        (
            ("--x", X3, "--wq", W32, "--wk", W32, "--wv", W32, "--wo", "1,0;0,1", "--bo", "1"),
            ("--bo has 1 entry but must have 2", "W_O's columns"),
        ),
        (
            ("--x", X3, "--wq", W32, "--wk", W32, "--wv", W32, "--bo", "1,2"),
            ("--bo needs --wo",),
        ),
        (
            ("--x", X3, "--wq", W32, "--wk", W32, "--wv", W32, "--heads", "3"),
            ("W_Q has d_out = 2 columns", "3 heads cannot share", "--heads must divide d_out"),
        ),
        (("--n", "3", "--d-in", "4", "--d-out", "6", "--heads", "4"), ("d_out = 6", "4 heads")),
        (("--x", X3, "--bq", "1,2,3", "--bias"), ("--bias draws every bias", "--bq")),
        (("--bq", "1,2"), ("--bq needs --x",)),
        (("--d-in", "0"), ("--d-in must be at least 1",)),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("multihead", *args), *fragments)


def test_help_lists_the_new_options(invoke):
    result = invoke("multihead", "--help")
    for flag in ("--causal", "--valid-len", "--bq", "--bo", "--bias", "--d-in", "--d-out"):
        assert flag in result.stdout
