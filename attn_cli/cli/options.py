"""Options shared by the lesson commands, declared once as Annotated types for Typer."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum, StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

import typer
from rich.markup import escape

from attn_cli.cli.flags import COMMAND_LINE, flag_for, flag_spelling
from attn_cli.cli.parsing import in_range
from attn_cli.core import variants
from attn_cli.core.card import Card, InputSpec, Option, Size, help_words
from attn_cli.render import Format
from attn_cli.run.request import DROPOUT_SEED_HELP, RUN_SETTING_HELP

if TYPE_CHECKING:
    from attn_cli.run.runner import RunRequest

INPUT_PANEL = "Inputs"
# A lesson's settings (--scale, --dropout, --normalise, --heads ...): how it computes, not what.
SETTINGS_PANEL = "Settings"
SIZE_PANEL = "Random inputs of any size"
OUTPUT_PANEL = "Output"
BACKEND_PANEL = "Backend"

# What to type for a matrix or a vector input, said once in the help of each command that takes
# one (attn_cli.core.matrices reads it); the inputs' own help says only what each one is.
MATRIX_GRAMMAR = (
    'MATRIX: rows separated by ";" (or new lines), entries by "," or spaces: "1,0;0,1"; or JSON: '
    '"[[1,0],[0,1]]"; or @FILE, a .npy, .csv, .txt or .json file.'
)
VECTOR_GRAMMAR = 'VECTOR: one row, written the same ways: "0.1,0,-0.2".'
BATCH_GRAMMAR = (
    'A batch of inputs: items separated by "|" ("1,0;0,1 | 0,1;1,0"), JSON nested one level '
    "deeper, or a 3-D .npy (--item picks the item shown)."
)


def help_text(text: str) -> str:
    """A help text as Typer's Rich help shows it, its default written as Typer writes every
    default: a closing "(default: X)" becomes "[default: X]" at the end, so that each command
    writes its defaults one way (Typer's own, of options with a fixed default, and the lesson's,
    of those computed from the example or the inputs); the "[" escaped for Rich."""
    return escape(default_last(text))


def default_last(text: str) -> str:
    """``text`` with a last parenthesis "(default: X)" (or "(default X)") that ends it written
    "[default: X]" after the sentence; any other text as it is."""
    body = text.rstrip()
    stop = "." if body.endswith(").") else ""
    body = body.removesuffix(stop)
    if not body.endswith(")"):
        return text
    depth = 0
    for start in range(len(body) - 1, -1, -1):  # the "(" that the last ")" closes
        depth += {")": 1, "(": -1}.get(body[start], 0)
        if depth == 0:
            break
    inside = body[start + 1 : -1]
    if not inside.startswith("default"):
        return text
    said = inside.removeprefix("default").removeprefix(":").strip()
    head = body[:start].rstrip()
    if not head.endswith((".", ":", "?", "!")):
        head += "."
    return f"{head} [default: {said}]"


# What the help shows in an option's type column (its metavar, declared where the option is
# made): what to type, never Typer's Python type (`<int range> [x>=0]`, `<file>`, `<bool>`).
# A flag, given or not, shows nothing there: `<bool>` would read as if `--full true` were taken.
FLAG = ""
# What to type for a number: N a whole number, X any number (a card may name it: P, T, EPS).
NUMBER_METAVARS: dict[type, str] = {int: "N", float: "X"}


def choices_metavar(values: Iterable[str]) -> str:
    """The choices of an option as its help shows them, `<float64 | float32 | bfloat16>`: spaced,
    so that a narrow terminal wraps the list between choices, never inside one (`bfl` `oat16>`)."""
    return "<" + " | ".join(values) + ">"


def metavar_of(kind: type[Enum]) -> str:
    """The metavar of a choice option whose choices are enum ``kind``'s values."""
    return choices_metavar(str(member.value) for member in kind)


def choice(name: str, values: tuple[str, ...]) -> type[StrEnum]:
    """The choices of an option as the enum Typer offers them (values as given, in order)."""
    return StrEnum(name, {value: value for value in values})  # type: ignore[return-value]


