"""attn multihead: the hand example, properties, agreement with nn.MultiheadAttention."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from attn_cli.mechanisms import multihead as mh
from attn_cli.mechanisms.attention import attention
from attn_cli.run.runner import RunRequest, compute
from tests.conftest import assert_user_error, data, unwrap
from tests.lesson_runs import Batch, Runs

# A small nn.MultiheadAttention's state_dict (embed_dim 4, kdim 3, vdim 2), written by
# tests/data/multihead/make.py: .npz, so that it reads without PyTorch.
MHA_FILE = str(Path(__file__).parent / "data" / "multihead" / "mha-kdim.npz")

# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "5", "--d-model", "6", "--heads", "3", "--seed", "3"),
    sized=lambda s: {"n": s, "d_model": s, "heads": 2 if s % 2 == 0 else 1},
    large=("--n", "101", "--d-model", "4", "--heads", "2"),
    variants=(
        (),
        ("--causal",),
        ("--valid-len", "3"),
        ("--causal", "--valid-len", "1,2,3,4"),
        ("--bias",),
        ("--dropout", "0.3"),
        ("--dropout", "0"),
        ("--n", "1", "--d-model", "4", "--dropout", "0.5"),
        ("--n", "3", "--d-model", "4", "--bias"),
        ("--heads", "1"),
        ("--heads", "4"),
        ("--d-in", "4", "--d-out", "6"),
        ("--x", "1,0;0,1", "--wq", "1,0;0,1", "--wk", "1,0;0,1", "--wv", "1,0;0,1"),
        # Two heads with the same columns: the same weights.
        ("--x", "1,0;0,1", *(arg for w in "qkv" for arg in (f"--w{w}", "1,0,1,0;0,1,0,1"))),
        ("--x", "1,0;0,1", "--wq", "1,0;0,1", "--wk", "1,0;0,1", "--wv", "0,1;1,0", "--bq", "1,1"),
        ("--n", "4", "--d-model", "8", "--heads", "4", "--kv-heads", "1", "--bias"),
        ("--n", "3", "--d-in", "4", "--d-out", "6", "--heads", "3", "--kv-heads", "1"),
        ("--example", "grouped", "--dropout", "0.5"),
        # W_Q given on top of random inputs: the others drawn, and said so by name (drawn_some).
        ("--n", "3", "--d-model", "2", "--heads", "1", "--wq", "1,0;0,1", "--bias"),
        # Cross-attention: keys and values of their own widths (kdim, vdim), from a file too.
        ("--n", "3", "--m", "5", "--d-model", "4", "--kdim", "6", "--vdim", "2", "--causal"),
        # Grouped-query heads whose keys and values come from their own sequences, with biases.
        ("--n", "3", "--m", "4", "--d-model", "4", "--kdim", "3", "--kv-heads", "1", "--bias"),
        ("--n", "2", "--m", "3", "--d-model", "4", "--vdim", "3"),
        ("--x", "1,0;0,1", "--xk", "1,0;0,1;1,1", "--valid-len", "2"),
        ("--weights", MHA_FILE, "--x", "1,0,0,1;0,1,1,0", "--xk", "1,2,3;0,1,0", "--xv", "1,0;0,1"),
        # Soft-capping and QK-norm per head: plain, masked, grouped.
        ("--softcap", "0.5", "--qk-norm", "rmsnorm"),
        ("--softcap", "2"),
        (
            "--x",
            "1,0",
            "--wq",
            "1,0;0,1",
            "--wk",
            "1,0;0,1",
            "--wv",
            "1,0;0,1",
            "--qk-norm",
            "layernorm",
        ),
        ("--softcap", "1000", "--causal", "--valid-len", "3"),
        ("--n", "4", "--d-model", "8", "--heads", "4", "--kv-heads", "2", "--qk-norm", "layernorm"),
        (
            *("--x", "9,0;0,9", "--wq", "1,0;0,1", "--wk", "1,0;0,1", "--wv", "1,0;0,1"),
            *("--qk-norm", "rmsnorm", "--heads", "1"),
        ),
        # Grouped-query heads over keys of their own.
        (
            "--n",
            "3",
            "--m",
            "4",
            "--d-model",
            "4",
            "--kdim",
            "3",
            "--heads",
            "2",
            "--kv-heads",
            "1",
        ),
    ),
    options=({"causal": True}, {"kv_heads": 1}, {"softcap": 1.0, "qk_norm": "layernorm"}),
    figure=(("multihead",), ("cats", "sat", "dogs", "ran", "head 1", "head 2")),
    batch=Batch(
        lambda draw: {"x": draw(3, 4), **{w: draw(4, 4) / 2 for w in ("wq", "wk", "wv", "wo")}},
        ("x",),
        options={"heads": 2, "causal": True},
    ),
)


BACKENDS = ("numpy", "torch")
NAMES = ("W_Q", "W_K", "W_V", "W_O")


def steps_of(doc: dict) -> dict[str, dict]:
    return {step["key"]: step for step in doc["steps"]}


def text(matrix: np.ndarray) -> str:
    return json.dumps(np.asarray(matrix).tolist())


def torch_mha(torch, x: np.ndarray, weights: dict[str, np.ndarray], heads: int):
    """nn.MultiheadAttention holding our weights: it computes x @ W^T, so it stores W^T."""
    d_model = x.shape[1]
    module = torch.nn.MultiheadAttention(
        d_model, heads, bias=False, batch_first=True, dtype=torch.float64
    )
    with torch.no_grad():
        module.in_proj_weight.copy_(
            torch.from_numpy(np.concatenate([weights[n].T for n in ("W_Q", "W_K", "W_V")]))
        )
        module.out_proj.weight.copy_(torch.from_numpy(weights["W_O"].T))
    tokens = torch.from_numpy(x)[None]
    output, averaged = module(tokens, tokens, tokens, need_weights=True)
    return output[0].detach().numpy(), averaged[0].detach().numpy()


def random_case(seed: int, n: int, d_model: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model))
    return x, {name: rng.standard_normal((d_model, d_model)) / d_model**0.5 for name in NAMES}


def run_multihead(backend: str, x: np.ndarray, weights: dict[str, np.ndarray], heads: int):
    inputs = {"X": text(x), **{name: text(w) for name, w in weights.items()}}
    request = RunRequest(
        lesson="multihead", inputs=inputs, options={"heads": heads}, backend=backend
    )
    return compute(request)


# --- the default example, by hand -----------------------------------------------------------


def test_default_example_by_hand(invoke_json):
    doc = invoke_json("multihead")
    assert doc["example"] == "two-heads"
    steps = steps_of(doc)
    per_head = [f"head{i}.{part}" for i in (1, 2) for part in ("Q", "K", "V", "weights", "output")]
    assert list(steps) == ["split", *per_head, "differences", "concat", "output"]
    # Every query matches two keys with scaled score c = 1.5·1.5/√2 and two with 0.
    c = 1.5 * 1.5 / math.sqrt(2)
    high, low = math.exp(c) / (2 * math.exp(c) + 2), 1 / (2 * math.exp(c) + 2)
    # Head 1 (noun/verb): cats and dogs match, sat and ran match.
    same_kind = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1]])
    # Head 2 (early/late, keys swapped): early tokens match late ones and the reverse.
    other_half = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0]])
    for key, pattern in (("head1.weights", same_kind), ("head2.weights", other_half)):
        np.testing.assert_allclose(
            unwrap(steps[key]["value"]), np.where(pattern, high, low), atol=1e-15
        )
    # Values are the tokens' own feature pairs (W_V = I): each output is 2·high on the
    # feature the matched tokens share.
    a, b = 2 * high, 2 * low
    head1 = [[a, b], [b, a], [a, b], [b, a]]
    head2 = [[b, a], [b, a], [a, b], [a, b]]
    np.testing.assert_allclose(unwrap(steps["head1.output"]["value"]), head1, atol=1e-15)
    np.testing.assert_allclose(unwrap(steps["head2.output"]["value"]), head2, atol=1e-15)
    concat = np.hstack([head1, head2])
    np.testing.assert_allclose(unwrap(steps["concat"]["value"]), concat, atol=1e-15)
    w_o = np.array([[0.6, 0, 0.4, 0], [0, 0.6, 0, 0.4], [0.4, 0, 0.6, 0], [0, 0.4, 0, 0.6]])
    np.testing.assert_allclose(data(doc["output"]), concat @ w_o, atol=1e-15)
    np.testing.assert_allclose(
        unwrap(steps["differences"]["value"]), [[0, high - low], [high - low, 0]]
    )
    assert steps["head1.weights"]["row_labels"] == ["cats", "sat", "dogs", "ran"]


def test_split_parameter_count_and_notes(invoke_json):
    doc = invoke_json("multihead")
    split = steps_of(doc)["split"]
    assert [row["qkv_columns"] for row in unwrap(split["value"])] == ["1–2", "3–4"]
    assert [row["concat_wo_rows"] for row in unwrap(split["value"])] == ["1–2", "3–4"]
    assert split["notes"][0]["text"] == "d_k = d_v = d_model / h = 4 / 2 = 2."
    assert "4 · 4² = 64 without biases" in split["notes"][1]["text"]
    assert doc["meta"]["parameters"] == 64
    assert doc["notes"][0]["text"].startswith("Heads 1 and 2 attend differently")
    assert steps_of(doc)["concat"]["col_labels"] == ["h1·1", "h1·2", "h2·1", "h2·2"]


def test_json_inputs_hold_every_weight_and_recompute_the_output(invoke_json):
    doc = invoke_json("multihead", "--n", "5", "--d-model", "6", "--heads", "3", "--seed", "4")
    assert list(doc["inputs"]) == ["X", *NAMES]
    x = np.array(data(doc["inputs"]["X"]))
    w = {name: np.array(data(doc["inputs"][name])) for name in NAMES}
    assert x.shape == (5, 6) and all(m.shape == (6, 6) for m in w.values())
    heads = []
    for i in range(3):
        cols = slice(2 * i, 2 * i + 2)
        q, k, v = x @ w["W_Q"][:, cols], x @ w["W_K"][:, cols], x @ w["W_V"][:, cols]
        s = q @ k.T / math.sqrt(2)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        heads.append(e / e.sum(axis=1, keepdims=True) @ v)
    np.testing.assert_allclose(data(doc["output"]), np.hstack(heads) @ w["W_O"], atol=1e-12)
    assert doc == invoke_json(
        "multihead", "--n", "5", "--d-model", "6", "--heads", "3", "--seed", "4"
    )


def test_drawn_weights_differ_from_the_random_tokens_and_are_scaled(invoke_json):
    doc = invoke_json("multihead", "--n", "64", "--d-model", "64", "--seed", "0")
    x, w_q = np.array(data(doc["inputs"]["X"])), np.array(data(doc["inputs"]["W_Q"]))
    assert not np.allclose(x.ravel()[:100], w_q.ravel()[:100] * 8)  # independent streams
    assert 0.8 < w_q.std() * 8 < 1.2  # entries N(0, 1/d_model)


def test_weights_drawn_for_given_tokens(invoke_json):
    doc = invoke_json("multihead", "--x", "[[1,0,0,0],[0,1,0,0],[1,1,0,0]]", "--seed", "2")
    assert list(doc["inputs"]) == ["X", *NAMES]
    assert any("drawn with random seed 2" in note["text"] for note in doc["notes"])


# --- properties and PyTorch ----------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_agrees_with_torch_multihead_attention(backend, torch):
    for seed, n, d_model, heads in ((0, 4, 4, 2), (1, 7, 12, 3), (2, 5, 8, 8), (3, 3, 6, 1)):
        x, weights = random_case(seed, n, d_model)
        walk = run_multihead(backend, x, weights, heads)
        output, averaged = torch_mha(torch, x, weights, heads)
        np.testing.assert_allclose(walk.output, output, rtol=0, atol=1e-10)
        mean = np.mean([walk.step(f"head{i}.weights") for i in range(1, heads + 1)], axis=0)
        np.testing.assert_allclose(mean, averaged, rtol=0, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_properties_on_random_inputs(backend, torch):
    x, weights = random_case(9, 6, 8)
    walk = run_multihead(backend, x, weights, 4)
    outputs = []
    for i in range(1, 5):
        np.testing.assert_allclose(walk.step(f"head{i}.weights").sum(axis=1), 1.0)
        assert walk.step(f"head{i}.Q").shape == (6, 2)
        outputs.append(walk.step(f"head{i}.output"))
    np.testing.assert_array_equal(walk.step("concat"), np.hstack(outputs))
    differences = walk.step("differences")
    np.testing.assert_array_equal(differences, differences.T)
    assert np.all(np.diag(differences) == 0) and np.all(differences + np.eye(4) > 0)


def test_mechanism_matches_the_walkthrough():
    x, w = random_case(5, 5, 6)
    walk = run_multihead("numpy", x, w, 3)
    # The mechanism's pieces, composed here: each head is plain attention on its column blocks.
    outputs = []
    for i in range(3):
        q, k, v = (mh.project(x, mh.head_block(w[name], i, 3)) for name in ("W_Q", "W_K", "W_V"))
        result = attention(q, k, v)
        np.testing.assert_array_equal(walk.step(f"head{i + 1}.weights"), result.weights)
        outputs.append(result.output)
    output = mh.project(mh.concat(outputs), w["W_O"])
    np.testing.assert_allclose(output, walk.output, atol=1e-15)
    np.testing.assert_array_equal(mh.head_block(w["W_Q"], 1, 3), w["W_Q"][:, 2:4])
    assert mh.parameter_count(512) == 4 * 512 * 512


def test_time_is_shown_per_step(invoke_json):
    steps = steps_of(invoke_json("multihead", "--time"))
    for key in ("head1.Q", "head1.K", "head1.V", "head1.output", "concat", "output"):
        assert "seconds" in steps[key], key


# --- errors and formats -------------------------------------------------------------------

I4 = "1,0,0,0;0,1,0,0;0,0,1,0;0,0,0,1"
ROW4 = "1,0,0,0;0,1,0,0"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--x", "1,0,0;0,1,0", "--heads", "2"), ("d_model = 3", "--heads must divide d_model")),
        (("--n", "4", "--d-model", "6", "--heads", "4"), ("d_model = 6", "4 heads")),
        (("--heads", "3"), ("d_model = 4", "3 heads")),
        (("--wq", I4), ("--wq needs --x",)),
        (("--x", ROW4, "--wq", I4), ("missing --wk, --wv", "--wo is optional")),
        (("--x", ROW4, "--wo", I4), ("--wo needs --wq, --wk and --wv",)),
        (
            ("--x", ROW4, "--wq", "1,0;0,1", "--wk", I4, "--wv", I4, "--wo", I4),
            ("--wq is 2 × 2", "X has d_in = 4 columns"),
        ),
        (
            ("--x", ROW4, "--wq", I4, "--wk", "1,0;0,1;0,0;0,0", "--wv", I4),
            ("--wk is 4 × 2", "d_in × d_out = 4 × 4"),
        ),
        (
            ("--x", ROW4, "--wq", I4, "--wk", I4, "--wv", I4, "--wo", "1,0,0,0;0,1,0,0;0,0,1,0"),
            ("--wo is 3 × 4", "d_out = 4 rows"),
        ),
        (("--x", "1,a"), ("--x", "'a'", "not a number")),
        (("--x", "[[1, NaN]]"), ("--x has nan",)),
        (("--x", ROW4, "--n", "3"), ("--x is 2 × 4", "draw X 3 × 8: give --d-model 4 --n 2")),
        (("--n", "400000", "--d-model", "8"), ("needs about", "choose smaller sizes")),
        (("--example", "nope"), ("no example 'nope'", "two-heads")),
        (("--tokens", "a,b,c"), ("--tokens", "gives 3 names but there are 4 rows")),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("multihead", *args), *fragments)


LESSON = """\
lesson = "multihead"
[[examples]]
name = "mine"
options = {{ heads = {heads} }}
[examples.inputs]
X = [[1, 0, 0, 0], [0, 1, 0, 0]]
"""


@pytest.mark.parametrize("heads", ['"two"', "2.5", "true", "0"])
def test_heads_from_a_lesson_file_must_be_a_whole_number(invoke, tmp_path, heads):
    path = tmp_path / "mine.toml"
    path.write_text(LESSON.format(heads=heads), encoding="utf-8")
    fragments = (f"options.heads: found {heads} (", "expected a whole number ≥ 1.")
    assert_user_error(invoke("multihead", "--lesson", str(path)), *fragments)
    assert_user_error(invoke("check", str(path)), *fragments)


def test_whole_number_heads_from_a_lesson_file(invoke_json, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(LESSON.format(heads=4), encoding="utf-8")
    doc = invoke_json("multihead", "--lesson", str(path))
    keys = [step["key"] for step in doc["steps"]]
    assert keys[-4:] == ["head4.output", "differences", "concat", "output"]


def test_rich_output(invoke):
    result = invoke("multihead")
    assert result.exit_code == 0, result.output
    for fragment in (
        "The split: 2 heads of width d_model / h = 2",
        "Head 2 · weights  softmax(Q2 K2ᵀ / √2)",
        "h2·1",
        "Heads 1 and 2 attend differently",
        "cats",
    ):
        assert fragment in result.stdout


def test_markdown_and_latex_outputs(invoke):
    markdown = invoke("multihead", "--format", "markdown")
    assert markdown.exit_code == 0
    assert "| **cats** |" in markdown.stdout and "### 14. Output" in markdown.stdout
    latex = invoke("multihead", "--format", "latex")
    assert latex.exit_code == 0
    assert "W_{O} = \\begin{bmatrix}" in latex.stdout
    assert "A_i = \\operatorname{softmax}" in latex.stdout


def test_json_output_is_one_document(invoke):
    result = invoke("multihead", "--format", "json", "--heads", "4")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert [s["key"] for s in doc["steps"]][-2:] == ["concat", "output"]
    assert sum(key.startswith("head4.") for key in (s["key"] for s in doc["steps"])) == 5


def test_list_examples(invoke):
    result = invoke("multihead", "--list-examples")
    assert result.exit_code == 0 and "two-heads (default)" in result.stdout


def test_more_heads_cost_weights_not_parameters(invoke_json):
    """Issue 22: "more heads are narrower, not more expensive" is true of parameters only; each
    head has its own n × n scores and softmax. And "1 heads"."""
    doc = invoke_json("multihead")  # two-heads: n = 4, d_model = 4, h = 2
    split = doc["steps"][0]
    notes = {note["key"]: note for note in split["notes"]}
    assert "not more expensive" not in notes["parameters"]["text"]
    assert notes["parameters"]["values"] == {"d_model": 4, "count": 4 * 4 * 4}
    cost = notes["heads_cost"]["values"]
    # 2 heads × 4 × 4 weights; one head of width 4 would hold 4 × 4; the scores: 2·h·n²·d_k.
    assert (cost["weights"], cost["one"], cost["dots"]) == (2 * 16, 16, 2 * 16)
    assert cost["score_flops"] == 2 * 2 * 16 * 2 == 2 * 16 * 4  # the same as one head's
    assert "the 2 heads hold 32 weights" in notes["heads_cost"]["text"]
    one = invoke_json("multihead", "--heads", "1")
    split = one["steps"][0]
    assert split["title"].startswith("The split: 1 head of width")
    assert "heads_cost" not in {note["key"] for note in split["notes"]}


def test_sources_are_named_for_a_student():
    """Issue 22: "the from-scratch book" and "the textbooks'" name nothing a student can find."""
    from attn_cli.lessonfiles.loader import bundled_lessons_dir

    text = (bundled_lessons_dir() / "multihead.toml").read_text(encoding="utf-8")
    assert "from-scratch book" not in text and "textbooks'" not in text
    assert 'Sebastian Raschka\'s book "Build a Large Language Model (From Scratch)"' in text
    assert '"Dive into Deep Learning", Zhang, Lipton, Li and Smola' in text


def test_head_differences_compare_each_pair_once_and_keep_nan():
    from attn_cli.mechanisms.multihead import weight_differences

    rng = np.random.default_rng(5)
    weights = [rng.random((6, 6)) for _ in range(4)]
    weights[1][2, 3] = np.nan
    weights[2][0, 0] = np.inf
    weights[3][1, 1] = -np.inf
    with np.errstate(invalid="ignore"):
        reference = np.stack([np.stack([np.max(np.abs(a - b)) for b in weights]) for a in weights])
        got = weight_differences(weights)
    assert np.array_equal(got, reference, equal_nan=True)
    assert np.array_equal(weight_differences(weights[:1]), np.zeros((1, 1)))


# --- grouped-query and multi-query heads (--kv-heads) ---------------------------------------


def sdpa_gqa(torch, x, weights, biases, heads: int, kv: int, causal: bool):
    """The reference: PyTorch's scaled_dot_product_attention with enable_gqa=True on the
    projected heads, (h, n, d_k) queries against (g, n, d_k) keys and values; then W_O."""
    functional = torch.nn.functional
    n, d_k = x.shape[0], weights["W_Q"].shape[1] // heads
    t = {name: torch.from_numpy(value) for name, value in {**weights, **biases}.items()}
    tx = torch.from_numpy(x)

    def heads_of(name: str, count: int):
        projected = tx @ t[f"W_{name}"] + t.get(f"b_{name}", 0)
        return projected.reshape(n, count, d_k).transpose(0, 1)

    q, k, v = heads_of("Q", heads), heads_of("K", kv), heads_of("V", kv)
    out = functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    concat = out.transpose(0, 1).reshape(n, heads * d_k)
    return (concat @ t["W_O"] + t.get("b_O", 0)).numpy()


def grouped_case(rng, n: int, heads: int, kv: int, d_k: int, bias: bool):
    d_model = heads * d_k
    x = rng.standard_normal((n, d_model))
    shapes = {"W_Q": (d_model, d_model), "W_K": (d_model, kv * d_k)}
    shapes |= {"W_V": (d_model, kv * d_k), "W_O": (d_model, d_model)}
    weights = {name: rng.standard_normal(shape) / 2 for name, shape in shapes.items()}
    biases = {f"b_{name[2]}": rng.standard_normal(shape[1]) for name, shape in shapes.items()}
    return x, weights, biases if bias else {}


def test_grouped_heads_equal_sdpa_with_enable_gqa(torch):
    rng = np.random.default_rng(44)
    import attn_cli as attn

    for case in range(12):
        heads = int(rng.choice([1, 2, 3, 4, 6, 8]))
        kv = int(rng.choice([g for g in range(1, heads + 1) if heads % g == 0]))
        n, d_k = int(rng.integers(1, 7)), int(rng.integers(1, 4))
        causal, bias = bool(case % 2), bool(case % 3)
        x, weights, biases = grouped_case(rng, n, heads, kv, d_k, bias)
        walk = attn.multihead(
            x=x,
            **{name.lower().replace("_", ""): w for name, w in weights.items()},
            **{name.lower().replace("_", ""): b for name, b in biases.items()},
            heads=heads,
            kv_heads=kv,
            causal=causal,
        )
        want = sdpa_gqa(torch, x, weights, biases, heads, kv, causal)
        np.testing.assert_allclose(walk.output, want, rtol=0, atol=1e-13, err_msg=str(case))


def test_grouped_heads_equal_repeated_keys_and_values():
    """g key/value heads are h heads whose W_K and W_V blocks repeat each h/g times (as
    repeat_kv and repeat_interleave lay them out): the same weights and output, exactly."""
    import attn_cli as attn

    rng = np.random.default_rng(7)
    heads, kv, d_k = 6, 2, 2
    x, weights, biases = grouped_case(rng, 5, heads, kv, d_k, True)

    def repeated(w: np.ndarray) -> np.ndarray:
        blocks = np.split(w, kv, axis=-1)
        return np.concatenate([b for b in blocks for _ in range(heads // kv)], axis=-1)

    def run(kv_heads: int, transform) -> object:
        given = {name.lower().replace("_", ""): (transform(w) if name[2] in "KV" else w) for name, w in
                 {**weights, **biases}.items()}  # fmt: skip
        return attn.multihead(x=x, **given, heads=heads, kv_heads=kv_heads, causal=True)

    grouped, full = run(kv, lambda w: w), run(heads, repeated)
    np.testing.assert_array_equal(grouped.output, full.output)
    for h in range(1, heads + 1):
        np.testing.assert_array_equal(
            grouped.step(f"head{h}.weights"), full.step(f"head{h}.weights")
        )


def test_grouped_example_shares_and_states_the_cache(invoke_json):
    doc = invoke_json("multihead", "--example", "grouped")
    steps = steps_of(doc)
    assert [key for key in steps if key.startswith("kv")] == ["kv1.K", "kv1.V", "kv2.K", "kv2.V"]
    assert "head1.K" not in steps and "head2.Q" in steps
    split = unwrap(steps["split"]["value"])
    assert [row["kv_head"] for row in split] == [1, 1, 2, 2]
    assert [row["kv_columns"] for row in split] == ["1", "1", "2", "2"]
    # Head 1: nouns look at nouns; head 2, with the same keys: verbs at verbs.
    high = math.exp(2.25) / (2 * math.exp(2.25) + 2 * math.exp(-2.25))
    for key, rows in (("head1.weights", (0, 2)), ("head2.weights", (1, 3))):
        weights = np.array(unwrap(steps[key]["value"]))
        for row in rows:
            np.testing.assert_allclose(weights[row, list(rows)], [high, high], atol=1e-15)
    cache = next(note for note in doc["notes"] if note["key"] == "kv_cache")["values"]
    assert (cache["cached"], cache["full"], cache["per_token"], cache["ratio"]) == (16, 32, 4, 2)
    assert doc["meta"]["kv_heads"] == 2


def test_multi_query_draws_narrow_weights(invoke_json):
    doc = invoke_json("multihead", "--n", "3", "--d-model", "8", "--heads", "4", "--kv-heads", "1")
    import attn_cli as attn

    assert doc["inputs"]["W_K"]["shape"] == doc["inputs"]["W_V"]["shape"] == [8, 2]
    walk = attn.multihead(n=3, d_model=8, heads=4, kv_heads=1)
    labels = {item.name: item.col_labels for item in walk.inputs}
    assert labels["W_K"] == labels["W_V"] == ("kv1·1", "kv1·2")
    split = steps_of(doc)["split"]
    assert "2 key/value head" not in split["title"] and "1 key/value head" in split["title"]
    assert "so 160 without biases" in split["notes"][1]["text"]  # 2·64 + 2·8·2
    cache = next(note for note in doc["notes"] if note["key"] == "kv_cache")["values"]
    assert (cache["cached"], cache["full"], cache["ratio"]) == (12, 48, 4)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--kv-heads", "3", "--heads", "4", "--n", "2", "--d-model", "8"), "give one of 1, 2, 4"),
        (("--kv-heads", "4", "--heads", "2", "--n", "2"), "--kv-heads 4 does not divide"),
        (("--kv-heads", "1"), "it must be 4 × g·d_k = 4 × 2"),
        (("--kv-heads", "0", "--n", "2"), "--kv-heads"),
        (
            (
                *("--x", "1,0;0,1", "--wq", "1,0;0,1", "--wk", "1;0", "--wv", "1;0", "--bk", "1,2"),
                *("--heads", "2", "--kv-heads", "1"),
            ),
            "must have 1 (the columns of W_K and W_V)",
        ),
    ],
)
def test_kv_heads_errors(invoke, args, fragment):
    assert_user_error(invoke("multihead", *args), fragment)


# --- soft-capping and QK-norm per head ------------------------------------------------------


def test_softcap_and_qk_norm_per_head_against_pytorch(torch):
    """Qwen 3's per-head q_norm and k_norm (F.rms_norm over head_dim; LayerNorm as ViT-22B),
    Gemma 2's tanh capping of the scaled scores before the mask, grouped heads repeated as
    enable_gqa pairs them; float64."""
    import attn_cli as attn

    functional = torch.nn.functional
    rng = np.random.default_rng(45)
    for case in range(8):
        heads, kv, d_k = (4, 2, 2) if case % 2 else (2, 2, 3)
        n = int(rng.integers(2, 6))
        x, weights, _ = grouped_case(rng, n, heads, kv, d_k, bias=False)
        norm = ("rmsnorm", "layernorm")[case % 2]
        cap = (None, 0.7, 3.0)[case % 3]
        walk = attn.multihead(
            x=x,
            **{name.lower().replace("_", ""): w for name, w in weights.items()},
            heads=heads,
            kv_heads=kv,
            causal=True,
            softcap=cap,
            qk_norm=norm,
        )
        t = {name: torch.from_numpy(w) for name, w in weights.items()}
        tx = torch.from_numpy(x)
        q, k, v = (
            (tx @ t[f"W_{name}"]).reshape(n, count, d_k).transpose(0, 1)
            for name, count in (("Q", heads), ("K", kv), ("V", kv))
        )
        if norm == "rmsnorm":
            q, k = (functional.rms_norm(a, (d_k,), eps=1e-6) for a in (q, k))
        else:
            q, k = (functional.layer_norm(a, (d_k,), eps=1e-5) for a in (q, k))
        k, v = (a.repeat_interleave(heads // kv, dim=0) for a in (k, v))
        logits = q @ k.transpose(1, 2) / math.sqrt(d_k)
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        future = torch.ones(n, n, dtype=torch.bool).triu(1)
        attention = torch.softmax(logits.masked_fill(future, float("-inf")), dim=-1)
        for h in range(heads):
            np.testing.assert_allclose(
                walk.step(f"head{h + 1}.weights"), attention[h].numpy(), rtol=0, atol=1e-13
            )
        concat = (attention @ v).transpose(0, 1).reshape(n, heads * d_k)
        want = (concat @ t["W_O"]).numpy()
        np.testing.assert_allclose(walk.output, want, rtol=0, atol=1e-13, err_msg=str(case))


def test_qk_norm_lowers_the_largest_weight_of_large_projections(invoke_json):
    args = ("--x", "9,0;0,9", "--wq", "1,0;0,1", "--wk", "1,0;0,1", "--wv", "1,0;0,1")
    doc = invoke_json("multihead", *args, "--heads", "1", "--qk-norm", "rmsnorm")
    note = next(note for note in doc["notes"] if note["key"].startswith("qknorm"))
    assert note["key"] == "qknorm_lowers"
    assert note["values"]["before"] > 0.99 > note["values"]["after"]


def test_n_beside_weights_draws_inputs_of_the_files_widths(invoke, invoke_json):
    """--n N with --weights FILE: X, X_K and X_V drawn of the file's embed_dim, kdim and vdim
    (4, 3 and 2 here), and the output the file's layer on them, computed here from its arrays."""
    doc = invoke_json("multihead", "--weights", MHA_FILE, "--n", "3", "--heads", "2", "--full")
    x, xk, xv = (np.array(unwrap(doc["inputs"][name]), dtype=float) for name in ("X", "X_K", "X_V"))
    assert (x.shape, xk.shape, xv.shape) == ((3, 4), (3, 3), (3, 2))
    state = dict(np.load(MHA_FILE))
    bias = state["in_proj_bias"]
    q = x @ state["q_proj_weight"].T + bias[:4]
    k = xk @ state["k_proj_weight"].T + bias[4:8]
    v = xv @ state["v_proj_weight"].T + bias[8:]
    heads = []
    for head in range(2):
        cols = slice(2 * head, 2 * head + 2)
        scores = q[:, cols] @ k[:, cols].T / np.sqrt(2)
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        heads.append(weights / weights.sum(axis=1, keepdims=True) @ v[:, cols])
    expected = np.concatenate(heads, axis=1) @ state["out_proj.weight"].T + state["out_proj.bias"]
    got = np.array(unwrap(doc["output"]), dtype=float)
    assert np.max(np.abs(got - expected)) <= 1e-12
    text = invoke("multihead", "--weights", MHA_FILE, "--n", "3", "--heads", "2").stdout
    assert "X tokens (drawn, random seed 0; 4 columns, the width of mha-kdim.npz)" in text
    assert "X_V value sequence (drawn, random seed 0; 2 columns" in text
    assert_user_error(
        invoke("multihead", "--weights", MHA_FILE, "--n", "3", "--d-model", "5"),
        "--d-model 5:",
        "holds d_model = 4",
        "leave out --d-model",
    )
    assert_user_error(
        invoke("multihead", "--weights", MHA_FILE, "--n", "3", "--kdim", "4"),
        "--kdim 4:",
        "holds kdim = 3",
    )


