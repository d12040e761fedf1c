"""The lesson-file format as pydantic models: which keys each table may hold, and what their values
are.

One definition serves two readers: the loader validates a lecturer's file with it
(:func:`check_keys`: a key the format does not have, with a did-you-mean, or a value of the wrong
type, as one line made from pydantic's ValidationError), and :mod:`attn_cli.lessonfiles.schema`
writes the JSON Schema that editors (taplo, VS Code's Even Better TOML) validate lesson files with,
from :meth:`LessonFileFormat.model_json_schema`. What depends on the lesson (its step keys, inputs,
options) is checked against the lesson's declaration (``own_lesson_file``); the schema generator
reads the same declarations, and each option's type (:func:`option_type`) is a pydantic type too.

Importing this module imports pydantic (tens of milliseconds): the loader imports it only to check
a lecturer's file. The bundled files are checked by the tests (tests/test_lesson_strict.py), not on
each run.
"""

from __future__ import annotations

import datetime
import functools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    StrictBool,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)
from pydantic.json_schema import GenerateJsonSchema

from attn_cli.core.errors import UserError
from attn_cli.core.usertext import printable

if TYPE_CHECKING:  # the loader and the schema generator hand over a card's options
    from pydantic_core import ErrorDetails

    from attn_cli.core.card import Option


@dataclass(frozen=True)
class Expected:
    """What a value is, in a lecturer's words, where the type alone does not say it (the one line
    for a value of the wrong type reads it: "expected a table (options = { scale = false })")."""

    words: str


class Table(BaseModel):
    """A table of a lesson file: no key the format lacks, each value of its TOML type as it is."""

    model_config = ConfigDict(extra="forbid", strict=True)
    # Words a lecturer may reach for instead of a key, for the did-you-mean only.
    ALIASES: ClassVar[dict[str, str]] = {}


def key(description: str | None, names: str = "") -> Any:
    """An optional key (its absence is the loader's to fill); ``names``: what the keys of a free
    table are (step keys, input names), for the schema."""
    extra: dict[str, Any] | None = {"propertyNames": {"description": names}} if names else None
    return Field(None, description=description, json_schema_extra=extra)


# An input: a number, a list, a list of rows, or text in the matrix grammar; never true or false,
# a date, a time or a table. The entries of a list are the matrix grammar's to check (its
# messages say which entry is wrong); the schema spells them out, down to a batch of matrices.
def _nested(depth: int) -> dict[str, Any]:
    items = (
        {"type": "number"} if depth == 1 else {"anyOf": [{"type": "number"}, _nested(depth - 1)]}
    )
    return {"type": "array", "minItems": 1, "items": items}


Numbers = Annotated[
    StrictInt | FiniteFloat | StrictStr | list[Any],
    WithJsonSchema(
        {
            "description": 'A number, a list, a list of rows, or text in the matrix grammar ("1,0; 0,1").',
            "anyOf": [{"type": "number"}, {"type": "string"}, _nested(3)],
        }
    ),
    Expected('a number, a list of numbers, a list of equal-length rows or text such as "1,0; 0,1"'),
]
# A lesson option: each has its own type (option_type), which the loader checks apart.
Setting = Annotated[Any, WithJsonSchema({"type": ["boolean", "number", "string", "array"]})]


class Step(Table):
    ALIASES: ClassVar[dict[str, str]] = {
        "description": "explanation",
        "text": "explanation",
        "heading": "title",
    }
    title: StrictStr = key("The step's heading; {placeholders} are filled by the lesson.")
    explanation: StrictStr = key("A paragraph under the heading; {placeholders} allowed.")
    latex: StrictStr = key("The left-hand side of the step's equation (LaTeX output only).")
    brief: StrictStr = key(
        "The step's why in one line, for --brief (default: the explanation's first sentence); "
        "{placeholders} allowed."
    )
    detail: StrictBool = key(
        "true: a step between the main ones, which --brief shows by its heading and why alone."
    )


# Every lesson's labels together (a test checks they agree); the loader checks each lesson's own.
class Labels(Table):
    """Names for rows and columns (each lesson says which it reads)."""

    queries: list[StrictStr] = key("Names for the queries.")
    keys: list[StrictStr] = key("Names for the keys.")
    states: list[StrictStr] = key("Names for the states.")
    tokens: list[StrictStr] = key("Names for the tokens.")
    memory: list[StrictStr] = key("Names for the memory.")
    features: list[StrictStr] = key("Names for the columns of the tokens: their features.")


LABEL_NAMES = tuple(Labels.model_fields)

PRINTED = (
    'e.g. "0.33,0.67": printed values are written as text, so the decimals the slide shows are kept'
)


