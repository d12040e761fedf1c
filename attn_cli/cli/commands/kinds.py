"""attn kinds: the four kinds of attention, each with the command that shows it."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from attn_cli.cli.commands.streams import start_up_done, stdout_console
from attn_cli.cli.options import metavar_of


class KindsFormat(StrEnum):
    rich = "rich"
    json = "json"
    markdown = "markdown"


def kinds(
    fmt: Annotated[
        KindsFormat,
        typer.Option("--format", "-f", metavar=metavar_of(KindsFormat), help="Output format."),
    ] = KindsFormat.rich,
) -> None:
    """The four kinds of attention you will meet (encoder self-attention, causal decoder
    self-attention, cross-attention, masked/local attention): where Q comes from, where K and V
    come from, where each is used, and the attn command that shows each one computed."""
    from attn_cli.lessonfiles.kinds import load_overview

    start_up_done()
    overview = load_overview()
    console = stdout_console()
    if fmt is KindsFormat.json:
        from attn_cli.render.kinds_render import kinds_json

        console.out(kinds_json(overview), highlight=False)
    elif fmt is KindsFormat.markdown:
        from attn_cli.render.kinds_render import kinds_markdown

        console.out(kinds_markdown(overview), highlight=False)
    else:
        from attn_cli.render.kinds_render import kinds_renderable

        console.print(kinds_renderable(overview))
