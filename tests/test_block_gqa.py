"""attn block --kv-heads g: grouped-query (and, g = 1, multi-query) attention in the Transformer
layer (issue 44). Query head i reads key/value head i // (h/g), as PyTorch's
scaled_dot_product_attention(enable_gqa=True) and Hugging Face's repeat_kv pair them; W_K and W_V
are d_model × g·d_k. Checked against SDPA with enable_gqa and against K and V repeated, per
layer and sublayer, in float64; g = h is today's layer exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.core.model import Walkthrough
from attn_cli.course.block import parameters
from tests.conftest import assert_user_error, unwrap
from tests.test_block import WEIGHTS_FILE
from tests.test_json_contract import validate

X = "0.5,-0.2,0.1,0.3;-0.4,0.6,0.2,-0.1;0.3,0.3,-0.5,0.2"  # 3 tokens, d_model = 4


def steps_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["key"]: step for step in doc["steps"]}


def weights_of(walk: Walkthrough) -> dict[str, np.ndarray]:
    return {item.name: np.asarray(item.value) for item in walk.inputs}


def grouped_weights(rng: np.random.Generator, d_model: int, heads: int, kv: int, cross: bool):
    """Random attention weights and biases of one layer, W_K, W_V (and b_K, b_V) g·d_k wide."""
    width = d_model // heads * kv
    given = {}
    for suffix in ("", "_cross") if cross else ("",):
        for letter in "QKVO":
            cols = width if letter in "KV" else d_model
            given[f"W_{letter}{suffix}"] = rng.standard_normal((d_model, cols)) / 2
            given[f"b_{letter}{suffix}"] = rng.standard_normal(cols) / 4
    return given


def keywords(given: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """W_K_cross -> cross_wk ... : the API's keyword for each weight."""
    named = {}
    for name, value in given.items():
        part = name.removesuffix("_cross")
        flag = part.lower().replace("_", "")
        named[("cross_" if name.endswith("_cross") else "") + flag] = value
    return named


