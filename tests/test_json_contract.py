"""The JSON contract (docs/json.md): every document attn writes validates against the schema
shipped in the package, every array has one shape, and the schema rejects what breaks it."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from attn_cli import __version__
from attn_cli.course import lesson_names
from attn_cli.lessonfiles.loader import bundled_lesson_names, load_bundled
from attn_cli.render.json_render import MAX_ENTRIES, SCHEMA_VERSION, schema
from tests.lesson_runs import lessons_with_runs, runs_of

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_SCHEMA = ROOT / "attn_cli" / "schema" / "output.schema.json"

# The schema's entries of an array (#/$defs/data), which the validator below checks in one pass:
# jsonschema follows the $ref once per entry (about 25 µs each), and a full document holds tens of
# thousands of entries. test_the_fast_entry_check_is_the_schemas proves the two agree.
DATA = {
    "description": (
        "The entries of an array: nested lists, one level per dimension (a bare number for shape [])."
    ),
    "type": ["number", "boolean", "string", "array"],
    "pattern": "^(nan|inf|-inf)$",
    "items": {"$ref": "#/$defs/data"},
}


def entries_valid(value: Any) -> bool:
    """Whether ``value`` holds only what DATA allows (a subset: anything else goes to jsonschema)."""
    if isinstance(value, list):
        return all(entries_valid(item) for item in value)
    return type(value) in (int, float, bool) or value in ("nan", "inf", "-inf")


def _ref(validator: Any, ref: str, instance: Any, schema_: Any) -> Iterator[Any]:
    if ref == "#/$defs/data" and entries_valid(instance):
        return  # valid: the slow path would find no error
    yield from jsonschema.Draft202012Validator.VALIDATORS["$ref"](validator, ref, instance, schema_)


# The shipped schema, with its entries checked in one pass; errors are jsonschema's own.
VALIDATOR = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"$ref": _ref})(schema())

# Per lesson (its test's RUNS): a small random run, and one with an array over MAX_ENTRIES entries.
RANDOM = {lesson: runs_of(lesson).random for lesson in lessons_with_runs()}
LARGE = {lesson: large for lesson in lessons_with_runs() if (large := runs_of(lesson).large)}


def lesson_examples() -> list[tuple[str, str]]:
    """Every bundled example of every lesson, read from the lesson files."""
    return [
        (lesson, example.name)
        for lesson in bundled_lesson_names()
        for example in load_bundled(lesson).examples
    ]


def validate(doc: dict[str, Any]) -> dict[str, Any]:
    errors = [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in VALIDATOR.iter_errors(doc)
    ]
    assert not errors, errors[:5]
    return doc


def arrays(value: Any) -> Iterator[dict[str, Any]]:
    """Every array object anywhere in a document."""
    if isinstance(value, dict):
        if set(value) in ({"shape", "data"}, {"shape", "summary"}):
            yield value
            return
        for item in value.values():
            yield from arrays(item)
    elif isinstance(value, list):
        for item in value:
            yield from arrays(item)


def as_floats(data: Any) -> np.ndarray:
    """Array data with the non-finite strings turned back into floats."""
    return np.vectorize(float, otypes=[float])(np.array(data, dtype=object))


def check_arrays(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Each array object's shape is its data's; summaries only above MAX_ENTRIES entries."""
    found = list(arrays(doc))
    for array in found:
        size = int(np.prod(array["shape"]))
        if "data" in array:
            assert list(np.shape(array["data"])) == array["shape"]
        else:
            assert size > MAX_ENTRIES and array["summary"]["count"] == size
    return found


def test_the_fast_entry_check_is_the_schemas(invoke_json):
    assert schema()["$defs"]["data"] == DATA  # else entries_valid needs the schema's change
    plain = jsonschema.Draft202012Validator(schema())
    doc = invoke_json("scaled")
    step = next(step for step in doc["steps"] if step["kind"] == "matrix")
    valid = ([[1, 2.5], [-0.0, True]], ["nan", "inf", "-inf"], 3, [[[1e308]], [[False]]], [])
    invalid = (["NaN"], ["inf "], [None], [[1], {"a": 1}], ["Infinity"], "x", None)
    for entries in (*valid, *invalid):
        step["value"]["data"] = entries
        errors = [error.message for error in VALIDATOR.iter_errors(doc)]
        assert errors == [error.message for error in plain.iter_errors(doc)], entries
        assert bool(errors) == (entries in invalid), entries


def test_the_schema_is_valid_draft_2020_12_and_the_docs_copy_is_identical():
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize(("lesson", "example"), lesson_examples())
def test_every_bundled_example_validates(invoke_json, lesson, example):
    doc = validate(invoke_json(lesson, "--example", example))
    assert doc["schema_version"] == SCHEMA_VERSION and doc["attn_version"] == __version__
    assert doc["kind"] == "lesson" and doc["lesson"] == lesson and doc["example"] == example
    assert check_arrays(doc)  # data, or a summary only above MAX_ENTRIES entries
    for step in doc["steps"]:
        if step["kind"] in ("matrix", "weights", "heatmap"):
            assert step["value"] in list(arrays(step["value"]))


def test_every_lesson_has_an_example():
    assert {lesson for lesson, _ in lesson_examples()} == set(bundled_lesson_names())
    assert set(bundled_lesson_names()) == set(lesson_names())


@pytest.mark.parametrize("lesson", sorted(RANDOM))
def test_random_sizes_validate(invoke_json, lesson):
    doc = validate(invoke_json(lesson, *RANDOM[lesson]))
    assert doc["example"] is None
    assert all("data" in array for array in check_arrays(doc))


@pytest.mark.parametrize("lesson", sorted(LARGE))
def test_large_arrays_are_summarised_unless_full(invoke_json, lesson):
    summarised = validate(invoke_json(lesson, *LARGE[lesson]))
    full = validate(invoke_json(lesson, *LARGE[lesson], "--full"))
    small, large = check_arrays(summarised), check_arrays(full)
    assert len(small) == len(large)  # the same arrays, in the same order
    assert any("summary" in array for array in small)
    assert all("data" in array for array in large)
    for brief, whole in zip(small, large, strict=True):
        assert brief["shape"] == whole["shape"]
        if "summary" not in brief:
            assert brief == whole
            continue
        values = as_floats(whole["data"])
        finite = values[np.isfinite(values)]
        stats = brief["summary"]
        assert stats["count"] == values.size
        assert stats.get("non_finite", 0) == values.size - finite.size
        if finite.size:
            assert stats["min"] == finite.min() and stats["max"] == finite.max()
            assert stats["mean"] == pytest.approx(finite.mean(), rel=1e-9, abs=1e-12)


def test_summaries_count_the_masked_entries(invoke_json):
    doc = validate(invoke_json("causal", *LARGE["causal"]))
    masked = next(step for step in doc["steps"] if step["key"] == "masked")["value"]
    assert masked["shape"] == [101, 101]
    assert masked["summary"]["non_finite"] == 101 * 100 // 2  # −inf above the diagonal


@pytest.mark.parametrize("lesson", sorted(RANDOM))
def test_time_validates(invoke_json, lesson):
    doc = validate(invoke_json(lesson, "--time"))
    seconds = [step["seconds"] for step in doc["steps"] if "seconds" in step]
    assert seconds  # the computed steps are timed (the schema checks each is a number)
    assert not any("seconds" in step for step in invoke_json(lesson)["steps"])


def test_scaled_values_through_the_array_shape(invoke_json):
    doc = validate(invoke_json("scaled", "--example", "cat-slept"))
    weights = next(step for step in doc["steps"] if step["key"] == "weights")
    assert weights["value"]["shape"] == [1, 3]
    assert np.sum(weights["value"]["data"], axis=1) == pytest.approx([1.0], abs=1e-15)
    assert weights["row_sums"] == {"shape": [1], "data": [pytest.approx(1.0, abs=1e-15)]}
    assert doc["output"]["shape"] == [1, 2]
    random = validate(invoke_json("scaled", *RANDOM["scaled"]))
    q = np.random.default_rng(3).standard_normal((3, 4))
    assert random["inputs"]["Q"] == {"shape": [3, 4], "data": q.tolist()}
    for step in random["steps"]:
        if step["kind"] == "weights":
            rows = np.sum(step["value"]["data"], axis=1)
            np.testing.assert_allclose(rows, 1.0, atol=1e-15)
            np.testing.assert_allclose(step["row_sums"]["data"], rows, atol=1e-15)
    assert random["output"]["shape"] == [3, 2]


def test_non_finite_numbers_are_strings(invoke_json):
    doc = validate(invoke_json("causal", "--example", "three-tokens"))
    mask = next(step for step in doc["steps"] if step["key"] == "mask")["value"]
    assert mask == {"shape": [3, 3], "data": [[0.0, "-inf", "-inf"], [0.0, 0.0, "-inf"], [0.0] * 3]}


