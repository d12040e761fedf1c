"""attn block: one Transformer layer against PyTorch's nn.TransformerEncoderLayer and
nn.TransformerDecoderLayer holding the same weights, the steps checked by hand (residual sums,
LayerNorm's statistics, the FFN), the decoder's mask and shift, the CLI and its user errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.cli.flags import COMMAND_LINE
from attn_cli.course.block import build as block
from attn_cli.course.multihead import build as mh_lesson
from tests.conftest import assert_user_error, unwrap
from tests.lesson_runs import Batch, Runs

# A small nn.TransformerEncoderLayer's state_dict (d_model 4, nhead 2, d_ff 8), written by
# tests/data/block/make.py: .npz, so that it reads without PyTorch.
WEIGHTS_FILE = str(Path(__file__).parent / "data" / "block" / "encoder-layer.npz")

# The entries this lesson needs in the cross-lesson tables (tests/test_json_contract.py RANDOM
# and LARGE, tests/test_lesson_texts.py VARIANTS, tests/test_rich_tables.py SIZED and
# tests/test_outputs_read_back.py size_options, tests/test_claims.py OPTIONS), for the
# integrator to plug in.
# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "5", "--d-model", "6", "--heads", "3", "--d-ff", "8", "--seed", "3"),
    sized=lambda s: {"n": s, "d_model": s + s % 2, "heads": 2 if s % 4 == 0 else 1},
    # ffn.pre and ffn.hidden are 160 × 80 = 12,800 entries
    large=("--n", "160", "--d-model", "20", "--heads", "2", "--d-ff", "80"),
    variants=(
        (),
        ("--pre-norm",),
        ("--decoder",),
        ("--decoder", "--pre-norm", "--m", "3", "--n", "4"),
        ("--gamma-beta",),
        ("--heads", "1", "--d-ff", "3"),
        ("--no-posenc", "--n", "3", "--d-model", "3", "--heads", "1"),
        ("--tokens", "a,b,c", "--n", "3", "--decoder"),
        # A constant row going into a LayerNorm: σ² = 0 there (flat_rows).
        ("--x", "1,1,1,1;0,1,2,3", "--no-posenc", "--pre-norm"),
        ("--x", "0,0,0,0;0,0,0,0", "--no-posenc"),
        ("--activation", "gelu", "--causal"),
        ("--activation", "gelu-tanh", "--no-bias", "--layers", "2", "--final-norm"),
        # Padding and a boolean mask; the first row may see no key (empty_rows).
        ("--padding", "0,0,0,1", "--attn-mask", "1,1,1,1;0,1,0,0;0,0,0,0;0,0,0,0"),
        ("--attn-mask-float", "0,-inf,-1,0;0,0,-inf,0;0,0,0,0;2,0,0,0", "--pre-norm"),
        ("--decoder", "--memory-padding", "0,1,1,0", "--no-causal"),
        ("--layers", "2", "--shared-weights", "--wq", "1,0,0,0;0,1,0,0;0,0,1,0;0,0,0,1"),
        ("--weights", WEIGHTS_FILE, "--pre-norm"),
        # Grouped-query and multi-query heads (kv_shared, kv_saving).
        ("--n", "3", "--d-model", "8", "--heads", "4", "--kv-heads", "2"),
        ("--decoder", "--kv-heads", "1", "--layers", "2"),
        ("--decoder", "--memory-padding", "0,1,1,0", "--padding", "0,0,0,1", "--kv-heads", "1"),
        # Rows near 1e155: σ² passes float64 and shows ∞, the root and N stay exact
        # (variance_beyond).
        ("--x", "1e155,2e155,3e155,4e155;5e155,6e155,7e155,8e155", "--no-posenc", "--pre-norm"),
    ),
    # The claims sweep draws a memory length m too, which only --decoder takes: the runs without
    # it are refused (counted), and the examples and variants above cover the encoder.
    options=(
        {"decoder": True},
        {"pre_norm": True},
        {"activation": "gelu", "causal": True},
        {"layers": 2, "bias": False, "final_norm": True},
        {"decoder": True, "pre_norm": True},
        {"posenc": False},
        {"posenc": False, "pre_norm": True},
        {"gamma_beta": True},
        {"decoder": True, "kv_heads": 1},
    ),
    figure=(("block", "--example", "decoder"), ("<bos>", "dort", "the", "sleeps", "memory row")),
    batch=Batch(lambda draw: {"x": draw(3, 4)}, ("x",), options={"heads": 2}),
)

EXAMPLE_X = [[0.5, -0.2, 0.1, 0.3], [-0.4, 0.6, 0.2, -0.1], [0.3, 0.3, -0.5, 0.2],
             [-0.1, -0.3, 0.4, 0.6]]  # fmt: skip


def steps_of(doc: dict) -> dict[str, dict]:
    return {step["key"]: step for step in doc["steps"]}


def inputs_of(walk) -> dict[str, np.ndarray]:
    return {item.name: np.asarray(item.value) for item in walk.inputs}


def descriptions(walk) -> dict[str, str]:
    return {item.name: item.description for item in walk.inputs}


# --- against PyTorch -------------------------------------------------------------------------


def torch_layer(torch, walk):
    """nn.TransformerEncoderLayer or nn.TransformerDecoderLayer (dropout 0, ReLU, batch_first,
    norm_first for pre-norm) holding the walkthrough's weights, in float64: loaded from the
    state_dict the lesson's own mapping writes (block.pytorch.state_dict_of)."""
    from attn_cli.course.block.pytorch import state_dict_of

    meta, params = walk.meta, inputs_of(walk)
    d = params["W_Q"].shape[0]
    kind = torch.nn.TransformerDecoderLayer if meta["decoder"] else torch.nn.TransformerEncoderLayer
    layer = kind(
        d,
        meta["heads"],
        dim_feedforward=meta["d_ff"],
        dropout=0.0,
        activation="relu",
        layer_norm_eps=meta["eps"],
        batch_first=True,
        norm_first=meta["pre_norm"],
        dtype=torch.float64,
    )
    weights = {name: params[name] for name in meta["sources"]}
    state = state_dict_of(weights, layers=1, stacked=False)
    layer.load_state_dict({key: torch.tensor(value) for key, value in state.items()})
    return layer.eval()