class Example(Table):
    name: StrictStr = Field(description="Unique in the file; what --example takes.")
    description: StrictStr = key("Shown under the title.")
    source: StrictStr = key("Where it comes from (lecture, slide, handout).")
    options: Annotated[dict[str, Setting], Expected("a table (options = { scale = false })")] = key(
        "The lesson's options, e.g. { scale = false } for scaled.", "an option of the lesson"
    )
    # Described by its class: draft-07 reads no keyword beside a $ref.
    labels: Labels = key(None)
    inputs: Annotated[
        dict[str, Numbers],
        Expected("a table ([examples.inputs] with one name = value per line)"),
    ] = key("Every input the lesson needs, by name.", "an input of the lesson")
    printed: Annotated[
        dict[str, Annotated[StrictStr, Expected(f"text in quotes ({PRINTED})")]],
        Expected("a table ([examples.printed] with one name = value per line)"),
    ] = key(
        "What the slide prints, as text: the decimals written are what attn check uses.",
        'a step key, "step[row]" or "step[row,column]"',
    )


class LessonFileFormat(Table):
    lesson: StrictStr = Field(description="The lesson that computes it (scaled, bahdanau, ...).")
    title: StrictStr = key("Shown at the top.")
    intro: StrictStr = key("One paragraph before the steps.")
    default_example: StrictStr = key("The example run without --example; the first if absent.")
    steps: dict[str, Step] = key(
        "The words for each step, one [steps.KEY] table per step.", "a step key of the lesson"
    )
    notes: dict[str, StrictStr] = key(
        'The words of the lesson\'s notes, one KEY = "..." each; {placeholders} read the '
        "note's values (a float in a plain {x} is shown with --precision decimals).",
        "a note key of the lesson",
    )
    headings: dict[str, StrictStr] = key(
        "The heading shown for each column of the lesson's tables (JSON keeps the key).",
        "a column key of the lesson's tables",
    )
    examples: list[Annotated[Example, Expected("a table ([[examples]])")]] = key(
        "The worked examples, one [[examples]] table each."
    )