def test_random_inputs_say_they_were_drawn_and_name_each_heads_columns(invoke_json):
    """A plain --n run says X (and cross-attention's X_K, X_V) was drawn, from which seed; W_K's
    and W_V's columns are named by head (h1·1 …) as W_Q's are, with one key/value head per
    query head; kv1·1 … only where the heads are grouped."""
    import attn_cli as attn

    walk = attn.multihead(n=3, d_model=4, heads=2, seed=5)
    items = {item.name: item for item in walk.inputs}
    assert items["X"].description == "tokens (drawn, random seed 5)"
    assert items["W_K"].col_labels == items["W_V"].col_labels == ("h1·1", "h1·2", "h2·1", "h2·2")
    assert items["W_K"].col_labels == items["W_Q"].col_labels
    cross = attn.multihead(n=3, m=2, d_model=4, heads=2, kdim=3, seed=1)
    descriptions = {item.name: item.description for item in cross.inputs}
    assert descriptions["X_K"].endswith("(drawn, random seed 1)")
    given = attn.multihead(x=np.eye(2), wq=np.eye(2), wk=np.eye(2), wv=np.eye(2), wo=np.eye(2))
    assert {item.name: item.description for item in given.inputs}["X"] == "tokens"


# --- sentences that must hold for the run they describe (audit) ----------------------------