def repeated(value: np.ndarray, heads: int, kv: int) -> np.ndarray:
    """Each key/value head's block of d_k columns h/g times in a row (repeat_interleave)."""
    blocks = np.split(value, kv, axis=-1)
    return np.concatenate([block for block in blocks for _ in range(heads // kv)], axis=-1)


def sublayer_inputs(walk: Walkthrough, prefix: str, sublayer: str) -> tuple[str, str]:
    """The steps holding what a sublayer reads: (its queries' rows, its keys' and values' rows);
    "Memory" for the cross-attention's source. Post-norm only."""
    if sublayer == "cross":
        return f"{prefix}norm1", "Memory"
    keys = [step.key for step in walk.steps]
    layer = int(prefix.removeprefix("layer").rstrip(".") or 1)
    last = "norm3" if walk.meta["decoder"] else "norm2"
    source = "x" if layer == 1 else f"layer{layer - 1}.{last}"
    assert source in keys
    return source, source


def value_of(walk: Walkthrough, name: str) -> np.ndarray:
    if name == "Memory":
        return weights_of(walk)["Memory"]
    return np.asarray(walk.step(name), dtype=np.float64)


# --- against PyTorch -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "sublayers"),
    [
        ({"heads": 4, "kv_heads": 2, "causal": True}, ("self",)),
        ({"heads": 6, "kv_heads": 3, "layers": 2}, ("self",)),
        ({"heads": 4, "kv_heads": 1, "decoder": True, "m": 5}, ("self", "cross")),
        ({"heads": 2, "kv_heads": 1, "decoder": True, "layers": 2, "m": 3}, ("self", "cross")),
    ],
)
def test_every_sublayer_equals_sdpa_with_enable_gqa_and_repeated_keys(torch, options, sublayers):
    """Each attention sublayer's output (and every head's weights) from the walkthrough's own
    input to it and its weights: SDPA with enable_gqa=True on (h, n, d_k) queries and (g, m, d_k)
    keys and values; and SDPA on K and V repeated to h heads with repeat_interleave."""
    functional = torch.nn.functional
    walk = attn.block(n=4, d_model=12, seed=3, **options)
    heads, kv = options["heads"], options["kv_heads"]
    assert walk.meta["kv_heads"] == kv
    d_k = 12 // heads
    params = weights_of(walk)
    worst = 0.0
    layers = options.get("layers", 1)
    for layer in range(1, layers + 1):
        prefix = f"layer{layer}." if layers > 1 else ""
        for sublayer in sublayers:
            suffix = "_cross" if sublayer == "cross" else ""
            rows, source = sublayer_inputs(walk, prefix, sublayer)
            x = torch.from_numpy(value_of(walk, rows))
            s = torch.from_numpy(value_of(walk, source))
            p = {
                name: torch.from_numpy(params[f"{prefix}{name}{suffix}"])
                for name in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")
            }
            assert tuple(p["W_K"].shape) == tuple(p["W_V"].shape) == (12, kv * d_k)
            q = (x @ p["W_Q"] + p["b_Q"]).unflatten(-1, (heads, d_k)).transpose(0, 1)
            k = (s @ p["W_K"] + p["b_K"]).unflatten(-1, (kv, d_k)).transpose(0, 1)
            v = (s @ p["W_V"] + p["b_V"]).unflatten(-1, (kv, d_k)).transpose(0, 1)
            causal = sublayer == "self" and bool(walk.meta["causal"])
            gqa = functional.scaled_dot_product_attention(
                q, k, v, is_causal=causal, enable_gqa=True
            )
            group = heads // kv
            plain = functional.scaled_dot_product_attention(
                q,
                k.repeat_interleave(group, dim=0),
                v.repeat_interleave(group, dim=0),
                is_causal=causal,
            )
            for out in (gqa, plain):
                want = (out.transpose(0, 1).flatten(-2) @ p["W_O"] + p["b_O"]).numpy()
                got = np.asarray(walk.step(f"{prefix}{sublayer}.output"))
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)
                worst = max(worst, float(np.max(np.abs(got - want))))
            # Every head's weights, from the repeated keys: softmax(q k_{i // (h/g)}^T / √d_k).
            scores = q @ k.repeat_interleave(group, dim=0).transpose(-1, -2) / d_k**0.5
            if causal:
                scores = scores.masked_fill(torch.ones(4, 4).triu(1).bool(), -torch.inf)
            expected = torch.softmax(scores, dim=-1).numpy()
            for head in range(heads):
                got = np.asarray(walk.step(f"{prefix}{sublayer}.head{head + 1}.weights"))
                np.testing.assert_allclose(got, expected[head], rtol=0, atol=1e-14)
    assert worst <= 1e-13


def test_the_torch_backend_agrees_with_numpy(torch):
    for options in ({"kv_heads": 2, "causal": True}, {"kv_heads": 1, "decoder": True, "m": 3}):
        kwargs = {"n": 4, "d_model": 8, "heads": 4, **options}
        numpy_run = attn.block(**kwargs)
        torch_run = attn.block(**kwargs, backend="torch")
        np.testing.assert_allclose(torch_run.output, numpy_run.output, rtol=0, atol=1e-12)
        for key in ("self.K", "self.head4.weights", "self.concat"):
            np.testing.assert_allclose(
                np.asarray(torch_run.step(key)), np.asarray(numpy_run.step(key)), atol=1e-12
            )


# --- the same layer as h key/value heads ---------------------------------------------------


@pytest.mark.parametrize("decoder", [False, True])
def test_grouped_heads_equal_the_layer_with_keys_and_values_repeated(decoder):
    """g key/value heads are h heads whose W_K, W_V, b_K, b_V blocks repeat h/g times each:
    the same weights in every head and the same output, exactly (no torch needed)."""
    rng = np.random.default_rng(44)
    heads, kv, d_model = 6, 2, 12
    given = grouped_weights(rng, d_model, heads, kv, decoder)
    wide = {
        name: repeated(value, heads, kv) if name.removesuffix("_cross")[-1] in "KV" else value
        for name, value in given.items()
    }
    x = rng.standard_normal((5, d_model))
    common = {"x": x, "heads": heads, "decoder": decoder, "causal": True}
    if decoder:
        common["memory"] = rng.standard_normal((3, d_model))
    grouped = attn.block(**common, **keywords(given), kv_heads=kv)
    full = attn.block(**common, **keywords(wide))
    assert grouped.meta["kv_heads"] == kv and "kv_heads" not in full.meta
    np.testing.assert_array_equal(grouped.output, full.output)
    for sublayer in ("self", "cross") if decoder else ("self",):
        for head in range(1, heads + 1):
            key = f"{sublayer}.head{head}.weights"
            np.testing.assert_array_equal(grouped.step(key), full.step(key))
        assert np.asarray(grouped.step(f"{sublayer}.K")).shape == (3 if decoder and
               sublayer == "cross" else 5, kv * 2)  # fmt: skip


def test_kv_heads_equal_to_heads_is_todays_layer_exactly(invoke):
    """--kv-heads h: the same screen, JSON (but the option as given) and programs as without
    it."""
    for args in (("--n", "3", "--seed", "1"), ("--n", "3", "--decoder", "--pre-norm")):
        plain = invoke("block", *args)
        same = invoke("block", *args, "--kv-heads", "2")  # heads = 2 by default
        assert plain.exit_code == same.exit_code == 0
        assert same.stdout == plain.stdout
        docs = [
            json.loads(invoke("block", *args, *kv, "--format", "json").stdout)
            for kv in ((), ("--kv-heads", "2"))
        ]
        assert docs[0]["options"]["kv_heads"] is None and docs[1]["options"]["kv_heads"] == 2
        docs[1]["options"]["kv_heads"] = None
        assert docs[0] == docs[1]
    walk, full = attn.block(heads=2, kv_heads=2), attn.block(heads=2)
    assert walk.to_code() == full.to_code() and walk.to_code("torch") == full.to_code("torch")
    assert "kv_heads" not in walk.meta


def test_drawn_weights_are_the_h_head_draw_cut_to_g_blocks():
    walk = attn.block(n=3, d_model=8, heads=4, kv_heads=1, decoder=True, seed=5)
    full = attn.block(n=3, d_model=8, heads=4, decoder=True, seed=5)
    grouped, plain = weights_of(walk), weights_of(full)
    for name, value in plain.items():
        if name.removesuffix("_cross") in ("W_K", "W_V"):
            np.testing.assert_array_equal(grouped[name], value[:, :2])
        elif name.removesuffix("_cross") in ("b_K", "b_V"):
            np.testing.assert_array_equal(grouped[name], np.zeros(2))
        else:
            np.testing.assert_array_equal(grouped[name], value)
    s = parameters.Settings(
        heads=4, d_ff=32, eps=1e-5, pre_norm=False, decoder=True, posenc=True, gamma_beta=False,
        kv_heads=1,
    )  # fmt: skip
    assert parameters.drawn_value("W_V_cross", 5, s, 8).shape == (8, 2)


# --- the screen ---------------------------------------------------------------------------


def test_multi_query_steps_name_the_key_value_head_and_state_the_saving(invoke_json):
    doc = validate(invoke_json("block", "--n", "3", "--d-model", "8", "--heads", "4",
                               "--kv-heads", "1", "--decoder"))  # fmt: skip
    steps = steps_of(doc)
    assert doc["meta"]["kv_heads"] == 1
    for sublayer in ("self", "cross"):
        k = steps[f"{sublayer}.K"]
        assert k["col_labels"] == ["kv1·1", "kv1·2"]
        assert "(1 key/value head)" in k["title"]
        assert "kv1: heads 1–4" in k["explanation"]
        assert steps[f"{sublayer}.Q"]["col_labels"][-1] == "h4·2"
        for head in range(1, 5):
            step = steps[f"{sublayer}.head{head}.weights"]
            assert f"Q{head} K1ᵀ" in step["title"]
            note = step["notes"][0]["text"]
            assert f"Head {head} reads key/value head 1 (columns 1–2 of K and V)" in note
    assert doc["inputs"]["W_K"]["shape"] == doc["inputs"]["W_V_cross"]["shape"] == [8, 2]
    saving = next(note for note in doc["notes"] if note["key"] == "kv_saving")
    values = saving["values"]
    assert (values["per_token"], values["full_per_token"], values["ratio"]) == (4, 16, 4)
    assert (values["params"], values["full_params"]) == (32, 128)
    assert "2 · 2 = 4 numbers per attention sublayer instead of 2 · 8 = 16: 4 times" in (
        saving["text"].replace("\n", " ")
    )


def test_grouped_heads_weights_text_names_both_column_blocks(invoke_json):
    doc = invoke_json("block", "--n", "3", "--d-model", "8", "--heads", "4", "--kv-heads", "2")
    step = steps_of(doc)["self.head4.weights"]
    assert step["title"].endswith("softmax(Q4 K2ᵀ / √2)")
    assert "columns 7–8 of Q and the columns 3–4 of K, those of key/value head 2" in " ".join(
        step["explanation"].split()
    )
    concat = steps_of(doc)["self.concat"]
    assert "though K and V are 4 wide" in concat["explanation"]


def test_the_saving_claim_is_withheld_when_the_shapes_say_otherwise():
    from attn_cli.course.block import claims

    walk = attn.block(n=3, d_model=8, heads=4, kv_heads=2)
    note = next(note for note in walk.notes if note.key == "kv_saving")
    assert claims.kv_saving(walk, note.values)
    for wrong in ({"per_token": 6}, {"ratio": 4}, {"kv_width": 2, "g": 1}, {"params": 1}):
        assert not claims.kv_saving(walk, {**note.values, **wrong}), wrong
    plain = attn.block(n=3, d_model=8, heads=4)
    assert not claims.kv_saving(plain, note.values)  # K and V are 8 wide there
    assert "kv_saving" not in [n.key for n in plain.notes]


# --- weights given, files, lesson files ------------------------------------------------------


def test_narrow_weights_given_set_g_and_the_option_must_agree(invoke_json, invoke):
    wk = "1,0;0,1;0,0;0,0"  # 4 × 2: one key/value head of d_k = 2 with --heads 2
    doc = invoke_json("block", "--x", X, "--wk", wk, "--wv", wk)
    assert doc["meta"]["kv_heads"] == 1
    assert doc["inputs"]["b_K"]["shape"] == [2]
    assert_user_error(
        invoke("block", "--x", X, "--wk", wk, "--kv-heads", "2"),
        "--kv-heads 2",
        "--wk is 4 × 2, so g = 1",
        "leave out --kv-heads",
    )


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (
            ("--heads", "4", "--kv-heads", "3", "--n", "2", "--d-model", "8"),
            ("--kv-heads 3 does not divide --heads 4", "give one of 1, 2, 4"),
        ),
        (("--kv-heads", "0"), ("--kv-heads",)),
        (
            ("--x", X, "--wk", "1,0;0,1;0,0;0,0", "--wv", "1,0,0,0;0,1,0,0;0,0,1,0;0,0,0,1"),
            ("--wv is 4 × 4 but must be d_model × g·d_k = 4 × 2", "g = 1 key/value head of d_k"),
        ),
        (
            ("--x", X, "--wk", "1,0,0;0,1,0;0,0,1;0,0,0"),
            ("--wk is 4 × 3 but must be d_model × d_model = 4 × 4", "or g·d_k columns"),
        ),
        (
            ("--kv-heads", "1", "--bk", "1,2,3,4"),
            ("--bk has 4 entries but must be g·d_k = 2",),
        ),
        (
            ("--weights", WEIGHTS_FILE, "--kv-heads", "1"),
            ("--kv-heads 1", "nn.TransformerEncoderLayer", "no grouped-query heads"),
        ),
    ],
)
def test_kv_heads_errors_are_one_line(invoke, args, fragments):
    assert_user_error(invoke("block", *args), *fragments)


