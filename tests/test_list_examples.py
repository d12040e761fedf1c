"""--list-examples in every --format: the lesson file's examples as JSON (a document of the JSON
contract, kind "examples"), Markdown, LaTeX, SVG and HTML, not the terminal's table whatever
the format (issue 25)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import jsonschema
import pytest
from markdown_it import MarkdownIt

from attn_cli import __version__
from attn_cli.cli.flags import COMMAND_LINE
from attn_cli.core.templates import spell_parameters
from attn_cli.lessonfiles.loader import bundled_lesson_names, load_bundled
from attn_cli.render.json_render import SCHEMA_VERSION, schema
from tests.waits import HANG_GUARD_SECONDS

VALIDATOR = jsonschema.Draft202012Validator(schema())


def expected_document(lesson: str) -> dict:
    """The examples document of a bundled lesson, built here from its lesson file (each
    parameter a description names spelt as the command line types it)."""
    data = load_bundled(lesson)
    return {
        "schema_version": SCHEMA_VERSION,
        "attn_version": __version__,
        "kind": "examples",
        "lesson": lesson,
        "title": data.title,
        "default_example": data.default_example,
        "examples": [
            {
                "name": e.name,
                "description": spell_parameters(e.description, COMMAND_LINE),
                "source": e.source,
            }
            for e in data.examples
        ],
    }


@pytest.mark.slow
def test_list_examples_format_json_parses_in_a_subprocess():
    """As a program reads it: stdout of the console entry point is one JSON document."""
    completed = subprocess.run(
        [sys.executable, "-m", "attn_cli", "scaled", "--list-examples", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(completed.stdout)
    assert doc == expected_document("scaled")
    assert doc["default_example"] == "two-tokens"
    assert [e["name"] for e in doc["examples"]][:3] == ["two-tokens", "cat-slept", "library"]
    assert not list(VALIDATOR.iter_errors(doc))


@pytest.mark.parametrize("lesson", bundled_lesson_names())
def test_every_lesson_lists_its_examples_as_json_that_validates(invoke, lesson):
    result = invoke(lesson, "--list-examples", "-f", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc == expected_document(lesson)
    errors = [error.message for error in VALIDATOR.iter_errors(doc)]
    assert errors == []


def test_an_own_lesson_file_lists_its_examples_verbatim_in_json(invoke, tmp_path):
    """Markup and quotes in a lecturer's file come back as the same text."""
    path = tmp_path / "own.toml"
    path.write_text(
        'lesson = "scaled"\ntitle = "Mine"\n[[examples]]\nname = "[/]e"\n'
        'description = "a \\"quoted\\" [bold]x[/]"\nsource = "my slide 3"\n'
        "[examples.inputs]\nQ = [[1, 0]]\nK = [[1, 0]]\nV = [[1]]\n",
        encoding="utf-8",
    )
    doc = json.loads(
        invoke("scaled", "--lesson", str(path), "--list-examples", "-f", "json").stdout
    )
    assert doc["title"] == "Mine" and doc["default_example"] is None
    assert doc["examples"] == [
        {"name": "[/]e", "description": 'a "quoted" [bold]x[/]', "source": "my slide 3"}
    ]
    assert not list(VALIDATOR.iter_errors(doc))


def test_list_examples_as_markdown_is_one_table_of_the_examples(invoke):
    result = invoke("causal", "--list-examples", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert "╭" not in result.stdout  # not the terminal's table
    data = load_bundled("causal")
    tokens = MarkdownIt("commonmark").enable("table").parse(result.stdout)
    assert [t.type for t in tokens].count("table_open") == 1
    heading = next(t for i, t in enumerate(tokens) if i and tokens[i - 1].type == "heading_open")
    assert heading.content == f"{data.title}: examples"
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 1 + len(data.examples)  # the heading row, then one per example
    first_cells = [
        tokens[i + 2].content
        for i, t in enumerate(tokens)
        if t.type == "tr_open" and tokens[i + 1].type == "td_open"
    ]
    assert first_cells == [
        e.name + (" (default)" if e.name == data.default_example else "") for e in data.examples
    ]


def test_list_examples_as_latex_is_a_description_list(invoke, tmp_path):
    result = invoke("scaled", "--list-examples", "--format", "latex")
    assert result.exit_code == 0, result.output
    text = result.stdout
    data = load_bundled("scaled")
    assert text.startswith("% attn LaTeX: compile with")
    assert "\\begin{description}" in text and text.rstrip().endswith("\\end{description}")
    assert text.count("\\item[") == len(data.examples)
    assert "\\item[two-tokens (default)]" in text and "\\item[cat-slept]" in text
    if shutil.which("pdflatex") is None:
        return  # compiled where pdflatex is installed (.ci/run installs it)
    preamble = text.splitlines()[0].removeprefix("% attn LaTeX: compile with ")
    (tmp_path / "doc.tex").write_text(
        f"{preamble}\n\\begin{{document}}\n{text}\\end{{document}}\n", encoding="utf-8"
    )
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=tmp_path,
        capture_output=True,
        timeout=HANG_GUARD_SECONDS,
    )
    assert run.returncode == 0 and (tmp_path / "doc.pdf").exists(), run.stdout[-2000:]


@pytest.mark.parametrize(("fmt", "start"), [("svg", "<svg"), ("html", "<!DOCTYPE html>")])
def test_list_examples_as_svg_and_html_keep_the_table(invoke, fmt, start):
    result = invoke("posenc", "--list-examples", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert result.stdout.lstrip().startswith(start)
    for example in load_bundled("posenc").examples:
        assert example.name in result.stdout


def test_list_examples_json_to_a_file(invoke, tmp_path):
    path = tmp_path / "examples.json"
    result = invoke("bahdanau", "--list-examples", "-f", "json", "-o", str(path))
    assert result.exit_code == 0 and result.stdout == ""
    assert json.loads(path.read_text(encoding="utf-8")) == expected_document("bahdanau")
