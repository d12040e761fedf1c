"""The lesson-file format as data: which keys each table may hold, and what their values are.

One definition serves two readers: the loader refuses a key the format does not have
(:func:`check_keys`, with a did-you-mean), and :mod:`attn_cli.lessonfiles.schema` writes the JSON Schema
that editors (taplo, VS Code's Even Better TOML) validate lesson files with. What depends on the
lesson (its step keys, inputs, options) is checked against the lesson's declaration
(``own_lesson_file``); the schema generator reads the same declarations.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from attn_cli.core.errors import UserError
from attn_cli.core.usertext import printable

if TYPE_CHECKING:  # the loader and the schema generator hand over a card's options
    from attn_cli.core.card import Option


@dataclass(frozen=True)
class Text:
    """A TOML string; ``hint`` says what to write instead of another value."""

    hint: str = ""


@dataclass(frozen=True)
class Numbers:
    """An input: a number, a list, a list of rows, or a string in the matrix grammar."""


@dataclass(frozen=True)
class Setting:
    """A lesson option: true/false, a number or a string (the lesson says which)."""


@dataclass(frozen=True)
class ListOf:
    item: Node


@dataclass(frozen=True)
class Key:
    node: Node
    description: str
    required: bool = False


@dataclass(frozen=True)
class Table:
    """A table with fixed ``keys``; or, with ``any_key``, one whose keys are names (step keys,
    input names) each holding an ``any_key`` value, checked against the lesson elsewhere."""

    keys: dict[str, Key] = field(default_factory=dict)
    any_key: Node | None = None
    names: str = ""  # what the free keys are, for the schema: "a step key of the lesson"
    written: str = ""  # how a lecturer writes the table, for the message when a value is not one
    # Words a lecturer may reach for instead of a key, for the did-you-mean only.
    aliases: dict[str, str] = field(default_factory=dict)


Node = Text | Numbers | Setting | ListOf | Table

STEP = Table(
    {
        "title": Key(Text(), "The step's heading; {placeholders} are filled by the lesson."),
        "explanation": Key(Text(), "A paragraph under the heading; {placeholders} allowed."),
        "latex": Key(Text(), "The left-hand side of the step's equation (LaTeX output only)."),
    },
    aliases={"description": "explanation", "text": "explanation", "heading": "title"},
)

# Every lesson's labels together (a test checks they agree); lesson_files checks each lesson's own.
LABEL_NAMES = ("queries", "keys", "states", "tokens", "memory")

EXAMPLE = Table(
    {
        "name": Key(Text(), "Unique in the file; what --example takes.", required=True),
        "description": Key(Text(), "Shown under the title."),
        "source": Key(Text(), "Where it comes from (lecture, slide, handout)."),
        "options": Key(
            Table(
                any_key=Setting(),
                names="an option of the lesson",
                written="options = { scale = false }",
            ),
            "The lesson's options, e.g. { scale = false } for scaled.",
        ),
        "labels": Key(
            Table({name: Key(ListOf(Text()), f"Names for the {name}.") for name in LABEL_NAMES}),
            "Names for rows and columns (each lesson says which it reads).",
        ),
        "inputs": Key(
            Table(
                any_key=Numbers(),
                names="an input of the lesson",
                written="[examples.inputs] with one name = value per line",
            ),
            "Every input the lesson needs, by name.",
        ),
        "printed": Key(
            Table(
                any_key=Text(
                    'e.g. "0.33,0.67": printed values are written as text, so the decimals the '
                    "slide shows are kept"
                ),
                names='a step key, "step[row]" or "step[row,column]"',
                written="[examples.printed] with one name = value per line",
            ),
            "What the slide prints, as text: the decimals written are what attn check uses.",
        ),
    }
)

LESSON_FILE = Table(
    {
        "lesson": Key(
            Text(), "The lesson that computes it (scaled, bahdanau, ...).", required=True
        ),
        "title": Key(Text(), "Shown at the top."),
        "intro": Key(Text(), "One paragraph before the steps."),
        "default_example": Key(Text(), "The example run without --example; the first if absent."),
        "steps": Key(
            Table(any_key=STEP, names="a step key of the lesson"),
            "The words for each step, one [steps.KEY] table per step.",
        ),
        "notes": Key(
            Table(any_key=Text(), names="a note key of the lesson"),
            'The words of the lesson\'s notes, one KEY = "..." each; {placeholders} read the '
            "note's values (a float in a plain {x} is shown with --precision decimals).",
        ),
        "headings": Key(
            Table(any_key=Text(), names="a column key of the lesson's tables"),
            "The heading shown for each column of the lesson's tables (JSON keeps the key).",
        ),
        "examples": Key(
            ListOf(replace(EXAMPLE, written="[[examples]]")),
            "The worked examples, one [[examples]] table each.",
        ),
    }
)


def check_keys(data: Any, where: str) -> None:
    """Check a parsed lesson file against the format, before any field is used: refuse a key
    the format does not have (naming its path and the nearest allowed key) and a value of the
    wrong type (naming the field, what was found and what is expected). What depends on the
    lesson (its inputs, options) is checked against its declaration by the loader."""
    _check(LESSON_FILE, data, (), where, data)


def _check(node: Node, value: Any, path: tuple[str | int, ...], where: str, data: Any) -> None:
    if not _fits(node, value):
        raise UserError(mismatch(f"{where}: {field_name(path, data)}", value, expected(node)))
    if isinstance(node, ListOf):
        for index, item in enumerate(value):
            _check(node.item, item, (*path, index), where, data)
    if not isinstance(node, Table):
        return
    for key, item in value.items():
        if key in node.keys:
            _check(node.keys[key].node, item, (*path, key), where, data)
        elif node.any_key is not None:
            _check(node.any_key, item, (*path, key), where, data)
        else:
            raise UserError(_unknown(key, node, path, where, data))


def _fits(node: Node, value: Any) -> bool:
    """Whether ``value`` has the TOML type ``node`` takes (its entries are checked apart)."""
    if isinstance(node, Text):
        return isinstance(value, str)
    if isinstance(node, ListOf):
        return isinstance(value, list)
    if isinstance(node, Table):
        return isinstance(value, dict)
    if isinstance(node, Setting):
        return True  # each option has its own schema: the loader checks it (option_schema)
    # An input: a number, text or a list (its entries are the matrix grammar's to check);
    # never true or false, a date, a time or a table.
    return (
        isinstance(value, str | list)
        or (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and math.isfinite(value))
    )


def expected(node: Node) -> str:
    """What a value of ``node`` is, in a lecturer's words."""
    if isinstance(node, Text):
        return "text in quotes" + (f" ({node.hint})" if node.hint else "")
    if isinstance(node, Numbers):
        return 'a number, a list of numbers, a list of equal-length rows or text such as "1,0; 0,1"'
    if isinstance(node, Setting):
        return "what the option takes"
    if isinstance(node, ListOf):
        item = expected(node.item).removeprefix("a ")
        return (
            f"a list, each entry {item}"
            if not isinstance(node.item, Text)
            else ('a list of text in quotes, e.g. ["a", "b"]')
        )
    return f"a table ({node.written})" if node.written else "a table"