if TYPE_CHECKING:  # a checker sees the choices as enum members: their .value is the text
    BackendName: TypeAlias = StrEnum
    DeviceName: TypeAlias = StrEnum
    DtypeName: TypeAlias = StrEnum
else:
    BackendName = choice("BackendName", variants.BACKENDS)
    DeviceName = choice("DeviceName", variants.DEVICES)
    DtypeName = choice("DtypeName", variants.DTYPES)


def complete_example(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """TAB completion for --example: the examples of the --lesson file given before it (when it
    has any), else those of this command's bundled lesson."""
    from attn_cli.core.errors import UserError
    from attn_cli.core.templates import spell_parameters
    from attn_cli.lessonfiles.loader import load_bundled, load_lesson_file

    own = ctx.params.get("lesson")
    try:
        lesson = load_lesson_file(Path(own)) if own else None
        if lesson is None or not lesson.examples:
            lesson = load_bundled(ctx.info_name or "")
    except (OSError, UserError):  # no readable lesson file: nothing to offer
        return []
    return [
        (example.name, " ".join(spell_parameters(example.description, COMMAND_LINE).split())[:60])
        for example in lesson.examples
        if example.name.startswith(incomplete)
    ]


ExampleOpt = Annotated[
    str | None,
    typer.Option(
        "--example",
        "-e",
        metavar="NAME",
        help=RUN_SETTING_HELP["example"].removesuffix(".") + " (see --list-examples).",
        rich_help_panel=INPUT_PANEL,
        show_default=False,
        autocompletion=complete_example,
    ),
]
ListExamplesOpt = Annotated[
    bool,
    typer.Option(
        "--list-examples",
        metavar=FLAG,
        help="List this lesson's examples and exit.",
        rich_help_panel=INPUT_PANEL,
    ),
]
LessonFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--lesson",
        metavar="FILE",
        help=RUN_SETTING_HELP["lesson"],
        rich_help_panel=INPUT_PANEL,
        show_default=False,
        dir_okay=False,
    ),
]
SeedOpt = Annotated[
    int,
    typer.Option(
        "--seed",
        metavar="N",
        callback=in_range(0),
        help=RUN_SETTING_HELP["seed"],
        rich_help_panel=SIZE_PANEL,
    ),
]
FormatOpt = Annotated[
    Format,
    typer.Option(
        "--format",
        "-f",
        metavar=metavar_of(Format),
        help="Output format.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
PrecisionOpt = Annotated[
    int,
    typer.Option(
        "--precision",
        metavar="N",
        callback=in_range(0, 15),
        help="Decimals shown, 0 to 15 (rich, markdown, latex).",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
FullOpt = Annotated[
    bool,
    typer.Option(
        "--full",
        metavar=FLAG,
        help="Every number: with --format json, every matrix in full (without it, a matrix of "
        "more than 10,000 entries is written as its shape and a summary: min, max, mean, "
        "spread); in the terminal, every row and column instead of a corner (the columns "
        "still cut to the terminal's width, which COLUMNS= widens).",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
LatexFragmentOpt = Annotated[
    bool,
    typer.Option(
        "--latex-fragment",
        metavar=FLAG,
        help="With --format latex: the body alone, to paste into a document of your own (its "
        "first line states the preamble it needs). Without it, a whole document that pdflatex "
        "compiles as it is.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="Write the output to FILE instead of the terminal (checked before computing).",
        rich_help_panel=OUTPUT_PANEL,
        show_default=False,
        dir_okay=False,
        readable=False,  # written, not read
    ),
]


def plot_option(card: Card) -> object:
    """--plot of a lesson with a figure: its help says what this lesson draws (its card's
    ``figure``)."""
    option = typer.Option(
        "--plot",
        metavar="FILE",
        help=f"Also draw {help_words(card.figure, flag_spelling)}, to FILE: .png, .svg or .pdf (needs matplotlib).",
        rich_help_panel=OUTPUT_PANEL,
        show_default=False,
        dir_okay=False,
        readable=False,  # written, not read
    )
    return Annotated[Path | None, option]


TimeOpt = Annotated[
    bool,
    typer.Option(
        "--time",
        metavar=FLAG,
        help=help_words(RUN_SETTING_HELP["time"], runs=str(variants.TIMED_RUNS)),
        rich_help_panel=OUTPUT_PANEL,
    ),
]
BackendOpt = Annotated[
    BackendName | None,
    typer.Option(
        "--backend",
        metavar=metavar_of(BackendName),
        help=help_text(RUN_SETTING_HELP["backend"]),
        rich_help_panel=BACKEND_PANEL,
        show_default=False,
    ),
]
DeviceOpt = Annotated[
    DeviceName,
    typer.Option(
        "--device",
        metavar=metavar_of(DeviceName),
        help=RUN_SETTING_HELP["device"],
        rich_help_panel=BACKEND_PANEL,
    ),
]
DtypeOpt = Annotated[
    DtypeName,
    typer.Option(
        "--dtype",
        metavar=metavar_of(DtypeName),
        help=RUN_SETTING_HELP["dtype"],
        rich_help_panel=BACKEND_PANEL,
    ),
]


QuizOpt = Annotated[
    bool,
    typer.Option(
        "--quiz",
        metavar=FLAG,
        help="Quiz mode: show the inputs and each step's title and shape, ask "
        "for the values (an answer key after blanks when not at a terminal).",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
PagerOpt = Annotated[
    bool | None,
    typer.Option(
        "--pager/--no-pager",
        help="At a terminal, show the output in a pager ($PAGER or less) from its top; by "
        "default only output taller than the screen; never when piped or written to a file.",
        rich_help_panel=OUTPUT_PANEL,
        show_default=False,
    ),
]
BriefOpt = Annotated[
    bool,
    typer.Option(
        "--brief",
        metavar=FLAG,
        help="For a projector: the first sentence of each step's why and its value; the inputs "
        "without the learned weights; no intermediates, notes or backend line; a table that "
        "repeats the one before, or a single key's 1s, said in one line.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
ShowWeightsOpt = Annotated[
    bool,
    typer.Option(
        "--show-weights",
        metavar=FLAG,
        help="With --brief: show the learned weights among the inputs too (the projections, "
        "their biases, LayerNorm's scale and shift).",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
COMPARE_HELP = (
    'Run the lesson again with FLAGS added (e.g. --compare "--no-scale", --compare "--heads 1") '
    "and show the steps whose values differ, each as given and then with FLAGS, side by side "
    "where they fit; with --format json, both runs whole"
)


def _compare_option(help_text: str) -> Any:
    return Annotated[
        str | None,
        typer.Option(
            "--compare",
            metavar="FLAGS",
            help=help_text,
            rich_help_panel=OUTPUT_PANEL,
            show_default=False,
        ),
    ]


CompareOpt = _compare_option(f"{COMPARE_HELP}.")
# A lesson with a figure (--plot): both runs' weights drawn too.
ComparePlotOpt = _compare_option(
    f"{COMPARE_HELP}; with --plot, both runs' weights on one colour scale."
)
PauseOpt = Annotated[
    bool,
    typer.Option(
        "--pause",
        metavar=FLAG,
        help="At a terminal, stop after the inputs and after each step until Enter (q: stop "
        "there), to talk a class through it; ignored when piped or written to a file.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
AnswersOpt = Annotated[
    Path | None,
    typer.Option(
        "--answers",
        metavar="FILE",
        help="With --quiz: write the answer key to FILE instead, so that the handout holds the "
        "blanks alone (without it, the key follows the blanks after a page break).",
        rich_help_panel=OUTPUT_PANEL,
        show_default=False,
        dir_okay=False,
        readable=False,  # written, not read
    ),
]
CodeOpt = Annotated[
    bool,
    typer.Option(
        "--code",
        metavar=FLAG,
        help="Print the program behind the numbers instead: a short numpy program (PyTorch "
        "with --backend torch) with these inputs written into it, which prints the output.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
TokensOpt = Annotated[
    str | None,
    typer.Option(
        "--tokens",
        metavar="NAMES",
        help=RUN_SETTING_HELP["tokens"],
        rich_help_panel=INPUT_PANEL,
        show_default=False,
    ),
]
DropoutSeedOpt = Annotated[
    int,
    typer.Option(
        "--seed",
        metavar="N",
        callback=in_range(0),
        help=help_words(DROPOUT_SEED_HELP, flag_spelling),
        rich_help_panel=SIZE_PANEL,
    ),
]
ItemOpt = Annotated[
    int,
    typer.Option(
        "--item",
        metavar="N",
        help=RUN_SETTING_HELP["item"],
        rich_help_panel=OUTPUT_PANEL,
    ),
]


@dataclass(frozen=True)
class SharedOptions:
    """The options every lesson command shares, as parsed (None: the command has no such
    option)."""

    example: str | None
    list_examples: bool
    quiz: bool
    lesson: Path | None
    fmt: Format
    precision: int
    full: bool
    latex_fragment: bool
    output: Path | None
    time: bool
    backend: BackendName | None
    device: DeviceName
    dtype: DtypeName
    seed: int = 0
    item: int = 0
    plot: Path | None = None  # None also where the lesson has no figure (no --plot)
    code: bool = False
    answers: Path | None = None  # --quiz's answer key, to a file of its own
    pager: bool | None = None  # None: a pager where the output is taller than the screen
    brief: bool = False  # the walkthrough in brief (Walkthrough.brief)
    show_weights: bool = False  # --brief with the learned weights among the inputs
    pause: bool = False  # at a terminal, Enter after each step
    compare: str | None = None  # --compare FLAGS: the lesson again with FLAGS, what differs


# The options every lesson command takes after its own, in this order: name -> (type, default).
SHARED: dict[str, tuple[object, object]] = {
    "seed": (SeedOpt, 0),
    "example": (ExampleOpt, None),
    "item": (ItemOpt, 0),
    "list_examples": (ListExamplesOpt, False),
    "quiz": (QuizOpt, False),
    "answers": (AnswersOpt, None),
    "code": (CodeOpt, False),
    "lesson": (LessonFileOpt, None),
    "fmt": (FormatOpt, Format.rich),
    "precision": (PrecisionOpt, 4),
    "full": (FullOpt, False),
    "latex_fragment": (LatexFragmentOpt, False),
    "output": (OutputOpt, None),
    "pager": (PagerOpt, None),
    "pause": (PauseOpt, False),
    "brief": (BriefOpt, False),
    "show_weights": (ShowWeightsOpt, False),
    "compare": (CompareOpt, None),
    "plot": (None, None),  # the lesson's own: plot_option(card), where it has a figure
    "time": (TimeOpt, False),
    "backend": (BackendOpt, None),
    "device": (DeviceOpt, DeviceName("cpu")),
    "dtype": (DtypeOpt, DtypeName("float64")),
}


# What a lesson command does with what it parsed (its card, click's params): compute, then
# render (the CLI hands over attn_cli.cli.commands.common.run_card; a parse-only use, as the tour's,
# hands over none).
LessonRunner = Callable[[Card, dict[str, Any]], None]


def lesson_command(card: Card, run: LessonRunner | None = None) -> Callable[..., None]:
    """The Typer command of a lesson, made from its card; it hands what it parsed to ``run``.

    It takes, in this order: the lesson's inputs, its options (the Inputs panel), --tokens when
    the lesson names rows, the sizes of random inputs, then the shared options (without --seed
    or --item where the lesson draws nothing or takes no batch; --seed says it seeds --dropout
    too where the lesson has it).
    """
    params = [_keyword(spec.keyword, _input(spec), None) for spec in card.inputs]
    params += [_keyword(option.name, *_option(option)) for option in _on_command_line(card)]
    if card.rows:
        params.append(_keyword("tokens", TokensOpt, None))
    params += [_keyword(size.name, _size(size), None) for size in card.sizes]
    params += [_keyword(name, *value) for name, value in shared_options(card).items()]

    def command(**given: Any) -> None:
        if run is not None:
            run(card, given)

    command.__name__ = command.__qualname__ = card.name
    command.__doc__ = "\n\n".join(
        help_words(paragraph, flag_spelling)
        for paragraph in (card.summary, card.details, grammar(card))
        if paragraph
    )
    command.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


def grammar(card: Card) -> str:
    """How to type the lesson's matrix and vector inputs (its help's last paragraph), or ""."""
    shapes = {spec.shape for spec in card.inputs}
    parts = [MATRIX_GRAMMAR] if shapes else []
    if "vector" in shapes:
        parts.append(VECTOR_GRAMMAR)
    if shapes and card.batches:
        parts.append(BATCH_GRAMMAR)
    return " ".join(parts)


def shared_options(card: Card) -> dict[str, tuple[object, object]]:
    """The shared options a lesson's command takes: name -> (type, default)."""
    own = {option.name for option in card.options}  # a lesson's own option of a shared name
    shared = {
        name: value
        for name, value in SHARED.items()
        if (card.seed or name != "seed")
        and (card.batches or name != "item")
        and (card.figure or name != "plot")
        and name not in own
    }
    if card.figure:
        shared["plot"] = (plot_option(card), None)
        if "compare" in shared:
            shared["compare"] = (ComparePlotOpt, None)
    if any(option.name == "dropout" for option in card.options):
        shared["seed"] = (DropoutSeedOpt, 0)
    shared["precision"] = (PrecisionOpt, card.precision)
    return shared


def lesson_request(card: Card, given: dict[str, Any]) -> tuple[RunRequest, SharedOptions]:
    """A lesson command's parsed parameters (click's ``ctx.params``) as the run it asks for and
    the shared options that say how to show it."""
    from attn_cli.run.request import request_for

    shared = SharedOptions(**{name: given[name] for name in shared_options(card)})
    return request_for(card, given, door=COMMAND_LINE), shared


def _on_command_line(card: Card) -> tuple[Option, ...]:
    return tuple(option for option in card.options if option.command_line)


def _input(spec: InputSpec) -> object:
    option = typer.Option(
        flag_for(spec.keyword),
        metavar=spec.shape.upper(),  # MATRIX or VECTOR: the command's help says how to type it
        help=help_text(spec.help_text(flag_spelling)),
        rich_help_panel=INPUT_PANEL,
        show_default=False,
    )
    return Annotated[str | None, option]


def _option(option: Option) -> tuple[object, object]:
    """An option's parameter type (with its typer.Option) and default."""
    if option.type is bool and not option.switch:  # a flag: given or not
        flag = typer.Option(
            flag_for(option.name),
            metavar=FLAG,
            help=help_text(option.help_text(flag_spelling)),
            rich_help_panel=SETTINGS_PANEL,
        )
        return Annotated[bool, flag], False
    name = flag_for(option.name)
    if option.switch:
        name = f"{name}/--no-{name.removeprefix('--')}"
    kind: object = option.type
    if option.choices:
        kind = choice(option.name, option.choices)
    parameter = typer.Option(
        name,
        help=help_text(option.help_text(flag_spelling)),
        rich_help_panel=option.panel or SETTINGS_PANEL,
        show_default=False,  # no min=: the least value is checked with the run (run/request.py)
        metavar=_typed_as(option),
    )
    return Annotated[kind | None, parameter], None  # type: ignore[operator]


def _typed_as(option: Option) -> str | None:
    """What to type for a lesson's option with a value (its type column in the help)."""
    if option.metavar:
        return option.metavar
    if option.switch:
        return FLAG
    if option.choices:
        return choices_metavar(option.choices)
    return NUMBER_METAVARS.get(option.type)


def _size(size: Size) -> object:
    # No min=1 here: the runner checks sizes, so a bad one is our one-line error, not a usage box.
    option = typer.Option(
        flag_for(size.name),
        metavar="N",
        help=help_text(size.help_text(flag_spelling)),
        rich_help_panel=SIZE_PANEL,
        show_default=False,
    )
    return Annotated[int | None, option]


def _keyword(name: str, annotation: object, default: object) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )
