"""`attn flash --kernel`: the lesson as the GPU kernel that implements it, printed as source
(the flash card's before_run hook, attn_cli.course.flash.kernel, returns the source)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from attn_cli.cli.commands.streams import file_console, start_up_done, stdout_console
from attn_cli.core.errors import UserError
from attn_cli.render import Format

if TYPE_CHECKING:
    from attn_cli.lessonfiles.kernel_source import KernelSource


def show_kernel(source: KernelSource, fmt: Format, output: Path | None) -> None:
    """`attn flash --kernel`: the Triton kernel's source, read as text, laid out in ``fmt``."""
    from attn_cli.render import kernel_render

    start_up_done()
    if fmt not in (Format.rich, Format.markdown, Format.json):
        raise UserError(f"--kernel prints rich, markdown or json; not --format {fmt.value}.")
    if output is not None:
        from attn_cli.core.outputs import check_writable

        check_writable(output, "--output")
    console = stdout_console(output_option=True) if output is None else file_console()
    if fmt is Format.json:
        console.out(kernel_render.kernel_json(source), highlight=False)
    elif fmt is Format.markdown:
        console.out(kernel_render.kernel_markdown(source), highlight=False)
    else:
        console.print(kernel_render.kernel_renderable(source))
    if output is not None:
        from attn_cli.core.outputs import write_text

        write_text(output, console.file.getvalue(), "--output")  # type: ignore[attr-defined]
