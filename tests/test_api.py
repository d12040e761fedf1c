"""attn as a Python library: the lesson functions, the walkthrough object, errors, light import."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.cli import flags
from attn_cli.course import lesson_names
from tests.conftest import as_typed, render_plain

LESSONS = lesson_names()

Q = [[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]]
K = [[1.0, 1.0, 0.0], [0.0, 2.0, -1.0], [3.0, 0.0, 0.5], [-1.0, 0.5, 1.0]]
V = [[1.0, 2.0], [0.0, -1.0], [4.0, 0.5], [2.0, 2.0]]
# Options that only choose how the command line prints, not what is computed.
PRINTING_OPTIONS = {
    "fmt",
    "precision",
    "full",
    "latex_fragment",
    "list_examples",
    "quiz",
    "answers",
    "output",
    "plot",
    "kernel",
    "code",
    "pager",
    "pause",
    "brief",  # Walkthrough.brief() in Python
    "show_weights",  # Walkthrough.brief(weights=True)
    "compare",  # core.compare.compared(first, second, flags)
}


def reference_attention(q, k, v) -> tuple[np.ndarray, np.ndarray]:
    """softmax(Q Kᵀ / √d_k) V in float64, written out independently of attn."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    scores = q @ k.T / np.sqrt(q.shape[1])
    exp = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = exp / exp.sum(axis=1, keepdims=True)
    return weights, weights @ v


def test_scaled_from_arrays_matches_the_formula():
    weights, output = reference_attention(Q, K, V)
    walk = attn.scaled(np.array(Q), np.array(K), np.array(V))
    np.testing.assert_allclose(walk.step("weights"), weights, rtol=0, atol=1e-15)
    np.testing.assert_allclose(walk.output, output, rtol=0, atol=1e-14)
    np.testing.assert_allclose(walk.step("scores"), np.array(Q) @ np.array(K).T, atol=0)
    assert [step.key for step in walk.steps] == ["scores", "scaled", "weights", "output"]
    assert walk.find("weights").title and walk.find("weights").explanation
    assert walk.output.dtype == np.float64


def test_every_input_form_gives_the_same_walkthrough(torch_or_none):
    expected = attn.scaled(np.array(Q), np.array(K), np.array(V)).output
    as_text = ";".join(",".join(str(x) for x in row) for row in Q)
    forms = [
        (Q, K, V),  # nested lists
        (tuple(map(tuple, Q)), K, V),  # tuples
        (np.array(Q, dtype=np.float32), np.array(K, dtype=np.int64) * 0 + np.array(K), V),
        (as_text, json.dumps(K), V),  # the command line's text and JSON
    ]
    if torch_or_none is not None:
        torch = torch_or_none
        # A tensor that needs grad, and a bfloat16 one: both widen to float64 exactly.
        forms.append((torch.tensor(Q, requires_grad=True), torch.tensor(K), torch.tensor(V)))
    for q, k, v in forms:
        np.testing.assert_allclose(attn.scaled(q, k, v).output, expected, rtol=0, atol=1e-14)


def test_bfloat16_tensors_are_widened_exactly(torch):
    q = torch.tensor([[1.5, -0.25]], dtype=torch.bfloat16)
    walk = attn.scaled(q, q, q)
    np.testing.assert_array_equal(walk.inputs[0].value, [[1.5, -0.25]])


def test_file_inputs_work_as_on_the_command_line(tmp_path):
    path = tmp_path / "k.npy"
    np.save(path, np.array(K))
    walk = attn.scaled(Q, f"@{path}", V)
    np.testing.assert_allclose(walk.output, reference_attention(Q, K, V)[1], atol=1e-14)


def test_keywords_are_the_command_line_options(invoke):
    """Each function takes exactly its command's options, less the ones that only print (and
    flash's --kernel, which prints the kernel), plus the settings only lesson files set."""
    from attn_cli.cli.app import command_function
    from attn_cli.course import card

    for lesson in LESSONS:
        options = card(lesson).options
        own = {option.name for option in options}  # a lesson's own option of a shared name
        printing = PRINTING_OPTIONS - own
        command = set(inspect.signature(command_function(lesson)).parameters) - printing
        command -= {option.name for option in options if not option.lesson}
        command |= {option.name for option in options if not option.command_line}
        function = set(inspect.signature(getattr(attn, lesson)).parameters)
        assert function == command, lesson


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_default_example_equals_the_command_lines_json(invoke_json, lesson):
    """The same run, the same document, but for the parameters its words name, each spelt by
    its door. Run with the command line's door, the library's document is the command's
    exactly."""
    walk = getattr(attn, lesson)()
    typed = as_typed(lesson)
    assert typed.to_dict() == invoke_json(lesson)
    assert _numbers_and_keys(walk.to_dict()) == _numbers_and_keys(typed.to_dict())


