"""attn bahdanau --steps T: the decoder over time, beside the fixed-vector encoder-decoder.

The recurrence against a longhand loop, the alignment's rows, the contexts that differ (and the
fixed one that does not), the weights drawn from --seed, PyTorch, the JSON shape, the figure
and the user errors.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attn_cli as attn
from tests.conftest import assert_user_error, data, unwrap

STEP_KEYS = [
    "W1h",
    "decoder.scores",
    "decoder.alignment",
    "decoder.contexts",
    "decoder.states",
    "fixed.contexts",
    "fixed.states",
    "bottleneck",
]
CAT_SLEPT = {
    "s": [0.1, 0.9],
    "H": [[1.0, 0.0], [0.0, 1.0], [0.2, 0.1]],
    "W1": [[0.1, 0.2], [0.3, 0.4]],
    "W2": [[0.5, 0.6], [0.7, 0.8]],
    "v": [0.9, 0.1],
}
# The decoder's weights, typed: d_s = d_h = 2, d_y = 3.
DECODER = {
    "W_s": [[0.5, -0.4], [0.3, 0.2]],
    "W_y": [[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]],
    "W_c": [[2.0, -1.0], [0.0, 1.5]],
    "Y": [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
}
FLAGS = {"W_s": "--ws", "W_y": "--wy", "W_c": "--wc", "Y": "--y"}


def steps(doc: dict) -> dict:
    return {step["key"]: unwrap(step["value"]) for step in doc["steps"]}


def step(doc: dict, key: str) -> dict:
    return next(each for each in doc["steps"] if each["key"] == key)


def notes(doc: dict) -> dict[str, str]:
    """Every note shown, by key: under the steps and under the walkthrough."""
    shown = [note for each in doc["steps"] for note in each.get("notes", [])]
    return {note["key"]: note["text"] for note in [*shown, *doc["notes"]]}


def text(array) -> str:
    return json.dumps(np.asarray(array, dtype=float).tolist())


def decoder_args(**weights) -> list[str]:
    return [item for name, value in weights.items() for item in (FLAGS[name], text(value))]


def longhand(s0, h, w1, w2, v, w_s, w_y, w_c, ys, fixed: bool = False) -> dict[str, np.ndarray]:
    """The decoder written out loop by loop, entry by entry (no matrix products)."""
    s0, h, w1, w2, v, w_s, w_y, w_c, ys = (
        np.asarray(a, dtype=float) for a in (s0, h, w1, w2, v, w_s, w_y, w_c, ys)
    )
    n, d_h = h.shape
    d_a, d_s, d_y = w1.shape[0], s0.shape[0], ys.shape[1]
    out: dict[str, list] = {"scores": [], "weights": [], "contexts": [], "states": []}
    s = list(s0)
    for t in range(ys.shape[0]):
        scores = []
        for i in range(n):
            e = 0.0
            for a in range(d_a):
                u = sum(w1[a][j] * h[i][j] for j in range(d_h))
                u += sum(w2[a][j] * s[j] for j in range(d_s))
                e += v[a] * math.tanh(u)
            scores.append(e)
        top = max(scores)
        exps = [math.exp(e - top) for e in scores]
        weights = [x / sum(exps) for x in exps]
        if fixed:
            context = list(h[n - 1])
        else:
            context = [sum(weights[i] * h[i][j] for i in range(n)) for j in range(d_h)]
        s = [
            math.tanh(
                sum(w_s[k][j] * s[j] for j in range(d_s))
                + sum(w_y[k][j] * ys[t][j] for j in range(d_y))
                + sum(w_c[k][j] * context[j] for j in range(d_h))
            )
            for k in range(d_s)
        ]
        for key, value in zip(out, (scores, weights, context, s), strict=True):
            out[key].append(value)
    return {key: np.array(value) for key, value in out.items()}


def cat_slept_steps(invoke_json, *extra: str) -> dict:
    return invoke_json("bahdanau", "--example", "cat-slept", "--steps", "3", *extra)


# --- the recurrence ------------------------------------------------------------------------


def test_the_recurrence_is_the_longhand_loop(invoke_json):
    doc = cat_slept_steps(invoke_json, *decoder_args(**DECODER))
    got = steps(doc)
    assert [each["key"] for each in doc["steps"]] == STEP_KEYS
    hand = longhand(CAT_SLEPT["s"], *list(CAT_SLEPT.values())[1:], *DECODER.values())
    np.testing.assert_allclose(got["decoder.scores"], hand["scores"], rtol=0, atol=1e-14)
    np.testing.assert_allclose(got["decoder.alignment"], hand["weights"], rtol=0, atol=1e-14)
    np.testing.assert_allclose(got["decoder.contexts"], hand["contexts"], rtol=0, atol=1e-14)
    np.testing.assert_allclose(got["decoder.states"], hand["states"], rtol=0, atol=1e-14)
    assert data(doc["output"]) == got["decoder.contexts"]
    # The fixed-vector decoder: the same cell reading c = h_n = "slept" at every step.
    fixed = longhand(CAT_SLEPT["s"], *list(CAT_SLEPT.values())[1:], *DECODER.values(), fixed=True)
    assert got["fixed.contexts"] == [[0.2, 0.1]] * 3
    np.testing.assert_allclose(got["fixed.states"], fixed["states"], rtol=0, atol=1e-14)
    # Step t scores with s_{t-1}: W2 s_0, W2 s_1, W2 s_2 beside the scores.
    (projected,) = step(doc, "decoder.scores")["parts"].values()
    previous = np.vstack([CAT_SLEPT["s"], hand["states"][:-1]])
    np.testing.assert_allclose(
        unwrap(projected), previous @ np.array(CAT_SLEPT["W2"]).T, rtol=0, atol=1e-14
    )
    # The three terms of the update, beside the states, add up to its argument.
    parts = step(doc, "decoder.states")["parts"]
    assert list(parts) == ["W_s sₜ₋₁", "W_y yₜ₋₁", "W_c cₜ"]
    terms = [np.array(unwrap(value)) for value in parts.values()]
    np.testing.assert_allclose(np.tanh(sum(terms)), hand["states"], atol=1e-14)
    np.testing.assert_allclose(terms[1], np.array(DECODER["Y"]) @ np.array(DECODER["W_y"]).T)


def test_the_first_step_is_the_one_step_lesson(invoke_json):
    """s_0 = --s: step 1 scores, weighs and reads exactly as one decoder step does."""
    one = steps(invoke_json("bahdanau", "--example", "cat-slept"))
    got = steps(invoke_json("bahdanau", "--example", "cat-slept", "--steps", "1"))
    assert got["decoder.scores"] == [one["scores"]]
    assert got["decoder.alignment"] == [one["weights"]]
    assert got["decoder.contexts"] == [one["context"]]
    assert got["W1h"] == one["W1h"]


def test_a_closed_form_alignment_that_moves(invoke_json):
    """H = I, W1 = I, v = 1: eᵢ = tanh(hᵢ₁ + (W2 s)₁) + tanh(hᵢ₂ + (W2 s)₂), W2 swapping s's
    entries. s_0 = e1 favours "le"; s_1 = tanh(2 y_0) = (0, tanh 2) favours "chat"."""
    doc = invoke_json(
        "bahdanau",
        *("--s", "1,0", "--h", "1,0;0,1", "--w1", "1,0;0,1", "--w2", "0,1;1,0", "--v", "1,1"),
        *("--tokens", "le,chat", "--steps", "2"),
        *("--ws", "0,0;0,0", "--wy", "2,0;0,2", "--wc", "0,0;0,0", "--y", "0,1;1,0"),
    )
    got = steps(doc)
    t2 = math.tanh(2)
    scores = [
        [math.tanh(1) + math.tanh(1), math.tanh(0) + math.tanh(2)],
        [math.tanh(1 + t2) + math.tanh(0), math.tanh(t2) + math.tanh(1)],
    ]
    np.testing.assert_allclose(got["decoder.scores"], scores, rtol=0, atol=1e-15)
    np.testing.assert_allclose(got["decoder.states"], [[0, t2], [t2, 0]], rtol=0, atol=1e-15)
    said = notes(doc)
    assert "le → chat" in said["focus_moves"]
    assert "focus_stays" not in said
    assert [row["attends_to"] for row in got["bottleneck"]] == ["le", "chat"]


# --- properties ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_each_row_of_the_alignment_is_a_distribution(invoke_json, seed):
    doc = invoke_json("bahdanau", "--n", "6", "--d", "3", "--steps", "5", "--seed", str(seed))
    alignment = np.array(steps(doc)["decoder.alignment"])
    assert alignment.shape == (5, 6)
    np.testing.assert_allclose(alignment.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert (alignment > 0).all()
    assert data(step(doc, "decoder.alignment")["row_sums"]) == pytest.approx([1.0] * 5, abs=1e-14)
    h = np.array(data(doc["inputs"]["H"]))
    contexts = np.array(steps(doc)["decoder.contexts"])
    np.testing.assert_allclose(contexts, alignment @ h, atol=1e-14)  # convex combinations


def test_the_contexts_differ_while_the_fixed_one_does_not(invoke_json):
    doc = cat_slept_steps(invoke_json)
    got = steps(doc)
    contexts = np.array(got["decoder.contexts"])
    gaps = [np.linalg.norm(contexts[a] - contexts[b]) for a in range(3) for b in range(a + 1, 3)]
    assert min(gaps) > 1e-4  # every pair of steps reads a different context
    fixed = np.array(got["fixed.contexts"])
    assert (fixed == [0.2, 0.1]).all()  # h_n, "slept", at every step
    said = notes(doc)
    assert "differs at every step" in said["contexts_differ"]
    assert f"{min(gaps):.3g} apart" in said["contexts_differ"]
    table = got["bottleneck"]
    assert [row["fixed_moves"] for row in table] == [None, 0.0, 0.0]
    moved = [row["attention_moves"] for row in table]
    assert moved[0] is None and moved[1:] == pytest.approx(
        [np.linalg.norm(contexts[1] - contexts[0]), np.linalg.norm(contexts[2] - contexts[1])]
    )
    assert [row["from_fixed"] for row in table] == pytest.approx(
        np.linalg.norm(contexts - [0.2, 0.1], axis=1)
    )


def test_a_score_blind_to_the_decoder_repeats_the_context(invoke_json):
    """W2 = 0: the scores do not read s_{t−1}, so every step reads the same context."""
    given = {**CAT_SLEPT, "W2": [[0, 0], [0, 0]]}
    flags = ("--s", "--h", "--w1", "--w2", "--v")
    typed = [item for pair in zip(flags, map(text, given.values()), strict=True) for item in pair]
    doc = invoke_json("bahdanau", *typed, "--steps", "3")
    contexts = np.array(steps(doc)["decoder.contexts"])
    assert (contexts == contexts[0]).all()
    said = notes(doc)
    assert "contexts_differ" not in said and "get the same context" in said["contexts_repeat"]


def test_one_encoder_state_leaves_nothing_to_choose(invoke_json):
    doc = invoke_json("bahdanau", "--steps", "3")  # the term-by-term example: n = 1
    got = steps(doc)
    assert got["decoder.alignment"] == [[1.0]] * 3
    assert got["decoder.contexts"] == got["fixed.contexts"] == [[2.0, 1.0]] * 3
    said = notes(doc)
    assert "h_1 = h_n" in said["single_state_steps"]
    assert not {"contexts_differ", "contexts_repeat", "focus_moves"} & set(said)


# --- the decoder's weights: typed or drawn -----------------------------------------------------


def test_weights_not_given_are_drawn_from_the_seed_and_said(invoke_json):
    doc = cat_slept_steps(invoke_json, "--seed", "7")
    inputs = {name: np.array(data(doc["inputs"][name])) for name in DECODER}
    assert inputs["W_s"].shape == inputs["W_y"].shape == inputs["W_c"].shape == (2, 2)
    assert inputs["Y"].shape == (3, 2)  # d_y = d_s
    assert "W_s, W_y, W_c, y" in notes(doc)["drawn_decoder"]
    assert "random seed 7" in notes(doc)["drawn_decoder"]
    assert doc["meta"]["decoder"]["drawn"] == ["W_s", "W_y", "W_c", "Y"]
    hand = longhand(CAT_SLEPT["s"], *list(CAT_SLEPT.values())[1:], *inputs.values())
    np.testing.assert_allclose(steps(doc)["decoder.states"], hand["states"], atol=1e-14)
    # The same seed draws the same; another seed others.
    again = cat_slept_steps(invoke_json, "--seed", "7")
    assert again["inputs"]["W_s"] == doc["inputs"]["W_s"]
    other = cat_slept_steps(invoke_json, "--seed", "8")
    assert other["inputs"]["W_s"] != doc["inputs"]["W_s"]
    # Each is its own stream: typing W_c changes none of the others, and more steps only add.
    typed = cat_slept_steps(invoke_json, "--seed", "7", "--wc", "1,0;0,1")
    assert all(typed["inputs"][name] == doc["inputs"][name] for name in ("W_s", "W_y", "Y"))
    assert "W_s, W_y, y:" in notes(typed)["drawn_decoder"]
    longer = invoke_json("bahdanau", "-e", "cat-slept", "--steps", "5", "--seed", "7")
    assert data(longer["inputs"]["Y"])[:3] == data(doc["inputs"]["Y"])
    assert steps(longer)["decoder.states"][:3] == steps(doc)["decoder.states"]


def test_typed_weights_are_used_and_nothing_is_drawn(invoke_json):
    doc = cat_slept_steps(invoke_json, *decoder_args(**DECODER))
    assert "drawn_decoder" not in notes(doc)
    for name, value in DECODER.items():
        assert data(doc["inputs"][name]) == value
    assert doc["meta"]["decoder"]["drawn"] == []
    walkthrough = attn.bahdanau(example="cat-slept", steps=3, wc=DECODER["W_c"])
    described = {shown.name: shown.description for shown in walkthrough.inputs}
    assert "drawn" not in described["W_c"] and "(drawn, random seed 0)" in described["W_s"]
    labels = {shown.name: shown.row_labels for shown in walkthrough.inputs}
    assert labels["Y"] == ("y_0", "y_1", "y_2") and labels["s_t"] == ("s_0",)


def test_the_python_function_takes_steps_and_weights():
    walkthrough = attn.bahdanau(
        example="cat-slept", steps=3, ws=DECODER["W_s"], wy=DECODER["W_y"], wc=DECODER["W_c"],
        y=DECODER["Y"],
    )  # fmt: skip
    hand = longhand(CAT_SLEPT["s"], *list(CAT_SLEPT.values())[1:], *DECODER.values())
    np.testing.assert_allclose(walkthrough.step("decoder.states"), hand["states"], atol=1e-14)
    assert walkthrough.meta["options"]["steps"] == 3


# --- PyTorch -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "d", "steps_"), [(5, 4, 4), (3, 6, 2)])
def test_the_torch_backend_agrees_with_numpy_and_an_rnn_cell(invoke_json, torch, n, d, steps_):
    args = ("bahdanau", "--n", str(n), "--d", str(d), "--steps", str(steps_), "--seed", "3")
    numpy_doc, torch_doc = invoke_json(*args), invoke_json(*args, "--backend", "torch")
    assert torch_doc["backend"] == "torch"
    for key in STEP_KEYS[:-1]:
        np.testing.assert_allclose(
            steps(torch_doc)[key], steps(numpy_doc)[key], rtol=0, atol=1e-12, err_msg=key
        )
    # The update is torch.nn.RNNCell (tanh, no bias) on [y_{t−1}; c_t] with W_s as its W_hh.
    inputs = {name: np.array(data(numpy_doc["inputs"][name])) for name in ("W_s", "W_y", "W_c")}
    ys = np.array(data(numpy_doc["inputs"]["Y"]))
    contexts = np.array(steps(numpy_doc)["decoder.contexts"])
    rnn = torch.nn.RNNCell(ys.shape[1] + d, d, bias=False, dtype=torch.float64)
    with torch.no_grad():
        rnn.weight_ih.copy_(torch.tensor(np.hstack([inputs["W_y"], inputs["W_c"]])))
        rnn.weight_hh.copy_(torch.tensor(inputs["W_s"]))
        state = torch.tensor(data(numpy_doc["inputs"]["s_t"]), dtype=torch.float64)[None]
        for t in range(steps_):
            x = torch.tensor(np.concatenate([ys[t], contexts[t]]))[None]
            state = rnn(x, state)
            np.testing.assert_allclose(
                state[0].numpy(), steps(numpy_doc)["decoder.states"][t], rtol=0, atol=1e-12
            )


# --- formats -----------------------------------------------------------------------------------


def test_json_shape(invoke_json):
    doc = invoke_json("bahdanau", "--example", "cat-slept", "--steps", "4")
    at = ["t=1", "t=2", "t=3", "t=4"]
    shapes = {each["key"]: each["value"].get("shape") for each in doc["steps"][:-1]}
    assert shapes == {
        "W1h": [3, 2],
        "decoder.scores": [4, 3],
        "decoder.alignment": [4, 3],
        "decoder.contexts": [4, 2],
        "decoder.states": [4, 2],
        "fixed.contexts": [4, 2],
        "fixed.states": [4, 2],
    }
    alignment = step(doc, "decoder.alignment")
    assert alignment["kind"] == "weights"
    assert alignment["row_labels"] == at and alignment["col_labels"] == ["the", "cat", "slept"]
    table = step(doc, "bottleneck")
    assert table["kind"] == "records" and [row["step"] for row in table["value"]] == at
    assert set(table["value"][0]) == {
        "step", "attends_to", "top_weight", "attention_moves", "fixed_moves", "from_fixed"
    }  # fmt: skip
    assert doc["options"]["steps"] == 4 and doc["options"]["all_scores"] is True
    assert doc["meta"]["decoder"]["score_reads"] == "s_{t-1}"
    assert doc["output"]["shape"] == [4, 2]
    assert {name: doc["inputs"][name]["shape"] for name in ("W_s", "W_y", "W_c", "Y")} == {
        "W_s": [2, 2], "W_y": [2, 2], "W_c": [2, 2], "Y": [4, 2]
    }  # fmt: skip
    # The example's own --all-scores is not run over steps, and not remarked on either.
    assert "compare_one_step" not in notes(doc)
    asked = invoke_json("bahdanau", "--steps", "2", "--all-scores")
    assert "leave out --steps" in notes(asked)["compare_one_step"]


def test_without_steps_the_lesson_is_one_decoder_step(invoke_json):
    doc = invoke_json("bahdanau", "--example", "cat-slept", "--no-all-scores")
    assert [each["key"] for each in doc["steps"]][:2] == ["W1h", "W2s"]
    assert "steps" not in doc["options"] and "decoder" not in doc["meta"]


def test_rich_output_names_both_notations(invoke):
    result = invoke("bahdanau", "--example", "cat-slept", "--steps", "3")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "Alignment αₜ = softmax(eₜ)" in out and "Without attention: c = hₙ" in out
    assert "ES 667, lecture 12" in out and "COMP 5801H, lecture 4" in out
    assert "Shown here: the sₜ₋₁ form" in out
    assert "most weight on" in out and "Σ row" in out


def test_plot_draws_the_alignment_matrix(pytestconfig):
    pytest.importorskip("matplotlib")
    from attn_cli.course import card, figure_of
    from attn_cli.render.heatmap import heatmap_figure

    walkthrough = attn.bahdanau(example="cat-slept", steps=3)
    figure = heatmap_figure(
        walkthrough, figure_of(walkthrough.lesson), card(walkthrough.lesson).precision
    )
    (ax,) = [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]
    assert [label.get_text() for label in ax.get_yticklabels()] == ["t=1", "t=2", "t=3"]
    assert [label.get_text() for label in ax.get_xticklabels()] == ["the", "cat", "slept"]
    assert ax.get_ylabel() == "decoder step"
    np.testing.assert_allclose(
        np.asarray(ax.images[0].get_array()), walkthrough.step("decoder.alignment")
    )


# --- user errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-2", "x", "1.5"])
def test_bad_steps_are_one_line(invoke, value):
    result = invoke("bahdanau", "--steps", value)
    assert result.exit_code == 2 and result.stdout == ""
    assert "--steps" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["--ws", "1,0,0;0,1,0"], ["--ws is 2 × 3", "d_s × d_s = 2 × 2"]),
        (["--wc", "1,0"], ["--wc is 1 × 2", "d_s × d_h = 2 × 2"]),
        (["--wy", "1,0"], ["--wy has 1 rows", "d_s = 2 rows"]),
        (["--y", "1,0;0,1"], ["--y has 2 rows but --steps is 3"]),
        (["--wy", "1,0;0,1", "--y", "1,0,0;0,1,0;0,0,1"], ["--wy has 2 columns", "d_y = 3"]),
        (["--values", "1;2;3"], ["--values with --steps"]),
        (["--dropout", "0.5"], ["--dropout with --steps"]),
    ],
)
def test_decoder_user_errors(invoke, extra, fragments):
    assert_user_error(invoke("bahdanau", "-e", "cat-slept", "--steps", "3", *extra), *fragments)


def test_decoder_inputs_need_steps(invoke):
    assert_user_error(
        invoke("bahdanau", "-e", "cat-slept", "--ws", "1,0;0,1", "--y", "1,0"),
        "--ws, --y",
        "add --steps T",
    )


@pytest.mark.parametrize("value", ["0", "true", '"3"'])
def test_steps_in_a_lesson_file_is_checked(invoke, tmp_path, value):
    path = tmp_path / "mine.toml"
    path.write_text(
        'lesson = "bahdanau"\n[[examples]]\nname = "mine"\n'
        f"options = {{ steps = {value} }}\n"
        "[examples.inputs]\ns_t = [1, 0]\nH = [[1, 0], [0, 1]]\n"
        "W1 = [[1, 0], [0, 1]]\nW2 = [[1, 0], [0, 1]]\nv = [1, 1]\n",
        encoding="utf-8",
    )
    result = invoke("bahdanau", "--lesson", str(path))
    assert result.exit_code == 2 and result.stdout == ""
    assert "steps" in result.stderr and len(result.stderr.strip().splitlines()) == 1