def test_a_file_of_the_lessons_own_names_may_hold_narrow_keys_and_values(tmp_path, invoke_json):
    rng = np.random.default_rng(9)
    given = grouped_weights(rng, 8, 4, 2, cross=False)
    path = tmp_path / "grouped.npz"
    np.savez(path, **given)
    x = rng.standard_normal((3, 8))
    text = ";".join(",".join(repr(float(v)) for v in row) for row in x)
    doc = validate(invoke_json("block", "--x", text, "--heads", "4", "--weights", str(path)))
    assert doc["meta"]["kv_heads"] == 2
    walk = attn.block(x=x, heads=4, weights=str(path))
    direct = attn.block(x=x, heads=4, kv_heads=2, **keywords(given))
    np.testing.assert_array_equal(walk.output, direct.output)


def test_a_lesson_file_with_options_kv_heads(tmp_path, invoke):
    text = """\
lesson = "block"

[[examples]]
name = "grouped"
description = "Four heads sharing two key/value heads."
options = { heads = 4, kv_heads = 2, d_ff = 8 }
[examples.inputs]
X = [[0.5, -0.2, 0.1, 0.3, 0.0, 0.1, 0.2, 0.3], [-0.4, 0.6, 0.2, -0.1, 0.3, 0.2, 0.1, 0.0]]
"""
    path = Path(tmp_path / "grouped.toml")
    path.write_text(text, encoding="utf-8")
    result = invoke("block", "--lesson", str(path), "--format", "json")
    assert result.exit_code == 0, result.output
    doc = validate(json.loads(result.stdout))
    assert doc["meta"]["kv_heads"] == 2
    assert unwrap(steps_of(doc)["self.V"]["value"]) is not None
    assert steps_of(doc)["self.V"]["col_labels"] == ["kv1·1", "kv1·2", "kv2·1", "kv2·2"]
    bad = path.read_text().replace("kv_heads = 2", "kv_heads = 3")
    path.write_text(bad, encoding="utf-8")
    # The option came from the lesson file: named by its key there, not by a flag (issue 60).
    assert_user_error(invoke("block", "--lesson", str(path)), "kv_heads=3 does not divide heads=4")


