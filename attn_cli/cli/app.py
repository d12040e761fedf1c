"""The attn command line: Typer parses and dispatches; lessons compute; renderers lay out.

Start-up matters (every run, and TAB completion, pays it): importing this module imports no
command module, and a command module imports nothing heavy (numpy, the lessons, the renderers)
until its command runs. `attn scaled` builds and imports only the scaled command; `attn --help`
and `attn --version` build every command from its signature and docstring, nothing more.
"""

from __future__ import annotations

import enum
import functools
import gc
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, MutableMapping
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from attn_cli import __version__
from attn_cli import course as cards
from attn_cli.cli.commands.common import print_error, user_errors
from attn_cli.cli.options import NoArgsIsHelpError, UsageError
from attn_cli.core.errors import UserError

try:  # Typer >= 0.2x ships its own copy of click
    from typer._click.core import Context as ClickContext
    from typer._click.core import ParameterSource
except ImportError:  # older Typer runs on click itself
    from click.core import Context as ClickContext  # type: ignore[import-not-found,no-redef,assignment,unused-ignore]
    from click.core import ParameterSource  # type: ignore[import-not-found,no-redef,assignment,unused-ignore]

# The commands besides the lessons, listed after them by `attn --help`: each is the function of
# the same name in attn_cli.cli.commands.<name>, imported only when the command is built. The lessons'
# commands are made from their cards (attn_cli.cards), found where they lie.
TOOLS: tuple[str, ...] = ("check", "tour", "bench", "kinds", "learn", "explore")

# The last lines of each tool's --help: two or three command lines to try (each one runs as
# written; tests/test_help.py runs them). Kept under 76 characters so that none wraps at 80. A
# lesson's are on its card.
TOOL_EXAMPLES: dict[str, tuple[str, ...]] = {
    "check": (
        "attn check --all",
        "attn check my-slides.toml --format json",
    ),
    "tour": (
        "attn tour",
        "attn tour --only scaled,causal --no-pause",
    ),
    "bench": (
        "attn bench --sizes 128..1024 --impl naive,tiled-numpy",
        "attn bench --device cuda --causal --format csv > bench.csv",
        "attn bench --plot bench.png",
    ),
    "kinds": (
        "attn kinds",
        "attn kinds --format markdown",
    ),
    "learn": (
        "attn learn translate",
        "attn learn translate --steps 400 --plot learned.png --save model.npz",
        "attn learn translate --code",
    ),
    "explore": (
        "attn explore",
        "attn explore window",
        "attn explore causal --serve --port 8000",
    ),
}


def command_names() -> tuple[str, ...]:
    """Every command, in the order `attn --help` lists them: the lessons, then the tools."""
    return (*cards.lesson_names(), *TOOLS)


def is_command(name: str) -> bool:
    """Whether ``name`` is a command (without importing any card or command)."""
    return name in TOOLS or cards.is_lesson(name)


def examples(name: str) -> tuple[str, ...]:
    """The command lines that end `attn NAME --help`."""
    return TOOL_EXAMPLES[name] if name in TOOL_EXAMPLES else cards.card(name).examples


# Said before the examples, where a command needs more than its help can hold. {docs} is the
# folder of the docs attn carries (docs_folder): its real path in the help, "docs" in docs/cli.md.
SEE_ALSO: dict[str, str] = {
    "check": "The lesson-file format in full, with a complete example:\n{docs}/lesson-files.md",
}

# The symbols a tool's help uses, with what each stands for (a lesson's are on its card).
TOOL_SYMBOLS: dict[str, tuple[tuple[str, str], ...]] = {
    "tour": (("d_k", "the width of each query and key"),),
    "bench": (("φ", "linear attention's feature map"),),
}


def symbols(name: str) -> tuple[tuple[str, str], ...]:
    """The symbols command ``name``'s help uses, each with its definition (its card's, or a
    tool's own)."""
    return cards.card(name).symbols if cards.is_lesson(name) else TOOL_SYMBOLS.get(name, ())