def _numbers_and_keys(document: Any) -> Any:
    """A document without its words (every string but a key's or a name's)."""
    if isinstance(document, dict):
        return {key: _numbers_and_keys(value) for key, value in document.items()}
    if isinstance(document, list):
        return [_numbers_and_keys(value) for value in document]
    return "words" if isinstance(document, str) and " " in document else document


@pytest.mark.parametrize("lesson", LESSONS)
def test_text_formats_equal_the_command_lines(invoke, lesson):
    """Each text format of the library's run is the command's, run with the command line's door
    (the words naming a parameter are each door's own; the Python door's are checked in
    test_lesson_text_params)."""
    walk = as_typed(lesson)
    texts = (("markdown", walk.to_markdown(), ()), ("latex", walk.to_latex(document=True), ()))
    texts += (("latex", walk.to_latex(), ("--latex-fragment",)),)
    for fmt, text, more in texts:
        result = invoke(lesson, "--format", fmt, *more)
        assert result.exit_code == 0, result.output
        assert result.stdout.rstrip("\n") == text.rstrip("\n")
    precise = invoke(lesson, "--format", "markdown", "--precision", "2")
    assert precise.stdout.rstrip("\n") == walk.to_markdown(precision=2).rstrip("\n")


def test_rich_display_is_the_terminals(invoke):
    walk = attn.scaled(example="cat-slept")
    printed = invoke("scaled", "--example", "cat-slept").stdout
    shown = render_plain(walk, width=80)
    assert [line.rstrip() for line in printed.splitlines()] == shown.splitlines()


def test_notebook_html_has_the_values_and_the_shading():
    walk = attn.scaled(Q, K, V)
    html = walk._repr_html_()
    weights = walk.step("weights")
    assert html.startswith("<pre") and html.rstrip().endswith("</pre>")
    for value in (weights[0, 0], weights[1, 3], walk.output[1, 1]):
        assert f"{value:.4f}" in html
    assert "background-color" in html  # the weights' heatmap shading
    assert "Weights" in html


def test_options_sizes_labels_and_seed():
    walk = attn.causal(n=3, dk=4, seed=7, tokens=["the", "cat", "sat"])
    weights = walk.step("weights")
    assert np.all(np.triu(weights, k=1) == 0)  # no token sees a later one
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-15)
    assert walk.find("weights").row_labels == ("the", "cat", "sat")
    again = attn.causal(n=3, dk=4, seed=7, tokens="the,cat,sat")
    np.testing.assert_array_equal(again.output, walk.output)
    heads = attn.multihead(n=4, d_model=8, heads=4, seed=1)
    assert [s.key for s in heads.steps].count("head4.weights") == 1
    unscaled = attn.scaled(Q, K, V, scale=False)
    assert "scaled" not in [step.key for step in unscaled.steps]
    posenc = attn.posenc(positions=5, d_model=6)
    pe = posenc.step("pe")
    positions, dims = np.arange(5)[:, None], np.arange(0, 6, 2)[None, :]
    np.testing.assert_allclose(pe[:, 0::2], np.sin(positions / 10000 ** (dims / 6)), atol=1e-15)
    np.testing.assert_allclose(pe[:, 1::2], np.cos(positions / 10000 ** (dims / 6)), atol=1e-15)


def test_a_lecture_example_by_name():
    walk = attn.scaled(example="cat-slept")
    assert walk.example == "cat-slept"
    inputs = {item.name: item.value for item in walk.inputs}
    weights, output = reference_attention(inputs["Q"], inputs["K"], inputs["V"])
    scaled = walk.meta["options"]["scale"]
    if not scaled:  # the example as the slide has it: no √d_k
        q, k = inputs["Q"], inputs["K"]
        exp = np.exp(q @ k.T - (q @ k.T).max(axis=1, keepdims=True))
        weights = exp / exp.sum(axis=1, keepdims=True)
        output = weights @ inputs["V"]
    np.testing.assert_allclose(walk.step("weights"), weights, atol=1e-15)
    np.testing.assert_allclose(walk.output, output, atol=1e-14)


