"""The attn command line: Typer parses and dispatches; lessons compute; renderers lay out."""

from __future__ import annotations

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

app = typer.Typer(
    name="attn",
    help="Worked examples of the attention mechanism: every intermediate matrix, computed.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        print(f"attn {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Worked examples of the attention mechanism: every intermediate matrix, computed."""


app.command("scaled")(user_errors(scaled.scaled))
app.command("bahdanau")(user_errors(bahdanau.bahdanau))
app.command("selfattn")(user_errors(selfattn.selfattn))
app.command("causal")(user_errors(causal.causal))
app.command("multihead")(user_errors(multihead.multihead))
app.command("posenc")(user_errors(posenc.posenc))
app.command("variance")(user_errors(variance.variance))
app.command("check")(user_errors(check.check))
app.command("tour")(user_errors(tour.tour))
app.command("flash")(user_errors(flash.flash))
app.command("bench")(user_errors(bench.bench))


def main() -> None:
    app(prog_name="attn")
