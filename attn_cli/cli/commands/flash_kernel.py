"""`attn flash --kernel`: the lesson as the GPU kernel that implements it, printed as source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from attn_cli.core.errors import UserError
from attn_cli.render import Format


def kernel_instead(given: dict[str, Any]) -> None:
    """With --kernel, print the kernel's source in the asked --format and end the command."""
    if given.get("kernel"):  # the kernel's source, not a walkthrough: nothing is computed
        show_kernel(Format(given["fmt"]), given["output"])
        raise typer.Exit()


def show_kernel(fmt: Format, output: Path | None) -> None:
    """`attn flash --kernel`: the Triton kernel's source, read as text, laid out in ``fmt``."""
    from attn_cli.cli.commands.common import file_console, start_up_done, stdout_console
    from attn_cli.lessonfiles.kernel_source import kernel_source
    from attn_cli.render import kernel_render

    start_up_done()
    if fmt not in (Format.rich, Format.markdown, Format.json):
        raise UserError(f"--kernel prints rich, markdown or json; not --format {fmt.value}.")
    if output is not None:
        from attn_cli.core.outputs import check_writable

        check_writable(output, "--output")
    source = kernel_source("flash")
    console = stdout_console() if output is None else file_console()
    if fmt is Format.json:
        console.out(kernel_render.kernel_json(source), highlight=False)
    elif fmt is Format.markdown:
        console.out(kernel_render.kernel_markdown(source), highlight=False)
    else:
        console.print(kernel_render.kernel_renderable(source))
    if output is not None:
        from attn_cli.core.outputs import write_text

        write_text(output, console.file.getvalue(), "--output")  # type: ignore[attr-defined]
