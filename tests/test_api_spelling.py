"""Each door names a parameter in its own words (issue 60): the Python API by keyword (``n=0``,
``q``), the command line by flag (``--n 0``, ``--q``), for every lesson; and the library below
the command line writes no flag of a parameter the lesson functions take."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import attn_cli as attn
from attn_cli import course
from attn_cli.cli import flags
from attn_cli.core.errors import UserError
from attn_cli.run.request import run_settings
from tests.conftest import assert_user_error

LESSONS = course.lesson_names()
# A 4-D nested list: no input of any lesson is that deep (a batch of matrices is 3-D).
TOO_DEEP = [[[[1.0]]]]
PACKAGE = Path(attn.__file__).parent


def _bad_calls(name: str) -> list[tuple[str, dict[str, Any], list[str] | None]]:
    """(keyword named, the Python call's arguments, the command line's arguments or None where
    the command line refuses the value itself, before the lesson) for lesson ``name``: each
    size as 0, the first input too deep, each choice as a name it does not have."""
    card = course.card(name)
    calls: list[tuple[str, dict[str, Any], list[str] | None]] = [
        (size.name, {size.name: 0}, [name, flags.flag_for(size.name), "0"]) for size in card.sizes
    ]
    for spec in card.inputs[:1]:
        calls.append((spec.keyword, {spec.keyword: TOO_DEEP}, [name, spec.option, "[[[[1]]]]"]))
    for option in card.options:
        if option.lesson and option.choices:  # the command line's parser refuses these itself
            calls.append((option.name, {option.name: "nope"}, None))
    return calls


CALLS = [(name, *call) for name in LESSONS for call in _bad_calls(name)]


def test_every_lesson_has_bad_calls_to_check():
    assert {name for name, *_ in CALLS} >= {
        name for name in LESSONS if course.card(name).sizes or course.card(name).inputs
    }


def _named(keyword: str, text: str) -> bool:
    """``keyword`` as a word of ``text`` (``n`` in "n must be…", not in "tokens")."""
    return re.search(rf"(?<![\w-]){re.escape(keyword)}(?![\w-])", text) is not None


@pytest.mark.parametrize(("lesson", "keyword", "given", "command"), CALLS)
def test_the_python_api_names_keywords(lesson, keyword, given, command):
    with pytest.raises(UserError) as raised:
        getattr(attn, lesson)(**given)
    message = str(raised.value)
    assert "--" not in message, message
    assert _named(keyword, message), (keyword, message)
    assert not re.search(r"[\x1c-\x1f]", message), repr(message)  # every marker spelt


@pytest.mark.parametrize(
    ("lesson", "keyword", "given", "command"),
    [call for call in CALLS if call[3] is not None],
)
def test_the_command_line_names_flags(invoke, lesson, keyword, given, command):
    result = invoke(*command)
    flag = flags.flag_for(keyword)
    assert_user_error(result, flag)
    assert not re.search(rf"(?<![\w-]){re.escape(keyword)}=", result.stderr), result.stderr


def test_both_doors_say_the_same_but_for_the_names(invoke):
    """The command line's line is the API's message spelt by cli.flags, word for word."""
    with pytest.raises(UserError) as raised:
        attn.kvcache(sinks=2)
    assert str(raised.value).startswith("sinks=2 needs window=W")
    assert "(e.g. sinks=1, window=3)" in str(raised.value)
    result = invoke("kvcache", "--sinks", "2")
    assert result.stderr.strip() == f"attn: error: {flags.message(raised.value)}"
    assert "(e.g. --sinks 1 --window 3)" in result.stderr


def test_an_option_with_its_own_flag_is_its_keyword_in_python(invoke):
    with pytest.raises(UserError) as raised:
        attn.window(global_tokens="x")
    assert str(raised.value).startswith("global_tokens='x': give positions")
    assert flags.message(raised.value).startswith("--global 'x': give positions")


# --- no flag of a lesson's parameter written below the command line ---------------------------


def _keywords() -> set[str]:
    """Every parameter the lesson functions take: inputs, options, sizes, run settings."""
    found: set[str] = set()
    for name in LESSONS:
        card = course.card(name)
        found |= {spec.keyword for spec in card.inputs}
        found |= {option.name for option in card.options if option.lesson}
        found |= {size.name for size in card.sizes}
        found |= set(run_settings(card))
    return found


# Flags left as they are, each a mention that reads right only as what it is:
ALLOWED = {
    # a whole command line quoted for the user to type ('attn block --lesson FILE'; "attn learn
    # translate --save FILE" writes the file bahdanau's --weights reads)
    ("attn_cli/lessonfiles/loader.py", "--lesson"),
}
# A flag after "attn COMMAND" in the same string is part of a command line quoted whole.
COMMAND_LINE = re.compile(r"attn [a-z][a-z -]*$")
FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")
BELOW = [
    path
    for path in sorted(PACKAGE.rglob("*.py"))
    if not path.relative_to(PACKAGE).as_posix().startswith("cli/")
]


# The helpers that put a name they are handed into a UserError's message.
NAMING = {
    "whole_number", "parse_int_list", "parse_names", "whole_at_least", "whole_option",
    "row_names", "check_whole_size", "read_named_arrays", "load_state", "load_arrays",
    "load_wholes", "load_words", "save_arrays", "check_save_path", "refuse", "parse_sizes",
    "as_matrix", "as_matrix_or_batch", "as_vector_or_batch",
}  # fmt: skip


def _error_strings(tree: ast.AST) -> list[str]:
    """The string parts of every UserError(...) call; a flag alone ("--x") handed to a helper
    that names it in one, or as such a helper's default, or kept as a constant (OPTION =
    "--x")."""
    found = []
    for node in ast.walk(tree):
        value = node.value if isinstance(node, ast.Assign) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            found += [value.value] if FLAG.fullmatch(value.value) else []
        if isinstance(node, ast.Call):
            func = node.func
            called = getattr(func, "id", None) or getattr(func, "attr", None)
            if called == "UserError":
                found += [
                    sub.value
                    for sub in ast.walk(node)
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str)
                ]
            elif called in NAMING:
                found += _flags_among([*node.args, *(keyword.value for keyword in node.keywords)])
        elif isinstance(node, ast.arguments):
            found += _flags_among([*node.defaults, *node.kw_defaults])
    return found


def _flags_among(nodes: list[ast.expr | None]) -> list[str]:
    """The flags (``"--x"``) written as string constants among ``nodes``."""
    return [
        node.value
        for node in nodes
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and FLAG.fullmatch(node.value)
    ]


def _written_flags(path: Path) -> list[str]:
    keywords = _keywords()
    where = f"attn_cli/{path.relative_to(PACKAGE).as_posix()}"
    written = []
    for text in _error_strings(ast.parse(path.read_text(encoding="utf-8"))):
        for found in FLAG.finditer(text):
            keyword = found.group(1).replace("-", "_")
            flag = "--" + found.group(1)
            if keyword not in keywords or (where, flag) in ALLOWED:
                continue
            if COMMAND_LINE.search(text[: found.start()]):
                continue
            written.append(f"{where}: {flag} in {text!r}")
    return written


def test_the_library_writes_no_flag_of_a_lesson_parameter():
    written = [line for path in BELOW for line in _written_flags(path)]
    assert written == [], "\n".join(written)


def test_a_switch_set_off_is_spelt_by_each_door():
    """A switch in a message: scale=False in Python, --no-scale on the command line (graph's
    refusal of an unscaled additive score, said both ways from the one message)."""
    with pytest.raises(UserError) as raised:
        attn.graph(score="additive", scale=False)
    assert str(raised.value).startswith("scale=False changes the dot-product score; score=additive")
    assert "drop scale=False, or use score=dot." in str(raised.value)
    cli = flags.message(raised.value)
    assert cli.startswith("--no-scale changes the dot-product score; --score additive")
    assert "drop --no-scale, or use --score dot." in cli
