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
        calls.append(
            (
                spec.keyword,
                {spec.keyword: TOO_DEEP},
                [name, flags.flag_for(spec.keyword), "[[[[1]]]]"],
            )
        )
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
    assert flags.message(raised.value).startswith("--global x: give positions")


# --- no flag of a lesson's parameter written below the command line ---------------------------


def _keywords() -> set[str]:
    """Every parameter the lesson functions take: inputs, options, sizes, run settings."""
    found: set[str] = set()
    for name in LESSONS:
        card = course.card(name)
        found |= {spec.keyword for spec in card.inputs}
        found |= {option.name for option in card.options}  # the command's own too (--kernel)
        found |= {size.name for size in card.sizes}
        found |= set(run_settings(card))
    return found


# Flags left as they are, each a mention that reads right only as what it is: a file's whole
# set, or one flag in one file.
ALLOWED_FILES = {
    # The tour's stops: each a command line, the arguments after `attn NAME` (the tour runs it).
    *(f"attn_cli/course/{name}/stop.py" for name in LESSONS),
    "attn_cli/learn/stops.py",
}
ALLOWED = {
    # A lesson file's fields as the format describes them to a lecturer: what --example takes,
    # the file --lesson reads (attn check --help and the shipped schema say so).
    ("attn_cli/lessonfiles/grammar.py", "--example"),
    ("attn_cli/lessonfiles/schema.py", "--lesson"),
    # Command lines quoted for the user to type, built in parts ('attn block --lesson FILE').
    ("attn_cli/lessonfiles/loader.py", "--lesson"),
    ("attn_cli/render/check_render.py", "--lesson"),
    ("attn_cli/render/check_render.py", "--example"),
    # flash --kernel's source, a command-line option only: its tile sizes named by their flags.
    ("attn_cli/render/kernel_render.py", "--block"),
    ("attn_cli/render/kernel_render.py", "--query-block"),
    # A help panel's title (Option.panel), shown only by the command line's --help: it writes
    # the 34-letter flag whole where Typer's flag column cuts it at 80 columns.
    ("attn_cli/course/rope/card.py", "--factor"),
    ("attn_cli/course/rope/card.py", "--original-max-position-embeddings"),
    ("attn_cli/course/rope/card.py", "--rope-scaling"),
}
# A flag after "attn COMMAND" in the same string is part of a command line quoted whole
# ("attn scaled --q ... --k ..." of a card's examples, "attn check --help").
# (Nothing ends it between them: a ".", ";", ":" or "," followed by a space.)
COMMAND_LINE = re.compile(r"attn [a-z][a-z-]*(?: (?:(?![.;:,](?:\s|$)).)*)?$")
FLAG = re.compile(r"(?<![\w-])--(?:no-)?([a-z][a-z0-9-]*)")
BELOW = [
    path
    for path in sorted(PACKAGE.rglob("*.py"))
    if not path.relative_to(PACKAGE).as_posix().startswith("cli/")
]


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstrings' nodes in ``tree`` (a module's, a class's, a function's)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _written_flags(path: Path) -> list[str]:
    """Every flag of a lesson's parameter written in a string of ``path`` (a message, a note,
    a help, a program's text), but in its docstrings, which describe the code to its readers."""
    keywords = _keywords()
    where = f"attn_cli/{path.relative_to(PACKAGE).as_posix()}"
    if where in ALLOWED_FILES:
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    written = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in docstrings:
            continue
        text = node.value
        for found in FLAG.finditer(text):
            keyword = found.group(1).replace("-", "_")
            flag = found.group(0)
            if keyword not in keywords or (where, flag) in ALLOWED:
                continue
            if COMMAND_LINE.search(text[: found.start()]):
                continue
            written.append(f"{where}:{node.lineno}: {flag} in {text!r}")
    return written


def test_the_library_writes_no_flag_of_a_lesson_parameter():
    """Below the command line (attn_cli/cli/), no string names a lesson's parameter by its flag:
    a message, a note or a help names it with core.errors.param, or a card's help as {keyword},
    and each door spells it."""
    written = [line for path in BELOW for line in _written_flags(path)]
    assert written == [], "\n".join(written)


def test_the_check_finds_a_flag_written_below_the_command_line(tmp_path, monkeypatch):
    """The check itself, on a planted module: a flag in a message and in a note is found; in a
    docstring, or in a command line quoted whole, it is not."""
    planted = PACKAGE / "course" / "_planted_for_test.py"
    planted.write_text(
        '"""Give --dropout here: a docstring."""\n'
        'MESSAGE = "--dropout 2 is not a probability"\n'
        'NOTE = f"run again with --no-scale"\n'
        'EXAMPLE = "attn scaled --dropout 0.1 --seed 3"\n',
        encoding="utf-8",
    )
    try:
        found = _written_flags(planted)
    finally:
        planted.unlink()
    assert [line.split(": ", 1)[1].split(" in ")[0] for line in found] == [
        "--dropout",
        "--no-scale",
    ]


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


# --- the functions' docstrings: every keyword, in Python's words ------------------------------


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_function_documents_every_keyword_it_takes(lesson):
    """help(attn.NAME) lists every keyword of the signature, each with what it means, from the
    declarations the command's --help is made from, and names no flag."""
    import inspect
    import pydoc

    function = getattr(attn, lesson)
    text = pydoc.render_doc(function, renderer=pydoc.plaintext)
    doc = function.__doc__
    for keyword in inspect.signature(function).parameters:
        entry = re.search(rf"^    {re.escape(keyword)}: (\S.*)$", doc, flags=re.M)
        assert entry is not None and len(entry.group(1)) > 10, (keyword, doc)
    flags_named = [
        found.group(0)
        for found in FLAG.finditer(text)
        if not COMMAND_LINE.search(text[: found.start()])  # "attn check --help", quoted whole
    ]
    assert flags_named == [], flags_named
    assert "{" not in doc and not re.search(r"[\x1c-\x1f\x01]", doc), doc
    assert doc.startswith(course.card(lesson).summary.split("{")[0][:30])


def test_a_docstring_reads_as_python_says_it():
    """A sample, word for word: an option whose help names another parameter names its
    keyword, a switch set off as keyword=False; the defaults as the lesson reads them."""
    doc = attn.block.__doc__
    assert "    x: Token embeddings, n × d_model (n tokens of width d_model; the positional" in doc
    assert "is added to them unless posenc=False)." in " ".join(doc.split())
    scaled = " ".join(attn.scaled.__doc__.split())
    assert "dropout: Dropout on the weights, as in training" in scaled
    assert "The mask is seeded by seed: backend=torch draws torch.manual_seed(seed)" in scaled
    assert "n: number of keys n (default: 8)." in scaled
    assert "example: Lecture example to run. One of: two-tokens," in scaled
    assert "device: Where to compute (torch only off the CPU). (default: 'cpu')" in scaled


def test_the_command_lines_help_spells_the_same_declarations_as_flags(invoke):
    """The one help text, spelt by the other door: block's x help says --no-posenc."""
    text = " ".join(invoke("block", "--help").stdout.split())
    assert "unless --no-posenc)" in text and "posenc=False" not in text