# `attn -h` as well as `attn --help`, for every command.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def command_function(name: str) -> Callable[..., None]:
    """The function behind `attn NAME`: a tool's (its module imported now), or the command made
    from a lesson's card."""
    if name not in TOOLS:
        from attn_cli.cli.commands.common import run_card
        from attn_cli.cli.options import lesson_command

        return lesson_command(cards.card(name), run_card)
    module = importlib.import_module(f"attn_cli.cli.commands.{name}")
    function: Callable[..., None] = getattr(module, name)
    return function


def docs_folder() -> str:
    """The docs that come with attn: inside the installed package (the wheel carries them, see
    pyproject.toml's force-include), or, run from a source checkout, the repository's docs/."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # attn_cli/, above cli/
    installed = os.path.join(package, "docs")
    return installed if os.path.isdir(installed) else os.path.join(os.path.dirname(package), "docs")


def epilog(name: str) -> str:
    """What ends `attn NAME --help`: where to read more, the symbols it uses (one per line, with
    what each stands for), then its examples, one per line, indented (in "rich" markup mode
    Typer keeps line breaks; it strips the indentation common to all lines but the first, so
    the first line is left empty)."""
    text = "\n"
    if name in SEE_ALSO:
        text += f"{escape(SEE_ALSO[name].format(docs=docs_folder()))}\n\n"
    if symbols(name):
        defined = (f"  {escape(symbol)}: {escape(meaning)}" for symbol, meaning in symbols(name))
        text += "[b]Symbols[/b]\n" + "\n".join(defined) + "\n\n"
    text += "[b]Examples[/b]\n"
    return text + "\n".join(f"  {escape(line)}" for line in examples(name))


def reflowed(text: str) -> str:
    """A docstring as help: each paragraph on one line, for Rich to wrap to the terminal (in
    "rich" markup mode Typer keeps the docstring's own line breaks, ragged at 80 columns)."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)


def _version(value: bool) -> None:
    if value:
        print(f"attn {__version__}")
        raise typer.Exit()


def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Worked examples of the attention mechanism: every intermediate matrix, computed."""


def _for_help(params: list[Any], ctx: ClickContext) -> list[Any]:
    """Options as the help should show them (parsing is unaffected):

    - an on/off option as the flag it is: Typer's rich help gives every boolean option a
      `<bool>` type, which reads as if `--full true` were accepted (it is not); an empty
      metavar leaves the type column of a flag blank;
    - the choices of an option with spaces between them, `<float64 | float32 | bfloat16>`, so
      that a narrow terminal wraps the list between choices, never inside one (`bfl` `oat16>`);
    - an argument that takes several values as what is typed, `FILE...`: Typer shows the
      Python annotation, `<list[Path]>`, in the type column; one that takes a single named
      value (`LESSON`) with nothing there, since its name already says what is typed (Typer:
      `<str>`), or its choices if it has them (`TASK  <translate | induction>`);
    - a number as what is typed, `N` (a whole number) or `X`, not `<int range> [x>=0]`: where
      the range matters the option's help says it in words (the parser still checks it);
    - a file as `FILE`, not `<file>`.
    """
    for param in params:
        if isinstance(param, TyperArgument) and param.metavar and param.nargs != 1:
            param.display_type_rich = _shown_as(f"{param.metavar}...")  # type: ignore[method-assign,assignment]
            continue
        if isinstance(param, TyperArgument) and param.metavar:
            descriptor = getattr(param, "type_descriptor", None)  # Typer >= 0.2x
            choices = descriptor is not None and descriptor.is_choice
            shown = param.display_type(ctx).replace("|", " | ") if choices else ""
            param.display_type_rich = _shown_as(shown)  # type: ignore[method-assign,assignment]
            continue
        if not isinstance(param, TyperOption):
            continue
        if getattr(param, "min", None) is not None or getattr(param, "max", None) is not None:
            # Typer >= 0.2x: the option's min and max only say the range in the help (its
            # parameter_info checks the value): `[x>=0]` is not what a student reads.
            param.min = param.max = None
        if param.metavar is not None:
            continue
        descriptor = getattr(param, "type_descriptor", None)  # Typer >= 0.2x
        if param.is_flag:
            param.metavar = ""
        elif descriptor is not None and descriptor.is_choice:
            param.metavar = param.display_type(ctx).replace("|", " | ")
        else:
            param.metavar = _typed_as(param, descriptor)
    return params


def _typed_as(param: Any, descriptor: Any) -> str | None:
    """What to type for a number or a file (None: Typer's own type, which the help test flags)."""
    annotation = getattr(descriptor, "annotation", None)
    if descriptor is not None and descriptor.is_path:
        return "FILE"
    if annotation is int:
        return "N"
    if annotation is float:
        return "X"
    return None


def _shown_as(text: str) -> Callable[[ClickContext], str]:
    """A parameter's display_type_rich that shows ``text`` in the help's type column."""

    def display_type_rich(ctx: ClickContext) -> str:
        return text

    return display_type_rich


def _skip_idle_coercion(params: list[Any]) -> list[Any]:
    """Parse without the coercions that would change nothing, or that need no machinery.

    Typer >= 0.2x coerces every option's value at parse time, given or not, through a pydantic
    TypeAdapter that it builds for the option on first use: `attn scaled` built 26 of them (the
    first one importing pydantic, about 50 ms; about 1 ms each after it) to get back each
    option's default unchanged. An absent option (None), a default already of the option's
    type, text typed for a text option (a matrix), a whole number or a decimal within the
    option's range, and a choice typed exactly, are now taken as they are (:func:`_plainly`);
    anything else (a number out of range, a misspelt choice, a file) goes to Typer, which
    coerces it, or refuses it with its own message, as before.
    """
    for param in params:
        if isinstance(param, TyperOption | TyperArgument) and "process_value" not in vars(param):
            param.process_value = functools.partial(_process_value, param, param.process_value)  # type: ignore[method-assign]
    return params


_TYPER = object()  # _plainly's answer for a value that Typer must coerce
# Short enough that int() never meets Python's limit on digits (Typer refuses more, in its words).
_PLAIN_NUMBER = re.compile(r"-?[0-9]{1,15}(\.[0-9]{0,15})?")


def _process_value(
    param: Any, typer_process_value: Callable[..., Any], ctx: ClickContext, value: Any
) -> Any:
    """Typer's process_value (coerce, check required, run the callback), coercing plainly
    where it can."""
    coerced = _TYPER if param.required else _plainly(param, ctx, value)
    if coerced is _TYPER:
        return typer_process_value(ctx, value)
    return coerced if param.callback is None else param.callback(ctx, param, coerced)


def _plainly(param: Any, ctx: ClickContext, value: Any) -> Any:
    """What Typer's coercion would make of ``value``, where that is plain; else _TYPER."""
    if value is None:  # an absent option
        return () if param.multiple or param.nargs == -1 else None
    descriptor = getattr(param, "type_descriptor", None)  # Typer >= 0.2x
    info = getattr(descriptor, "parameter_info", None)
    if info is None or info.parser is not None or param.multiple or param.nargs != 1:
        return _TYPER
    annotation = getattr(descriptor, "annotation", None)
    if not isinstance(annotation, type):
        return _TYPER
    if type(value) is annotation:  # text typed for text, or a default of the option's type
        if annotation is str:
            return value
        from_default = ctx.get_parameter_source(param.name) is ParameterSource.DEFAULT
        return value if from_default else _TYPER
    if type(value) is not str:
        return _TYPER
    if issubclass(annotation, enum.Enum) and info.case_sensitive:
        return next((member for member in annotation if member.value == value), _TYPER)
    if annotation in (int, float) and not info.clamp and _PLAIN_NUMBER.fullmatch(value):
        if annotation is int and "." in value:
            return _TYPER
        number = annotation(value)
        below = info.min is not None and number < info.min
        above = info.max is not None and number > info.max
        return _TYPER if below or above else number
    return _TYPER


class AttnCommand(TyperCommand):
    """A command whose help shows flags as flags and wraps choices between them, and whose
    parsing skips the coercions that would change nothing (_skip_idle_coercion)."""

    def get_params(self, ctx: ClickContext) -> list[Any]:
        return _for_help(_skip_idle_coercion(super().get_params(ctx)), ctx)


class OneLineUsageErrors(TyperGroup):
    """The attn group: a usage error in a command line (an unknown option, a value that is not
    one of the choices, a number out of range, an unknown command) becomes one line on stderr and
    exit code 2, like every other user error, instead of Typer's usage box."""

    def get_params(self, ctx: ClickContext) -> list[Any]:
        return _for_help(_skip_idle_coercion(super().get_params(ctx)), ctx)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: ClickContext | None = None,
        **extra: Any,
    ) -> ClickContext:
        try:  # attn's own options: attn --nosuch
            return super().make_context(info_name, args, parent, **extra)
        except NoArgsIsHelpError:  # `attn` alone prints the help, as it should
            raise
        except UsageError as error:
            raise _one_line(error, info_name or "attn") from None

    def invoke(self, ctx: ClickContext) -> Any:
        try:  # the command's name and options: attn nosuch, attn scaled --format xml
            return super().invoke(ctx)
        except UsageError as error:
            if error.ctx is not None and error.ctx.command is not self:
                command = error.ctx.command_path
            elif ctx.invoked_subcommand is not None:  # some parser errors carry no context
                command = f"{ctx.command_path} {ctx.invoked_subcommand}"
            else:  # no such command
                command = ctx.command_path
            raise _one_line(error, command) from None


def _one_line(error: UsageError, command: str) -> typer.Exit:
    """Print click's message, less the "Value error, " Typer's validation adds, with the --help
    that explains the command; the Exit to raise."""
    message = error.format_message().replace("Value error, ", "").rstrip(".")
    print_error(f"{message}; see '{command} --help'.")
    return typer.Exit(code=UserError.exit_code)


def make_app(names: tuple[str, ...] | list[str] | None = None) -> typer.Typer:
    """The Typer app with these commands (default: every one), each turning a UserError into one line
    and exit 2, with `-h`, and its examples at the end of its help."""
    typer_app = typer.Typer(
        name="attn",
        help="Worked examples of the attention mechanism: every intermediate matrix, computed.",
        no_args_is_help=True,
        cls=OneLineUsageErrors,
        rich_markup_mode="rich",
        context_settings=CONTEXT_SETTINGS,
    )
    typer_app.callback()(root)
    for name in command_names() if names is None else names:
        function = command_function(name)
        typer_app.command(
            name, cls=AttnCommand, help=reflowed(function.__doc__ or ""), epilog=epilog(name)
        )(user_errors(function))
    return typer_app


@functools.cache
def full_app() -> typer.Typer:
    """The app with every command (built once, on first use)."""
    return make_app()


def __getattr__(name: str) -> Any:
    """`attn_cli.cli.app`, the app with every command, built on first use."""
    if name == "app":
        return full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def drop_empty_width(environ: MutableMapping[str, str]) -> None:
    """COLUMNS=0 (a CI runner's, or a script's) would make rich lay out every table, panel and
    message in zero columns: nothing at all is printed. A width of no columns is taken as none
    given (the terminal's own, else 80)."""
    columns = environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) == 0:
        del environ["COLUMNS"]


def main() -> None:
    """The console script. Typer builds every registered command (inspecting each signature)
    before it runs one; a run of one known command builds (and imports) only that one, which
    keeps start-up (and so TAB completion's re-runs) light as commands are added."""
    from attn_cli.core.spelling import encodable

    # A terminal that cannot show √ or ░ (PYTHONIOENCODING=ascii, LANG=C, a code page): every
    # console, Typer's help too, writes through these, in ASCII spellings, never a traceback.
    sys.stdout, sys.stderr = encodable(sys.stdout), encodable(sys.stderr)
    chosen = sys.argv[1] if len(sys.argv) > 1 else None
    drop_empty_width(os.environ)
    completing = any(key.endswith("_COMPLETE") for key in os.environ)
    frozen_before = gc.get_freeze_count()
    gc.disable()  # for start-up only: see commands.common.start_up_done, which turns it back on
    try:
        if chosen is not None and is_command(chosen) and not completing:
            make_app((chosen,))(prog_name="attn")
        else:
            full_app()(prog_name="attn")
    finally:  # `main` called in a process that goes on (a test, a notebook): as it was
        gc.enable()
        if frozen_before == 0:
            gc.unfreeze()
