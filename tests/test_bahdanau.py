"""attn bahdanau: lecture values, properties, agreement with PyTorch, errors and formats."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from attn_cli.lessonfiles.loader import load_bundled
from tests.conftest import assert_user_error, data, unwrap
from tests.lesson_runs import Batch, Runs

# The three scores favour the same state.
SAME_STATE = ("--s", "1,0", "--h", "2,0;0,1", "--w1", "1,0;0,1", "--w2", "1,0;0,1")
SAME_STATE += ("--v", "1,0", "--all-scores")
# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "6", "--d", "3", "--da", "2", "--seed", "3"),
    sized=lambda s: {"n": s, "d": s},
    large=("--n", "2600", "--d", "4", "--da", "2"),
    variants=(
        (),
        ("--all-scores",),
        ("--all-scores", "--dropout", "0.5"),
        ("--dropout", "0.5"),
        ("--dropout", "0"),
        ("--n", "1", "--all-scores"),
        SAME_STATE,
        ("--example", "cat-slept", "--values", "1,0;0,1;1,1", "--all-scores"),
        ("--example", "cat-slept", "--values", "1,0;0,1;1,1", "--dropout", "0.2"),
        # --steps T: one encoder state (and --all-scores asked, not run); the lecture's states;
        # an alignment that moves from "le" to "chat"; a score blind to the decoder (W2 = 0).
        ("--steps", "2", "--all-scores"),
        ("--example", "cat-slept", "--steps", "3"),
        # --valid-len: padding masked (with Luong's scores too), and a length that masks nothing.
        ("--example", "cat-slept", "--valid-len", "2", "--all-scores"),
        ("--example", "cat-slept", "--valid-len", "3"),
        (
            *("--s", "1,0", "--h", "1,0;0,1", "--w1", "1,0;0,1", "--w2", "0,1;1,0", "--v", "1,1"),
            *("--tokens", "le,chat", "--steps", "2", "--ws", "0,0;0,0", "--wy", "2,0;0,2"),
            *("--wc", "0,0;0,0", "--y", "0,1;1,0"),
        ),
        (
            *("--s", "1,0", "--h", "1,0;0,1", "--w1", "1,0;0,1", "--w2", "0,0;0,0", "--v", "1,1"),
            *("--steps", "3"),
        ),
    ),
    options=({"all_scores": True}, {"steps": 3}, {"valid_len": 1}),
    figure=(("bahdanau", "--example", "cat-slept"), ("the", "cat", "slept", "dot α")),
    batch=Batch(
        lambda draw: {
            "s": draw(2),
            "h": draw(3, 2),
            "w1": draw(3, 2),
            "w2": draw(3, 2),
            "v": draw(3),
        },
        ("s", "h"),
    ),
)


ADDITIVE_KEYS = ["W1h", "W2s", "sum", "tanh", "scores", "weights", "context"]
COMPARE_KEYS = [
    "dot.scores",
    "dot.weights",
    "dot.context",
    "general.scores",
    "general.weights",
    "general.context",
    "compare.table",
    "compare.contexts",
    "compare.cost",
]
W1 = [[0.1, 0.2], [0.3, 0.4]]
W2 = [[0.5, 0.6], [0.7, 0.8]]
V = [0.9, 0.1]


def steps(doc: dict) -> dict:
    return {step["key"]: unwrap(step["value"]) for step in doc["steps"]}


def text(array: np.ndarray) -> str:
    """An input option as JSON text: floats written with repr round-trip exactly."""
    return json.dumps(np.asarray(array).tolist())


def additive_by_hand(s: list[float], states: list[list[float]]) -> list[float]:
    """e_i = v1 tanh(u1) + v2 tanh(u2), with u = W1 h_i + W2 s_t written out entry by entry."""
    scores = []
    for h1, h2 in states:
        u1 = 0.1 * h1 + 0.2 * h2 + 0.5 * s[0] + 0.6 * s[1]
        u2 = 0.3 * h1 + 0.4 * h2 + 0.7 * s[0] + 0.8 * s[1]
        scores.append(0.9 * math.tanh(u1) + 0.1 * math.tanh(u2))
    return scores


def softmax_by_hand(scores: list[float]) -> list[float]:
    exps = [math.exp(e) for e in scores]
    return [x / sum(exps) for x in exps]


# --- lecture examples --------------------------------------------------------------------


def test_term_by_term_is_the_default_and_matches_a_hand_computation(invoke_json):
    doc = invoke_json("bahdanau")
    assert doc["example"] == "term-by-term"
    assert [step["key"] for step in doc["steps"]] == ADDITIVE_KEYS
    got = steps(doc)
    # h = [2, 1], s = [1, 3]: W1 h = [0.1*2 + 0.2*1, 0.3*2 + 0.4*1], W2 s = [0.5 + 1.8, 0.7 + 2.4].
    np.testing.assert_allclose(got["W1h"], [[0.4, 1.0]], atol=1e-15)
    np.testing.assert_allclose(got["W2s"], [2.3, 3.1], atol=1e-15)
    np.testing.assert_allclose(got["sum"], [[2.7, 4.1]], atol=1e-15)
    np.testing.assert_allclose(got["tanh"], [[math.tanh(2.7), math.tanh(4.1)]], atol=1e-15)
    score = 0.9 * math.tanh(2.7) + 0.1 * math.tanh(4.1)
    assert got["scores"] == pytest.approx([score], abs=1e-15)
    assert got["scores"] == pytest.approx(additive_by_hand([1, 3], [[2, 1]]), abs=1e-15)
    assert got["weights"] == [1.0]  # one state: the softmax is exactly 1
    assert got["context"] == [2.0, 1.0] == data(doc["output"])
    assert any("weight is exactly 1" in note["text"] for note in doc["notes"])
    # The slide rounds tanh U before the last product and prints 0.991: the exact score differs.
    assert abs(score - 0.991) > 5e-4


def test_cat_slept_compares_three_scores(invoke_json):
    doc = invoke_json("bahdanau", "--example", "cat-slept")
    assert [step["key"] for step in doc["steps"]] == ADDITIVE_KEYS + COMPARE_KEYS
    got = steps(doc)
    s, states = [0.1, 0.9], [[1, 0], [0, 1], [0.2, 0.1]]
    additive = additive_by_hand(s, states)
    assert got["scores"] == pytest.approx(additive, abs=1e-14)
    weights = softmax_by_hand(additive)
    assert got["weights"] == pytest.approx(weights, abs=1e-14)
    context = [sum(w * h[j] for w, h in zip(weights, states, strict=True)) for j in range(2)]
    assert got["context"] == pytest.approx(context, abs=1e-14)
    # Luong dot: s . h_i = [0.1, 0.9, 0.1*0.2 + 0.9*0.1].
    assert got["dot.scores"] == pytest.approx([0.1, 0.9, 0.11], abs=1e-15)
    dot_weights = softmax_by_hand([0.1, 0.9, 0.11])
    assert got["dot.weights"] == pytest.approx(dot_weights, abs=1e-14)
    dot_context = [dot_weights[0] + 0.2 * dot_weights[2], dot_weights[1] + 0.1 * dot_weights[2]]
    assert got["dot.context"] == pytest.approx(dot_context, abs=1e-14)
    # General with W_a = [[0, 1], [1, 0]]: s^T W_a h = s1 h2 + s2 h1.
    general = [s[0] * h[1] + s[1] * h[0] for h in states]
    assert got["general.scores"] == pytest.approx(general, abs=1e-15)
    assert got["general.weights"] == pytest.approx(softmax_by_hand(general), abs=1e-14)
    table = got["compare.table"]
    assert [row["state"] for row in table] == ["the", "cat", "slept"]
    assert [row["dot_e"] for row in table] == pytest.approx([0.1, 0.9, 0.11], abs=1e-15)
    assert [row["additive_alpha"] for row in table] == pytest.approx(weights, abs=1e-14)
    np.testing.assert_allclose(
        got["compare.contexts"], [context, dot_context, got["general.context"]], atol=1e-14
    )
    cost = {row["score"]: row for row in got["compare.cost"]}
    # n = 3, d = 2, d_a = 2: additive 3*2*2 + 2*2 + 3*2 multiply-adds, 3*2 tanh.
    assert cost["additive"]["multiply_adds"] == 22 and cost["additive"]["tanh"] == 6
    assert cost["additive"]["parameters"] == 2 * (2 + 2 + 1)
    assert cost["dot"]["multiply_adds"] == 6 and cost["dot"]["parameters"] == 0
    assert cost["general"]["multiply_adds"] == 4 + 6 and cost["general"]["parameters"] == 4
    assert data(doc["inputs"]["W_a"]) == [[0.0, 1.0], [1.0, 0.0]]
    assert any("additive → cat, dot → cat, general → the" in note["text"] for note in doc["notes"])
    weights_step = next(step for step in doc["steps"] if step["key"] == "weights")
    assert weights_step["col_labels"] == ["the", "cat", "slept"]


def test_printed_values_name_existing_steps(invoke_json):
    lesson = load_bundled("bahdanau")
    assert {example.name for example in lesson.examples} == {"term-by-term", "cat-slept"}
    for example in lesson.examples:
        keys = {step["key"] for step in invoke_json("bahdanau", "-e", example.name)["steps"]}
        for key in example.printed:
            assert re.sub(r"\[.*\]$", "", key) in keys, key


def test_all_scores_defaults_w_a_to_the_identity_and_says_so(invoke_json):
    doc = invoke_json("bahdanau", "-e", "cat-slept")
    assert "identity" not in " ".join(note["text"] for note in doc["notes"])
    doc = invoke_json("bahdanau", "--all-scores")
    got = steps(doc)
    assert data(doc["inputs"]["W_a"]) == [[1.0, 0.0], [0.0, 1.0]]
    assert got["general.scores"] == got["dot.scores"] == [2 * 1 + 1 * 3]
    assert any("identity" in note["text"] for note in doc["notes"])


def test_wa_on_top_of_an_example_turns_all_scores_on(invoke_json):
    doc = invoke_json("bahdanau", "-e", "cat-slept", "--wa", "2,0;0,1")
    assert doc["example"] == "cat-slept"
    general = [2 * 0.1 * h[0] + 0.9 * h[1] for h in [[1, 0], [0, 1], [0.2, 0.1]]]
    assert steps(doc)["general.scores"] == pytest.approx(general, abs=1e-15)
    doc = invoke_json("bahdanau", "--wa", "1,0;0,1")
    assert "general.scores" in steps(doc)
    doc = invoke_json("bahdanau", "-e", "cat-slept", "--no-all-scores")
    assert [step["key"] for step in doc["steps"]] == ADDITIVE_KEYS
    assert "W_a" not in doc["inputs"]


LESSON = """\
lesson = "bahdanau"
[[examples]]
name = "mine"
{options}
[examples.inputs]
s_t = [1, 0]
H = [[1, 0], [0, 1]]
W1 = [[1, 0], [0, 1]]
W2 = [[1, 0], [0, 1]]
v = [1, 1]
{wa}
[examples.printed]
{printed}
"""


def lesson_file(tmp_path, options: str = "", wa: str = "", printed: str = "") -> str:
    path = tmp_path / "mine.toml"
    path.write_text(LESSON.format(options=options, wa=wa, printed=printed), encoding="utf-8")
    return str(path)


def test_wa_in_a_lesson_file_turns_all_scores_on_for_the_command_and_check(invoke, tmp_path):
    # s_t = e1 and W_a = diag(2, 1): the general scores s_tᵀ W_a h_i are 2 and 0.
    general = softmax_by_hand([2.0, 0.0])
    printed = f'"general.scores" = "2, 0"\n"general.weights" = "{general[0]:.4f}, {general[1]:.4f}"'
    path = lesson_file(tmp_path, wa="W_a = [[2, 0], [0, 1]]", printed=printed)
    result = invoke("bahdanau", "--lesson", path, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert list(steps(doc)) == ADDITIVE_KEYS + COMPARE_KEYS
    assert doc["options"] == {"all_scores": True, "dropout": None, "valid_len": None}
    checked = invoke("check", path)
    assert checked.exit_code == 0, checked.output
    assert "All 4 printed values agree" in checked.stdout  # general scores and weights
    # all_scores = false in the file still turns it off, W_a or not.
    off = lesson_file(
        tmp_path, options="options = { all_scores = false }", wa="W_a = [[2, 0], [0, 1]]"
    )
    doc = json.loads(invoke("bahdanau", "--lesson", off, "--format", "json").stdout)
    assert list(steps(doc)) == ADDITIVE_KEYS and doc["options"] == {
        "all_scores": False,
        "dropout": None,
        "valid_len": None,
    }


def test_all_scores_in_a_lesson_file_must_be_true_or_false(invoke, tmp_path):
    path = lesson_file(tmp_path, options='options = { all_scores = "yes" }')
    assert_user_error(
        invoke("bahdanau", "--lesson", path),
        'options.all_scores: found "yes" (text); expected true or false.',
    )


def test_wa_and_no_all_scores_on_the_command_line(invoke_json):
    doc = invoke_json("bahdanau", "--wa", "2,0;0,1", "--no-all-scores")
    assert list(steps(doc)) == ADDITIVE_KEYS


def test_missing_inputs_message_names_only_required_inputs(invoke):
    result = invoke("bahdanau", "--s", "1,2", "--h", "1,2")
    assert_user_error(result, "--w1, --w2, --v missing", "(--s, --h, --w1, --w2, --v)")
    assert "--wa" not in result.stderr


def test_user_inputs_with_tokens_and_unequal_widths(invoke_json):
    # d_h = 3, d_s = 2, d_a = 1: additive attention needs no common width.
    doc = invoke_json(
        "bahdanau",
        *("--s", "1,2", "--h", "1,0,0;0,1,0", "--w1", "1,1,1", "--w2", "0.5,0"),
        *("--v", "2", "--tokens", "a, b"),
    )
    got = steps(doc)
    assert got["scores"] == pytest.approx([2 * math.tanh(1.5), 2 * math.tanh(1.5)], abs=1e-15)
    assert got["weights"] == [0.5, 0.5]
    assert got["context"] == [0.5, 0.5, 0.0]
    assert doc["steps"][0]["row_labels"] == ["a", "b"]


# --- properties on random inputs ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_random_weights_are_a_distribution_and_context_a_convex_combination(invoke_json, seed):
    doc = invoke_json("bahdanau", "--n", "7", "--d", "5", "--da", "3", "--seed", str(seed))
    doc_compare = invoke_json(
        "bahdanau", "--n", "7", "--d", "5", "--da", "3", "--seed", str(seed), "--all-scores"
    )
    assert data(doc_compare["inputs"]["H"]) == data(doc["inputs"]["H"])  # same seed, same inputs
    h = np.array(data(doc["inputs"]["H"]))
    assert h.shape == (7, 5) and np.array(data(doc["inputs"]["W1"])).shape == (3, 5)
    got = steps(doc_compare)
    for form in ("", "dot.", "general."):
        weights = np.array(got[f"{form}weights"])
        context = np.array(got[f"{form}context"])
        assert weights.sum() == pytest.approx(1.0, abs=1e-14)
        assert (weights >= 0).all() and (weights <= 1).all()
        np.testing.assert_allclose(context, weights @ h, atol=1e-14)
        assert (context >= h.min(axis=0) - 1e-14).all() and (context <= h.max(axis=0) + 1e-14).all()
    tanh = np.array(got["tanh"])
    assert (np.abs(tanh) < 1).all()


# --- agreement with PyTorch ---------------------------------------------------------------


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize(("n", "d", "d_a"), [(5, 4, 3), (9, 6, 10)])
def test_agrees_with_torch_nn_linear_and_sdpa(invoke_json, torch, backend, n, d, d_a):
    rng = np.random.default_rng(n * 100 + d)
    s, h = rng.standard_normal(d), rng.standard_normal((n, d))
    w1, w2 = rng.standard_normal((d_a, d)) / 2, rng.standard_normal((d_a, d)) / 2
    v, wa = rng.standard_normal(d_a), rng.standard_normal((d, d))
    doc = invoke_json(
        "bahdanau",
        *("--s", text(s), "--h", text(h), "--w1", text(w1), "--w2", text(w2)),
        *("--v", text(v), "--wa", text(wa), "--backend", backend),
    )
    assert doc["backend"] == backend and doc["dtype"] == "float64"
    got = steps(doc)

    f = torch.nn.functional
    t = {name: torch.tensor(a, dtype=torch.float64) for name, a in dict(s=s, h=h, wa=wa).items()}
    with torch.no_grad():
        lin1 = torch.nn.Linear(d, d_a, bias=False, dtype=torch.float64)
        lin2 = torch.nn.Linear(d, d_a, bias=False, dtype=torch.float64)
        lin1.weight.copy_(torch.tensor(w1))  # Linear computes x W^T: row i is W1 h_i
        lin2.weight.copy_(torch.tensor(w2))
        u = lin1(t["h"]) + lin2(t["s"])
        scores = torch.tanh(u) @ torch.tensor(v)
        weights = torch.softmax(scores, dim=0)
        expected = {
            "W1h": lin1(t["h"]),
            "W2s": lin2(t["s"]),
            "sum": u,
            "tanh": torch.tanh(u),
            "scores": scores,
            "weights": weights,
            "context": weights @ t["h"],
            "dot.scores": t["h"] @ t["s"],
            "dot.weights": torch.softmax(t["h"] @ t["s"], dim=0),
            "general.scores": t["s"] @ t["wa"] @ t["h"].T,
        }
        # Luong's dot attention is SDPA with one query and no scaling; general is SDPA with
        # the query W_a^T s_t.
        keys = t["h"][None]
        expected["dot.context"] = f.scaled_dot_product_attention(
            t["s"][None, None], keys, keys, scale=1.0
        )[0, 0]
        expected["general.context"] = f.scaled_dot_product_attention(
            (t["wa"].T @ t["s"])[None, None], keys, keys, scale=1.0
        )[0, 0]
    for key, value in expected.items():
        np.testing.assert_allclose(got[key], value.numpy(), rtol=0, atol=1e-10, err_msg=key)


# --- user errors --------------------------------------------------------------------------

GOOD = {"--s": "1,3", "--h": "2,1;0,1", "--w1": "0.1,0.2;0.3,0.4", "--w2": "0.5,0.6;0.7,0.8"}


def args(**changes: str) -> list[str]:
    options = {**GOOD, "--v": "0.9,0.1"}
    options.update({f"--{key}": value for key, value in changes.items()})
    return [item for pair in options.items() for item in pair]


@pytest.mark.parametrize(
    ("changes", "fragments"),
    [
        ({"w1": "1,x;0,1"}, ["--w1", "'x'", "not a number"]),
        ({"h": "1,2;3"}, ["--h", "row 2 has 1 entries"]),
        ({"s": "1,nan"}, ["--s has nan", "finite"]),
        ({"v": "1,inf"}, ["--v has inf"]),
        # ("1,2;3,4" is a batch of two decoder states: tests/test_batch.py)
        ({"s": "1,2;3,4 | 5,6;7,8"}, ["--s has shape 2 × 2 × 2", "vector"]),
        ({"w1": "1,2,3;4,5,6"}, ["--w1 has 3 columns", "d_h = 2"]),
        ({"w2": "1,2,3;4,5,6"}, ["--w2 has 3 columns", "--s has 2 entries", "d_s = 2"]),
        ({"w2": "1,2"}, ["--w1 has 2 rows but --w2 has 1", "d_a"]),
        ({"v": "1,2,3"}, ["--v has 3 entries", "d_a = 2"]),
        ({"wa": "1,2,3"}, ["--wa is 1 × 3", "d_s × d_h = 2 × 2"]),
        ({"s": "1,2,3", "w2": "1,2,3;4,5,6", "wa": "1,0;0,1;0,0"}, ["--all-scores", "same width"]),
        ({"tokens": "a,b,c"}, ["--tokens", "gives 3 names but there are 2 rows"]),
        ({"tokens": " , "}, ["--tokens is empty"]),
        ({"h": "@missing.csv"}, ["--h", "not found"]),
    ],
)
def test_user_errors(invoke, changes, fragments):
    assert_user_error(invoke("bahdanau", *args(**changes)), *fragments)


def test_more_user_errors(invoke):
    assert_user_error(invoke("bahdanau", "--s", "1,2", "--h", "1,2"), "--w1, --w2, --v missing")
    assert_user_error(
        invoke("bahdanau", "--n", "3", "--s", "1,2"),
        "--s is 2 long, where the random inputs of --n 3 draw s_t 8 long: give --d 2",
    )
    assert_user_error(invoke("bahdanau", "-e", "nope"), "term-by-term, cat-slept")
    assert_user_error(invoke("bahdanau", "--n", "3", "--wa", "1"), "--wa is 1 × 1", "8 × 8")
    assert_user_error(invoke("bahdanau", "--wa", "1,0;0"), "--wa", "row 2")
    assert_user_error(
        invoke("bahdanau", "--s", "1,2,3", *args()[2:], "--all-scores"), "--w2 has 2 columns"
    )


# --- formats ------------------------------------------------------------------------------


def test_rich_output_shows_every_step_with_labels(invoke, invoke_json):
    result = invoke("bahdanau", "-e", "cat-slept")
    assert result.exit_code == 0, result.output
    out = result.stdout
    for title in (
        "Project the encoder states",
        "Squash  tanh",
        "Context  cₜ",
        "Luong dot scores",
        "Three scores side by side",
        "What each score costs",
    ):
        assert title in out
    assert "slept" in out and "Σ row" in out
    computed = steps(invoke_json("bahdanau", "-e", "cat-slept"))
    for key in ("weights", "context", "dot.weights"):  # as the tables print them, 4 places
        for value in np.ravel(computed[key]):
            assert f"{value:.4f}" in out, (key, value)


def test_rich_notes_on_the_single_state_example(invoke):
    out = invoke("bahdanau").stdout
    assert "example term-by-term" in out
    assert "0.9919" in out  # the exact score, where the slide prints 0.991
    assert "weight is" in out and "saturated" in out


def test_markdown_and_latex(invoke):
    markdown = invoke("bahdanau", "-e", "cat-slept", "--format", "markdown").stdout
    assert markdown.startswith("## Bahdanau (additive) attention — example `cat-slept`")
    assert "| **slept** |" in markdown and "| additive |" in markdown
    latex = invoke("bahdanau", "--format", "latex", "--precision", "3").stdout
    assert (
        "e_i = v^\\top \\tanh(W_1 h_i + W_2 s_t) = \\begin{bmatrix} 0.992 \\end{bmatrix}" in latex
    )
    assert "W_{1} = \\begin{bmatrix}" in latex


def test_list_examples_and_torch_float32(invoke, invoke_json, torch):
    listing = invoke("bahdanau", "--list-examples").stdout
    assert "term-by-term (default)" in listing and "cat-slept" in listing
    doc = invoke_json("bahdanau", "-e", "cat-slept", "--backend", "torch", "--dtype", "float32")
    assert doc["dtype"] == "float32"
    np.testing.assert_allclose(
        steps(doc)["weights"],
        steps(invoke_json("bahdanau", "-e", "cat-slept"))["weights"],
        atol=1e-6,
    )


def test_time_reports_each_step(invoke_json):
    doc = invoke_json("bahdanau", "--n", "4", "--time")
    assert all("seconds" in step for step in doc["steps"])


# --- issue 22: every sentence true for the numbers on screen ---------------------------------


def test_saturation_says_how_small_the_gradient_through_tanh_is(invoke_json):
    """Issue 22 #19: "saturated, so training barely moves them" becomes the gradient's factor."""
    doc = invoke_json("bahdanau")
    step = next(step for step in doc["steps"] if step["key"] == "sum")
    tanh = next(step for step in doc["steps"] if step["key"] == "tanh")
    note = next(note for note in tanh["notes"] if note["key"] == "saturated")
    assert "barely moves" not in note["text"]
    assert "multiplied by that slope" in note["text"]
    assert note["values"]["slope"] == pytest.approx(1 - math.tanh(2.0) ** 2)
    u = np.asarray(unwrap(step["value"]), dtype=float)
    np.testing.assert_allclose(u.reshape(-1), [2.7, 4.1], atol=1e-12)  # W1 h + W2 s
    assert note["values"]["flat"] == 2


