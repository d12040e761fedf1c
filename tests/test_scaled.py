"""attn scaled: lecture values, properties, PyTorch agreement, formats and sizes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attn_cli.core.backend_choice import get_backend
from attn_cli.mechanisms import attention as mech
from tests.conftest import assert_user_error, data, examples, unwrap
from tests.lesson_runs import Batch, Runs

SMALL = ("--n", "3", "--dk", "2")
# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "5", "--m", "3", "--dk", "4", "--dv", "2", "--seed", "3"),
    sized=lambda s: {"n": s, "dk": s},
    large=("--n", "120", "--dk", "4"),
    variants=(
        SMALL,
        ("--no-scale",),  # the lecture's example, not scaled: its description is not shown
        (*SMALL, "--no-scale"),
        (*SMALL, "--valid-len", "2"),
        (*SMALL, "--valid-len", "1,2,3"),
        (*SMALL, "--no-scale", "--valid-len", "2"),
        (*SMALL, "--dropout", "0.5"),
        (*SMALL, "--dropout", "0"),
        ("--n", "2", "--dk", "1", "--seed", "6"),  # drawn, and still peaked (still_peaked_drawn)
        ("--n", "3", "--m", "1", "--dk", "2", "--dropout", "0.5"),  # one row: sums all equal
        *(
            (*SMALL, "--normalise", name)
            for name in ("sparsemax", "entmax15", "sigmoid", "hardmax")
        ),
        (*SMALL, "--normalise", "sparsemax", "--valid-len", "2", "--dropout", "0.5"),
        ("--q", "1", "--k", "1;1", "--v", "1;2", "--normalise", "sparsemax"),  # a tie: dense
        ("--q", "1", "--k", "1;1", "--v", "1;2", "--normalise", "hardmax"),  # a tie: dense
        ("--q", "1", "--k", "1;1", "--v", "1;2", "--normalise", "entmax15"),  # a tie: dense
        ("--q", "1", "--k", "1;-2", "--v", "1;2", "--normalise", "entmax15"),  # 1 key dropped
        ("--q", "-1000", "--k", "1;0", "--v", "1;2", "--normalise", "sigmoid"),  # σ(−1000) = 0
        ("--q", "1", "--k", "1", "--v", "1"),  # one key: every weight is 1
        ("--q", "-1,-2;3,0;0,0", "--k", "-1,0;2,2", "--v", "1;2"),  # scaled, still peaked
        # Score transforms: capped hard and barely; QK-norm raising, lowering, keeping; both.
        (*SMALL, "--softcap", "0.5"),
        (*SMALL, "--softcap", "1000"),
        (*SMALL, "--qk-norm", "layernorm"),
        (*SMALL, "--qk-norm", "rmsnorm", "--softcap", "2", "--valid-len", "2"),
        ("--q", "10,0;0,10", "--k", "10,0;0,10", "--v", "1,0;0,1", "--qk-norm", "rmsnorm"),
        ("--q", "1", "--k", "1", "--v", "1", "--qk-norm", "rmsnorm", "--no-scale"),
    ),
    options=(
        {"scale": False},
        {"normalise": "sparsemax"},
        {"normalise": "entmax15"},
        {"normalise": "hardmax"},
        {"softcap": 1.0},
        {"qk_norm": "rmsnorm"},
    ),
    figure=(("scaled", "--example", "cat-slept"), ("the", "cat", "slept", "s_t")),
    batch=Batch(lambda draw: {"q": draw(2, 3), "k": draw(4, 3), "v": draw(4, 2)}, ("q", "k", "v")),
)


def reference(q, k, v, use_scale=True):
    """Scaled dot-product attention written out longhand, one query at a time."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    rows = []
    for query in q:
        logits = np.array([sum(a * b for a, b in zip(query, key, strict=True)) for key in k])
        if use_scale:
            logits = logits / math.sqrt(q.shape[1])
        exps = np.array([math.exp(x) for x in logits])
        weights = exps / exps.sum()
        rows.append((weights, weights @ v))
    return np.array([w for w, _ in rows]), np.array([o for _, o in rows])