def mismatch(field: str, value: Any, wanted: str) -> str:
    """The one line for a value of the wrong type or range: ``field`` (the file and where in
    it), what was found, what is expected."""
    return printable(f"{field}: found {found(value)}; expected {wanted}.")


_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "a whole number"),
    (float, "a number"),
    (str, "text"),
    (list, "a list"),
    (dict, "a table"),
    (datetime.datetime, "a date and time"),
    (datetime.date, "a date"),
    (datetime.time, "a time"),
)
_SHOWN = 40  # characters of a found value the message shows


def found(value: Any) -> str:
    """A value as the file wrote it (shortened), and what kind of value it is."""
    kind = next((words for cls, words in _KINDS if isinstance(value, cls)), type(value).__name__)
    shown = _toml_text(value)
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 1] + "…"
    return f"{shown} ({kind})"


def _toml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > 100:  # never str() a huge int
        return f"a number of about {value.bit_length() * 0.30103:,.0f} digits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value[: _SHOWN + 1], ensure_ascii=False)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_text(item) for item in value[:8]) + "]"
    if isinstance(value, dict):
        items = list(value.items())[:8]
        return "{ " + ", ".join(f"{key} = {_toml_text(item)}" for key, item in items) + " }"
    return str(value)


def field_name(path: tuple[str | int, ...], data: Any) -> str:
    """A field as a lecturer finds it in the file: title, [steps.scores] title,
    example 'two-tokens', options.edges, example 2."""
    if not path:
        return "the file"
    if path[0] == "examples" and len(path) >= 2 and isinstance(path[1], int):
        example = data["examples"][path[1]]
        name = example.get("name") if isinstance(example, dict) else None
        named = (
            f"example {name!r}"
            if isinstance(name, str) and path[2:3] != ("name",)
            else (f"example {path[1] + 1}")
        )
        return f"{named}, {_dotted(path[2:])}" if len(path) > 2 else named
    if path[0] == "steps" and len(path) >= 3:
        return f"[{_dotted(path[:2])}] {_dotted(path[2:])}"
    if path[0] in ("notes", "headings") and len(path) >= 2:
        return f"[{path[0]}] {_dotted(path[1:])}"
    return _dotted(path)


