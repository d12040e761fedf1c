"""attn flash: tiled attention with an online softmax (the FlashAttention idea), step by step."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from attn_cli.errors import UserError
from attn_cli.options import INPUT_PANEL, input_option, lesson_command, size_option
from attn_cli.render import Format


@lesson_command("flash")
def flash(
    block: Annotated[
        int | None,
        typer.Option(
            "--block",
            min=1,
            help="Keys per block (default: the example's, else 2).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    query_block: Annotated[
        int | None,
        input_option(
            "--query-block",
            "Queries per tile: adds the outer loop over query tiles, each running the loop over "
            "key blocks, as FlashAttention does (default: the example's, else one tile holding "
            "every query: the inner loop only).",
        ),
    ] = None,
    causal: Annotated[
        bool | None,
        input_option(
            "--causal/--no-causal",
            "Mask future keys: query i sees keys 1..i (default: the example's, else off).",
        ),
    ] = None,
    scale: Annotated[
        bool | None,
        input_option(
            "--scale/--no-scale", "Divide scores by √d_k (default: the example's, else on)."
        ),
    ] = None,
    sram: Annotated[
        int | None,
        input_option(
            "--sram",
            "On-chip memory M in KiB, for the HBM traffic step (default: 228, the shared memory "
            "of one streaming multiprocessor of an NVIDIA H100).",
        ),
    ] = None,
    n: Annotated[int | None, size_option("--n", "Random inputs: number of keys n.")] = None,
    m: Annotated[
        int | None, size_option("--m", "Random inputs: number of queries m (default: n).")
    ] = None,
    dk: Annotated[
        int | None, size_option("--dk", "Random inputs: key width d_k (default: 4).")
    ] = None,
    dv: Annotated[
        int | None, size_option("--dv", "Random inputs: value width d_v (default: d_k).")
    ] = None,
    kernel: Annotated[
        bool,
        typer.Option(
            "--kernel",
            help="Print the lesson as a GPU kernel instead: the Triton source of FlashAttention's "
            "forward pass, each part marked with the step it implements (--format rich, "
            "markdown or json; --output; needs no GPU and no triton). See docs/kernel.md.",
        ),
    ] = False,
) -> None:
    """Tiled attention, one key block at a time: running max, running sum, rescaling.

    No --dropout here: FlashAttention's kernels drop weights inside the kernel, tile by tile, with
    their own generator, so no nn.Dropout mask reproduces theirs (see attn scaled --dropout).
    """
    if kernel:  # the kernel's source, not a walkthrough: nothing is computed
        params = _current_params()  # the shared --format and --output, parsed by now
        show_kernel(Format(params["fmt"]), params["output"])  # type: ignore[arg-type]
        raise typer.Exit()


def _current_params() -> dict[str, object]:
    """The running command's parsed parameters, from the context of the click that Typer runs
    on (Typer >= 0.2x ships its own copy; older Typer runs on click itself)."""
    import importlib

    for name in ("typer._click.globals", "click.globals"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return dict(module.get_current_context().params)
    raise RuntimeError("Typer runs on no click that this code knows")


def show_kernel(fmt: Format, output: Path | None) -> None:
    """`attn flash --kernel`: the Triton kernel's source, read as text, laid out in ``fmt``."""
    from attn_cli.commands.common import file_console, start_up_done, stdout_console
    from attn_cli.kernel_source import kernel_source
    from attn_cli.render import kernel_render

    start_up_done()
    if fmt not in (Format.rich, Format.markdown, Format.json):
        raise UserError(f"--kernel prints rich, markdown or json; not --format {fmt.value}.")
    if output is not None:
        from attn_cli.outputs import check_writable

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
        from attn_cli.outputs import write_text

        write_text(output, console.file.getvalue(), "--output")  # type: ignore[attr-defined]
