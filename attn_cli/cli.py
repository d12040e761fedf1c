"""The attn command line: Typer parses and dispatches; lessons compute; renderers lay out."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Annotated

import typer

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
from attn_cli.commands.common import user_errors

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


def make_app(commands: dict[str, Callable[..., None]]) -> typer.Typer:
    """The Typer app with these commands, each turning a UserError into one line and exit 2."""
    typer_app = typer.Typer(
        name="attn",
        help="Worked examples of the attention mechanism: every intermediate matrix, computed.",
        no_args_is_help=True,
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