def _unknown(key: str, table: Table, path: tuple[str | int, ...], where: str, data: Any) -> str:
    words = {**table.aliases, **{name: name for name in table.keys}}
    import difflib  # only when a key is wrong

    close = difflib.get_close_matches(key, list(words), n=1, cutoff=0.6)
    hint = f' did you mean "{words[close[0]]}"?' if close else ""
    dotted = f" ({_dotted((*path, key))})" if path else ""
    message = (
        f'{where}: unknown key "{key}" {_place(path, data)}{dotted};{hint} the keys allowed '
        f"there are: {', '.join(table.keys)}."
    )
    return printable(message)  # keys and names are the file's: no control characters


def _place(path: tuple[str | int, ...], data: Any) -> str:
    """Where a table sits, as a lecturer reads the file: at the top level, in [steps.scores],
    in example 'two-tokens', in the labels of example 'two-tokens'."""
    if not path:
        return "at the top level"
    if path[0] == "examples" and len(path) >= 2 and isinstance(path[1], int):
        example = data["examples"][path[1]]
        name = example.get("name")
        named = f"example {name!r}" if isinstance(name, str) else f"example {path[1] + 1}"
        return f"in {named}" if len(path) == 2 else f"in the {path[2]} of {named}"
    return f"in [{_dotted(path)}]"


def _dotted(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            shown = part if part.replace("_", "").replace("-", "").isalnum() else f'"{part}"'
            text += f".{shown}" if text else shown
    return text


# --- the options of a lesson: what a lesson file may give for each ---------------------------
# One JSON Schema (draft-07, the subset below) per option: the generated schema holds it for
# editors (attn_cli.lessonfiles.schema), and the loader checks every example's options with it
# (:func:`option_problem`) before a lesson reads them. An option is its card's type (bool, int,
# float), its choices, or the schema below where a lesson file may write it otherwise.
_WHOLE = {"type": "integer"}
_POSITIVE = {"type": "integer", "minimum": 1}
_POSITION = {"type": "integer", "minimum": 0}
_TEXT = {"type": "string"}
_NUMBERS = {"type": "array", "minItems": 1, "items": {"type": "number"}}
OPTION_SCHEMAS: dict[str, dict[str, Any]] = {
    "valid_len": {
        "description": "whole numbers ≥ 1: one length, 2, or one per query row, [2, 3]",
        "oneOf": [_POSITIVE, {"type": "array", "minItems": 1, "items": _POSITIVE}],
    },
    "dropout": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
    "query_block": _POSITIVE,
    "edges": {
        "description": 'node pairs from 0: text such as "0-1,1-2" or a list such as [[0, 1], [1, 2]]',
        "anyOf": [
            _TEXT,
            {
                "type": "array",
                "items": {
                    "anyOf": [
                        _TEXT,
                        {"type": "array", "minItems": 2, "maxItems": 2, "items": _POSITION},
                    ]
                },
            },
        ],
    },
    "global_tokens": {
        "description": 'positions from 0: text such as "0,5" or a list such as [0, 5]',
        "anyOf": [_TEXT, _POSITION, {"type": "array", "items": _POSITION}],
    },
    "permute": {
        "description": 'each position from 0 once: text such as "2,0,1" or a list such as [2, 0, 1]',
        "anyOf": [_TEXT, {"type": "array", "minItems": 1, "items": _WHOLE}],
    },
    "dk": {
        "description": 'whole numbers ≥ 1: 64, text such as "1,4,16" or a list such as [1, 4, 16]',
        "anyOf": [_TEXT, _POSITIVE, {"type": "array", "minItems": 1, "items": _POSITIVE}],
    },
    "spiky_scores": _NUMBERS,
    "logits": _NUMBERS,
    "temperatures": _NUMBERS,
}
_TYPES: dict[type, dict[str, Any]] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    str: _TEXT,
}