def test_one_head_says_nothing_of_other_heads(invoke_json):
    """With h = 1 there is no head 2 and no other head: the texts once named column "h2·1" of
    head 2's output, asked to compare with "the other heads'" and said W_O "mixes the heads"."""
    doc = invoke_json("multihead", "--n", "3", "--d-model", "2", "--heads", "1", "--bias")
    steps = {step["key"]: step for step in doc["steps"]}
    everything = json.dumps([step["explanation"] for step in doc["steps"]])
    assert "h2·1" not in everything and "other heads" not in everything
    assert "mixes the heads" not in everything
    assert steps["concat"]["explanation"] == (
        "With h = 1 the concatenation is head 1's output itself, 3 × 2: nothing to lay side by "
        "side."
    )
    assert steps["head1.weights"]["explanation"].endswith(
        "With h = 1 this is the only pattern: there is no other head to compare it with."
    )
    assert steps["differences"]["explanation"] == (
        "With h = 1 there is no pair of heads to compare: the one entry is head 1 against itself, 0."
    )
    assert data(steps["differences"]["value"]) == [[0.0]]
    assert steps["output"]["explanation"].startswith(
        "W_O (2 × 2) mixes the columns of the one head's output, and its bias b_O"
    )
    # Two heads keep the texts that compare them.
    two = invoke_json("multihead", "--n", "3", "--d-model", "2", "--heads", "2")
    concat = next(step for step in two["steps"] if step["key"] == "concat")
    assert 'Column "h2·1" is the first column of head 2\'s output' in concat["explanation"]


