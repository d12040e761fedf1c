"""attn explore: a lesson live, in the terminal or (--serve) in a browser on localhost.

Parsing and dispatch only; the app lives in attn_cli.explore (Textual, the explore extra),
imported when the command runs, so that the start-up of every other command is unaffected.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.options import FLAG, help_text
from attn_cli.cli.parsing import in_range
from attn_cli.core.errors import UserError


def explore(
    lesson: Annotated[
        str | None,
        typer.Argument(
            metavar="LESSON",
            help=help_text("The lesson to open; the key l switches (default: the first, scaled)."),
            show_default=False,
        ),
    ] = None,
    serve: Annotated[
        bool,
        typer.Option(
            "--serve",
            metavar=FLAG,
            help="Serve the explorer to a browser on this machine (localhost, at --port) "
            "instead of running it in the terminal, its font sized to the window (?fontsize=N "
            "in the address sets it); Ctrl+C stops it.",
        ),
    ] = False,
    port: Annotated[
        int,
        typer.Option(
            "--port",
            metavar="N",
            callback=in_range(1, 65535),
            help="With --serve: the port to listen on.",
        ),
    ] = 8000,
    export_dir: Annotated[
        Path,
        typer.Option(
            "--export-dir",
            metavar="FOLDER",
            help="Where the key x writes the walkthrough as LESSON.json, LESSON.md and LESSON.tex.",
            file_okay=False,
        ),
    ] = Path("."),
) -> None:
    """Explore a lesson live: its inputs as tables you edit, its options as switches and
    lists, every step of its walkthrough recomputed as you type.

    Made for 80 × 24, a projector's screen: it opens on the step of the lesson's attention
    weights (in a lesson without one, its first step), which stays in sight while you edit.
    Every key is on screen: above the inputs (enter or a digit types an entry, + and - nudge
    it), above the steps, in the footer, and ? lists them all."""
    from attn_cli import course as cards
    from attn_cli.cli.commands.streams import start_up_done

    start_up_done()
    name = cards.lesson_names()[0] if lesson is None else cards.card(lesson).name
    require_textual(serve)
    if not export_dir.is_dir():
        raise UserError(f"--export-dir {export_dir}: no such folder; create it first.")
    if serve:
        from attn_cli.cli.commands.streams import require_stdout
        from attn_cli.explore.serve import serve_app

        require_stdout()  # where it says its address (>&-: one line, before it serves)

        serve_app(name, port, export_dir)
        return
    require_a_terminal()
    from attn_cli.cli.flags import COMMAND_LINE
    from attn_cli.explore.app import Explorer

    Explorer(name, export_dir=export_dir, door=COMMAND_LINE).run()


def require_a_terminal() -> None:
    """Refuse, in one line, to start the app where no one can use it: with its input or output
    redirected (a pipe, a file, a script's captured output), where it would wait for keys that
    never come. A browser tab of --serve runs it under textual-serve's driver, which is fine."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return
    redirected = [
        name
        for name, stream in (("input", sys.stdin), ("output", sys.stdout))
        if not (hasattr(stream, "isatty") and stream.isatty())
    ]
    if redirected:
        raise UserError(
            f"attn explore needs a terminal, and its {' and '.join(redirected)} "
            f"{'is' if len(redirected) == 1 else 'are'} redirected here; run it at a terminal, "
            "or add --serve to open it in a browser."
        )


def require_textual(serve: bool = False) -> None:
    """Refuse, in one line that says what to install, when Textual (or for --serve,
    textual-serve) is missing."""
    from attn_cli.core.install import install_command

    missing = [
        module
        for module in ("textual", *(("textual_serve",) if serve else ()))
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        names = " and ".join(module.replace("_", "-") for module in missing)
        pronoun = "them" if len(missing) > 1 else "it"
        raise UserError(
            f"attn explore needs {names}; install {pronoun} with: {install_command('explore')}."
        )
