"""The lesson-file format as data: which keys each table may hold, and what their values are.

One definition serves two readers: the loader refuses a key the format does not have
(:func:`check_keys`, with a did-you-mean), and :mod:`attn_cli.lessonfiles.schema` writes the JSON Schema
that editors (taplo, VS Code's Even Better TOML) validate lesson files with. What depends on the
lesson (its step keys, inputs, options) is checked against the lesson's declaration
(``own_lesson_file``); the schema generator reads the same declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attn_cli.errors import UserError
from attn_cli.usertext import printable


@dataclass(frozen=True)
class Text:
    """A TOML string."""


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
            Table(any_key=Setting(), names="an option of the lesson"),
            "The lesson's options, e.g. { scale = false } for scaled.",
        ),
        "labels": Key(
            Table({name: Key(ListOf(Text()), f"Names for the {name}.") for name in LABEL_NAMES}),
            "Names for rows and columns (each lesson says which it reads).",
        ),
        "inputs": Key(
            Table(any_key=Numbers(), names="an input of the lesson"),
            "Every input the lesson needs, by name.",
        ),
        "printed": Key(
            Table(any_key=Text(), names='a step key, "step[row]" or "step[row,column]"'),
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
        "examples": Key(ListOf(EXAMPLE), "The worked examples, one [[examples]] table each."),
    }
)


def check_keys(data: Any, where: str) -> None:
    """Refuse a key the format does not have, anywhere in a parsed lesson file, naming its path
    and the nearest allowed key. Values of the wrong type are left to the loader's own checks."""
    _check(LESSON_FILE, data, (), where, data)


def _check(node: Node, value: Any, path: tuple[str | int, ...], where: str, data: Any) -> None:
    if isinstance(node, ListOf) and isinstance(value, list):
        for index, item in enumerate(value):
            _check(node.item, item, (*path, index), where, data)
    if not isinstance(node, Table) or not isinstance(value, dict):
        return
    for key, item in value.items():
        if key in node.keys:
            _check(node.keys[key].node, item, (*path, key), where, data)
        elif node.any_key is not None:
            _check(node.any_key, item, (*path, key), where, data)
        else:
            raise UserError(_unknown(key, node, path, where, data))


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