def test_the_parameter_tally_counts_only_the_weights_the_run_has(invoke_json):
    """Without W_O the tally once said "W_Q, W_K, W_V and W_O are each 2 × 2, so 4 · 2² = 16" for
    a run of 12 weights; and 48 for the grouped example's 32."""
    eye = "1,0;0,1"
    doc = invoke_json("multihead", "--x", eye, "--wq", eye, "--wk", eye, "--wv", eye)
    split = doc["steps"][0]
    (tally,) = [note for note in split["notes"] if note["key"].startswith("parameters")]
    assert tally["key"] == "parameters_no_wo" and tally["values"]["count"] == 12
    assert tally["text"].startswith(
        "Parameters: W_Q, W_K and W_V are each 2 × 2 and there is no W_O, so 3 · 2² = 12"
    )
    assert doc["meta"]["parameters"] == 12
    grouped = invoke_json("multihead", "--example", "grouped")
    (tally,) = [n for n in grouped["steps"][0]["notes"] if n["key"].startswith("parameters")]
    assert tally["key"] == "parameters_grouped_no_wo"
    assert tally["values"] == {"d_model": 4, "kv_width": 2, "count": 32, "full": 48}
    assert grouped["meta"]["parameters"] == 32
    # A W_O of another width (2 × 3) gets no tally rather than "each 2 × 2".
    wide = invoke_json("multihead", "--x", eye, "--wq", eye, "--wk", eye, "--wv", eye, "--wo",
                       "1,0,0;0,1,0")  # fmt: skip
    assert not [n for n in wide["steps"][0]["notes"] if n["key"].startswith("parameters")]
    square = invoke_json("multihead", "--example", "two-heads")
    (tally,) = [n for n in square["steps"][0]["notes"] if n["key"].startswith("parameters")]
    assert tally["key"] == "parameters" and tally["values"]["count"] == 64