@pytest.mark.parametrize(
    ("call", "cli"),
    [
        (
            lambda: attn.scaled([[1, 0]], [[1, 0, 0]], [[1]]),
            ("--q", "1,0", "--k", "1,0,0", "--v", "1"),
        ),
        (lambda: attn.scaled(example="nope"), ("--example", "nope")),
        (lambda: attn.scaled(n=4, q=[[1]]), ("--n", "4", "--q", "1")),
        (lambda: attn.scaled(dtype="bfloat16"), ("--dtype", "bfloat16")),
        (
            lambda: attn.scaled([[1, float("nan")]], [[1, 0]], [[1]]),
            ("--q", "1,nan", "--k", "1,0", "--v", "1"),
        ),
    ],
)
def test_user_errors_raise_with_the_command_lines_message(invoke, call, cli):
    with pytest.raises(attn.UserError) as raised:
        call()
    result = invoke("scaled", *cli)
    assert result.exit_code == 2
    # One message, each door spelling its parameters: the flags here, the keywords in Python.
    assert result.stderr.strip() == f"attn: error: {flags.message(raised.value)}"
    assert "\n" not in str(raised.value)


def test_python_only_mistakes_are_clear():
    with pytest.raises(attn.UserError, match="row 2 has 1 entries"):
        attn.scaled([[1, 2], [3]], K, V)
    with pytest.raises(attn.UserError, match="is not a matrix"):
        attn.scaled({"a": 1}, K, V)
    with pytest.raises(attn.UserError, match="complex128 values"):
        attn.scaled(np.ones((2, 3), dtype=complex), K, V)
    with pytest.raises(attn.UserError, match="one non-empty name per row"):
        attn.causal(n=2, tokens=[])
    with pytest.raises(TypeError, match=r"attn_cli.scaled\(\).*nope"):
        attn.scaled(nope=1)
    with pytest.raises(KeyError, match="its steps are: scores, scaled, weights, output"):
        attn.scaled(Q, K, V).step("weight")


def test_repr_names_the_lesson_and_steps():
    assert repr(attn.scaled(Q, K, V)) == (
        "<Walkthrough scaled: 4 steps (scores, scaled, weights, output)>"
    )


@pytest.mark.parametrize(
    ("lesson", "args"), [("scaled", ["--example", "cat-slept"]), ("multihead", []), ("causal", [])]
)
def test_print_and_view_show_the_terminals_tables(invoke, capsys, monkeypatch, lesson, args):
    """Issue 53: at a REPL, print(w) showed only its repr and w.view() raised a TypeError.
    Both now show what the command prints: the same tables, at the terminal's width."""
    monkeypatch.setenv("COLUMNS", "100")
    command = invoke(lesson, *args)
    assert command.exit_code == 0, command.output
    example = {"example": args[1]} if args else {}
    w = getattr(attn, lesson)(**example)
    assert str(w) == command.stdout
    assert "Step 1 ·" in str(w) and "\x1b" not in str(w)  # the tables, plain (no colour)
    capsys.readouterr()
    assert w.view() is None
    assert capsys.readouterr().out == command.stdout
    monkeypatch.setenv("COLUMNS", "80")
    narrow = str(w)
    assert max(map(len, narrow.splitlines())) <= 80 < max(map(len, command.stdout.splitlines()))
    assert w.view(precision=2) is None
    assert capsys.readouterr().out == invoke(lesson, *args, "--precision", "2").stdout


@pytest.mark.slow
def test_print_and_view_in_a_plain_python_process():
    """Not Jupyter, not the test's captured streams: a python process, as a student runs it."""
    code = "import attn_cli as attn\nw = attn.scaled()\nw.view()\nprint(w)\n"
    env = {**os.environ, "COLUMNS": "80"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    printed = subprocess.run(
        [sys.executable, "-m", "attn_cli", "scaled"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    ).stdout
    assert result.stdout == printed + printed + "\n"  # view(), then print(w) and its newline


@pytest.mark.slow
def test_importing_and_using_the_library_stays_light():
    code = textwrap.dedent(
        """
        import sys
        import attn_cli as attn
        assert not any(m.startswith("attn_cli.walkthroughs") for m in sys.modules), "eager"
        w = attn.scaled([[1, 0], [0, 1]], [[1, 0], [1, 1]], [[1, 2], [3, 4]])
        w._repr_html_(), w.to_dict(), w.to_markdown(), w.to_latex()
        heavy = [m for m in ("torch", "matplotlib", "typer") if m in sys.modules]
        print(",".join(heavy) or "light")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "light"


@pytest.fixture
def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch
