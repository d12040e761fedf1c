"""Issue 32's fuzz harness over the input channels beside the options: lesson files (every
field of every lesson's schema given wrong types and extreme values), check files' printed
values, JSON / CSV / .npy input files, and the integer options of the lesson commands.

Every generated input must end in exit 0, in ``attn check``'s exit 1 (printed values that
differ, reported on stdout), or in exit 2 with one line on stderr and nothing on stdout: never
a traceback. The budget is fixed (derandomized: the same inputs on every run); the counts below are
CI's (HYPOTHESIS_PROFILE=ci, about 25 s of CPU), a contributor's run draws a quarter of each
(tests/conftest.py). Counts from one run (generated inputs, each run through the real CLI):

    lesson files 198 (every field of every lesson: 48 by lesson, run with both attn check and
        attn LESSON --lesson; every option 2 each, every input 1 each, with attn check)
    option schemas 300 (the loader's check against jsonschema on the generated schema)
    printed values 60, input files 90 (JSON, CSV and .npy, some truncated or bit-flipped)
    integer options 325 (41 flags × 5 hostile values, and 40 drawn texts)

Run against main before the fixes, they failed on: graph's ``edges = true`` in a lesson file
(TypeError), a printed value of 0E309 (OverflowError), a JSON file of a 5,000-digit integer
and --valid-len, --global and --edges of 5,000 digits (int()'s 4,300-digit limit), and
--permute, --dk and --edges echoing 5,000 digits in their one line. Each is now also a test in
tests/test_input_boundaries.py.
"""

from __future__ import annotations

import datetime
import io
import itertools
import json
import math
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attn_cli.cli.flags import flag_for
from attn_cli.course import get_lesson, lesson_names
from attn_cli.lessonfiles.grammar import option_problem, option_schema
from attn_cli.lessonfiles.loader import bundled_lessons_dir
from tests.conftest import examples

BUDGET = settings(  # examples(60) for the printed values; the others set their own below
    max_examples=examples(60),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
RAN: Counter[str] = Counter()  # generated inputs run, by channel (printed at the end)
_NAMES = itertools.count()


def outcome_is_clean(result: Any, *, errata_allowed: bool = False) -> None:
    """Exit 0; exit 1 from attn check's errata (a result, on stdout); or one line, exit 2."""
    assert "Traceback" not in result.output, result.output[-2000:]
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("attn: error: "), result.stderr[-2000:]
        assert result.stdout == ""
        assert len(lines[0]) < 2000, lines[0][:300]  # a value is never echoed whole
    else:
        allowed = (0, 1) if errata_allowed else (0,)
        assert result.exit_code in allowed, (result.exit_code, result.output[-2000:])
        assert result.stderr == "" or result.exit_code == 0, result.stderr[-2000:]


def unique_path(folder: Path, suffix: str) -> Path:
    """A new file name per input: the loader caches a file by path, size and time."""
    return folder / f"in{next(_NAMES)}{suffix}"


# --- TOML, written from Python values (tomllib reads; nothing in the venv writes) ------------


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = (f"{json.dumps(key)} = {toml_value(item)}" for key, item in value.items())
        return "{ " + ", ".join(items) + " }"
    raise TypeError(value)


def toml_document(data: dict[str, Any]) -> str:
    """A lesson file as key = value lines (tables and [[examples]] written inline)."""
    return "".join(f"{json.dumps(key)} = {toml_value(value)}\n" for key, value in data.items())


# Text TOML can hold: no surrogates (not UTF-8); control characters are escaped by json.dumps.
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
SPECIAL_TEXT = st.sampled_from(
    ["", "1e400", "−1", "0-1,1-2", "1e-5000000", "9" * 5000, "nan", "@nofile.npy", "{x}", "1;2"]
)
HUGE_INTS = st.sampled_from([2**31, 2**63, 2**64, 10**30, -(2**63), 10**400])
LEAF = st.one_of(
    st.booleans(),
    st.integers(-3, 3),
    HUGE_INTS,
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e300, -1e300, 5e-324, -0.0, 0.5]),
    TEXT,
    SPECIAL_TEXT,
    st.dates(),
    st.times(),
)
VALUE = st.recursive(
    LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=2),
    max_leaves=8,
)


def bundled_data(lesson: str) -> dict[str, Any]:
    """The bundled file of ``lesson`` with its first example only (each run checks one)."""
    path = bundled_lessons_dir() / f"{lesson}.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data["examples"] = data["examples"][:1]
    data.pop("default_example", None)
    return data


LESSONS = lesson_names()
BUNDLED = {name: bundled_data(name) for name in LESSONS}