def test_programs_reproduce_grouped_layers(torch):
    """--code for numpy and PyTorch (nn.Transformer*Layer with W_K, W_V repeated) prints the
    layer's output."""
    from tests.test_code import run_programs

    walks = [
        attn.block(n=4, heads=4, d_model=8, kv_heads=2, causal=True),
        attn.block(n=3, heads=4, d_model=8, kv_heads=1, decoder=True, pre_norm=True, layers=2),
        attn.block(n=3, heads=2, kv_heads=1, layers=2, shared_weights=True, final_norm=True,
                   bias=False),
    ]  # fmt: skip
    codes = [walk.to_code(backend) for walk in walks for backend in ("numpy", "torch")]
    assert "in_proj(grouped[" in codes[1] and "kv_cols" in codes[0]
    for index, printed in enumerate(run_programs(codes)):
        walk = walks[index // 2]
        np.testing.assert_allclose(printed["output"], walk.output, rtol=0, atol=1e-12)
        for name, value in printed.items():
            if name != "output":
                np.testing.assert_allclose(value, np.asarray(walk.step(name)), atol=1e-12)


@pytest.mark.parametrize(
    "options",
    [{}, {"causal": True}, {"decoder": True, "m": 2}, {"decoder": True, "m": 2, "causal": True}],
    ids=["encoder", "causal", "decoder", "causal decoder"],
)
def test_every_weights_formula_reads_the_key_value_heads_keys(options):
    """Every head's weights step, self- and cross-attention, masked or not, writes K_j in
    LaTeX (key/value head j's keys) and names K's columns when the heads are grouped; K_i
    (the head's own) when they are not."""
    grouped = attn.block(n=3, d_model=4, heads=2, kv_heads=1, **options)
    plain = attn.block(n=3, d_model=4, heads=2, **options)
    for walk, key in ((grouped, "K_j^"), (plain, "K_i^")):
        formulas = [step.latex for step in walk.steps if step.key.endswith(".weights")]
        assert len(formulas) == (4 if options.get("decoder") else 2)
        assert all(key in latex for latex in formulas if latex), formulas
        assert all(formulas)
    head2 = [step for step in grouped.steps if step.key.endswith("head2.weights")]
    for step in head2:
        assert "columns 1–2 of K, those of key/value head 1" in " ".join(
            step.explanation.split()
        ), step.explanation