def test_two_tokens_every_step(invoke_json):
    doc = invoke_json("scaled")
    assert doc["example"] == "two-tokens"
    steps = {step["key"]: np.array(data(step["value"])) for step in doc["steps"]}
    np.testing.assert_array_equal(steps["scores"], [[1, 2], [1, 0]])
    np.testing.assert_allclose(
        steps["scaled"], np.array([[1, 2], [1, 0]]) / math.sqrt(2), rtol=0, atol=1e-15
    )
    # Row 1: softmax(1/√2, 2/√2) = 1 / (1 + e^(1/√2 - 2/√2)) for the first entry.
    first = 1 / (1 + math.exp(1 / math.sqrt(2)))
    np.testing.assert_allclose(
        steps["weights"], [[first, 1 - first], [1 - first, first]], atol=1e-15
    )
    v = np.array([[0.1, 0.2], [0.3, 0.4]])
    np.testing.assert_allclose(steps["output"][0], first * v[0] + (1 - first) * v[1], atol=1e-15)
    np.testing.assert_allclose(data(doc["output"]), steps["output"], atol=0)


def test_cat_slept_is_unscaled(invoke_json):
    doc = invoke_json("scaled", "--example", "cat-slept")
    keys = [step["key"] for step in doc["steps"]]
    assert keys == ["scores", "weights", "output"]
    scores = np.array([0.1, 0.9, 0.1 * 0.2 + 0.9 * 0.1])
    weights = np.exp(scores) / np.exp(scores).sum()
    states = np.array([[1, 0], [0, 1], [0.2, 0.1]])
    np.testing.assert_allclose(data(doc["steps"][1]["value"]), [weights], atol=1e-15)
    np.testing.assert_allclose(data(doc["output"]), [weights @ states], atol=1e-15)
    assert doc["steps"][0]["col_labels"] == ["the", "cat", "slept"]


def test_library_queries_are_independent(invoke_json):
    doc = invoke_json("scaled", "--example", "library")
    weights = np.array(data(doc["steps"][1]["value"]))
    e = math.e
    np.testing.assert_allclose(weights[0], np.array([e, e, e**-2]) / (2 * e + e**-2), atol=1e-15)
    np.testing.assert_allclose(
        weights[1], np.array([e**-1, e**-1, e**2]) / (2 / e + e**2), atol=1e-15
    )
    # Each query alone gives the same row as in the stack.
    for row, query in enumerate(["1,1", "-1,-1"]):
        alone = invoke_json(
            "scaled", "--q", query, "--k", "1,0;0.5,0.5;-1,-1", "--v", "10,0;0,10;5,5", "--no-scale"
        )
        np.testing.assert_array_equal(data(alone["output"])[0], data(doc["output"])[row])


def test_user_matrices_cross_attention(invoke_json):
    q = "1,0,2;0,1,-1"  # m = 2, d_k = 3
    k = "1,1,0;2,0,1;0,0,1;1,-1,1"  # n = 4
    v = "1;2;3;4"  # d_v = 1
    doc = invoke_json("scaled", "--q", q, "--k", k, "--v", v)
    weights, output = reference(
        [[1, 0, 2], [0, 1, -1]], [[1, 1, 0], [2, 0, 1], [0, 0, 1], [1, -1, 1]], [[1], [2], [3], [4]]
    )
    assert doc["example"] is None
    np.testing.assert_allclose(data(doc["steps"][2]["value"]), weights, rtol=1e-13)
    np.testing.assert_allclose(data(doc["output"]), output, rtol=1e-13)
    assert doc["steps"][0]["value"]["shape"] == [2, 4]
    assert doc["steps"][3]["value"]["shape"] == [2, 1]


finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@st.composite
def qkv(draw):
    m, n, d_k, d_v = (draw(st.integers(1, 5)) for _ in range(4))
    return (
        draw(arrays(np.float64, (m, d_k), elements=finite)),
        draw(arrays(np.float64, (n, d_k), elements=finite)),
        draw(arrays(np.float64, (n, d_v), elements=finite)),
    )