def test_other_values_keep_their_form(invoke_json):
    variance = validate(invoke_json("variance", *RANDOM["variance"]))
    assert [record["dk"] for record in variance["output"]] == [4, 16]  # records stay records
    assert variance["meta"] == {"seed": 3}
    histogram = next(step for step in variance["steps"] if step["kind"] == "histogram")["value"]
    edges, scaled = histogram["edges"], histogram["series"]["scaled"]
    assert edges["shape"] == [len(edges["data"])] and scaled["shape"] == [len(edges["data"]) - 1]
    posenc = validate(invoke_json("posenc"))
    shift = next(step for step in posenc["steps"] if step["key"] == "shift")
    (error,) = shift["parts"].values()
    assert isinstance(error, float) and error == posenc["meta"]["shift_max_error"]
    assert validate(invoke_json("multihead"))["meta"] == {"parameters": 64}
    assert validate(invoke_json("flash"))["meta"]["max_abs_difference"] < 1e-14


def test_torch_documents_validate(invoke_json, torch):
    doc = validate(invoke_json("scaled", "--backend", "torch", "--dtype", "float32"))
    assert doc["backend"] == "torch" and doc["dtype"] == "float32"
    check_arrays(doc)


def test_check_documents_validate(invoke):
    result = invoke("check", "--all", "--format", "json")
    assert result.exit_code in (0, 1), result.output  # 1: the slides' errata
    doc = validate(json.loads(result.stdout))
    assert doc["kind"] == "check" and doc["ok"] is (doc["errata"] == 0)
    assert {file["lesson"] for file in doc["files"]} == set(bundled_lesson_names())


BENCH = ("--sizes", "32,64", "--d", "8", "--heads", "1", "--repeats", "2", "--block", "16")


def test_bench_document_validates(invoke):
    result = invoke("bench", *BENCH, "--impl", "numpy,tiled-numpy", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = validate(json.loads(result.stdout))
    assert doc["schema_version"] == SCHEMA_VERSION and doc["attn_version"] == __version__
    assert doc["kind"] == "bench" and doc["device"] == "cpu" and doc["dtype"] == "float32"
    assert [(row["impl"], row["n"]) for row in doc["rows"]] == [
        ("numpy", 32),
        ("numpy", 64),
        ("tiled-numpy", 32),
        ("tiled-numpy", 64),
    ]
    assert all(row["status"] == "ok" and row["max_abs_err"] < 2e-6 for row in doc["rows"])
    assert doc["config"]["impls"] == ["numpy", "tiled-numpy"] and doc["config"]["block"] == 16


# --- the schema rejects documents that break the contract ---------------------------------


@pytest.fixture(scope="module")
def lesson_doc() -> dict[str, Any]:
    from typer.testing import CliRunner

    from attn_cli.cli.app import app

    result = CliRunner().invoke(app, ["scaled", "--format", "json"])
    return validate(json.loads(result.stdout))


def broken(doc: dict[str, Any], change) -> dict[str, Any]:
    copied = copy.deepcopy(doc)
    change(copied)
    return copied


def _bare_input(doc):
    doc["inputs"]["Q"] = doc["inputs"]["Q"]["data"]


def _bare_step(doc):
    doc["steps"][0]["value"] = doc["steps"][0]["value"]["data"]


def _bare_output(doc):
    doc["output"] = doc["output"]["data"]


def _bare_part(doc):
    parts = doc["steps"][2]["parts"]
    label = next(iter(parts))
    parts[label] = parts[label]["data"]


def _bare_row_sums(doc):
    doc["steps"][2]["row_sums"] = doc["steps"][2]["row_sums"]["data"]


def _data_and_summary(doc):
    doc["output"]["summary"] = {"count": 4}


def _no_shape(doc):
    del doc["output"]["shape"]


def _bare_meta(doc):
    doc["meta"]["matrix"] = [[1.0, 2.0], [3.0, 4.0]]


def _no_version(doc):
    del doc["schema_version"]


def _next_major(doc):
    doc["schema_version"] = "3.0"


def _unknown_key(doc):
    doc["extra"] = 1


def _nan_as_null(doc):
    doc["output"]["data"][0][0] = None


@pytest.mark.parametrize(
    "change",
    [
        _bare_input,
        _bare_step,
        _bare_output,
        _bare_part,
        _bare_row_sums,
        _data_and_summary,
        _no_shape,
        _bare_meta,
        _no_version,
        _next_major,
        _unknown_key,
        _nan_as_null,
    ],
)
def test_the_schema_rejects_a_broken_lesson_document(lesson_doc, change):
    assert not VALIDATOR.is_valid(broken(lesson_doc, change))


def test_the_schema_rejects_a_broken_bench_document(invoke):
    result = invoke("bench", *BENCH, "--impl", "numpy", "--format", "json")
    doc = validate(json.loads(result.stdout))
    assert not VALIDATOR.is_valid(broken(doc, lambda d: d["rows"][0].pop("status")))
    assert not VALIDATOR.is_valid(broken(doc, lambda d: d.update(device={"device": "cpu"})))
    assert not VALIDATOR.is_valid(broken(doc, lambda d: d.update(kind="lesson")))
