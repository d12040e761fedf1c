"""Help in the lecture's words: every command's --help says what to type (MATRIX, N, FILE...),
never Python's types; every option is described; --plot says what this lesson draws."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.core import TyperArgument, TyperOption
from typer.testing import CliRunner

from attn_cli.cli.app import app, command_names
from attn_cli.cli.flags import flag_for, flag_spelling
from attn_cli.cli.options import MATRIX_GRAMMAR, VECTOR_GRAMMAR, default_last
from attn_cli.core.card import help_words
from attn_cli.course import card, lesson_names

COMMANDS = command_names()
GROUP = typer.main.get_command(app)
# What Typer shows when nobody said what to type: a Python type or a numeric range.
INTERNAL = ("<list[", "<int range>", "<float range>", "<str>", "<int>", "<float>", "<file>", "[x>=")


def wide_help(*args: str) -> str:
    """The help on a wide terminal: one line per option, nothing wrapped inside a metavar."""
    result = CliRunner().invoke(app, [*args, "--help"], terminal_width=200, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


def flat(text: str) -> str:
    """The help's words without the boxes and line breaks (a sentence may wrap)."""
    return " ".join(text.replace("│", " ").split())


@pytest.mark.parametrize("command", [(), *((name,) for name in COMMANDS)], ids=str)
def test_no_help_shows_an_internal_type(command):
    text = wide_help(*command)
    for internal in INTERNAL:
        assert internal not in text, (command, internal, text)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_and_argument_is_described(name):
    """A help of its own, with words besides a parenthesis (bench --dtype's was only
    "(default: ...)")."""
    command = GROUP.commands[name]
    undescribed = [
        (param.name, param.help)
        for param in command.params
        if isinstance(param, TyperOption | TyperArgument)
        and not getattr(param, "hidden", False)
        and not described(param.help or "")
    ]
    assert not undescribed


def described(help: str) -> bool:
    """A word (three letters or more, not part of a symbol such as d_out or W_K) outside the
    parentheses."""
    words = re.sub(r"\([^()]*\)", "", help)
    return re.search(r"(?<![\w])[A-Za-z]{3,}(?![\w])", words) is not None


@pytest.mark.parametrize("name", lesson_names())
def test_matrix_and_vector_inputs_say_what_to_type_and_the_grammar_is_said_once(name):
    declared = card(name)
    text = flat(wide_help(name))
    shapes = {spec.shape for spec in declared.inputs}
    for spec in declared.inputs:
        flag = flag_for(spec.keyword)
        assert f"{flag} {spec.shape.upper()} " in text, (flag, text)
    before_examples = text.split(" Examples ")[0]
    assert before_examples.count('"1,0;0,1"') == (1 if shapes else 0)
    assert (flat(MATRIX_GRAMMAR) in text) == bool(shapes)
    assert (flat(VECTOR_GRAMMAR) in text) == ("vector" in shapes)


def test_numbers_files_and_lists_are_named_by_what_is_typed():
    scaled = flat(wide_help("scaled"))
    for shown in (
        "--n N ",
        "--seed N ",
        "--precision N ",
        "--dropout P ",
        "--lesson FILE ",
        "--example -e NAME ",
        "--valid-len LENGTHS ",
        "--plot FILE ",
    ):
        assert shown in scaled, shown
    assert "0 to 15" in scaled  # the range --precision's N had as [0<=x<=15], said in words
    assert "--base X " in flat(wide_help("posenc"))
    bench = flat(wide_help("bench"))
    for shown in (
        "--sizes LENGTHS ",
        "--impl NAMES ",
        "--dims WIDTHS ",
        "--plot FILE ",
        "--block N ",
    ):
        assert shown in bench, shown
    assert "FILE..." in wide_help("check")
    assert "--only STOPS " in flat(wide_help("tour"))


def test_bench_explains_sdpa_and_describes_dtype():
    bench = flat(wide_help("bench"))
    assert "sdpa (PyTorch's scaled_dot_product_attention" in bench
    assert "--dtype <float64 | float32 | float16 | bfloat16> Floating-point type" in bench


@pytest.mark.parametrize("name", lesson_names())
def test_plot_says_what_this_lesson_draws(name):
    """--plot's help is the lesson's own figure (its card), and a lesson that draws none has no
    --plot; the cards and the figures drawn (each lesson folder's figure.py) agree."""
    from attn_cli.course import figure_of

    declared = card(name)
    assert bool(declared.figure) == (figure_of(name) is not None)
    text = flat(wide_help(name))
    if declared.figure:
        drawn = flat(help_words(declared.figure, flag_spelling))  # {all_scores} spelt --all-scores
        assert f"--plot FILE Also draw {drawn}, to FILE" in text
        others = [card(other).figure for other in lesson_names() if other != name]
        assert not any(f"draw {flat(other)}," in text for other in others if other)
    else:
        assert "--plot" not in text


