"""A lecturer's lesson file is read strictly: a mistyped key anywhere is an error with a
did-you-mean, and a partial [steps.NAME] keeps the bundled fields it does not give."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from attn_cli.cli.options import complete_example
from attn_cli.course import get_lesson, lesson_names
from attn_cli.lessonfiles.grammar import LABEL_NAMES
from attn_cli.lessonfiles.loader import bundled_lessons_dir, load_lesson_file
from tests.conftest import assert_user_error

ONE_EXAMPLE = """\
lesson = "scaled"
title = "Mine"

[steps.scores]
title = "Our scores"
explanation = "Query {m} rows times key {n} rows."

[[examples]]
name = "mine"
description = "Two keys, one query."
options = { scale = false }
labels = { queries = ["q"], keys = ["a", "b"] }
[examples.inputs]
Q = [[1, 2]]
K = [[1, 0], [0, 1]]
V = "3, 4; 5, 6"
[examples.printed]
weights = "0.27, 0.73"
"""


def write(tmp_path: Path, text: str, name: str = "mine.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_unchanged_file_is_fine(invoke, tmp_path):
    result = invoke("check", str(write(tmp_path, ONE_EXAMPLE)))
    assert result.exit_code == 0, result.output


# (what to change, what the message must say: the key, where it is, its path, the suggestion)
TYPOS = [
    (('title = "Mine"', 'titel = "Mine"'), ['"titel" at the top level', 'did you mean "title"?']),
    (
        ('lesson = "scaled"', 'lesson = "scaled"\ndefault_exmaple = "mine"'),
        ['"default_exmaple" at the top level', 'did you mean "default_example"?'],
    ),
    (
        ('title = "Our scores"', 'titel = "Our scores"'),
        ['"titel" in [steps.scores] (steps.scores.titel)', 'did you mean "title"?'],
    ),
    (
        ("explanation = ", "descripton = "),
        ['"descripton" in [steps.scores] (steps.scores.descripton)', '"explanation"?'],
    ),
    (
        ("explanation = ", "latx = "),
        ['"latx" in [steps.scores]', 'did you mean "latex"?', "title, explanation, latex"],
    ),
    (
        ("description = ", "descripton = "),
        ["\"descripton\" in example 'mine' (examples[0].descripton)", '"description"?'],
    ),
    (
        ("[examples.printed]", "[examples.printd]"),
        ["\"printd\" in example 'mine' (examples[0].printd)", 'did you mean "printed"?'],
    ),
    (
        ("[examples.inputs]", "[examples.input]"),
        ["\"input\" in example 'mine'", 'did you mean "inputs"?'],
    ),
    (("options = {", "optons = {"), ["\"optons\" in example 'mine'", '"options"?']),
    (
        ('queries = ["q"]', 'querys = ["q"]'),
        [
            "\"querys\" in the labels of example 'mine' (examples[0].labels.querys)",
            'did you mean "queries"?',
            "queries, keys, states, tokens",
        ],
    ),
    (("name = ", "nmae = "), ['"nmae" in example 1 (examples[0].nmae)', '"name"?']),
]


@pytest.mark.parametrize(("change", "fragments"), TYPOS, ids=[t[0][1][:14] for t in TYPOS])
def test_a_mistyped_key_anywhere_is_an_error_with_a_did_you_mean(
    invoke, tmp_path, change, fragments
):
    path = write(tmp_path, ONE_EXAMPLE.replace(*change, 1))
    assert_user_error(invoke("check", str(path)), f"{path}: unknown key", *fragments)
    assert_user_error(invoke("scaled", "--lesson", str(path)), f"{path}: unknown key")


def test_the_issues_file_with_three_typos_is_not_all_agree(invoke, tmp_path):
    """The report: titel, descripton and printd gave 'All 0 printed values agree', exit 0."""
    text = (
        ONE_EXAMPLE.replace("title = ", "titel = ", 1)
        .replace("description = ", "descripton = ")
        .replace("[examples.printed]", "[examples.printd]")
    )
    result = invoke("check", str(write(tmp_path, text)))
    assert_user_error(result, '"titel"', 'did you mean "title"?')
    assert "agree" not in result.output


def test_a_key_without_a_near_match_lists_the_allowed_ones(invoke, tmp_path):
    path = write(tmp_path, ONE_EXAMPLE.replace('title = "Mine"', 'colour = "red"'))
    result = invoke("check", str(path))
    assert_user_error(
        result,
        '"colour" at the top level; the keys allowed there are: lesson, title, intro, '
        "default_example, steps, notes, headings, examples.",
    )
    assert "did you mean" not in result.stderr


def test_an_unknown_key_is_printed_without_its_control_characters(invoke, tmp_path):
    path = write(tmp_path, ONE_EXAMPLE.replace('title = "Mine"', '"\\u001b[2Jtitle" = "x"'))
    result = invoke("check", str(path))
    assert_user_error(result, 'unknown key "\\x1b[2Jtitle" at the top level')
    assert "\x1b" not in result.stderr


def test_free_names_are_left_to_the_lesson_checks(invoke, tmp_path):
    """Step keys, input names, option names and printed keys are the lesson's: a wrong one is
    refused by the lesson, naming what it has (not by the format)."""
    path = write(tmp_path, ONE_EXAMPLE.replace("[steps.scores]", "[steps.scroes]"))
    assert_user_error(invoke("check", str(path)), "no step 'scroes'", "scores, scaled")


def test_a_label_the_lesson_does_not_read_is_an_error(invoke, tmp_path):
    """labels = { tokens = [...] } in a scaled file was ignored: scaled reads queries and keys."""
    path = write(tmp_path, ONE_EXAMPLE.replace('keys = ["a", "b"]', 'tokens = ["a", "b"]'))
    assert_user_error(
        invoke("check", str(path)),
        "example 'mine', labels.tokens: lesson 'scaled' reads no labels 'tokens'",
        "queries, keys",
    )


def test_the_formats_label_names_are_every_lessons_labels():
    read = {name for lesson in lesson_names() for name in get_lesson(lesson).labels}
    assert read == set(LABEL_NAMES)


@pytest.mark.parametrize("path", sorted(bundled_lessons_dir().glob("*.toml")), ids=lambda p: p.stem)
def test_every_bundled_lesson_file_loads_strictly(path):
    assert load_lesson_file(path).examples


def test_bundled_sources_name_the_lecture_not_a_seed_number(invoke):
    """--list-examples showed 'seed 000', the curriculum's file name, not the lecture."""
    for path in sorted(bundled_lessons_dir().glob("*.toml")):
        for example in load_lesson_file(path).examples:
            assert example.source, (path.name, example.name)
            assert not re.search(r"\bseeds? \d", example.source), (path.name, example.source)
    listed = invoke("scaled", "--list-examples")
    assert listed.exit_code == 0, listed.output
    rows = [line.split("│") for line in listed.stdout.splitlines() if line.count("│") == 4]
    sources = " ".join(" ".join(row[3] for row in rows).split())  # the source column, read down
    assert sources.startswith(
        "source The Attention Mechanism (ES 667, lecture 12), slide 'Scaled dot-product · worked "
        "numeric (4 steps)' The Attention Mechanism"
    ), sources
    assert "seed" not in sources


# --- a partial [steps.NAME] keeps the bundled fields it leaves out ---------------------------

PARTIAL = """\
lesson = "scaled"
[steps.weights]
title = "Shares"
[steps.scaled]
explanation = "Only the explanation is mine: divided by {sqrt_dk:.2f}."
"""


def steps_of(invoke, path: Path, *args: str) -> dict[str, dict]:
    result = invoke("scaled", "--lesson", str(path), "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return {step["key"]: step for step in json.loads(result.stdout)["steps"]}


def test_a_partial_step_keeps_the_bundled_fields_in_json(invoke, tmp_path):
    bundled = steps_of(invoke, write(tmp_path, 'lesson = "scaled"\n', "plain.toml"))
    steps = steps_of(invoke, write(tmp_path, PARTIAL))
    # Title only: the bundled explanation stays.
    assert steps["weights"]["title"] == "Shares"
    assert steps["weights"]["explanation"] == bundled["weights"]["explanation"]
    assert steps["weights"]["explanation"].startswith("Each row becomes a probability")
    # Explanation only: the bundled title stays, never the raw key.
    assert steps["scaled"]["title"] == bundled["scaled"]["title"] == "Scaled scores  S / √d_k"
    assert steps["scaled"]["explanation"] == "Only the explanation is mine: divided by 1.41."


def test_a_partial_step_keeps_the_bundled_title_in_rich_and_markdown(invoke, tmp_path):
    path = write(tmp_path, PARTIAL)
    rich = invoke("scaled", "--lesson", str(path))
    assert rich.exit_code == 0, rich.output
    assert "Step 2 · Scaled scores  S / √d_k" in rich.stdout
    assert "Step 2 · scaled" not in rich.stdout
    assert "Each row becomes a probability" in " ".join(rich.stdout.split())
    markdown = invoke("scaled", "--lesson", str(path), "--format", "markdown").stdout
    assert "### 2. Scaled scores S / √d_k (2 × 2)" in markdown
    assert "### 2. scaled" not in markdown
    assert "### 3. Shares (2 × 2)" in markdown
    assert "Only the explanation is mine: divided by 1.41." in markdown


def test_a_partial_step_keeps_the_bundled_title_and_latex_in_latex(invoke, tmp_path):
    latex = invoke("scaled", "--lesson", str(write(tmp_path, PARTIAL)), "--format", "latex")
    assert latex.exit_code == 0, latex.output
    assert "2. scaled" not in latex.stdout  # neither as a heading nor as a % comment
    assert "\\subsection*{2. Scaled scores" in latex.stdout
    assert "\\frac{S}{\\sqrt{d_k}}" in latex.stdout  # the bundled latex of [steps.scaled]
    assert "\\subsection*{3. Shares" in latex.stdout


def test_a_files_own_latex_replaces_only_the_latex(invoke, tmp_path):
    path = write(tmp_path, 'lesson = "scaled"\n[steps.output]\nlatex = "O = AV"\n')
    steps = steps_of(invoke, path)
    assert steps["output"]["title"] == "Output  A V"
    latex = invoke("scaled", "--lesson", str(path), "--format", "latex").stdout
    assert "O = AV" in latex
    assert "\\subsection*{4. Output" in latex


def test_an_unknown_placeholder_is_reported_by_check(invoke, tmp_path):
    path = write(tmp_path, ONE_EXAMPLE.replace("key {n} rows", "key {nn} rows"))
    result = invoke("check", str(path))
    assert_user_error(result, "[steps.scores] explanation", "unknown placeholder {nn}", "{n}")


# --- TAB completion of --example after --lesson FILE ------------------------------------------

TWO_EXAMPLES = (
    ONE_EXAMPLE
    + '\n[[examples]]\nname = "second"\ndescription = "Another."\n'
    + ("[examples.inputs]\nQ = [[0, 1]]\nK = [[1, 0], [0, 1]]\nV = [[1, 1], [2, 2]]\n")
)

# attn scaled --normalise's worked examples, after the three softmax ones.
NORMALISE_EXAMPLES = [
    "library-sparsemax",
    "cat-slept-sparsemax",
    "library-entmax15",
    "cat-slept-entmax15",
    "library-sigmoid",
    "two-tokens-hardmax",
]


def complete(lesson: Path | None, incomplete: str = "") -> list[str]:
    context = SimpleNamespace(params={"lesson": lesson}, info_name="scaled")
    return [name for name, _ in complete_example(context, incomplete)]


def test_example_completion_offers_the_lesson_files_examples(tmp_path):
    path = write(tmp_path, TWO_EXAMPLES)
    assert complete(path) == ["mine", "second"]
    assert complete(path, "se") == ["second"]
    assert complete(None) == [
        "two-tokens",
        "cat-slept",
        "library",
        *NORMALISE_EXAMPLES,
    ]  # no --lesson: the bundled
    # A file without examples runs the bundled ones, so it offers those.
    assert complete(write(tmp_path, PARTIAL, "partial.toml"), "c") == [
        "cat-slept",
        "cat-slept-sparsemax",
        "cat-slept-entmax15",
    ]
    # A file that cannot be read offers nothing rather than names that would fail.
    assert complete(tmp_path / "gone.toml") == []
    assert complete(write(tmp_path, "lesson = [", "broken.toml")) == []


@pytest.mark.slow
def test_example_completion_through_the_shell_protocol(tmp_path):
    """What bash asks for: _ATTN_COMPLETE=complete_bash with COMP_WORDS and COMP_CWORD."""
    write(tmp_path, TWO_EXAMPLES)

    def offered(words: str, cword: int) -> list[str]:
        env = {**os.environ, "_ATTN_COMPLETE": "complete_bash", "COMP_WORDS": words}
        env["COMP_CWORD"] = str(cword)
        completed = subprocess.run(
            [sys.executable, "-m", "attn_cli"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        return completed.stdout.split()

    assert offered("attn scaled --lesson mine.toml --example ", 5) == ["mine", "second"]
    assert offered("attn scaled --lesson mine.toml -e s", 5) == ["second"]
    assert offered("attn scaled --example ", 3) == [
        "two-tokens",
        "cat-slept",
        "library",
        *NORMALISE_EXAMPLES,
    ]
