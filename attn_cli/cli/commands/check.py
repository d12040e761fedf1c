"""attn check: are a lesson file's printed slide values right, to the slide's own rounding?"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.commands.streams import start_up_done, stdout_console
from attn_cli.cli.options import FLAG, metavar_of
from attn_cli.core.errors import UserError

ERRATA_EXIT = 1


class CheckFormat(StrEnum):
    rich = "rich"
    json = "json"


def check(
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="FILE",
            help="Lesson files (TOML) to check; their format is described above.",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    all_bundled: Annotated[
        bool,
        typer.Option(
            "--all",
            metavar=FLAG,
            help="Check the bundled lesson files (they record some errata: exit 1).",
        ),
    ] = False,
    fmt: Annotated[
        CheckFormat,
        typer.Option("--format", "-f", metavar=metavar_of(CheckFormat), help="Output format."),
    ] = CheckFormat.rich,
) -> None:
    r"""Compute every example of a lesson file and report each printed value that is wrong.

    A lesson file is TOML. Only lesson = "scaled" (or another lesson's name) is required; the
    optional title, intro, default_example, \[steps.KEY] tables (title, explanation, latex) and
    \[\[examples]] (name, description, source, options, labels, \[examples.inputs],
    \[examples.printed]) replace the bundled lesson's; any other key is an error. Printed values are text in the matrix
    grammar ("0.51, 0.31; 0.2, 0.8"), keyed by step ("weights"), row ("output\[1]") or entry
    ("weights\[1,2]"), counted from 1.

    A value printed with k decimals must be within half a unit of its k-th decimal; a whole
    number (no decimal point) means the value is whole, to the decimals the lesson shows.

    Exit status (as with diff): 0 if every printed value agrees with the exact one; 1 if some
    printed values differ (the errata are listed: nothing crashed, and the bundled lessons record
    some slides' errata on purpose, so --all exits 1); 2 on a usage error or a malformed file.
    """
    from attn_cli.run.check import check_bundled, check_file

    start_up_done()

    if all_bundled and files:
        raise UserError("give lesson files or --all, not both.")
    if not all_bundled and not files:
        raise UserError("give a lesson file to check (attn check FILE.toml), or --all.")
    console = stdout_console()  # before the work: a closed stdout is refused at once
    results = check_bundled() if all_bundled else [check_file(path) for path in files or []]
    if fmt is CheckFormat.json:
        from attn_cli.render.check_render import check_json

        console.out(check_json(results), highlight=False)
    else:
        from attn_cli.render.check_render import check_renderable

        console.print(check_renderable(results))
    if any(result.errata for result in results):
        raise typer.Exit(code=ERRATA_EXIT)