def field_paths(lesson: str) -> list[tuple[str | int, ...]]:
    """Every field a file for ``lesson`` may give, from the lesson's declaration."""
    declared = get_lesson(lesson)
    example = ("examples", 0)
    paths: list[tuple[str | int, ...]] = [
        ("title",),
        ("intro",),
        ("default_example",),
        ("steps",),
        ("notes",),
        ("examples",),
        example,
        *((*example, key) for key in ("name", "description", "source", "options", "inputs")),
        (*example, "printed"),
        (*example, "labels"),
    ]
    paths += [("steps", key, field) for key in declared.texts.steps for field in ("title", "latex")]
    paths += [("notes", key) for key in declared.texts.notes]
    paths += [(*example, "options", option.name) for option in declared.card.options]
    paths += [(*example, "inputs", spec.name) for spec in declared.inputs]
    paths += [(*example, "labels", label) for label in declared.labels]
    paths += [(*example, "printed", key) for key in ("weights", "output", "scores")]
    return paths


def with_value(data: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with ``value`` at ``path`` (tables made on the way)."""
    data = json.loads(json.dumps(data))  # the bundled files hold only JSON's types
    node: Any = data
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    node[path[-1]] = value
    return data


def run_lesson_file(invoke, folder: Path, lesson: str, changes: list, *, both: bool) -> None:
    content = BUNDLED[lesson]
    for path, value in changes:
        try:
            content = with_value(content, path, value)
        except (KeyError, IndexError, TypeError):  # a change above replaced the table
            continue
    path = unique_path(folder, ".toml")
    path.write_text(toml_document(content), encoding="utf-8")
    RAN["lesson files"] += 1
    outcome_is_clean(invoke("check", str(path)), errata_allowed=True)
    if both:
        outcome_is_clean(invoke(lesson, "--lesson", str(path)))


@pytest.mark.parametrize("lesson", LESSONS)
@settings(BUDGET, max_examples=examples(4))
@given(data=st.data())
def test_lesson_files_with_any_field_wrong_end_in_one_line(invoke, tmp_path_factory, lesson, data):
    changes = data.draw(
        st.lists(st.tuples(st.sampled_from(field_paths(lesson)), VALUE), min_size=1, max_size=2),
        label="changes",
    )
    run_lesson_file(invoke, tmp_path_factory.getbasetemp(), lesson, changes, both=True)


LESSON_OPTIONS = [
    (lesson, option.name)
    for lesson in LESSONS
    for option in get_lesson(lesson).card.options
    if option.lesson
]


@pytest.mark.parametrize(("lesson", "option"), LESSON_OPTIONS)
@settings(BUDGET, max_examples=examples(2))
@given(value=VALUE)
def test_every_option_of_every_lesson_file_any_value_ends_in_one_line(
    invoke, tmp_path_factory, lesson, option, value
):
    changes = [(("examples", 0, "options", option), value)]
    run_lesson_file(invoke, tmp_path_factory.getbasetemp(), lesson, changes, both=False)


@pytest.mark.parametrize(
    ("lesson", "name"),
    [(lesson, spec.name) for lesson in LESSONS for spec in get_lesson(lesson).inputs],
)
@settings(BUDGET, max_examples=examples(1))
@given(value=VALUE)
def test_every_input_of_every_lesson_file_any_value_ends_in_one_line(
    invoke, tmp_path_factory, lesson, name, value
):
    changes = [(("examples", 0, "inputs", name), value)]
    run_lesson_file(invoke, tmp_path_factory.getbasetemp(), lesson, changes, both=False)


OPTIONS = [(lesson, option) for lesson in LESSONS for option in get_lesson(lesson).card.options]


@settings(max_examples=examples(300))
@given(data=st.data())
def test_the_loaders_option_check_is_the_generated_schemas(data):
    """The loader refuses an option value exactly when the schema editors use refuses it."""
    jsonschema = pytest.importorskip("jsonschema")
    _, option = data.draw(st.sampled_from(OPTIONS), label="option")
    value = data.draw(VALUE.filter(finite_json), label="value")
    # JSON Schema counts 1.0 as an integer; TOML tells 1.0 from 1, and a lesson file asks for 1.
    assume(not any(isinstance(x, float) and x.is_integer() for x in _leaves(value)))
    schema = option_schema(option)
    RAN["option schemas"] += 1
    refused = option_problem(option, value) is not None
    assert refused == (not jsonschema.Draft7Validator(schema).is_valid(value)), (schema, value)


def _leaves(value: Any) -> list[Any]:
    return (
        [leaf for item in value for leaf in _leaves(item)] if isinstance(value, list) else [value]
    )


def finite_json(value: Any) -> bool:
    """Values JSON Schema and the loader read alike: JSON's types, finite numbers."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(finite_json(item) for item in value)
    if isinstance(value, dict):
        return all(finite_json(item) for item in value.values())
    return isinstance(value, bool | int | str)


# --- check files: the printed values a slide records -------------------------------------------

NUMBER_TEXT = st.one_of(
    st.text(alphabet="0123456789.eE+-−–∞ ,;nai", min_size=1, max_size=24),
    st.builds(
        "{}{}e{}".format,
        st.sampled_from(["", "-", "−"]),
        st.sampled_from(["1", "0", "0.5", "9" * 400, "1" * 5000, "0." + "0" * 400 + "1"]),
        st.integers(-(10**9), 10**9),
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@BUDGET
@given(written=st.lists(NUMBER_TEXT, min_size=1, max_size=3))
def test_printed_values_of_any_spelling_end_in_one_line(invoke, tmp_path_factory, written):
    content = with_value(BUNDLED["scaled"], ("examples", 0, "printed"), {})
    for key, text in zip(("weights", "output[1]", "scores[1,2]"), written, strict=False):
        content["examples"][0]["printed"][key] = text
    path = unique_path(tmp_path_factory.getbasetemp(), ".toml")
    path.write_text(toml_document(content), encoding="utf-8")
    RAN["printed values"] += 1
    outcome_is_clean(invoke("check", str(path)), errata_allowed=True)


# --- input files: JSON, CSV and .npy ---------------------------------------------------------

JSON_NUMBER = st.one_of(
    st.integers(-3, 3),
    HUGE_INTS,
    st.sampled_from([10**309, 1e300, -0.0, 5e-324]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    TEXT,
)
JSON_TEXT = st.one_of(
    st.recursive(JSON_NUMBER, lambda inner: st.lists(inner, max_size=3), max_leaves=9).map(
        lambda value: json.dumps(value, ensure_ascii=False)
    ),
    st.text(alphabet='[]{},:"0123456789.e-−\ufeff nultrfa', max_size=30),
    # Python cannot even write an int of 5,000 digits (str() stops at 4,300): as text.
    st.sampled_from(["[[" + "9" * 5000 + ", 1]]", "[" + "1" * 5000 + "]", "[1e999999]"]),
)
CSV_TEXT = st.text(alphabet="0123456789.,;e-−+ \n\t\ufeffnaif|", max_size=30)
NPY_ARRAYS = hnp.arrays(
    dtype=st.sampled_from(
        ["float64", "float32", "float16", "int64", "uint64", "int8", "bool", "complex64", "<U3"]
    ),
    shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3),
)


def npy_bytes(array: np.ndarray, cut: int | None, flip: int | None) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    raw = bytearray(buffer.getvalue())
    if flip is not None and raw:
        raw[flip % len(raw)] ^= 0xFF
    return bytes(raw[:cut] if cut is not None else raw)


INPUT_FILE = st.one_of(
    st.tuples(st.just(".json"), JSON_TEXT.map(str.encode)),
    st.tuples(st.sampled_from([".csv", ".txt"]), CSV_TEXT.map(str.encode)),
    st.tuples(
        st.just(".npy"),
        st.builds(
            npy_bytes,
            NPY_ARRAYS,
            st.none() | st.integers(0, 200),
            st.none() | st.integers(0, 200),
        ),
    ),
)


@settings(BUDGET, max_examples=examples(90))
@given(file=INPUT_FILE)
def test_input_files_of_any_content_end_in_one_line(invoke, tmp_path_factory, file):
    suffix, content = file
    path = unique_path(tmp_path_factory.getbasetemp(), suffix)
    path.write_bytes(content)
    RAN["input files"] += 1
    given_file = f"@{path}"
    outcome_is_clean(invoke("scaled", "--q", given_file, "--k", given_file, "--v", given_file))


# --- integer options: every whole-number option and size of the lesson commands ----------------


def whole_number_flags() -> list[tuple[str, str]]:
    """(command, flag) for each size and each option a whole number or a list of them sets."""
    flags = []
    for lesson in LESSONS:
        card = get_lesson(lesson).card
        flags += [(lesson, flag_for(size.name)) for size in card.sizes]
        for option in card.options:
            numeric = option.type is int or option.name in ("valid_len", "permute", "dk")
            numeric = numeric or option.name in ("global_tokens", "edges")
            if numeric and option.command_line and not option.choices:
                flags.append((lesson, flag_for(option.name)))
    return flags


WHOLE_TEXT = st.one_of(
    # Small and huge values only: a valid size in between runs the lesson, which costs time
    # and proves nothing here.
    st.integers(-3, 3).map(str),
    st.sampled_from([2**31, 2**63, 2**64, 10**30]).map(str),
    st.sampled_from(["9" * 5000, "-" + "9" * 400, "1e3", "0x10", " 7", "+2", "٣", "1,,2", "0-1"]),
    st.text(alphabet="0123456789-,.e ", min_size=1, max_size=8),
)


HOSTILE_WHOLE = ["-1", "0", str(2**64), "9" * 5000, "−1"]


@pytest.mark.parametrize(("command", "option"), whole_number_flags())
def test_whole_number_options_refuse_hostile_values_in_one_line(invoke, command, option):
    for text in HOSTILE_WHOLE:
        RAN["integer options"] += 1
        outcome_is_clean(invoke(command, option, text))


@settings(BUDGET, max_examples=examples(40))
@given(flag=st.sampled_from(whole_number_flags()), text=WHOLE_TEXT)
def test_whole_number_options_of_any_text_end_in_one_line(invoke, flag, text):
    command, option = flag
    RAN["integer options"] += 1
    outcome_is_clean(invoke(command, option, text))


def test_zz_report_the_counts(capsys):
    """The generated inputs each channel ran (shown with pytest -s; the docstring above)."""
    with capsys.disabled():
        print("\nfuzz inputs run per channel:", dict(RAN))
