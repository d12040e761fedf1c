"""What a lesson is, as the command line and the Python API see it: its card.

A card (``attn_cli/course/<lesson>/card.py``, ``CARD = Card(...)``) is plain data, with no numpy,
so that ``import attn_cli``, ``attn --help`` and the start of ``attn scaled`` stay light. It
holds the lesson's summary, its matrix inputs, its options (type, default, help, choices), the
sizes of its random inputs, which inputs may be given by position, its precision and the command
lines its help ends with. From it are generated:

- the Typer command (attn_cli.cli.options.lesson_command),
- the Python function (attn_cli.api.lesson_function),
- the lesson's defaults (the lesson declaration, attn_cli.course.lesson.Lesson, reads
  ``card.defaults``).

attn_cli.course finds the cards (each lesson a folder of that package).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from attn_cli.core.errors import Spelling, keyword_spelling, param, params, spelt, written_param


class _Spelt(dict[str, str]):
    """A help text's fields: ``{default}``, and any other parameter it names, ``{seed}`` or
    ``{scale=False}``, spelt by the door that shows it (``seed``, ``--seed``, ``--no-scale``).
    Made as a dict, its spelling set after (no __init__ of ours: each run builds every help)."""

    spelling: Spelling

    def __missing__(self, field: str) -> str:
        return spelt(written_param(field), self.spelling, " ")


def help_words(text: str, spelling: Spelling = keyword_spelling, **fields: str) -> str:
    """A card's help ``text`` with its fields filled (``{default}``, ``{seed}``,
    ``{scale=False}``), each parameter spelt by ``spelling``."""
    if "{" not in text:
        return text
    mapping = _Spelt(fields)
    mapping.spelling = spelling
    return text.format_map(mapping)


def shown(value: Any) -> str:
    """A default as the help says it: on/off, a list as "1,4,16", 10000.0 as 10000."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list | tuple):
        return ",".join(shown(item) for item in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True)
class InputSpec:
    """A matrix or vector the lesson reads: given as text, JSON or @file, or drawn at random."""

    name: str  # key in inputs and in lesson files, e.g. "Q"
    keyword: str  # the Python function's keyword, e.g. "q" (the command line derives its flag)
    shape: Literal["matrix", "vector"]
    description: str
    required: bool = True  # an optional input has a default the lesson fills in
    help: str = ""  # what it is, for the help (a parameter it names as {k}: help_words)
    # −∞ allowed in it (an additive mask, where −∞ blocks); NaN and +∞ are refused as ever.
    minus_infinity: bool = False
    # A learned parameter (W_Q, a bias, LayerNorm's γ), not the data: --brief leaves it out of
    # the inputs shown unless --show-weights.
    weight: bool = False

    def help_text(self, spelling: Spelling = keyword_spelling) -> str:
        return help_words(self.help, spelling)


def optional(
    name: str,
    keyword: str,
    shape: Literal["matrix", "vector"],
    description: str,
    help: str,
    *,
    minus_infinity: bool = False,
    weight: bool = False,
) -> InputSpec:
    """An input the lesson can do without (it has a default, or another input replaces it)."""
    return InputSpec(
        name,
        keyword,
        shape,
        description,
        required=False,
        help=help,
        minus_infinity=minus_infinity,
        weight=weight,
    )


@dataclass(frozen=True)
class Option:
    """A lesson setting: ``--scale/--no-scale``, ``--heads 4``, ``--normalise sparsemax``.

    ``help`` may say ``{default}``, filled with the default as the help shows it (the one place
    the number is written), and name other parameters (``{seed}``: help_words). A lesson file's ``options`` table and the Python function's keyword
    arguments take the same names; the lesson reads ``default`` when none gives it.
    """

    name: str  # the keyword: valid_len (the command line derives its flag, --valid-len)
    help: str
    default: Any = None  # None: the lesson decides (e.g. from the inputs)
    type: type = str  # bool, int, float or str: what the command line parses
    switch: bool = False  # a bool with --x/--no-x: not given leaves the example's own setting
    choices: tuple[str, ...] = ()
    minimum: int | None = None  # checked by the parser (one line, exit 2)
    metavar: str | None = None
    command_line: bool = True  # False: set by lesson files and the Python API only
    lesson: bool = True  # False: the command's own (flash --kernel), not handed to the lesson
    # It names a file (block --weights): a relative path in a lesson file is read from the
    # lesson file's folder, one on the command line from the current directory.
    path: bool = False
    # The help's panel for it, where not the settings' (rope's scaling parameters: a panel whose
    # narrow type column leaves --original-max-position-embeddings whole at 80 columns).
    panel: str | None = None

    def help_text(self, spelling: Spelling = keyword_spelling) -> str:
        return help_words(self.help, spelling, default=shown(self.default))