def option_schema(option: Option) -> dict[str, Any]:
    """What a lesson file may give for an option: its schema above, its card's choices, else
    its card's type (at least its minimum)."""
    if option.name in OPTION_SCHEMAS:
        return OPTION_SCHEMAS[option.name]
    if option.choices:
        return {"enum": list(option.choices)}
    if isinstance(option.default, list):  # a list, or text: the lesson reads either
        return {"anyOf": [_TEXT, {"type": "array"}]}
    schema = dict(_TYPES.get(option.type, {}))
    if option.minimum is not None:
        schema["minimum"] = option.minimum
    return schema


def option_problem(schema: dict[str, Any], value: Any) -> str | None:
    """What ``value`` should have been, in words, when ``schema`` refuses it; else None."""
    return None if _valid(schema, value) else schema_words(schema)


def _valid(schema: dict[str, Any], value: Any) -> bool:
    """``value`` against the subset of JSON Schema the option schemas use."""
    if "anyOf" in schema or "oneOf" in schema:
        return any(_valid(part, value) for part in schema.get("anyOf", schema.get("oneOf", [])))
    if "enum" in schema:
        return isinstance(value, str) and value in schema["enum"]
    kind = schema.get("type")
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind in ("integer", "number"):
        return _number_in_range(schema, value, whole=kind == "integer")
    if kind == "array":
        if not isinstance(value, list):
            return False
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
            return False
        items = schema.get("items", {})
        return all(_valid(items, item) for item in value)
    return True  # no type: anything


def _number_in_range(schema: dict[str, Any], value: Any, *, whole: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if whole and not isinstance(value, int):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False  # JSON has no inf or NaN: a schema's number is finite
    if "minimum" in schema and value < schema["minimum"]:
        return False
    if "maximum" in schema and value > schema["maximum"]:
        return False
    return not ("exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"])


def schema_words(schema: dict[str, Any]) -> str:
    """What a schema takes, as a lecturer reads it: "a whole number ≥ 1", 'one of "elu",
    "random"', "true or false"."""
    if "description" in schema:
        return schema["description"]
    if "anyOf" in schema or "oneOf" in schema:
        parts = schema.get("anyOf", schema.get("oneOf", []))
        return " or ".join(schema_words(part) for part in parts)
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(choice) for choice in schema["enum"])
    kind = schema.get("type")
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        return "text in quotes"
    if kind in ("integer", "number"):
        words = "a whole number" if kind == "integer" else "a finite number"
        if "minimum" in schema:
            words += f" ≥ {schema['minimum']}"
        if "exclusiveMaximum" in schema:
            words += f" and < {schema['exclusiveMaximum']}"
        if "maximum" in schema:
            words += f" and ≤ {schema['maximum']}"
        return words
    if kind == "array":
        return f"a list, each {schema_words(schema['items'])}" if "items" in schema else "a list"
    return "any value"