class Draft7(GenerateJsonSchema):
    """The JSON Schema editors read: no title on each key, and no default (TOML has no null: a
    key left out is simply absent)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: Any) -> Any:
        return self.generate_inner(schema["schema"])


def check_keys(data: Any, where: str) -> None:
    """Check a parsed lesson file against the format, before any field is used: refuse a key
    the format does not have (naming its path and the nearest allowed key) and a value of the
    wrong type (naming the field, what was found and what is expected). What depends on the
    lesson (its inputs, options) is checked against its declaration by the loader, and a required
    key left out (lesson, an example's name) is named by the loader when it reads it."""
    try:
        LessonFileFormat.model_validate(data)
    except ValidationError as error:
        problems = [problem for problem in error.errors() if problem["type"] != "missing"]
        if problems:
            # The first in the file's order, as a lecturer reads it (pydantic goes by field).
            first = min(problems, key=lambda problem: _position(problem["loc"], data))
            raise UserError(_one_line(first, data, where)) from None


def _one_line(problem: ErrorDetails, data: Any, where: str) -> str:
    annotation, path = _annotation_at(problem["loc"])
    if problem["type"] == "extra_forbidden":
        table, _ = _annotation_at(path[:-1])
        return _unknown(str(path[-1]), _bare(table), path[:-1], where, data)
    return mismatch(
        f"{where}: {field_name(path, data)}", _value_at(path, data), expected(annotation)
    )


def _bare(annotation: Any) -> Any:
    """``annotation`` without its Annotated metadata (StrictStr is Annotated[str, Strict()])."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _annotation_at(loc: tuple[int | str, ...]) -> tuple[Any, tuple[int | str, ...]]:
    """The type of the value at ``loc`` in a lesson file, and the part of ``loc`` that is a path
    in the file (what follows is a union's member, e.g. a number that should be an input)."""
    annotation: Any = LessonFileFormat
    for depth, part in enumerate(loc):
        bare = _bare(annotation)
        if isinstance(bare, type) and issubclass(bare, BaseModel):
            if part not in bare.model_fields:
                return annotation, loc  # a key the table does not have (extra_forbidden)
            field = bare.model_fields[str(part)]
            metadata = tuple(field.metadata)
            annotation = Annotated[(field.annotation, *metadata)] if metadata else field.annotation
        elif get_origin(bare) in (dict, list):
            annotation = get_args(bare)[-1]
        else:
            return annotation, loc[:depth]
    return annotation, loc


def _value_at(path: tuple[int | str, ...], data: Any) -> Any:
    for part in path:
        data = data[part]
    return data


def _position(loc: tuple[int | str, ...], data: Any) -> tuple[int, ...]:
    """Where ``loc`` is in the file, in the order a lecturer reads it: each key's place in its
    table, each entry's in its list."""
    places = []
    for part in _annotation_at(loc)[1]:
        places.append(list(data).index(part) if isinstance(data, dict) else int(part))
        data = data[part]
    return tuple(places)


def expected(annotation: Any) -> str:
    """What a value of type ``annotation`` is, in a lecturer's words."""
    while get_origin(annotation) is Annotated:
        said = [note for note in annotation.__metadata__ if isinstance(note, Expected)]
        if said:
            return said[0].words
        annotation = get_args(annotation)[0]
    if annotation is str:
        return "text in quotes"
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        if _bare(item) is str:
            return 'a list of text in quotes, e.g. ["a", "b"]'
        return "a list, each entry " + expected(item).removeprefix("a ")
    return "a table"


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


def _unknown(
    key: str, table: type[Table], path: tuple[str | int, ...], where: str, data: Any
) -> str:
    words = {**table.ALIASES, **{name: name for name in table.model_fields}}
    import difflib  # only when a key is wrong

    close = difflib.get_close_matches(key, list(words), n=1, cutoff=0.6)
    hint = f' did you mean "{words[close[0]]}"?' if close else ""
    dotted = f" ({_dotted((*path, key))})" if path else ""
    message = (
        f'{where}: unknown key "{key}" {_place(path, data)}{dotted};{hint} the keys allowed '
        f"there are: {', '.join(table.model_fields)}."
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
# One pydantic type per option: the generated schema holds its JSON Schema for editors
# (attn_cli.lessonfiles.schema), and the loader checks every example's options with it
# (:func:`option_problem`) before a lesson reads them. An option is its card's type (bool, int,
# float), its choices, or the type below where a lesson file may write it otherwise.
_Positive = Annotated[StrictInt, Field(ge=1)]
_Position = Annotated[StrictInt, Field(ge=0)]


def _number(minimum: int | None = None, below: int | None = None) -> Any:
    """A finite number: in TOML a float, or an integer of any size, as JSON Schema's number takes
    it (pydantic's float alone refuses an integer past float64's range)."""
    bounds = Field(ge=minimum, lt=below)
    schema: dict[str, Any] = {"type": "number"}
    if minimum is not None:
        schema["minimum"] = minimum
    if below is not None:
        schema["exclusiveMaximum"] = below
    return Annotated[
        Annotated[StrictInt, bounds] | Annotated[FiniteFloat, bounds], WithJsonSchema(schema)
    ]


_Numbers: Any = Annotated[list[_number()], Field(min_length=1)]  # type: ignore[misc]


def _described(kind: Any, words: str) -> Any:
    return Annotated[kind, Field(description=words)]


OPTION_TYPES: dict[str, Any] = {
    "valid_len": _described(
        _Positive | Annotated[list[_Positive], Field(min_length=1)],
        "whole numbers ≥ 1: one length, 2, or one per query row, [2, 3]",
    ),
    "dropout": _number(minimum=0, below=1),
    "query_block": _Positive,
    "edges": _described(
        StrictStr | list[StrictStr | Annotated[list[_Position], Field(min_length=2, max_length=2)]],
        'node pairs from 0: text such as "0-1,1-2" or a list such as [[0, 1], [1, 2]]',
    ),
    "global_tokens": _described(
        StrictStr | _Position | list[_Position],
        'positions from 0: text such as "0,5" or a list such as [0, 5]',
    ),
    "permute": _described(
        StrictStr | Annotated[list[StrictInt], Field(min_length=1)],
        'each position from 0 once: text such as "2,0,1" or a list such as [2, 0, 1]',
    ),
    "dk": _described(
        StrictStr | _Positive | Annotated[list[_Positive], Field(min_length=1)],
        'whole numbers ≥ 1: 64, text such as "1,4,16" or a list such as [1, 4, 16]',
    ),
    "spiky_scores": _Numbers,
    "logits": _Numbers,
    "temperatures": _Numbers,
}
_TYPES: dict[type, Any] = {bool: StrictBool, int: StrictInt, str: StrictStr}


def option_type(option: Option) -> Any:
    """What a lesson file may give for an option: its type above, its card's choices, else its
    card's type (at least its minimum)."""
    if option.name in OPTION_TYPES:
        return OPTION_TYPES[option.name]
    if option.choices:
        return Literal[tuple(option.choices)]
    if isinstance(option.default, list):  # a list, or text: the lesson reads either
        return StrictStr | list[Any]
    if option.type is float:
        return _number(minimum=option.minimum)
    if option.type not in _TYPES:
        return Any
    kind = _TYPES[option.type]
    return kind if option.minimum is None else Annotated[kind, Field(ge=option.minimum)]


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind, config=ConfigDict(strict=True))


def option_schema(option: Option) -> dict[str, Any]:
    """The JSON Schema of what a lesson file may give for ``option``."""
    return _adapter(option_type(option)).json_schema(schema_generator=Draft7)


def option_problem(option: Option, value: Any) -> str | None:
    """What ``value`` should have been, in words, when ``option`` refuses it; else None."""
    try:
        _adapter(option_type(option)).validate_python(value)
    except ValidationError:
        return schema_words(option_schema(option))
    return None


def schema_words(schema: dict[str, Any]) -> str:
    """What a schema takes, as a lecturer reads it: "a whole number ≥ 1", 'one of "elu",
    "random"', "true or false"."""
    if "description" in schema:
        return schema["description"]
    if "anyOf" in schema:
        return " or ".join(schema_words(part) for part in schema["anyOf"])
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
        return f"a list, each {schema_words(schema['items'])}" if schema.get("items") else "a list"
    return "any value"