def test_the_context_says_convex_combination_plainly(invoke_json):
    """Issue 22 #9: "hull", "the textbook", "seed NNN"."""
    doc = invoke_json("bahdanau", "--example", "cat-slept", "--dropout", "0.5")
    text = " ".join(step["explanation"] for step in doc["steps"])
    for word in ("hull", "the textbook", "comes from seed"):
        assert word not in text, word
    plain = invoke_json("bahdanau", "--example", "cat-slept")
    context = next(step for step in plain["steps"] if step["key"] == "context")
    assert "between the smallest and the largest" in context["explanation"]
    assert "Dive into Deep Learning" in context["explanation"]


# --valid-len (issue 24, part 5): the encoder states past L are padding.


def bahdanau_padded_by_hand(s, h, w1, w2, v, length: int) -> tuple[np.ndarray, np.ndarray]:
    """e_i = vᵀ tanh(W1 h_i + W2 s) for i ≤ L (from 1), −∞ after; α = softmax(e); c = Σ α_i h_i,
    state by state."""
    s, h, w1, w2, v = (np.asarray(x, dtype=float) for x in (s, h, w1, w2, v))
    scores = [float(v @ np.tanh(w1 @ h[i] + w2 @ s)) for i in range(length)]
    top = max(scores)
    exps = [math.exp(e - top) for e in scores]
    weights = np.zeros(len(h))
    weights[:length] = [x / sum(exps) for x in exps]
    return weights, weights @ h


