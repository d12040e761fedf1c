"""attn tour: the lecture's lessons in order, one screen at a time.

Beside the tour (attn_cli.cli.tour, which runs each stop by its own command), not among the
commands it runs (attn_cli.cli.commands): the tour imports them, so they import no tour.
"""

from __future__ import annotations

from typing import Annotated

import typer

from attn_cli.cli.commands.streams import start_up_done, stdout_console
from attn_cli.cli.itinerary import help_text
from attn_cli.cli.options import FLAG


def tour(
    only: Annotated[
        str | None,
        typer.Option(
            "--only",
            metavar="STOPS",
            help="Comma-separated stops to run, each named by its command, e.g. scaled,causal "
            "\\[default: all, in order].",
            show_default=False,
        ),
    ] = None,
    pause: Annotated[
        bool | None,
        typer.Option(
            "--pause/--no-pause",
            metavar=FLAG,
            help="Wait for Enter between screens \\[default: when run at a terminal].",
            show_default=False,
        ),
    ] = None,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            metavar=FLAG,
            help="Show every stop in full, as its command shows it (by default each lesson "
            "stop is shown as --brief shows it, and f at a pause shows the stop just seen in "
            "full).",
        ),
    ] = False,
) -> None:
    # The help (this function's __doc__, set below) lists the stops from the tour itself.
    from attn_cli.cli import terminal
    from attn_cli.cli.tour import Pager, run_tour, select

    start_up_done()

    stops = select(only)
    console = stdout_console()
    if pause is None:
        pause = terminal.interactive()
    run_tour(stops, console, Pager(console, pause, terminal.read_key), brief=not full)


tour.__doc__ = help_text()
