"""The JSON Schema of lesson files, generated (never edited by hand)::

    python -m attn_cli.generated schema > attn_cli/schema/lesson.schema.json
    cp attn_cli/schema/lesson.schema.json docs/

Its structure is the loader's own definition (:data:`attn_cli.lessonfiles.grammar.LESSON_FILE`); what
depends on the lesson (its step and note keys, input names, options) comes from the lesson's
declaration (``LESSON = Lesson(...)``), its column headings from the bundled file: what the
loader checks a lesson file against. Draft-07, which taplo and VS Code's
Even Better TOML read. tests/test_lesson_schema.py fails when the committed file is stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from attn_cli.lessonfiles.grammar import LESSON_FILE, ListOf, Node, Numbers, Setting, Table, Text
from attn_cli.lessonfiles.loader import load_bundled

if TYPE_CHECKING:  # the generator (attn_cli.generated) hands over the declarations
    from attn_cli.cards import Option
    from attn_cli.walkthroughs.lesson import Lesson

REGENERATE = "python -m attn_cli.generated schema > attn_cli/schema/lesson.schema.json"

# An input: a number, a string in the matrix grammar, or nested lists of numbers.
_DEFINITIONS = {
    "numbers": {
        "description": 'A number, a list, a list of rows, or text in the matrix grammar ("1,0; 0,1").',
        "anyOf": [{"type": "number"}, {"type": "string"}, {"$ref": "#/definitions/array"}],
    },
    "array": {
        "type": "array",
        "minItems": 1,
        "items": {"anyOf": [{"type": "number"}, {"$ref": "#/definitions/array"}]},
    },
}


def node_schema(node: Node) -> dict[str, Any]:
    """The JSON Schema of one node of the format."""
    if isinstance(node, Text):
        return {"type": "string"}
    if isinstance(node, Numbers):
        return {"$ref": "#/definitions/numbers"}
    if isinstance(node, Setting):
        return {"type": ["boolean", "number", "string", "array"]}
    if isinstance(node, ListOf):
        return {"type": "array", "items": node_schema(node.item)}
    return _table_schema(node)


def _table_schema(table: Table) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if table.keys:
        schema["properties"] = {
            name: {"description": key.description, **node_schema(key.node)}
            for name, key in table.keys.items()
        }
    required = [name for name, key in table.keys.items() if key.required]
    if required:
        schema["required"] = required
    if table.any_key is None:
        schema["additionalProperties"] = False
    else:
        schema["propertyNames"] = {"description": table.names}
        schema["additionalProperties"] = node_schema(table.any_key)
    return schema


# Options a lesson file writes otherwise than the command line (a list, not text).
_POSITIVE_INT = {"type": "integer", "minimum": 1}
_OPTION_SCHEMAS: dict[str, dict[str, Any]] = {
    "valid_len": {"oneOf": [_POSITIVE_INT, {"type": "array", "items": _POSITIVE_INT}]},
    "dropout": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
    "query_block": _POSITIVE_INT,
}


def _option_schema(option: Option) -> dict[str, Any]:
    """What a lesson file may give for an option: its card's choices, else its type."""
    if option.name in _OPTION_SCHEMAS:
        return _OPTION_SCHEMAS[option.name]
    if option.choices:
        return {"enum": list(option.choices)}
    if isinstance(option.default, list):  # e.g. variance's widths: a list, or text
        return {}
    return _TYPES.get(option.type, {})


_TYPES: dict[type, dict[str, Any]] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
}


def _lesson_rule(name: str, lesson: Lesson) -> dict[str, Any]:
    """What a file for lesson ``name`` may name: the runner's checks, as a schema."""
    inputs = [spec.name for spec in lesson.inputs]
    required = [spec.name for spec in lesson.inputs if spec.required]
    options: dict[str, Any] = {
        option.name: _option_schema(option) for option in lesson.card.options if option.lesson
    }
    example: dict[str, Any] = {
        "properties": {
            "inputs": {"propertyNames": {"enum": inputs}, "required": required},
            "options": {"propertyNames": {"enum": list(options)}, "properties": options},
            "labels": {"propertyNames": {"enum": list(lesson.labels)}},
        }
    }
    if required:
        example["required"] = ["inputs"]
    then: dict[str, Any] = {"properties": {"examples": {"items": example}}}
    for table, keys in (
        ("steps", lesson.texts.steps),  # the lesson's declaration
        ("notes", lesson.texts.notes),
        ("headings", load_bundled(name).headings),
    ):
        if keys:
            then["properties"][table] = {"propertyNames": {"enum": list(keys)}}
        elif table != "steps":  # a lesson without notes or tables takes none
            then["properties"][table] = {"maxProperties": 0}
    return {
        "if": {"properties": {"lesson": {"const": name}}, "required": ["lesson"]},
        "then": then,
    }


def lesson_schema(declared: Mapping[str, Lesson]) -> dict[str, Any]:
    """The JSON Schema of a lesson file, for the lessons ``declared`` (name -> declaration)."""
    schema = _table_schema(LESSON_FILE)
    schema["properties"]["lesson"]["enum"] = sorted(declared)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "urn:attn-cli:lesson-schema:1",
        "title": "attn lesson file",
        "description": (
            "A lesson file (TOML): a lesson's worked examples and the words of its steps, for "
            "attn LESSON --lesson FILE and attn check FILE. Described in docs/lesson-files.md; "
            f"generated by {REGENERATE}."
        ),
        **schema,
        "allOf": [_lesson_rule(name, declared[name]) for name in sorted(declared)],
        "definitions": _DEFINITIONS,
    }
