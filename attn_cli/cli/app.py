"""The attn command line: Typer parses and dispatches; lessons compute; renderers lay out.

Start-up matters (every run, and TAB completion, pays it): importing this module imports no
command module, and a command module imports nothing heavy (numpy, the lessons, the renderers)
until its command runs. `attn scaled` builds and imports only the scaled command; `attn --help`
and `attn --version` build every command from its signature and docstring, nothing more.
"""

from __future__ import annotations

import functools
import gc
import inspect
import os
import sys
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from attn_cli import __version__
from attn_cli import course as cards
from attn_cli.cli.commands.common import user_errors
from attn_cli.cli.commands.streams import (
    ClosedStdout,
    StdoutClosed,
    StdoutFailed,
    flush_stdout,
    guard_stdout,
    print_error,
    reserve_standard_descriptors,
    stdout_failed,
)
from attn_cli.cli.options import FLAG
from attn_cli.cli.parsing import UsageError, plain_parsing
from attn_cli.core.errors import UserError

if TYPE_CHECKING:
    from attn_cli.cli.parsing import Context

    _Command = TyperCommand  # what the mixin below is mixed into, as a checker sees it
else:
    _Command = object

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
    if not cards.is_lesson(name):
        return TOOL_SYMBOLS.get(name, ())
    from attn_cli.cli.flags import flag_spelling
    from attn_cli.core.card import help_words

    return tuple(
        (symbol, help_words(meaning, flag_spelling)) for symbol, meaning in cards.card(name).symbols
    )


# `attn -h` as well as `attn --help`, for every command.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def command_function(name: str) -> Callable[..., None]:
    """The function behind `attn NAME`: a tool's (its module imported now), or the command made
    from a lesson's card."""
    if name not in TOOLS:
        from attn_cli.cli.commands.common import run_card
        from attn_cli.cli.options import lesson_command

        return lesson_command(cards.card(name), run_card)
    return _tool(name)


def _tool(name: str) -> Callable[..., None]:
    """A tool's command function, its module imported now (and only then: start-up)."""
    function: Callable[..., None]
    if name == "check":
        from attn_cli.cli.commands.check import check as function
    elif name == "tour":
        from attn_cli.cli.tour_command import tour as function
    elif name == "bench":
        from attn_cli.cli.commands.bench import bench as function
    elif name == "kinds":
        from attn_cli.cli.commands.kinds import kinds as function
    elif name == "learn":
        from attn_cli.cli.commands.learn import learn as function
    elif name == "explore":
        from attn_cli.cli.commands.explore import explore as function
    else:
        raise KeyError(f"no tool {name!r}: TOOLS names {', '.join(TOOLS)}")
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
            "--version",
            metavar=FLAG,
            callback=_version,
            is_eager=True,
            help="Show the version and exit.",
        ),
    ] = False,
) -> None:
    """Worked examples of the attention mechanism: every intermediate matrix, computed."""


class HelpAsTyped(_Command):
    """The help of attn's commands and group as a student reads it, beyond what each option
    declares where it is made (its metavar: N, X, FILE, `<a | b | c>`, nothing for a flag;
    attn_cli.cli.options), in click's documented format_help, when the help is drawn
    (help_params):

    - the flags Typer adds itself (-h/--help, --install-completion, --show-completion) shown
      as flags, their type column blank like every other flag's (Typer's reads `<bool>`, as if
      `--help true` were taken);
    - an argument's type column says what is typed (argument_typed_as).
    """

    def get_params(self, ctx: Context) -> list[Any]:
        """click's parameters, each taking a plain value without Typer's coercion (parsing)."""
        return plain_parsing(self.callback, super().get_params(ctx))

    def help_params(self, ctx: Context) -> list[Any]:
        """The parameters as the help shows them: made only for the help (a run needs none)."""
        params = self.get_params(ctx)
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = FLAG
            elif param.param_type_name == "argument" and param.metavar:
                argument_typed_as(param, ctx)
        return params

    def format_help(self, ctx: Context, formatter: Any) -> None:
        self.help_params(ctx)
        super().format_help(ctx, formatter)