def test_valid_len_against_the_direct_formula():
    import attn_cli as attn

    rng = np.random.default_rng(24)
    worst = 0.0
    for _ in range(12):
        n, d, d_a = (int(x) for x in rng.integers(1, 7, size=3))
        s, h = rng.standard_normal(d), rng.standard_normal((n, d))
        w1, w2, v = (
            rng.standard_normal((d_a, d)),
            rng.standard_normal((d_a, d)),
            rng.standard_normal(d_a),
        )
        length = int(rng.integers(1, n + 1))
        walk = attn.bahdanau(s, h, w1, w2, v, valid_len=length)
        weights, context = bahdanau_padded_by_hand(s, h, w1, w2, v, length)
        np.testing.assert_allclose(walk.step("weights"), weights, rtol=0, atol=1e-15)
        assert np.all(walk.step("weights")[length:] == 0.0)
        assert np.all(walk.step("masked")[length:] == -np.inf)
        np.testing.assert_allclose(walk.output, context, rtol=0, atol=1e-15)
        worst = max(worst, float(np.max(np.abs(walk.output - context))))
    assert worst < 1e-15


def test_valid_len_on_cat_slept_masks_slept_and_says_so(invoke_json):
    """cat-slept's three states with L = 2: "slept" is padding, weight 0; Luong's dot and
    general scores get the same mask."""
    plain = steps(invoke_json("bahdanau", "--example", "cat-slept"))
    doc = invoke_json("bahdanau", "--example", "cat-slept", "--valid-len", "2", "--all-scores")
    masked = steps(doc)
    scores = plain["scores"]
    assert masked["masked"][:2] == scores[:2]
    assert np.isneginf(np.array(masked["masked"], dtype=float)[2])
    expected = [*softmax_by_hand(scores[:2]), 0.0]
    assert masked["weights"] == pytest.approx(expected, abs=1e-15)
    assert masked["weights"][2] == 0 and masked["dot.weights"][2] == 0
    assert masked["general.weights"][2] == 0
    (note,) = next(step for step in doc["steps"] if step["key"] == "masked")["notes"]
    assert note["key"] == "padded"
    assert note["values"] == {"length": 2, "padded": 1, "first": "slept"}
    whole = invoke_json("bahdanau", "--example", "cat-slept", "--valid-len", "3")
    (note,) = next(step for step in whole["steps"] if step["key"] == "masked")["notes"]
    assert note["key"] == "no_padding"
    assert steps(whole)["weights"] == plain["weights"]


