"""The attn command line: Typer parses and dispatches; lessons compute; renderers lay out."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from attn_cli import __version__
from attn_cli.commands import (
    bahdanau,
    bench,
    causal,
    check,
    flash,
    multihead,
    posenc,
    scaled,
    selfattn,
    tour,
    variance,
)
from attn_cli.commands.common import print_error, user_errors
from attn_cli.errors import UserError

try:  # Typer >= 0.2x ships its own copy of click
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # older Typer runs on click itself
    from click.exceptions import NoArgsIsHelpError, UsageError  # type: ignore[no-redef]

# Name -> command function, in the order `attn --help` lists them.
COMMANDS: dict[str, Callable[..., None]] = {
    "scaled": scaled.scaled,
    "bahdanau": bahdanau.bahdanau,
    "selfattn": selfattn.selfattn,
    "causal": causal.causal,
    "multihead": multihead.multihead,
    "posenc": posenc.posenc,
    "variance": variance.variance,
    "check": check.check,
    "tour": tour.tour,
    "flash": flash.flash,
    "bench": bench.bench,
}


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


class OneLineUsageErrors(TyperGroup):
    """The attn group: a usage error in a command line (an unknown option, a value that is not
    one of the choices, a number out of range, an unknown command) becomes one line on stderr and
    exit code 2, like every other user error, instead of Typer's usage box."""

    def make_context(self, info_name: str | None, args: list[str], **extra: Any) -> typer.Context:
        try:  # attn's own options: attn --nosuch
            return super().make_context(info_name, args, **extra)
        except NoArgsIsHelpError:  # `attn` alone prints the help, as it should
            raise
        except UsageError as error:
            raise _one_line(error, info_name or "attn") from None

    def invoke(self, ctx: typer.Context) -> Any:
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


def make_app(commands: dict[str, Callable[..., None]]) -> typer.Typer:
    """The Typer app with these commands, each turning a UserError into one line and exit 2."""
    typer_app = typer.Typer(
        name="attn",
        help="Worked examples of the attention mechanism: every intermediate matrix, computed.",
        no_args_is_help=True,
        cls=OneLineUsageErrors,
        rich_markup_mode="rich",
    )
    typer_app.callback()(root)
    for name, command in commands.items():
        typer_app.command(name)(user_errors(command))
    return typer_app


app = make_app(COMMANDS)


def main() -> None:
    """The console script. Typer builds every registered command (inspecting each signature)
    before it runs one; a run of one known command builds only that one, which keeps start-up
    (and so TAB completion's re-runs) light as commands are added."""
    chosen = sys.argv[1] if len(sys.argv) > 1 else None
    completing = any(key.endswith("_COMPLETE") for key in os.environ)
    if chosen in COMMANDS and not completing:
        make_app({chosen: COMMANDS[chosen]})(prog_name="attn")
    else:
        app(prog_name="attn")