def argument_typed_as(param: Any, ctx: Context) -> None:
    """An argument's type column as what is typed: `FILE...` for one that takes several values
    (Typer: `<list[Path]>`), its choices spaced out for a choice (`<translate | grammar |
    induction>`, Typer's without spaces), and nothing for one named value (`LESSON`: its name
    says it; Typer: `<str>`).

    Not public API, and the one piece here that is not: Typer's rich help takes an argument's
    type column from TyperArgument.display_type_rich(ctx), which ignores the metavar (an
    option's honours it), and Typer makes each TyperArgument itself, with no cls= to subclass.
    Where the method is missing (another Typer), the help is Typer's own."""
    if not hasattr(param, "display_type_rich") or not hasattr(param, "display_type"):
        return
    if param.nargs != 1:
        shown = f"{param.metavar}..."
    else:
        typed = str(param.display_type(ctx))
        shown = typed.replace("|", " | ") if "|" in typed else ""
    param.display_type_rich = lambda ctx: shown


class AttnCommand(HelpAsTyped, TyperCommand):
    """A lesson's or a tool's command: its help as the student reads it (HelpAsTyped)."""


class OneLineUsageErrors(HelpAsTyped, TyperGroup):
    """The attn group: a usage error in a command line (an unknown option, a value that is not
    one of the choices, a number out of range, an unknown command) becomes one line on stderr and
    exit code 2, like every other user error, instead of Typer's usage box."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: Context | None = None,
        **extra: Any,
    ) -> Context:
        if not args and self.no_args_is_help:  # `attn` alone prints the help, as it should
            return super().make_context(info_name, args, parent, **extra)
        try:  # attn's own options: attn --nosuch
            return super().make_context(info_name, args, parent, **extra)
        except UsageError as error:
            raise _one_line(error, info_name or "attn") from None

    def invoke(self, ctx: Context) -> Any:
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


# The widest layout attn draws: COLUMNS past it (99999999999999999999 overflowed, 999999999 asked
# for 24 GB, 10000000 ran past a minute) is taken as this. Wider than any terminal or projector.
MAX_COLUMNS = 1000


def bounded_width(environ: MutableMapping[str, str]) -> None:
    """COLUMNS as rich will read it: a width of no columns (a CI runner's, or a script's
    COLUMNS=0) would make rich lay out every table, panel and message in zero columns, nothing
    at all printed: taken as none given (the terminal's own, else 80); a width past MAX_COLUMNS
    is taken as MAX_COLUMNS."""
    columns = environ.get("COLUMNS", "").strip()
    if not columns.isdigit():
        return  # rich reads only digits
    if len(columns) > 6 or int(columns) > MAX_COLUMNS:
        environ["COLUMNS"] = str(MAX_COLUMNS)
    elif int(columns) == 0:
        del environ["COLUMNS"]


def main() -> None:
    """The console script. Typer builds every registered command (inspecting each signature)
    before it runs one; a run of one known command builds (and imports) only that one, which
    keeps start-up (and so TAB completion's re-runs) light as commands are added."""
    from attn_cli.core.spelling import encodable

    # A terminal that cannot show √ or ░ (PYTHONIOENCODING=ascii, LANG=C, a code page): every
    # console, Typer's help too, writes through these, in ASCII spellings, never a traceback.
    if reserve_standard_descriptors():  # >&-: a write, or a console made, is one line, exit 2
        sys.stdout = ClosedStdout()
    else:
        guard_stdout()  # a full disk or /dev/full: one line and exit 1 (StdoutFailed)
    sys.stdout, sys.stderr = encodable(sys.stdout), encodable(sys.stderr)
    chosen = sys.argv[1] if len(sys.argv) > 1 else None
    bounded_width(os.environ)
    # A list, not a generator: one call however large the environment (benchmarks/calls.py).
    completing = any([key.endswith("_COMPLETE") for key in os.environ])
    frozen_before = gc.get_freeze_count()
    gc.disable()  # for start-up only: see commands.streams.start_up_done, which turns it back on
    try:
        try:
            if chosen is not None and is_command(chosen) and not completing:
                make_app((chosen,))(prog_name="attn")
            else:
                full_app()(prog_name="attn")
        except StdoutFailed as failed:  # Typer's own help, --version
            stdout_failed(failed.error)
        except StdoutClosed as closed:  # likewise
            print_error(str(closed))
            raise SystemExit(closed.exit_code) from None
        finally:  # what a plain print left in the buffer: written while one line can say so
            flush_stdout()
    finally:  # `main` called in a process that goes on (a test, a notebook): as it was
        gc.enable()
        if frozen_before == 0:
            gc.unfreeze()