@dataclass(frozen=True)
class Size:
    """A size of the random inputs (--n, --dk): giving one draws every input at random."""

    name: str  # the keyword (the command line derives its flag, --name)
    help: str  # after "Random inputs: "; may say {default} and name parameters ({dk})
    default: int | None = None  # None: another size's value, or not drawn unless given

    def help_text(self, spelling: Spelling = keyword_spelling) -> str:
        return "Random inputs: " + help_words(self.help, spelling, default=str(self.default))


@dataclass(frozen=True)
class Card:
    """What a lesson is, as the command line and the Python API see it."""

    name: str  # the command (attn NAME), the Python function, the lesson files' lesson = "..."
    summary: str  # the help's first line and the Python function's docstring
    details: str = ""  # the help's further paragraph, if any
    inputs: tuple[InputSpec, ...] = ()  # in order
    options: tuple[Option, ...] = ()
    sizes: tuple[Size, ...] = ()
    positional: tuple[str, ...] = ()  # inputs that may be given by position, in order (keywords)
    rows: str | None = None  # the row names --tokens gives (the lesson's labels key)
    seed: bool = True  # whether the lesson draws anything at random (--seed)
    batches: bool = True  # whether it takes a batch of inputs (--item)
    precision: int = 4  # the decimals its command prints by default
    examples: tuple[str, ...] = ()  # command lines that end its --help (each runs as written)
    # What --plot draws, after "Draw " in its help ("the weights as a heatmap, ..."); empty:
    # the lesson has no figure, and its command no --plot (its folder's figure.py draws it).
    figure: str = ""
    # Called with the command's parsed parameters before the lesson runs: it may change them
    # (bahdanau --weights reads the inputs from a file), or return what the command shows in
    # place of the lesson (flash --kernel: the kernel's source); None: run the lesson.
    before_run: Callable[[dict[str, Any]], Any] | None = None
    # The symbols its help uses (d_k, W_Q, σ, ...), each with what it stands for: shown once,
    # under "Symbols", at the end of the help (tests/test_help_words.py checks that every
    # symbol of the help is here, and nothing else). A key may name several: "W_Q, W_K, W_V".
    symbols: tuple[tuple[str, str], ...] = ()

    @property
    def defaults(self) -> dict[str, Any]:
        """Every option the lesson reads, with its default."""
        return {option.name: option.default for option in self.options if option.lesson}

    def with_size_defaults(self, given: dict[str, int]) -> dict[str, int]:
        """The sizes given, with the card's default for each size that has one."""
        return {
            **{size.name: size.default for size in self.sizes if size.default is not None},
            **given,
        }

    def changed_options(self, options: Mapping[str, Any], against: Mapping[str, Any]) -> str:
        """Each option of ``options`` that differs from ``against`` (the defaults, or an
        example's options), as given, in a message (core.errors.params): ``scale=False,
        dropout=0.5`` in Python, ``--no-scale --dropout 0.5`` on the command line; empty when
        none does."""
        changed = []
        for option in self.options:
            value = options.get(option.name)
            if (
                option.command_line
                and value is not None
                and value != against.get(option.name, option.default)
            ):
                if isinstance(value, list | tuple):
                    value = ",".join(str(item) for item in value)
                changed.append((option.name, value))
        return params(*changed) if changed else ""

    def param(self, name: str) -> str:
        """Input ``name`` in a message, spelt by the door that shows it (``q`` or ``--q`` for
        "Q"; core.errors.param); a name no input has stands for itself, as a keyword."""
        keyword = next((spec.keyword for spec in self.inputs if spec.name == name), name)
        return param(keyword)