def torch_output(torch, walk) -> np.ndarray:
    layer = torch_layer(torch, walk)
    h = torch.tensor(walk.step("x"), dtype=torch.float64)[None]  # (1, n, d): H = X + PE
    if walk.meta["decoder"]:
        memory = torch.tensor(inputs_of(walk)["Memory"], dtype=torch.float64)[None]
        mask = torch.nn.Transformer.generate_square_subsequent_mask(h.shape[1], dtype=torch.float64)
        out = layer(h, memory, tgt_mask=mask)
    else:
        out = layer(h)
    return out.detach().numpy()[0]


CASES = [
    (decoder, pre_norm, trial)
    for decoder in (False, True)
    for pre_norm in (False, True)
    for trial in range(4)
]


@pytest.mark.parametrize(("decoder", "pre_norm", "trial"), CASES)
def test_the_layer_equals_pytorchs(torch, decoder, pre_norm, trial):
    """Random shapes, heads, d_ff, ε and γ, β: the same output as PyTorch's layer to 1e-12."""
    rng = np.random.default_rng(100 + trial)
    heads = int(rng.integers(1, 4))
    d_model = heads * int(rng.integers(1, 4)) * 2  # even, for the positional encoding
    n, m, d_ff = (int(v) for v in rng.integers(1, 9, size=3))
    kwargs = {"n": n, "d_model": d_model, "heads": heads, "d_ff": d_ff, "seed": trial}
    if decoder:
        kwargs["m"] = m
    walk = attn.block(
        **kwargs,
        decoder=decoder,
        pre_norm=pre_norm,
        gamma_beta=trial % 2 == 1,
        eps=1e-5 if trial < 3 else 0.1,
    )
    expected = torch_output(torch, walk)
    assert walk.output.shape == expected.shape == (n, d_model)
    np.testing.assert_allclose(walk.output, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("decoder", [False, True])
def test_each_heads_weights_equal_pytorchs(torch, decoder):
    """Post-norm: the self-attention reads H itself, so nn.MultiheadAttention's per-head weights
    (average_attn_weights=False) are the steps' weights; the decoder's with the causal mask."""
    walk = attn.block(n=5, d_model=6, heads=3, decoder=decoder, seed=2)
    layer = torch_layer(torch, walk)
    h = torch.tensor(walk.step("x"))[None]
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    _, weights = layer.self_attn(
        h, h, h, attn_mask=mask if decoder else None, average_attn_weights=False
    )
    for head in range(3):
        np.testing.assert_allclose(
            walk.step(f"self.head{head + 1}.weights"),
            weights[0, head].detach().numpy(),
            rtol=0,
            atol=1e-12,
        )


def test_the_torch_backend_agrees_with_numpy(torch):
    for decoder in (False, True):
        kwargs = {"n": 4, "d_model": 4, "decoder": decoder, "pre_norm": decoder}
        numpy_run = attn.block(**kwargs)
        torch_run = attn.block(**kwargs, backend="torch")
        np.testing.assert_allclose(torch_run.output, numpy_run.output, rtol=0, atol=1e-12)


# --- the steps by hand ------------------------------------------------------------------------


def test_the_encoder_steps_by_hand():
    """The default example, post-norm: every step recomputed with plain numpy."""
    walk = attn.block()
    w = inputs_of(walk)
    n, d = 4, 4
    x = np.array(EXAMPLE_X)
    pos = np.arange(n)[:, None]
    angle = pos / 10000 ** (np.arange(0, d, 2) / d)  # (n, d/2)
    pe = np.stack([np.sin(angle), np.cos(angle)], axis=-1).reshape(n, d)
    np.testing.assert_allclose(walk.step("pe"), pe, atol=1e-15)
    h = x + pe
    assert np.array_equal(walk.step("x"), h)
    # Residual: exactly the sum of the sublayer's input and output.
    assert np.array_equal(walk.step("add1"), walk.step("x") + walk.step("self.output"))
    total = walk.step("add1")
    mean = total.mean(axis=1)
    var = ((total - mean[:, None]) ** 2).mean(axis=1)  # divides by d_model
    stats = walk.step("norm1.stats")
    np.testing.assert_allclose(stats[:, 0], mean, atol=1e-15)
    np.testing.assert_allclose(stats[:, 1], var, atol=1e-15)
    np.testing.assert_allclose(stats[:, 2], np.sqrt(var + 1e-5), atol=1e-15)
    hat = walk.step("norm1.normalised")
    np.testing.assert_allclose(hat.mean(axis=1), 0, atol=1e-15)
    # Variance σ²/(σ² + ε): just below 1, by ε's effect.
    np.testing.assert_allclose(hat.var(axis=1), var / (var + 1e-5), rtol=1e-12)
    assert np.all(hat.var(axis=1) < 1)
    assert np.array_equal(walk.step("norm1"), hat)  # γ = 1, β = 0
    z = walk.step("norm1")
    pre = z @ w["W_1"] + w["b_1"]
    np.testing.assert_allclose(walk.step("ffn.pre"), pre, atol=1e-14)
    np.testing.assert_allclose(walk.step("ffn.hidden"), np.maximum(pre, 0), atol=1e-14)
    np.testing.assert_allclose(
        walk.step("ffn.output"), np.maximum(pre, 0) @ w["W_2"] + w["b_2"], atol=1e-14
    )
    assert np.array_equal(walk.step("add2"), z + walk.step("ffn.output"))
    final = walk.step("add2")
    expected = (final - final.mean(1, keepdims=True)) / np.sqrt(final.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(walk.output, expected, atol=1e-14)


def test_attention_by_hand_and_equal_to_attn_multihead():
    """The self-attention's weights are attn multihead's on H for the same seed (the same draw),
    and its output is Concat(heads) W_O."""
    walk = attn.block(seed=4)
    w = inputs_of(walk)
    h = walk.step("x")
    reference = attn.multihead(x=h, heads=2, seed=4)
    for head in (1, 2):
        np.testing.assert_allclose(
            walk.step(f"self.head{head}.weights"), reference.step(f"head{head}.weights"), atol=1e-15
        )
    np.testing.assert_allclose(walk.step("self.output"), reference.output, atol=1e-15)
    q, k, v = (h @ w[f"W_{letter}"] for letter in "QKV")
    heads = []
    for i in range(2):
        cols = slice(2 * i, 2 * i + 2)
        scores = q[:, cols] @ k[:, cols].T / math.sqrt(2)
        weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        heads.append(weights @ v[:, cols])
    np.testing.assert_allclose(walk.step("self.concat"), np.hstack(heads), atol=1e-15)
    np.testing.assert_allclose(walk.step("self.output"), np.hstack(heads) @ w["W_O"], atol=1e-15)


def test_the_weights_are_drawn_as_documented():
    walk = attn.block(n=3, d_model=6, heads=3, d_ff=5, decoder=True, seed=9)
    params = inputs_of(walk)
    drawn = block.draw_weights(9, 6, 5, decoder=True)
    for name, value in drawn.items():
        assert np.array_equal(params[name], value), name
    rng = np.random.default_rng(9).spawn(1)[0]
    first = rng.standard_normal((6, 6)) / math.sqrt(6)
    assert np.array_equal(params["W_Q"], first)
    for name, value in mh_lesson.draw_weights(9, 6).items():  # attn multihead's, same seed
        assert np.array_equal(params[name], value), name
    assert params["W_1"].shape == (6, 5) and params["W_2"].shape == (5, 6)
    for bias in ("b_Q", "b_K", "b_V", "b_O", "b_Q_cross", "b_O_cross"):  # PyTorch's initial 0
        assert np.array_equal(params[bias], np.zeros(6)) and "initial" in descriptions(walk)[bias]
    # No --memory: N(0, 1) from the seed's second child stream, m = n rows.
    memory = np.random.default_rng(9).spawn(2)[1].standard_normal((3, 6))
    assert np.array_equal(params["Memory"], memory)
    assert walk.meta["memory_drawn"] and "memory_drawn" in [note.key for note in walk.notes]
    # PyTorch's count for nn.TransformerDecoderLayer(6, 3, 5): the biases of attention too
    assert walk.meta["parameters"] == 8 * 36 + 8 * 6 + 6 * 5 + 5 + 5 * 6 + 6 + 3 * 2 * 6


def test_gamma_beta_scale_and_shift_each_feature():
    walk = attn.block(gamma_beta=True, seed=1)
    params = inputs_of(walk)
    assert not np.allclose(params["gamma_1"], 1) and not np.allclose(params["beta_1"], 0)
    expected = walk.step("norm1.normalised") * params["gamma_1"] + params["beta_1"]
    np.testing.assert_allclose(walk.step("norm1"), expected, atol=1e-15)


def test_pre_norm_normalises_before_each_sublayer():
    walk = attn.block(pre_norm=True)
    keys = [step.key for step in walk.steps]
    assert keys.index("norm1") < keys.index("self.Q") < keys.index("add1") < keys.index("norm2")
    assert keys[-1] == "add2"  # no LayerNorm at the end
    assert np.array_equal(walk.step("add1"), walk.step("x") + walk.step("self.output"))
    np.testing.assert_array_equal(walk.output, walk.step("add1") + walk.step("ffn.output"))
    assert "unnormalised" in [note.key for note in walk.notes]


# --- the decoder ------------------------------------------------------------------------------


def test_the_decoder_example_masks_and_shifts(invoke_json):
    doc = invoke_json("block", "--example", "decoder")
    steps = steps_of(doc)
    assert [row["decoder_input"] for row in steps["shift"]["value"]] == [
        "<bos>", "le", "chat", "dort",
    ]  # fmt: skip
    assert [row["target"] for row in steps["shift"]["value"]] == ["le", "chat", "dort", "<eos>"]
    for head in (1, 2):
        weights = np.array(unwrap(steps[f"self.head{head}.weights"]["value"]))
        assert np.all(np.triu(weights, 1) == 0)  # zero above the diagonal, exactly
        assert np.all(np.diag(weights) > 0)
        np.testing.assert_allclose(weights.sum(axis=1), 1, atol=1e-15)
        assert steps[f"self.head{head}.weights"]["notes"][0]["key"] == "causal_zero"
        cross = np.array(unwrap(steps[f"cross.head{head}.weights"]["value"]))
        assert cross.shape == (4, 3) and np.all(cross > 0)  # every source row, no mask
        assert steps[f"cross.head{head}.weights"]["col_labels"] == ["the", "cat", "sleeps"]
    assert steps["self.head1.weights"]["row_labels"] == ["<bos>", "le", "chat", "dort"]
    mask = unwrap(steps["self.mask"]["value"])
    assert mask[0] == [0.0, "-inf", "-inf", "-inf"]
    assert doc["meta"]["decoder"] and not doc["meta"]["memory_drawn"]
    assert doc["output"]["shape"] == [4, 4]


def test_tokens_name_the_targets_and_the_inputs_are_shifted(invoke_json):
    doc = invoke_json("block", "--decoder", "--n", "3", "--tokens", "a,b,c")
    shift = steps_of(doc)["shift"]["value"]
    assert shift == [
        {"position": 1, "decoder_input": "<bos>", "target": "a"},
        {"position": 2, "decoder_input": "a", "target": "b"},
        {"position": 3, "decoder_input": "b", "target": "c"},
    ]


def test_the_decoder_reads_a_given_memory_on_the_example(invoke_json):
    """--memory on top of the default example (the encoder's X) with --decoder."""
    doc = invoke_json("block", "--decoder", "--memory", "1,0,0,1;0,1,1,0")
    steps = steps_of(doc)
    assert doc["inputs"]["Memory"]["data"] == [[1, 0, 0, 1], [0, 1, 1, 0]]
    assert steps["cross.K"]["value"]["shape"] == [2, 4]
    assert steps["cross.head1.weights"]["value"]["shape"] == [4, 2]


# --- the CLI, JSON and notes ------------------------------------------------------------------


def test_json_random_run(invoke_json):
    doc = invoke_json("block", *RUNS.random)
    assert doc["example"] is None and doc["output"]["shape"] == [5, 6]
    steps = steps_of(doc)
    assert steps["ffn.hidden"]["value"]["shape"] == [5, 8]
    assert [key for key in steps if key.startswith("self.head")] == [
        "self.head1.weights", "self.head2.weights", "self.head3.weights",
    ]  # fmt: skip
    assert doc["meta"]["heads"] == 3 and doc["meta"]["d_ff"] == 8
    hidden = np.array(unwrap(steps["ffn.hidden"]["value"]))
    note, units = steps["ffn.hidden"]["notes"]
    assert note["values"]["zeros"] == int(np.sum(hidden == 0)) and note["values"]["total"] == 40
    assert units["key"] == "relu_units" and units["values"]["units"] == 8


def test_d_ff_defaults_to_four_times_d_model():
    assert attn.block(n=2, d_model=6, heads=3).meta["d_ff"] == 24


def test_a_constant_row_is_noted_and_normalised_to_beta(invoke_json):
    doc = invoke_json("block", "--x", "1,1,1,1;0,1,2,3", "--no-posenc", "--pre-norm")
    steps = steps_of(doc)
    (note,) = steps["norm1.normalised"]["notes"]
    assert note["key"] == "flat_rows" and note["values"]["rows"] == "t1"
    assert unwrap(steps["norm1.stats"]["value"])[0][1] == 0  # σ² = 0
    assert unwrap(steps["norm1.normalised"]["value"])[0] == [0, 0, 0, 0]


def test_every_lesson_text_renders(invoke):
    for args in RUNS.variants:
        result = invoke("block", *args)
        assert result.exit_code == 0, (args, result.output)
    result = invoke("block", "--example", "decoder")
    assert "Shifted right" in result.stdout and "cross-attention" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--heads", "3"), ["--heads must divide d_model"]),
        (("--x", "1,2,3", "--heads", "1"), ["even d_model", "--no-posenc"]),
        (("--memory", "1,2,3,4"), ["--memory (or --m)", "add --decoder"]),
        (("--m", "3"), ["add --decoder"]),
        (("--decoder", "--memory", "1,2,3"), ["--memory is 1 × 3", "4 columns"]),
        (("--eps", "0"), ["--eps 0"]),
        (("--decoder", "--n", "3", "--tokens", "a,b"), ["--tokens", "3 rows"]),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("block", *args), *fragments)


def test_the_figure_has_a_panel_per_head_self_then_cross():
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib")
    from attn_cli.course import card, figure_of
    from attn_cli.render.heatmap import heatmap_figure

    walkthrough = attn.block(example="decoder")
    figure = heatmap_figure(walkthrough, figure_of("block"), card("block").precision)
    panels = [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]
    assert [ax.get_title() for ax in panels] == [
        "self-attention head 1", "self-attention head 2",
        "cross-attention head 1", "cross-attention head 2",
    ]  # fmt: skip
    assert [label.get_text() for label in panels[2].get_xticklabels()] == ["the", "cat", "sleeps"]


# --- the explorer (issue 41): every weight an input table ----------------------------------------


def test_the_explorer_shows_every_weight_and_gives_only_those_edited(invoke_json):
    import shlex

    from attn_cli.explore import state as st

    start = st.opening("block")
    names = [spec.name for spec in block.CARD.inputs if spec.name in start.state.cells]
    assert names[:5] == ["X", "W_Q", "W_K", "W_V", "W_O"] and "gamma_2" in names
    drawn = inputs_of(attn.block())
    assert start.state.cells["W_1"] == st.cells_of(drawn["W_1"])  # the values drawn, shown
    edited = st.with_cell(start.state, "W_Q", 0, 0, "2")
    command = st.command_line(start, edited, COMMAND_LINE)
    assert "--wq" in command and "--wk" not in command and "--w1" not in command
    walk = st.walkthrough(start, edited)
    assert walk.meta["sources"]["W_Q"] == "given" and walk.meta["sources"]["W_K"] == "drawn"
    assert inputs_of(walk)["W_Q"][0, 0] == 2
    doc = invoke_json(*shlex.split(command)[1:])
    np.testing.assert_array_equal(np.array(unwrap(doc["output"])), walk.output)
    gelu = st.with_option(edited, "activation", "gelu")
    assert st.walkthrough(start, gelu).meta["activation"] == "gelu"


def test_layer_norm_of_rows_near_1e155_gives_the_true_root_and_rows(invoke_json):
    """Their squares pass float64: σ² shows ∞ (noted), √(σ² + ε) and N are those of the same
    rows divided by 1e150 (scaled back), where nothing overflows."""
    big = invoke_json("block", "--x", "1e155,2e155,3e155,5e155", "--no-posenc", "--pre-norm")
    small = invoke_json("block", "--x", "1e5,2e5,3e5,5e5", "--no-posenc", "--pre-norm")
    steps = {step["key"]: step for step in big["steps"]}
    reference = {step["key"]: step for step in small["steps"]}
    stats = unwrap(steps["norm1.stats"]["value"])[0]
    assert stats[1] is None or stats[1] in ("Infinity", "inf") or stats[1] == float("inf")
    assert math.isclose(stats[2], unwrap(reference["norm1.stats"]["value"])[0][2] * 1e150)
    assert np.allclose(
        unwrap(steps["norm1.normalised"]["value"]), unwrap(reference["norm1.normalised"]["value"])
    )
    notes = [note["key"] for note in steps["norm1.normalised"].get("notes", [])]
    assert "variance_beyond" in notes


def test_the_hidden_units_note_says_which_are_always_on_always_off_or_both():
    """Issue 42: step 15 said "each hidden unit is on for some tokens and off for the rest"
    where some units were on for every token and some off for every token. The note names the
    three groups from the numbers, and its claim fails for any other grouping."""
    from attn_cli.course.block.claims import relu_units

    walk = attn.block()
    note = next(n for n in walk.find("ffn.hidden").notes if n.key == "relu_units")
    hidden = np.asarray(walk.step("ffn.hidden"))
    on = hidden > 0
    always = [f"u{j + 1}" for j in np.flatnonzero(on.all(axis=0))]
    never = [f"u{j + 1}" for j in np.flatnonzero((~on).all(axis=0))]
    assert note.values["always"] == (f"{len(always)} ({', '.join(always)})" if always else "none")
    assert note.values["never"] == (f"{len(never)} ({', '.join(never)})" if never else "none")
    assert relu_units(walk, note.values)
    assert not relu_units(walk, {**note.values, "mixed": "none"})
    assert "on for some tokens and off for the rest" not in walk.find("ffn.hidden").explanation


def test_a_causal_encoder_is_not_said_to_hide_a_target_from_its_prediction(invoke_json):
    """The decoder's note ("the prediction of a target never sees that target") holds for its
    shifted inputs only; an encoder run with --causal reads each token itself."""
    encoder = steps_of(invoke_json("block", "--causal"))
    note = encoder["self.head1.weights"]["notes"][0]
    assert note["key"] == "causal_zero_encoder"
    assert "target" not in note["text"] and "each position still reads its own" in note["text"]
    assert np.all(np.diag(np.array(unwrap(encoder["self.head1.weights"]["value"]))) > 0)
    decoder = steps_of(invoke_json("block", "--decoder", "--n", "3"))
    assert decoder["self.head1.weights"]["notes"][0]["key"] == "causal_zero"


def test_no_relu_tally_when_the_hidden_layer_is_nan(invoke_json):
    """--padding 1,1,1,1 leaves every row no key: the hidden layer is all NaN, and the notes once
    said "The ReLU set 0 of the 32 hidden entries to 0" and "off for every token: 8"."""
    steps = steps_of(invoke_json("block", "--padding", "1,1,1,1"))
    hidden = np.array(unwrap(steps["ffn.hidden"]["value"]), dtype=float)
    assert np.all(np.isnan(hidden))
    assert not steps["ffn.hidden"].get("notes")


def test_the_grouped_query_saving_counts_w_k_and_w_v_per_sublayer(invoke_json):
    """A decoder has two attention sublayers, each with its W_K and W_V: the 32 weights of the
    note are each sublayer's (2 · 8 · 2), not the layer's 64."""
    doc = invoke_json("block", "--decoder", "--kv-heads", "1", "--heads", "4", "--n", "3",
                      "--d-model", "8")  # fmt: skip
    (note,) = [n for n in doc["notes"] if n["key"] == "kv_saving"]
    assert note["values"]["params"] == 32 and note["values"]["full_params"] == 128
    assert "each attention sublayer's W_K and W_V hold 32 weights instead of 128" in note["text"]
    kv = [name for name in doc["inputs"] if name.startswith(("W_K", "W_V"))]
    assert len(kv) == 4 and all(doc["inputs"][name]["shape"] == [8, 2] for name in kv)


def test_the_figure_of_all_nan_weights_draws_without_a_warning(tmp_path):
    """--plot with --padding 1,1,1,1 (every weight NaN) printed numpy's "All-NaN slice
    encountered" RuntimeWarning on stderr; now it draws quietly."""
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib")
    import warnings

    from attn_cli.course import card, figure_of
    from attn_cli.render.heatmap import heatmap_figure

    walkthrough = attn.block(padding=[1, 1, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = heatmap_figure(walkthrough, figure_of("block"), card("block").precision)
    assert len([ax for ax in figure.axes if ax.get_label() != "<colorbar>"]) == 2


def test_one_head_is_not_said_to_be_laid_beside_others(invoke_json):
    """--heads 1 read "the queries of all 1 heads side by side", "Each head's output ... laid
    side by side" and "W_O ... mixes the heads"."""
    steps = steps_of(invoke_json("block", "--n", "3", "--heads", "1", "--d-model", "2"))
    assert steps["self.Q"]["explanation"] == (
        "Each row of H projected by W_Q (d_model × d_model) + b_Q: the queries of the one head "
        "(h = 1), all 2 columns (h1·1 …), as in attn multihead."
    )
    assert steps["self.concat"]["explanation"] == (
        "With h = 1 this is the one head's output, its weights times V, 2 columns: 3 × d_model, "
        "nothing laid beside it."
    )
    assert "mixes the one head's columns" in steps["self.output"]["explanation"]
    two = steps_of(invoke_json("block", "--n", "3", "--heads", "2", "--d-model", "4"))
    assert "the queries of all 2 heads side by side" in two["self.Q"]["explanation"]
