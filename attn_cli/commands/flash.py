"""attn flash: tiled attention with an online softmax (the FlashAttention idea), step by step."""

from __future__ import annotations

from typing import Annotated

import typer

from attn_cli.commands.common import run_lesson_command
from attn_cli.options import (
    INPUT_PANEL,
    BackendOpt,
    DeviceName,
    DeviceOpt,
    DtypeName,
    DtypeOpt,
    ExampleOpt,
    FormatOpt,
    FullOpt,
    ItemOpt,
    LessonFileOpt,
    ListExamplesOpt,
    OutputOpt,
    PlotOpt,
    PrecisionOpt,
    QuizOpt,
    SeedOpt,
    TimeOpt,
    input_option,
    size_option,
)
from attn_cli.render import Format


def flash(
    q: Annotated[
        str | None, input_option("--q", 'Queries Q, m × d_k: "1,0;0,1", JSON or @file.')
    ] = None,
    k: Annotated[str | None, input_option("--k", "Keys K, n × d_k.")] = None,
    v: Annotated[str | None, input_option("--v", "Values V, n × d_v.")] = None,
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
        typer.Option(
            "--query-block",
            help="Queries per tile: adds the outer loop over query tiles, each running the loop "
            "over key blocks, as FlashAttention does (default: the example's, else one tile "
            "holding every query: the inner loop only).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    causal: Annotated[
        bool | None,
        typer.Option(
            "--causal/--no-causal",
            help="Mask future keys: query i sees keys 1..i (default: the example's, else off).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    scale: Annotated[
        bool | None,
        typer.Option(
            "--scale/--no-scale",
            help="Divide scores by √d_k (default: the example's, else on).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
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
    seed: SeedOpt = 0,
    example: ExampleOpt = None,
    item: ItemOpt = 0,
    list_examples: ListExamplesOpt = False,
    quiz: QuizOpt = False,
    lesson: LessonFileOpt = None,
    fmt: FormatOpt = Format.rich,
    precision: PrecisionOpt = 4,
    full: FullOpt = False,
    output: OutputOpt = None,
    plot: PlotOpt = None,
    time: TimeOpt = False,
    backend: BackendOpt = None,
    device: DeviceOpt = DeviceName.cpu,
    dtype: DtypeOpt = DtypeName.float64,
) -> None:
    """Tiled attention, one key block at a time: running max, running sum, rescaling.

    No --dropout here: FlashAttention's kernels drop weights inside the kernel, tile by tile, with
    their own generator, so no nn.Dropout mask reproduces theirs (see attn scaled --dropout).
    """
    from attn_cli.runner import RunRequest

    request = RunRequest(
        lesson="flash",
        inputs={"Q": q, "K": k, "V": v},
        options={"block": block, "causal": causal, "scale": scale, "query_block": query_block},
        sizes={"n": n, "m": m, "dk": dk, "dv": dv},
        example=example,
        item=item,
        lesson_file=lesson,
        seed=seed,
        backend=backend,
        device=device,
        dtype=dtype,
        time_steps=time,
    )
    run_lesson_command(
        request,
        fmt=fmt,
        precision=precision,
        full=full,
        list_examples=list_examples,
        quiz=quiz,
        output=output,
        plot=plot,
    )