def test_valid_len_one_per_item_of_a_batch():
    """A batch of two encoder sequences with --valid-len "1|3": each item masked at its own
    length, as d2l's valid_lens of shape (B,)."""
    import attn_cli as attn

    rng = np.random.default_rng(5)
    s, h = rng.standard_normal((2, 2)), rng.standard_normal((2, 3, 2))
    w1, w2, v = rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), rng.standard_normal(3)
    walk = attn.bahdanau(s, h, w1, w2, v, valid_len="1|3")
    for index, length in enumerate((1, 3)):
        weights, context = bahdanau_padded_by_hand(s[index], h[index], w1, w2, v, length)
        np.testing.assert_allclose(walk.items[index].step("weights"), weights, atol=1e-15)
        np.testing.assert_allclose(walk.items[index].output, context, atol=1e-15)
    assert walk.items[0].step("weights")[1:].tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (("--valid-len", "0"), "no visible key"),
        (("--valid-len", "4"), "past the 3 keys"),
        (("--valid-len", "1,2"), "gives 2 lengths"),
        (("--valid-len", "2", "--steps", "2"), "--valid-len is for one decoder step"),
    ],
)
def test_valid_len_user_errors(invoke, extra, fragment):
    assert_user_error(invoke("bahdanau", "--example", "cat-slept", *extra), fragment)


