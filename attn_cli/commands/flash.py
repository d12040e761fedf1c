"""attn flash: tiled attention with an online softmax (the FlashAttention idea), step by step."""

from __future__ import annotations

from typing import Annotated

import typer

from attn_cli.options import INPUT_PANEL, input_option, lesson_command, size_option


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
) -> None:
    """Tiled attention, one key block at a time: running max, running sum, rescaling.

    No --dropout here: FlashAttention's kernels drop weights inside the kernel, tile by tile, with
    their own generator, so no nn.Dropout mask reproduces theirs (see attn scaled --dropout).
    """
