"""The JSON Schema of lesson files (attn_cli/schema/lesson.schema.json): generated from the
loader's own definition, current, and in agreement with the loader on real files and typos."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from attn_cli.lessonfiles.schema import REGENERATE, lesson_schema
from tests.test_lesson_strict import ONE_EXAMPLE, TYPOS
from tools.generated import declarations

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_SCHEMA = ROOT / "attn_cli" / "schema" / "lesson.schema.json"
LESSON_FILES = sorted((ROOT / "lessons").glob("*.toml")) + sorted(
    (ROOT / "docs" / "examples").glob("*.toml")
)


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(PACKAGE_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def problems(validator, text: str) -> list[str]:
    return [error.message for error in validator.iter_errors(tomllib.loads(text))]


def test_the_committed_schema_is_the_generated_one():
    generated = json.dumps(lesson_schema(declarations()), indent=2, ensure_ascii=False) + "\n"
    assert PACKAGE_SCHEMA.read_text(encoding="utf-8") == generated, f"stale: run {REGENERATE}"


@pytest.mark.parametrize("path", LESSON_FILES, ids=lambda path: path.name)
def test_every_bundled_and_documented_lesson_file_is_valid(validator, path):
    assert problems(validator, path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(("change", "fragments"), TYPOS, ids=[t[0][1][:14] for t in TYPOS])
def test_the_schema_refuses_every_typo_the_loader_refuses(validator, change, fragments):
    assert problems(validator, ONE_EXAMPLE) == []
    found = problems(validator, ONE_EXAMPLE.replace(*change, 1))
    key = fragments[0].split('"')[1]  # the mistyped key the loader names
    assert any(f"'{key}' was unexpected" in message for message in found), found


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("[steps.scores]", "[steps.scroes]"),
            "'scroes' is not one of ['scores', 'scaled', 'padding', 'padding_rows', 'masked', "
            "'q_normed_layernorm', 'q_normed_rmsnorm', 'k_normed_layernorm', 'k_normed_rmsnorm', "
            "'capped', 'weights', 'weights_sparsemax', 'weights_entmax15', 'weights_sigmoid', "
            "'weights_hardmax', 'output', 'dropout', 'output_dropout']",
        ),
        (("Q = [[1, 2]]", "X = [[1, 2]]"), "'X' is not one of ['Q', 'K', 'V']"),
        (("Q = [[1, 2]]\n", ""), "'Q' is a required property"),
        (("scale = false", "scale = 0"), "0 is not of type 'boolean'"),
        (
            ("scale = false", "temperature = 2"),
            "'temperature' is not one of ['scale', 'valid_len', 'dropout', 'normalise', 'softcap', "
            "'qk_norm']",
        ),
        (
            ('keys = ["a", "b"]', 'tokens = ["a", "b"]'),
            "'tokens' is not one of ['queries', 'keys']",
        ),
        (('lesson = "scaled"', 'lesson = "scaledd"'), "'scaledd' is not one of"),
        (('weights = "0.27, 0.73"', "weights = [0.27, 0.73]"), "is not of type 'string'"),
        (('name = "mine"', 'description2 = "x"'), "'name' is a required property"),
    ],
)
def test_the_schema_knows_each_lessons_steps_inputs_and_options(validator, change, message):
    found = problems(validator, ONE_EXAMPLE.replace(*change, 1))
    assert any(message in text for text in found), found