def test_heads_with_the_same_weights_are_not_said_to_have_matching_blocks(invoke_json):
    """Identical tokens give every head the same uniform weights whatever its blocks of W_Q and
    W_K: the note once explained it by "their blocks of W_Q and W_K match the tokens the same
    way", false for these drawn, different blocks."""
    doc = invoke_json("multihead", "--n", "3", "--d-model", "4", "--x", "1,1,1,1;1,1,1,1;1,1,1,1")
    wq = np.array(data(doc["inputs"]["W_Q"]))
    assert not np.array_equal(wq[:, :2], wq[:, 2:])
    (note,) = [n for n in doc["notes"] if n["key"] == "heads_same"]
    assert note["text"] == (
        "Heads 1 and 2 have exactly the same weights on these tokens: their scores give the same "
        "softmax, row by row."
    )


def test_the_book_example_says_how_to_draw_other_biases_in_a_way_that_runs(invoke, invoke_json):
    """The description said "Run it with --bias to draw other biases, or leave out W_O (--wo)",
    but an example's inputs are fixed: `-e book-causal --bias` is a user error. The way it
    names now runs: the same inputs by hand, with --bias, or without --wo."""
    shown = " ".join(invoke("multihead", "--example", "book-causal").stdout.split())
    assert "Run it with --bias" not in shown
    assert "given by hand (--x, --wq, --wk, --wv, --wo and --causal), the same run takes" in shown
    assert invoke("multihead", "--example", "book-causal", "--bias").exit_code == 2
    by_hand = ("--x", "1,0,0.5;0,1,0.5;1,1,0", "--wq", "1,0;0,1;1,-1", "--wk", "1,1;0,1;1,0",
               "--wv", "1,0;0,1;0.5,0.5", "--causal")  # fmt: skip
    drawn = invoke_json("multihead", *by_hand, "--wo", "0.5,0.5;0.5,-0.5", "--bias")
    assert set(drawn["inputs"]) >= {"b_Q", "b_K", "b_V", "b_O"}
    wrapper = invoke_json("multihead", *by_hand)
    assert "W_O" not in wrapper["inputs"] and wrapper["output"]["shape"] == [3, 2]