def test_saturated_tanh_is_not_said_to_stay_inside_the_open_interval(invoke_json):
    """h1 = s = [100, 100], W1 = W2 = I: U = 200 and tanh(200) is exactly 1.0 in float64, so
    e1 = v·[1, 1] = 2 = Σ|v|. The scores step once said "|eᵢ| stays below Σₐ |vₐ|" beside it."""
    doc = invoke_json(
        "bahdanau", "--s", "100,100", "--h", "100,100;1,0", "--w1", "1,0;0,1",
        "--w2", "1,0;0,1", "--v", "1,1",
    )  # fmt: skip
    steps = {step["key"]: step for step in doc["steps"]}
    assert unwrap(steps["tanh"]["value"])[0] == [1.0, 1.0]
    assert unwrap(steps["scores"]["value"])[0] == 2.0
    assert "stays below" not in steps["scores"]["explanation"]
    assert "|eᵢ| is at most Σₐ |vₐ|" in steps["scores"]["explanation"]
    assert "rounds to ±1" in steps["tanh"]["explanation"]


@pytest.mark.parametrize(
    ("args", "context", "words"),
    [
        (("--values", "5,6"), [5.0, 6.0], "the context is v_1, the row of --values, itself"),
        (("--dropout", "0.5", "--seed", "2"), [4.0, 2.0], "the context before dropout is h_1"),
    ],
)
def test_one_state_note_names_the_context_shown(invoke_json, args, context, words):
    """The term-by-term example has one state, h_1 = [2, 1]. With --values 5,6 the context is
    [5, 6], and with dropout (seed 2 keeps the weight: 1 / (1 − 0.5) = 2) it is [4, 2]; the note
    said "the context is h_1 itself" beside both."""
    doc = invoke_json("bahdanau", *args)
    assert data(doc["output"]) == context
    (note,) = [n for n in doc["notes"] if n["key"] == "single_state"]
    assert "the context is h_1 itself" not in note["text"]
    assert words in note["text"]


def test_the_shared_compare_runs_bahdanau_again_with_flags(invoke):
    """Luong's scores are --all-scores, so --compare "FLAGS" is the shared one here too."""
    result = invoke("bahdanau", "--example", "cat-slept", "--compare", "--no-all-scores")
    assert result.exit_code == 0, result.output
    assert "compared with --no-all-scores" in result.stdout
    assert "9 of its 16 steps differ" in " ".join(result.stdout.split())
    assert_user_error(invoke("bahdanau", "--compare"), "--compare")  # FLAGS, not a switch