@settings(max_examples=examples(60))
@given(qkv(), st.booleans())
def test_properties(inputs, use_scale):
    q, k, v = inputs
    result = mech.attention(q, k, v, use_scale=use_scale)
    # Rows of the weights are probability distributions.
    assert (result.weights >= 0).all()
    np.testing.assert_allclose(result.weights.sum(axis=1), 1, rtol=0, atol=1e-12)
    # Output rows are convex combinations of value rows: inside the values' bounding box.
    assert (result.output >= v.min(axis=0) - 1e-9).all()
    assert (result.output <= v.max(axis=0) + 1e-9).all()
    # Permuting keys and values together changes nothing.
    order = np.random.default_rng(0).permutation(k.shape[0])
    permuted = mech.attention(q, k[order], v[order], use_scale=use_scale)
    np.testing.assert_allclose(permuted.output, result.output, rtol=1e-12, atol=1e-12)
    _, expected = reference(q, k, v, use_scale)
    np.testing.assert_allclose(result.output, expected, rtol=1e-10, atol=1e-10)


def test_softmax_is_stable_for_huge_scores():
    weights = mech.softmax(np.array([[1000.0, 999.0, -1000.0]]))
    np.testing.assert_allclose(weights, [[1 / (1 + math.exp(-1)), 1 / (1 + math.e), 0]], atol=1e-15)


def test_masked_entries_are_exactly_zero_and_all_masked_rows_are_nan():
    scores = np.array([[1.0, -np.inf], [-np.inf, -np.inf]])
    weights = mech.softmax(scores)
    assert weights[0, 1] == 0 and weights[0, 0] == 1
    assert np.isnan(weights[1]).all()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize(("m", "n", "d_k", "d_v"), [(3, 5, 4, 2), (7, 2, 3, 6), (1, 9, 8, 8)])
def test_agrees_with_pytorch_sdpa(torch, backend, m, n, d_k, d_v):
    from torch.nn.functional import scaled_dot_product_attention

    rng = np.random.default_rng(m * 100 + n)
    q, k, v = (rng.standard_normal(shape) for shape in ((m, d_k), (n, d_k), (n, d_v)))
    chosen = get_backend(backend)
    result = mech.attention(*(chosen.asarray(a) for a in (q, k, v)))
    expected = scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)))
    np.testing.assert_allclose(chosen.to_numpy(result.output), expected.numpy(), rtol=0, atol=1e-10)
    unscaled = mech.attention(*(chosen.asarray(a) for a in (q, k, v)), use_scale=False)
    expected_unscaled = scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), scale=1.0
    )
    np.testing.assert_allclose(
        chosen.to_numpy(unscaled.output), expected_unscaled.numpy(), rtol=0, atol=1e-10
    )


def test_torch_backend_cli_matches_numpy(torch, invoke_json):
    numpy_doc = invoke_json(
        "scaled", "--n", "6", "--m", "4", "--dk", "5", "--dv", "3", "--seed", "3"
    )
    torch_doc = invoke_json(
        "scaled",
        "--n",
        "6",
        "--m",
        "4",
        "--dk",
        "5",
        "--dv",
        "3",
        "--seed",
        "3",
        "--backend",
        "torch",
    )
    assert torch_doc["backend"] == "torch" and torch_doc["dtype"] == "float64"
    np.testing.assert_allclose(
        data(torch_doc["output"]), data(numpy_doc["output"]), rtol=0, atol=1e-12
    )
    float32 = invoke_json("scaled", "--backend", "torch", "--dtype", "float32")
    assert float32["dtype"] == "float32"


def test_random_sizes_are_seeded_and_shaped(invoke_json):
    doc = invoke_json("scaled", "--n", "5", "--m", "3", "--dk", "4", "--dv", "2", "--seed", "7")
    rng = np.random.default_rng(7)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    np.testing.assert_array_equal(data(doc["inputs"]["Q"]), q)
    _, expected = reference(q, k, v)
    np.testing.assert_allclose(data(doc["output"]), expected, rtol=1e-12)
    again = invoke_json("scaled", "--n", "5", "--m", "3", "--dk", "4", "--dv", "2", "--seed", "7")
    assert again == doc


def test_large_matrices_are_summarised_in_json_unless_full(invoke_json):
    doc = invoke_json("scaled", "--n", "120", "--dk", "4")
    scores = doc["steps"][0]["value"]
    assert scores["shape"] == [120, 120]
    assert set(scores) == {"shape", "summary"}
    assert set(scores["summary"]) == {"min", "max", "mean", "std", "count"}
    assert scores["summary"]["count"] == 14400
    full = invoke_json("scaled", "--n", "120", "--dk", "4", "--full")
    assert len(data(full["steps"][0]["value"])) == 120
    full_scores = np.array(data(full["steps"][0]["value"]))
    assert scores["summary"]["max"] == full_scores.max()
    assert scores["summary"]["mean"] == pytest.approx(full_scores.mean(), rel=1e-12)


def test_large_matrices_show_a_corner_in_the_terminal(invoke):
    result = invoke("scaled", "--n", "40", "--dk", "8")
    assert result.exit_code == 0
    said = " ".join(result.stdout.split())
    assert "rows 7–39 and columns 7–39 hidden (--full shows every row and column)" in said
    assert "shape 40 × 40" in result.stdout
    assert "⋮" in result.stdout and "…" in result.stdout


def test_time_reports_each_step(invoke_json):
    doc = invoke_json("scaled", "--time")
    assert all("seconds" in step for step in doc["steps"])
    assert "seconds" not in invoke_json("scaled")["steps"][0]


def test_a_size_that_cannot_fit_is_refused_with_the_estimate(invoke, monkeypatch):
    monkeypatch.setattr("attn_cli.core.backend.available_host_bytes", lambda: 1_000_000)
    result = invoke("scaled", "--n", "1000", "--dk", "8")
    assert_user_error(
        result, "needs about", "MiB", "only 976.6 KiB is free", "choose smaller sizes"
    )


def test_estimate_scales_with_n_squared():
    from attn_cli.course.scaled import build as scaled

    shapes = scaled.random_shapes({"n": 100_000, "dk": 64})
    assert scaled.estimate_bytes(shapes, {}, 8) >= 5 * 100_000**2 * 8


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--backend", "numpy", "--device", "cuda"], "add --backend torch"),
        (["--dtype", "bfloat16"], "numpy has no bfloat16"),
        (["--example", "nope"], "no example 'nope'"),
        (["--n", "4", "--q", "1,0"], "give --m 1 --dk 2, or leave out --q to draw it too"),
        (["--example", "library", "--q", "1", "--k", "1", "--v", "1"], "leave it out"),
    ],
)
def test_request_errors(invoke, args, fragment):
    assert_user_error(invoke("scaled", *args), fragment)


def test_unavailable_device_is_a_user_error(torch, invoke):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert_user_error(invoke("scaled", "--device", "cuda"), "--device cuda: CUDA is not available")


def test_missing_torch_is_a_user_error(invoke, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    monkeypatch.delitem(sys.modules, "attn_cli.core.torch_backend", raising=False)
    assert_user_error(invoke("scaled", "--backend", "torch"), "pip install 'attn-cli[torch]'")


def test_list_examples(invoke):
    result = invoke("scaled", "--list-examples")
    assert result.exit_code == 0
    for name in ("two-tokens (default)", "cat-slept", "library"):
        assert name in result.stdout


def test_markdown_and_latex(invoke):
    markdown = invoke("scaled", "--format", "markdown").stdout
    assert "## Scaled dot-product attention — example `two-tokens`" in markdown
    root2 = math.sqrt(2)
    assert f"| **q1** | {1 / root2:.4f} | {2 / root2:.4f} |" in markdown
    assert "|---|---:|---:|" in markdown
    latex = invoke("scaled", "--format", "latex", "--precision", "3").stdout
    assert "\\[ S = QK^\\top = \\begin{bmatrix} 1 & 2 \\\\ 1 & 0 \\end{bmatrix} \\]" in latex
    assert f"{1 / root2:.3f} & {2 / root2:.3f} \\\\ {1 / root2:.3f} & 0" in latex


def test_json_is_one_document_with_the_contract_keys(invoke):
    result = invoke("scaled", "--format", "json")
    doc = json.loads(result.stdout)
    assert list(doc) == [
        "schema_version",
        "attn_version",
        "kind",
        "lesson",
        "example",
        "backend",
        "device",
        "dtype",
        "options",
        "inputs",
        "steps",
        "output",
        "notes",
        "meta",
    ]
    assert doc["schema_version"] == "2.8" and doc["kind"] == "lesson"
    assert doc["inputs"] == {
        "Q": {"shape": [2, 2], "data": [[1, 0], [0, 1]]},
        "K": {"shape": [2, 2], "data": [[1, 1], [2, 0]]},
        "V": {"shape": [2, 2], "data": [[0.1, 0.2], [0.3, 0.4]]},
    }
    assert all({"key", "title", "value"} <= set(step) for step in doc["steps"])


@pytest.mark.slow
def test_version_and_module_entry_point(invoke):
    import subprocess
    import sys

    from attn_cli import __version__

    assert invoke("--version").stdout.strip() == f"attn {__version__}"
    completed = subprocess.run(
        [sys.executable, "-m", "attn_cli", "scaled", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(completed.stdout)["lesson"] == "scaled"


@pytest.mark.slow
def test_tab_completion_offers_the_example_names():
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "_ATTN_COMPLETE": "complete_zsh",
        "_TYPER_COMPLETE_ARGS": "attn scaled --example c",
    }
    completed = subprocess.run(
        [sys.executable, "-c", "from attn_cli.cli.app import main; main()"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert '"cat-slept"' in completed.stdout
    assert "two-tokens" not in completed.stdout


# --- issue 22: every sentence true for the numbers on screen ---------------------------------


def note_keys(doc: dict) -> set[str]:
    """The keys of every note printed: under the walkthrough and under each step."""
    keys = {note["key"] for note in doc.get("notes", [])}
    for step in doc["steps"]:
        keys |= {note["key"] for note in step.get("notes", [])}
    return keys


def all_text(doc: dict) -> str:
    """Every explanation and note a reader sees, and the example's description."""
    texts = [step["explanation"] for step in doc["steps"]]
    texts += [note["text"] for note in doc.get("notes", [])]
    texts += [note["text"] for step in doc["steps"] for note in step.get("notes", [])]
    return "\n".join(texts)


def test_the_slides_plain_dot_product_is_mentioned_only_for_a_slide_example(invoke_json):
    """Issue 22 #4: "(the slide uses the plain dot product)" was printed for the user's own
    matrices with --no-scale."""
    own = invoke_json(
        "scaled", "--q", "1,0", "--k", "3,0;1,0;0,0;-2,0", "--v", "1;2;3;4", "--no-scale"
    )
    assert "the slide" not in all_text(own)
    assert "no_scale" not in note_keys(own) and "no_scale_asked" in note_keys(own)
    scores = np.array(data(own["steps"][0]["value"]))
    np.testing.assert_array_equal(scores, [[3, 1, 0, -2]])  # used as they are: not scaled
    slide = invoke_json("scaled", "--example", "cat-slept")
    assert "no_scale" in note_keys(slide) and "no_scale_asked" not in note_keys(slide)
    assert "(the slide uses the plain dot product)" in all_text(slide)


def test_the_library_example_says_the_weights_differ_and_the_answers_do_not(invoke_json):
    """Issue 22 #5: "Each query gets its own weights and its own answer", both answers [5, 5]."""
    doc = invoke_json("scaled", "--example", "library")
    output = np.array(data(doc["output"]))
    np.testing.assert_allclose(output, [[5, 5], [5, 5]], atol=1e-12)
    weights = np.array(data(doc["steps"][1]["value"]))
    assert np.argmax(weights[0]) in (0, 1) and np.argmax(weights[1]) == 2  # another key dominates
    from attn_cli.lessonfiles.loader import load_bundled

    description = next(e for e in load_bundled("scaled").examples if e.name == "library")
    assert "its own answer" not in description.description
    assert "Both answers are still [5, 5]" in description.description


def test_the_scaling_step_states_its_assumption_and_a_peaked_row_is_a_note(invoke_json):
    """Issue 22 #13: "stays soft whatever the width" was said of scaled weights 0.993 / 0.998."""
    doc = invoke_json("scaled", "--q", "-1,-2;3,0;0,0", "--k", "-1,0;2,2", "--v", "1;2")
    scaled = next(step for step in doc["steps"] if step["key"] == "scaled")
    assert "stays soft whatever" not in scaled["explanation"]
    assert "independent, with mean 0 and variance 1" in scaled["explanation"]
    weights = np.array(data(next(s for s in doc["steps"] if s["key"] == "weights")["value"]))
    # Two keys: the larger weight is σ(score gap / √2); gaps 7 (q1) and 9 (q2).
    expected = [1 / (1 + math.exp(-7 / math.sqrt(2))), 1 / (1 + math.exp(-9 / math.sqrt(2)))]
    np.testing.assert_allclose(weights.max(axis=1)[:2], expected, rtol=1e-12)
    peaked = next(note for note in doc["notes"] if note["key"] == "still_peaked")
    assert peaked["values"]["row"] == "q2"
    assert peaked["values"]["top"] == pytest.approx(expected[1], rel=1e-12)
    soft = invoke_json("scaled")  # the slide's two tokens: 0.67 at most
    assert "still_peaked" not in note_keys(soft)


def test_a_masked_row_with_one_key_left_is_not_called_peaked(invoke_json):
    doc = invoke_json(
        "scaled", "--q", "0,0;0,0", "--k", "1,0;0,1", "--v", "1;2", "--valid-len", "1"
    )
    assert "still_peaked" not in note_keys(doc)


def test_sparsemax_keeps_the_order_of_the_scores_only_weakly(invoke_json):
    """Issue 22 #17: every score below τ ties at 0."""
    doc = invoke_json("scaled", "--example", "library-sparsemax")
    step = next(step for step in doc["steps"] if step["key"] == "weights")
    assert "the order of the scores is kept." not in step["explanation"]
    assert "only weakly" in step["explanation"]
    weights = np.array(data(step["value"]))
    np.testing.assert_array_equal(weights[1], [0, 0, 1])  # scores −1, −1, 2: two tie at 0


def test_one_key_gets_weight_one_and_says_so(invoke_json):
    """Issue 22 #19: "a probability distribution over the 1 keys", without saying that one key
    always gets weight 1."""
    doc = invoke_json("scaled", "--q", "3;-2", "--k", "5", "--v", "7")
    assert "the 1 keys" not in all_text(doc)
    assert "one_key" in note_keys(doc)
    np.testing.assert_array_equal(data(doc["steps"][2]["value"]), [[1.0], [1.0]])
    np.testing.assert_array_equal(data(doc["output"]), [[7.0], [7.0]])
    assert "one_key" not in note_keys(invoke_json("scaled"))


def test_an_example_with_its_options_changed_is_not_described_as_written(invoke):
    """Issue 42: `attn scaled --no-scale` printed the example's "scaled by √2: the slide's four
    steps" above three unscaled steps; it names the example and the option changed instead."""
    plain = " ".join(invoke("scaled").stdout.split())
    assert "scaled by √2: the slide's four steps" in plain
    changed = " ".join(invoke("scaled", "--no-scale").stdout.split())
    assert "scaled by √2" not in changed
    assert "The inputs of example two-tokens, run with --no-scale" in changed
    assert "Step 3 · Output" in changed and "Step 4" not in changed  # three steps, not four
    same = " ".join(invoke("scaled", "--scale", "--precision", "2").stdout.split())
    assert "scaled by √2: the slide's four steps" in same  # nothing of the example changed


def test_an_example_with_its_options_changed_is_described_in_each_doors_words(invoke):
    """The same sentence names the option as each door takes it (issue 60): the keyword from
    Python, the flag on the command line."""
    import attn_cli

    python = attn_cli.scaled(scale=False).example_description
    assert python == (
        "The inputs of example two-tokens, run with scale=False; the example's own description "
        "is of it as written (example=two-tokens)."
    )
    cli = " ".join(invoke("scaled", "--no-scale", "--dropout", "0.5").stdout.split())
    assert (
        "The inputs of example two-tokens, run with --no-scale --dropout 0.5; the example's own "
        "description is of it as written (--example two-tokens)." in cli
    )


def test_the_latex_of_masked_scores_does_not_say_s_plus_p_of_scaled_scores():
    """Issue 42: the masked scores are S / √d_k + P when scaled; their LaTeX said S + P."""
    import attn_cli

    latex = attn_cli.scaled(valid_len=[1]).to_latex()
    assert "S + P" not in latex
    assert "Masked scores S / $\\surd$d" in latex


# --- score transforms: soft-capping and QK-norm ---------------------------------------------


def test_softcap_and_qk_norm_against_the_models_pytorch(torch):
    """Gemma 2's soft-capping (scores / cap, tanh, * cap, as its attention writes it) and
    QK-norm with F.layer_norm / F.rms_norm, then F.scaled_dot_product_attention; float64."""
    import attn_cli as attn

    functional = torch.nn.functional
    rng = np.random.default_rng(44)
    for case in range(12):
        m, n, d, d_v = (int(x) for x in rng.integers(1, 7, size=4))
        q, k, v = (rng.standard_normal(shape) * 3 for shape in ((m, d), (n, d), (n, d_v)))
        norm = (None, "layernorm", "rmsnorm")[case % 3]
        cap = (None, 0.5, 20.0)[case // 3 % 3] if case % 4 else 1.0
        walk = attn.scaled(q, k, v, softcap=cap, qk_norm=norm)
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        if norm == "layernorm":
            tq, tk = (functional.layer_norm(t, (d,), eps=1e-5) for t in (tq, tk))
        elif norm == "rmsnorm":
            tq, tk = (functional.rms_norm(t, (d,), eps=1e-6) for t in (tq, tk))
        logits = tq @ tk.T / math.sqrt(d)
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        weights = torch.softmax(logits, dim=-1)
        np.testing.assert_allclose(walk.step("weights"), weights.numpy(), rtol=0, atol=1e-13)
        np.testing.assert_allclose(walk.output, (weights @ tv).numpy(), rtol=0, atol=1e-13)
        if cap is None:
            sdpa = functional.scaled_dot_product_attention(tq, tk, tv)
            np.testing.assert_allclose(walk.output, sdpa.numpy(), rtol=0, atol=1e-13)


def test_softcap_lowers_the_largest_weight(invoke_json):
    doc = invoke_json("scaled", "--example", "library", "--softcap", "1")
    steps = {step["key"]: step for step in doc["steps"]}
    scores = np.array(data(steps["scores"]["value"]), dtype=float)
    np.testing.assert_allclose(data(steps["capped"]["value"]), np.tanh(scores), atol=1e-15)
    note = next(note for note in doc["notes"] if note["key"].startswith("softcap"))
    assert note["key"] == "softcap_lowers"
    assert note["values"]["after"] < note["values"]["before"]
    assert note["values"]["after"] == np.max(data(steps["weights"]["value"]))


def test_qk_norm_bounds_the_scaled_scores(invoke_json):
    doc = invoke_json("scaled", "--n", "5", "--dk", "4", "--qk-norm", "layernorm", "--seed", "1")
    steps = {step["key"]: step for step in doc["steps"]}
    normed = np.array(data(steps["q_normed"]["value"]), dtype=float)
    np.testing.assert_allclose(normed.mean(axis=1), 0, atol=1e-15)
    np.testing.assert_array_less(np.linalg.norm(normed, axis=1), 2 + 1e-12)
    keys = {note["key"] for note in doc["notes"]}
    assert "qknorm_bound" in keys and keys & {"qknorm_lowers", "qknorm_raises"}
    assert np.max(np.abs(data(steps["scaled"]["value"]))) <= 2


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--softcap", "0"), "--softcap 0: the cap must be above 0"),
        (("--softcap", "-2"), "--softcap -2: the cap must be above 0"),
        (("--qk-norm", "batchnorm"), "--qk-norm"),
    ],
)
def test_score_transform_errors(invoke, args, fragment):
    assert_user_error(invoke("scaled", *args), fragment)


def test_a_peaked_row_of_drawn_inputs_does_not_deny_their_mean_and_variance(invoke_json):
    """--n 2 --dk 1 --seed 6 draws Q and K from N(0, 1); q2's scaled scores −4.54 and −0.25
    give it 0.9865. The note once said "the scaling assumes entries of mean 0 and variance 1,
    and these are not" of these very draws; now it says they are, and that one draw can still
    peak."""
    doc = invoke_json("scaled", "--n", "2", "--dk", "1", "--seed", "6")
    q, k = (np.array(data(doc["inputs"][name])) for name in ("Q", "K"))
    scores = q @ k.T  # d_k = 1: √d_k = 1
    top = 1 / (1 + math.exp(-(scores[1].max() - scores[1].min())))  # two keys: σ(gap)
    assert top == pytest.approx(0.9865, abs=5e-5)
    assert "still_peaked" not in note_keys(doc)
    (peaked,) = [note for note in doc["notes"] if note["key"] == "still_peaked_drawn"]
    assert peaked["values"] == {"row": "q2", "top": pytest.approx(top, rel=1e-12)}
    assert "and these are not" not in peaked["text"]
    assert "These entries were drawn with mean 0 and variance 1" in peaked["text"]


def test_a_sigmoid_weight_that_rounds_to_0_in_float32_is_explained_for_float32(invoke_json):
    """Scores −200 and 1 in float32: the weight of −200 is σ(−200)/(σ(−200) + σ(1)) ≈ e^−199.7,
    below float32's smallest number, so it is 0. The note once said "σ of a score below about
    −745 underflows to 0 in float64" (the score is −200, the type float32), the step "Every
    weight is positive", and the no-scale note "the softmax reads Q Kᵀ" of sigmoid weights."""
    doc = invoke_json(
        "scaled", "--q", "1", "--k", "-200;1", "--v", "1;2", "--normalise", "sigmoid",
        "--dtype", "float32", "--no-scale",
    )  # fmt: skip
    weights = next(step for step in doc["steps"] if step["key"] == "weights")
    assert unwrap(weights["value"]) == [[0.0, 1.0]]
    assert "Every weight is positive" not in weights["explanation"]
    (zeros,) = [note for note in weights["notes"] if note["key"] == "sigmoid_zeros"]
    assert zeros["values"] == {"zeros": 1, "total": 2}
    assert "below about −745 underflows to 0 in float64" not in zeros["text"]
    assert "e^−103 in float32) rounds to 0" in zeros["text"]
    (asked,) = [note for note in doc["notes"] if note["key"] == "no_scale_asked"]
    assert "the softmax reads" not in asked["text"]
    assert asked["text"].endswith("the weights are computed from Q Kᵀ as it is.")


def test_one_key_with_dropout_does_not_say_each_answer_is_the_value_row(invoke_json):
    """One key, V = [3], --dropout 0.5 --seed 2 keeps both weights: 1 / (1 − 0.5) = 2, so both
    answers are 6. The note said "each answer is that key's value row" beside them."""
    doc = invoke_json("scaled", "--q", "1;2", "--k", "1", "--v", "3", "--dropout", "0.5",
                      "--seed", "2")  # fmt: skip
    assert data(doc["output"]) == [[6.0], [6.0]]
    (note,) = [n for n in doc["notes"] if n["key"] == "one_key"]
    assert "each answer before dropout is that key's value row" in note["text"]
    plain = invoke_json("scaled", "--q", "1;2", "--k", "1", "--v", "3")
    assert data(plain["output"]) == [[3.0], [3.0]]
    (note,) = [n for n in plain["notes"] if n["key"] == "one_key"]
    assert "each answer is that key's value row" in note["text"]