def test_keys_and_values_from_their_own_sequences_are_not_written_as_x_times_w(invoke_json, invoke):
    """With --m/--kdim (keys and values from X_K, X_V) the grouped-query K/V steps were titled
    "K1 = X W_K^(1)" (a 5 × 2 matrix from a 3 × 4 X), and the LaTeX of every K and V step read
    K_i = XW_K^{(i)}. Now the titles name X_K and X_V, and the LaTeX writes no formula in X."""
    args = ("multihead", "--n", "3", "--m", "5", "--d-model", "4", "--kdim", "3", "--vdim", "2",
            "--heads", "2", "--kv-heads", "1")  # fmt: skip
    steps = {step["key"]: step for step in invoke_json(*args)["steps"]}
    assert steps["kv1.K"]["title"] == "K/V head 1 · keys  K1 = X_K W_K^(1)"
    assert steps["kv1.V"]["title"] == "K/V head 1 · values  V1 = X_V W_V^(1)"
    assert steps["kv1.K"]["explanation"].startswith(
        "X_K times columns 1–2 of W_K: what each of its 5 rows offers"
    )
    latex = invoke(*args, "--format", "latex", "--latex-fragment").stdout
    assert "XW_K" not in latex and "XW_V" not in latex and "Q_i = XW_Q^{(i)}" in latex
    plain = invoke("multihead", "--format", "latex", "--latex-fragment").stdout
    assert "K_i = XW_K^{(i)}" in plain and "V_i = XW_V^{(i)}" in plain


def test_a_causal_mask_over_keys_of_their_own_does_not_say_itself(invoke_json):
    """Cross-attention with --causal said "token i may attend to itself and the tokens before
    it" of keys s1 … s5 from another sequence."""
    doc = invoke_json("multihead", "--n", "3", "--m", "5", "--d-model", "4", "--kdim", "6",
                      "--causal")  # fmt: skip
    mask = next(step for step in doc["steps"] if step["key"] == "mask")
    assert "itself and the tokens before" not in mask["explanation"]
    assert mask["explanation"].startswith(
        "M has 0 on and below the diagonal and −∞ above it: query i may attend to keys 1 … i of "
        "the key sequence (X_K, 5 rows), never to a later one"
    )
    assert mask["col_labels"] == ["s1", "s2", "s3", "s4", "s5"]
    own = next(s for s in invoke_json("multihead", "--causal")["steps"] if s["key"] == "mask")
    assert "token i may attend to itself" in own["explanation"]
