"""--lesson FILE.toml: a lecturer's own examples and explanations; bad files are user errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attn_cli import course
from attn_cli.core.errors import UserError
from attn_cli.lessonfiles.loader import own_lesson_file
from tests.conftest import assert_user_error, data

DOC_EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "four-dims.toml"

GOOD = """\
lesson = "scaled"
title = "My course: attention"
intro = "Our own words before the steps."

[steps.scores]
title = "Our scores"
explanation = "Query {m} rows times key {n} rows."

[[examples]]
name = "mine"
description = "Two keys, one query."
options = { scale = false }
[examples.inputs]
Q = [[1, 2]]
K = [[1, 0], [0, 1]]
V = "3, 4; 5, 6"
[examples.printed]
weights = "0.27, 0.73"

[[examples]]
name = "second"
[examples.inputs]
Q = [[0, 0]]
K = [[1, 0], [0, 1]]
V = [[1, 1], [2, 2]]
"""


def write(tmp_path: Path, text: str, name: str = "mine.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_lecturers_example_and_explanations_are_used(invoke, tmp_path):
    path = write(tmp_path, GOOD)
    doc = json.loads(invoke("scaled", "--lesson", str(path), "--format", "json").stdout)
    assert doc["example"] == "mine"
    assert doc["inputs"]["V"] == {"shape": [2, 2], "data": [[3, 4], [5, 6]]}
    steps = {step["key"]: step for step in doc["steps"]}
    assert list(steps) == ["scores", "weights", "output"]  # the file's scale = false
    assert steps["scores"]["title"] == "Our scores"
    assert steps["scores"]["explanation"] == "Query 1 rows times key 2 rows."
    # Steps the file does not explain keep the bundled text.
    assert steps["weights"]["title"].startswith("Weights")
    # Independently: softmax([1, 2]) = [1, e] / (1 + e).
    expected = np.array([1.0, np.e]) / (1.0 + np.e)
    np.testing.assert_allclose(data(steps["weights"]["value"]), [expected], rtol=0, atol=1e-15)
    assert "notes" not in steps["weights"]  # the file's slide is right

    rich = invoke("scaled", "--lesson", str(path), "--example", "second")
    assert rich.exit_code == 0, rich.output
    assert "My course: attention · example second" in rich.stdout
    assert "Our own words before the steps." in rich.stdout


def test_a_wrong_printed_value_in_ones_own_file_is_noted(invoke, tmp_path):
    path = write(tmp_path, GOOD.replace('"0.27, 0.73"', '"0.25, 0.75"'))
    doc = json.loads(invoke("scaled", "--lesson", str(path), "--format", "json").stdout)
    notes = {step["key"]: step.get("notes", []) for step in doc["steps"]}
    exact = 1.0 / (1.0 + np.e)
    assert notes["weights"][0]["text"] == (
        f"Your file has 0.25 for (q1, k1), wrong: the exact value is {exact:.4f}."
    )


def test_a_file_with_only_explanations_runs_the_bundled_examples(invoke, tmp_path):
    path = write(
        tmp_path, 'lesson = "scaled"\n[steps.output]\ntitle = "The answer"\nexplanation = "Done."\n'
    )
    doc = json.loads(invoke("scaled", "--lesson", str(path), "-e", "library", "-f", "json").stdout)
    assert doc["example"] == "library"
    assert doc["steps"][-1]["title"] == "The answer"
    listed = invoke("scaled", "--lesson", str(path), "--list-examples")
    assert "two-tokens" in listed.stdout


def test_the_documented_example_runs(invoke):
    result = invoke("scaled", "--lesson", str(DOC_EXAMPLE), "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["example"] == "four-dims"
    assert doc["steps"][0]["title"] == "Match each key  S = q Kᵀ"


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("lesson = [", ["not valid TOML", "fix the syntax"]),
        ('title = "no lesson"', ['field "lesson" is missing', 'lesson = "scaled"']),
        ('lesson = "nosuch"', ['lesson = "nosuch" is not a lesson attn knows', "scaled"]),
        (
            GOOD.replace('K = [[1, 0], [0, 1]]\nV = "3', 'V = "3'),
            ["example 'mine'", "input 'K' (keys) is missing", "[examples.inputs]"],
        ),
        (
            GOOD.replace('K = [[1, 0], [0, 1]]\nV = "3', 'K = [[1, 0, 0]]\nV = "3'),
            ["example 'mine', inputs", "Q has 2 columns but K has 3"],
        ),
        (
            GOOD.replace("Q = [[1, 2]]", "Q = [[[[1, 2]]]]"),
            ["example 'mine', inputs.Q", "4 dimensions", "a batch of matrices"],
        ),
        (
            GOOD.replace("Q = [[1, 2]]", "Q = [[1, 2], [3]]"),
            ["example 'mine', inputs.Q", "list of equal-length rows"],
        ),
        (
            GOOD.replace("Q = [[1, 2]]", "Q = [[1, 2]]\nX = [[1]]"),
            ["example 'mine', inputs.X", "no input 'X'", "Q, K, V"],
        ),
        (
            GOOD.replace('weights = "0.27, 0.73"', "weights = [0.27, 0.73]"),
            [
                "example 'mine', printed.weights: found [0.27, 0.73] (a list)",
                "printed values are written as text",
            ],
        ),
        (
            GOOD.replace('weights = "0.27, 0.73"', 'weights = "0.27, 0.73, 0.1"'),
            ["example 'mine', printed.weights", "1 × 3", "1 × 2"],
        ),
        (
            GOOD.replace('weights = "0.27, 0.73"', 'scaled = "1, 2"'),
            ["example 'mine', printed.scaled", "no step 'scaled'"],
        ),
        (
            GOOD.replace("scale = false", "temperature = 2"),
            ["example 'mine', options.temperature", "no option 'temperature'", "scale"],
        ),
        (
            GOOD.replace("scale = false", 'scale = "no"'),
            ["example 'mine', options.scale", "true or false"],
        ),
        (
            GOOD.replace('title = "Our scores"', "title = 1"),
            ["[steps.scores] title: found 1 (a whole number); expected text in quotes"],
        ),
        (
            GOOD.replace('title = "Our scores"', 'title = "Our scores"\nlatex = 3'),
            ["[steps.scores] latex: found 3 (a whole number); expected text in quotes"],
        ),
        (
            GOOD.replace('explanation = "Query {m} rows times key {n} rows."', "explanation = []"),
            ["[steps.scores] explanation: found [] (a list); expected text in quotes"],
        ),
        (
            GOOD.replace("[steps.scores]", "[steps.score]"),
            [
                "[steps.score]",
                "no step 'score'",
                "scores, scaled, padding, padding_rows, masked, q_normed_layernorm, "
                "q_normed_rmsnorm, k_normed_layernorm, k_normed_rmsnorm, capped, weights, "
                "weights_sparsemax, weights_entmax15, weights_sigmoid, weights_hardmax, output",
            ],
        ),
        (
            GOOD.replace('name = "second"', 'name = "mine"'),
            ["example names must be unique", "'mine'"],
        ),
        (
            'lesson = "scaled"\ndefault_example = "nope"\n' + GOOD.split("\n", 1)[1],
            ["default_example 'nope' is not one of the examples"],
        ),
        (
            GOOD.replace(
                '[examples.inputs]\nQ = [[1, 2]]\nK = [[1, 0], [0, 1]]\nV = "3, 4; 5, 6"',
                "inputs = 3",
            ),
            ["example 'mine', inputs: found 3 (a whole number); expected a table"],
        ),
    ],
)
def test_a_bad_lesson_file_is_a_user_error_naming_file_field_and_fix(
    invoke, tmp_path, text, fragments
):
    path = write(tmp_path, text)
    result = invoke("scaled", "--lesson", str(path))
    assert_user_error(result, str(path), *fragments)


def test_an_unknown_example_lists_the_files_examples(invoke, tmp_path):
    path = write(tmp_path, GOOD)
    result = invoke("scaled", "--lesson", str(path), "--example", "nope")
    assert_user_error(result, str(path), "no example 'nope'", "mine, second")


def test_a_missing_file_and_a_file_for_another_lesson(invoke, tmp_path):
    assert_user_error(invoke("scaled", "--lesson", str(tmp_path / "gone.toml")), "not found")
    path = write(tmp_path, GOOD)
    with pytest.raises(UserError, match=r"it is a lesson for 'scaled'; run it with 'attn scaled"):
        own_lesson_file(path, course, "causal")


def test_own_inputs_with_a_lesson_file_still_use_its_texts(invoke, tmp_path):
    path = write(tmp_path, GOOD)
    result = invoke(
        "scaled", "--lesson", str(path), "--q", "1,0", "--k", "1,0;0,1", "--v", "1;2", "-f", "json"
    )
    doc = json.loads(result.stdout)
    assert doc["example"] is None
    assert doc["steps"][0]["title"] == "Our scores"


def test_the_schema_document_shows_the_example_file_verbatim():
    doc = (DOC_EXAMPLE.parent.parent / "lesson-files.md").read_text(encoding="utf-8")
    assert "```toml\n" + DOC_EXAMPLE.read_text(encoding="utf-8") + "```" in doc
