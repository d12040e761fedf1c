"""--dropout p (with --seed S) on the lessons with weights.

numpy: the mask is np.random.default_rng(S).random(shape) < 1 − p, written out here.
torch: torch.manual_seed(S); nn.Dropout(p) in training mode on the same weights gives the same
tensor exactly; nn.MultiheadAttention(dropout=p) and the book's stacked (h, n, n) dropout agree.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attn_cli as attn
from tests.conftest import assert_user_error, random_qkv, softmax_rows

P, SEED = 0.3, 123


def numpy_dropout(weights: np.ndarray, p: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy's documented draw: a uniform in [0, 1) below 1 − p keeps the weight."""
    keep = np.random.default_rng(seed).random(weights.shape) < 1 - p
    return weights * (keep / (1 - p)), keep


def mask_of(walk, key: str = "dropout") -> np.ndarray:
    return next(part.value for part in walk.find(key).parts if part.label.startswith("keep mask"))


@pytest.mark.parametrize(("seed", "m", "n", "p"), [(0, 3, 5, 0.3), (1, 4, 4, 0.5), (2, 6, 2, 0.1)])
def test_scaled_numpy_matches_the_formula(seed, m, n, p):
    q, k, v = random_qkv(seed, m, n, 4, 3)
    walk = attn.scaled(q, k, v, dropout=p, seed=seed + 10)
    assert [step.key for step in walk.steps] == ["scores", "scaled", "weights", "dropout", "output"]
    weights = softmax_rows(q @ k.T / 2.0)
    dropped, keep = numpy_dropout(weights, p, seed + 10)
    np.testing.assert_array_equal(mask_of(walk), keep.astype(np.int8))
    np.testing.assert_allclose(walk.step("dropout"), dropped, rtol=0, atol=1e-15)
    np.testing.assert_allclose(walk.output, dropped @ v, rtol=0, atol=1e-14)
    # The rows no longer sum to 1: the step shows their sums.
    sums = walk.find("dropout").row_sums
    np.testing.assert_allclose(sums, dropped.sum(axis=1), atol=1e-15)
    assert not np.allclose(sums, 1.0)
    assert walk.meta["dropout"] == {
        "p": p,
        "seed": seed + 10,
        "generator": "numpy.random.default_rng",
    }


def test_p_zero_keeps_every_weight_and_the_output():
    q, k, v = random_qkv(3, 3, 4, 2, 2)
    plain = attn.scaled(q, k, v)
    walk = attn.scaled(q, k, v, dropout=0.0)
    assert mask_of(walk).all()
    np.testing.assert_array_equal(walk.step("dropout"), plain.step("weights"))
    np.testing.assert_array_equal(walk.output, plain.output)


def test_the_step_explains_the_mask_and_why_sums_off_one_are_fine():
    q, k, v = random_qkv(4, 3, 4, 2, 2)
    numpy_step = attn.scaled(q, k, v, dropout=0.25, seed=9).find("dropout")
    text = numpy_step.explanation
    assert "1/(1 − p) = 1.333" in text and "seed 9" in text
    assert "default_rng(9)" in text and "not torch's mask" in text
    assert "expected value" in text and "model.eval()" in text
    assert "not 1" in str(numpy_step.notes[0])


def test_the_seed_seeds_the_mask_alone(invoke_json):
    """The generator starts afresh from --seed: the same mask whatever drew the inputs."""
    q, k, v = random_qkv(5, 4, 6, 3, 3)
    a = attn.scaled(q, k, v, dropout=0.5, seed=7)
    b = attn.scaled(q * 2, k, v, dropout=0.5, seed=7)
    c = attn.scaled(q, k, v, dropout=0.5, seed=8)
    np.testing.assert_array_equal(mask_of(a), mask_of(b))
    assert not np.array_equal(mask_of(a), mask_of(c))
    # Random inputs and the mask share --seed on the command line.
    doc = invoke_json("scaled", "--n", "4", "--dk", "2", "--dropout", "0.5", "--seed", "7")
    step = next(s for s in doc["steps"] if s["key"] == "dropout")
    weights = np.asarray(next(s for s in doc["steps"] if s["key"] == "weights")["value"]["data"])
    _, keep = numpy_dropout(weights, 0.5, 7)
    assert step["parts"]["keep mask (1 = kept)"]["data"] == keep.astype(int).tolist()


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_torch_backend_is_nn_dropout_exactly(torch, dtype):
    q, k, v = random_qkv(6, 5, 7, 4, 3)
    walk = attn.scaled(q, k, v, dropout=P, seed=SEED, backend="torch", dtype=dtype)
    weights = torch.as_tensor(walk.step("weights"), dtype=getattr(torch, dtype))
    torch.manual_seed(SEED)
    expected = torch.nn.Dropout(P).train()(weights)
    np.testing.assert_array_equal(
        np.asarray(walk.step("dropout"), dtype=np.float64), expected.double().numpy()
    )
    np.testing.assert_array_equal(mask_of(walk), (expected != 0).numpy().astype(np.int8))
    assert walk.meta["dropout"]["generator"] == "torch.manual_seed"
    assert "torch.manual_seed(123), then nn.Dropout(0.3)" in walk.find("dropout").explanation


def test_torch_weights_built_in_torch_give_the_same_mask_and_output(torch):
    """The book's code: softmax in torch, torch.manual_seed(S), dropout, then @ V."""
    q, k, v = random_qkv(7, 4, 6, 3, 2)
    qt, kt, vt = (torch.from_numpy(a) for a in (q, k, v))
    weights = torch.softmax(qt @ kt.T / math.sqrt(3), dim=-1)
    torch.manual_seed(SEED)
    dropped = torch.nn.Dropout(P).train()(weights)
    walk = attn.scaled(q, k, v, dropout=P, seed=SEED, backend="torch")
    np.testing.assert_array_equal(mask_of(walk), (dropped != 0).numpy().astype(np.int8))
    np.testing.assert_allclose(walk.step("dropout"), dropped.numpy(), rtol=0, atol=1e-15)
    np.testing.assert_allclose(walk.output, (dropped @ vt).numpy(), rtol=0, atol=1e-14)


def test_torch_draw_leaves_the_global_generator_alone(torch):
    torch.manual_seed(2024)
    before = torch.random.get_rng_state()
    q, k, v = random_qkv(8, 2, 3, 2, 2)
    attn.scaled(q, k, v, dropout=0.5, seed=1, backend="torch")
    assert torch.equal(torch.random.get_rng_state(), before)


def test_numpy_and_torch_masks_differ_and_both_are_documented(torch, invoke):
    q, k, v = random_qkv(9, 8, 8, 2, 2)
    numpy_walk = attn.scaled(q, k, v, dropout=0.5, seed=SEED)
    torch_walk = attn.scaled(q, k, v, dropout=0.5, seed=SEED, backend="torch")
    assert not np.array_equal(mask_of(numpy_walk), mask_of(torch_walk))
    help_text = " ".join(invoke("scaled", "--help").stdout.replace("│", " ").split())
    for words in ("np.random.default_rng", "torch.manual_seed", "nn.Dropout", "a different mask"):
        assert words in help_text, words


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_selfattn_and_causal(torch, backend):
    x = np.random.default_rng(10).standard_normal((5, 4))
    self_walk = attn.selfattn(x, dropout=P, seed=SEED, backend=backend)
    causal_walk = attn.causal(x=x, dropout=P, seed=SEED, backend=backend)
    for walk, visible in ((self_walk, np.ones((5, 5), bool)), (causal_walk, np.tri(5, dtype=bool))):
        s = np.where(visible, x @ x.T / 2.0, -np.inf)
        weights = softmax_rows(s)
        np.testing.assert_allclose(walk.step("weights"), weights, atol=1e-15)
        if backend == "numpy":
            expected, _ = numpy_dropout(weights, P, SEED)
        else:
            torch.manual_seed(SEED)
            expected = torch.nn.Dropout(P).train()(torch.from_numpy(weights)).numpy()
        np.testing.assert_allclose(walk.step("dropout"), expected, rtol=0, atol=1e-15)
        np.testing.assert_allclose(walk.output, expected @ x, rtol=0, atol=1e-14)
        assert [s.key for s in walk.steps][-2:] == ["dropout", "output"]
    # The future stays hidden: dropout only removes weight.
    assert not np.triu(causal_walk.step("dropout"), k=1).any()


def test_causal_with_padding_and_given_scores():
    walk = attn.causal(dropout=0.5, seed=4, valid_len=2)  # the three-tokens example's scores
    keys = [step.key for step in walk.steps]
    assert keys[-2:] == ["weights", "dropout"]  # no values: the dropped weights are the output
    np.testing.assert_array_equal(walk.output, walk.step("dropout"))
    expected, _ = numpy_dropout(walk.step("weights"), 0.5, 4)
    np.testing.assert_allclose(walk.output, expected, atol=1e-15)


def bahdanau_inputs(seed: int, n: int = 4, d: int = 3, d_a: int = 5):
    rng = np.random.default_rng(seed)
    return {
        "s": rng.standard_normal(d),
        "h": rng.standard_normal((n, d)),
        "w1": rng.standard_normal((d_a, d)),
        "w2": rng.standard_normal((d_a, d)),
        "v": rng.standard_normal(d_a),
    }


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_bahdanau(torch, backend):
    given = bahdanau_inputs(11)
    walk = attn.bahdanau(**given, dropout=0.5, seed=SEED, backend=backend)
    scores = np.tanh(given["h"] @ given["w1"].T + given["w2"] @ given["s"]) @ given["v"]
    weights = softmax_rows(scores)
    if backend == "numpy":
        expected, _ = numpy_dropout(weights, 0.5, SEED)
    else:
        torch.manual_seed(SEED)
        expected = torch.nn.Dropout(0.5).train()(torch.from_numpy(weights)).numpy()
    np.testing.assert_allclose(walk.step("dropout"), expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(walk.output, expected @ given["h"], rtol=0, atol=1e-14)
    assert walk.find("context").title.endswith("(with the dropped weights)")


def test_bahdanau_compare_uses_the_weights_before_dropout():
    walk = attn.bahdanau(example="cat-slept", dropout=0.5, seed=1)
    contexts = walk.step("compare.contexts")
    before = walk.step("weights") @ walk.inputs[1].value
    np.testing.assert_allclose(contexts[0], before, atol=1e-15)
    assert any("before dropout" in str(note) for note in walk.notes)


def multihead_inputs(seed: int, n: int = 5, d: int = 4):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    weights = [rng.standard_normal((d, d)) / 2 for _ in range(4)]
    biases = [rng.standard_normal(d) / 2 for _ in range(4)]
    return x, weights, biases


def test_multihead_draws_once_for_all_heads(torch):
    x, (wq, wk, wv, wo), _ = multihead_inputs(12)
    heads = 2
    walk = attn.multihead(x, wq, wk, wv, wo, heads=heads, dropout=P, seed=SEED, backend="torch")
    keys = [step.key for step in walk.steps]
    assert keys.index("head2.weights") < keys.index("head1.dropout") < keys.index("head1.output")
    stacked = torch.stack([torch.from_numpy(walk.step(f"head{i}.weights")) for i in (1, 2)])
    torch.manual_seed(SEED)
    expected = torch.nn.Dropout(P).train()(stacked).numpy()  # the book's (h, n, n) dropout
    for i in (1, 2):
        np.testing.assert_array_equal(walk.step(f"head{i}.dropout"), expected[i - 1])
        d_k = 2
        v_i = x @ wv[:, (i - 1) * d_k : i * d_k]
        np.testing.assert_allclose(walk.step(f"head{i}.output"), expected[i - 1] @ v_i, atol=1e-14)
    # The heads are compared by their weights before dropout.
    before = [walk.step(f"head{i}.weights") for i in (1, 2)]
    np.testing.assert_allclose(
        walk.step("differences")[0, 1], np.max(np.abs(before[0] - before[1])), atol=0
    )


def test_multihead_agrees_with_nn_multiheadattention_in_training(torch):
    """nn.MultiheadAttention(dropout=p) in train mode drops its (h, n, n) weights the same way."""
    x, (wq, wk, wv, wo), (bq, bk, bv, bo) = multihead_inputs(13, n=6, d=4)
    heads = 2
    mha = torch.nn.MultiheadAttention(
        4, heads, dropout=P, bias=True, batch_first=True, dtype=torch.float64
    )
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([wq.T, wk.T, wv.T])))
        mha.in_proj_bias.copy_(torch.from_numpy(np.concatenate([bq, bk, bv])))
        mha.out_proj.weight.copy_(torch.from_numpy(wo.T))
        mha.out_proj.bias.copy_(torch.from_numpy(bo))
    mha.train()
    xt = torch.from_numpy(x)[None]
    torch.manual_seed(SEED)
    expected, _ = mha(xt, xt, xt, need_weights=True, average_attn_weights=False)
    walk = attn.multihead(
        x, wq, wk, wv, wo, bq=bq, bk=bk, bv=bv, bo=bo, heads=heads,
        dropout=P, seed=SEED, backend="torch",
    )  # fmt: skip
    np.testing.assert_allclose(walk.output, expected[0].detach().numpy(), rtol=0, atol=1e-13)