def test_the_help_defines_its_symbols_and_speaks_plainly():
    multihead = flat(wide_help("multihead"))
    assert "d_o: the width of the output" in multihead  # W_O is d_out × d_o
    assert "child stream" not in multihead and "default_rng" not in multihead.split("--bias")[1]
    assert "--bias Add a random bias to every projection" in multihead
    assert "drawn from --seed" in multihead.split("--bias")[1]
    assert "d_a: the attention width" in flat(wide_help("bahdanau"))
    full = flat(wide_help("scaled")).split("--full ")[1]
    assert full.startswith("Every number: with --format json, every matrix in full")


# A symbol as the lectures write one: a letter with a subscript after "_" (d_k, W_Q, a_left,
# h_{t-1}) or a Greek letter (α, σ, φ; Σ is the sum, not a symbol).
SYMBOL = re.compile(r"(?<![\w-])(?:[A-Za-z]_(?:\{[^}]*\}|[A-Za-z0-9]+)(?![\w])|[α-ωΑ-ΡΤ-Ω])")


def _symbols_section(text: str) -> tuple[str, str]:
    """The help without its Symbols section, and the section."""
    if " Symbols " not in text:
        return text, ""
    before, after = text.split(" Symbols ", 1)
    section, examples = after.split(" Examples ", 1)
    return f"{before} Examples {examples}", section


@pytest.mark.parametrize("name", COMMANDS)
def test_every_symbol_of_the_help_is_defined_in_its_glossary(name):
    """Each symbol the help uses (d_k, W_Q, τ, ...) is in the command's glossary (its card's
    ``symbols``, a tool's cli.TOOL_SYMBOLS), shown once under "Symbols" before the examples;
    the glossary defines nothing the help does not use."""
    from attn_cli.cli.app import symbols

    glossary = symbols(name)
    defined = {one for names, _meaning in glossary for one in names.split(", ")}
    text, section = _symbols_section(flat(wide_help(name)))
    used = set(SYMBOL.findall(text))
    assert used <= defined, f"attn {name} --help: define {sorted(used - defined)} in its glossary"
    assert defined <= used, f"attn {name}: the glossary defines unused {sorted(defined - used)}"
    for names, meaning in glossary:
        assert section.count(f"{names}: {flat(meaning)}") == 1, (names, section)
    assert bool(section) == bool(glossary)


def test_the_symbol_pattern_finds_the_lectures_symbols_and_not_code():
    found = SYMBOL.findall("softmax(Q Kᵀ / √d_k) V, W_Q, a_left, αᵢ, Σ αᵢ hᵢ, default_rng, σ(x)")
    assert found == ["d_k", "W_Q", "a_left", "α", "α", "σ"]


@pytest.mark.parametrize("command", [(), *((name,) for name in COMMANDS)], ids=str)
def test_every_default_is_written_one_way(command):
    """Issue 42: defaults were written "[default: 0]" (Typer's) beside "(default: 8)" (ours);
    every one is now "[default: X]", Typer's way."""
    text = flat(wide_help(*command))
    assert "(default" not in text and "default)" not in text and "by default)" not in text


def test_the_lesson_settings_are_not_inputs():
    """Issue 42: --scale, --dropout and --normalise were listed under "Inputs"."""
    text = wide_help("scaled")
    inputs = text.split("Inputs ")[1].split("╰")[0]
    settings = text.split("Settings ")[1].split("╰")[0]
    for flag in ("--scale", "--dropout", "--normalise", "--valid-len"):
        assert flag not in inputs and flag in settings, flag
    assert "--q " in inputs and "--example" in inputs
    assert "[default: softmax]" in flat(settings)


def test_bench_defines_its_words():
    """Issue 42: `attn bench --help` used TFLOP/s, sdpa-cudnn's cuDNN and "elu + 1" undefined."""
    text = flat(wide_help("bench"))
    assert "TFLOP/s (10¹² floating-point operations a second;" in text
    assert "cuDNN's, NVIDIA's library of neural-network kernels" in text
    assert "φ(x) = elu(x) + 1, positive for every x: elu(x) is x for x > 0 and eˣ − 1 below" in text
    assert "[default: every one of the first list that the device supports;" in text


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("Layers (default: 32).", "Layers. [default: 32]"),
        ("Width d (default: d, elu + 1's, O(nd²)).", "Width d. [default: d, elu + 1's, O(nd²)]"),
        ("Heads (default 8)", "Heads. [default: 8]"),
        ("A (default: x) and B (y).", "A (default: x) and B (y)."),  # not its last words
        ("No default here.", "No default here."),
    ],
)
def test_a_closing_default_moves_to_the_end_in_brackets(text, written):
    assert default_last(text) == written


def test_block_help_says_how_weights_are_drawn_in_words():
    """Issue 42: 'numpy's default_rng(seed).spawn(1)[0]' and 'N(0, 1/d_model)' were the help's
    words for how a weight not given is drawn."""
    result = CliRunner().invoke(app, ["block", "--help"], env={"COLUMNS": "200"})
    text = " ".join(result.output.split())
    assert "spawn(" not in text and "default_rng" not in text and "N(0" not in text
    assert "variance 1/d_model" in text and "variance 1/d_ff" in text