def test_multihead_numpy_formula():
    x, (wq, wk, wv, wo), _ = multihead_inputs(14, n=4, d=6)
    walk = attn.multihead(x, wq, wk, wv, wo, heads=3, causal=True, dropout=0.5, seed=2)
    weights = []
    for i in range(3):
        cols = slice(2 * i, 2 * i + 2)
        s = (x @ wq[:, cols]) @ (x @ wk[:, cols]).T / math.sqrt(2)
        weights.append(softmax_rows(np.where(np.tri(4, dtype=bool), s, -np.inf)))
    dropped, _ = numpy_dropout(np.stack(weights), 0.5, 2)
    heads = [dropped[i] @ (x @ wv[:, 2 * i : 2 * i + 2]) for i in range(3)]
    np.testing.assert_allclose(walk.output, np.concatenate(heads, axis=1) @ wo, atol=1e-13)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("scaled", "--dropout", "1"), ("--dropout 1 would drop every weight",)),
        (("scaled", "--dropout", "1.5"), ("--dropout 1.5 is not a probability", "0 ≤ p < 1")),
        (("causal", "--dropout", "-0.1"), ("--dropout -0.1", "0 ≤ p < 1")),
        (("bahdanau", "--dropout", "nan"), ("--dropout nan",)),
        (("multihead", "--dropout", "2"), ("--dropout 2",)),
        (("selfattn", "--dropout", "0.1", "--permute", "2,1,0"), ("leave out --dropout",)),
        (("causal", "--dropout", "0.1", "--fill", "zero"), ("leave out --fill zero",)),
    ],
)
def test_errors_are_one_line(invoke, args, fragments):
    assert_user_error(invoke(*args), *fragments)


def test_a_lesson_file_option(invoke, tmp_path):
    path = tmp_path / "mine.toml"
    body = """lesson = "scaled"
[[examples]]
name = "mine"
options = {{ dropout = {p} }}
[examples.inputs]
Q = [[1, 0]]
K = [[1, 0], [0, 1]]
V = [[1, 2], [3, 4]]
"""
    path.write_text(body.format(p="0.5"), encoding="utf-8")
    result = invoke("scaled", "--lesson", str(path), "--format", "json", "--seed", "3")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["options"]["dropout"] == 0.5 and doc["meta"]["dropout"]["seed"] == 3
    path.write_text(body.format(p='"half"'), encoding="utf-8")
    assert_user_error(
        invoke("scaled", "--lesson", str(path)),
        'options.dropout: found "half" (text); expected a finite number ≥ 0 and < 1.',
    )
