"""attn multihead: h attention heads, concatenated and projected."""

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
    LessonFileOpt,
    ListExamplesOpt,
    OutputOpt,
    PlotOpt,
    PrecisionOpt,
    QuizOpt,
    SeedOpt,
    TimeOpt,
    TokensOpt,
    input_option,
    size_option,
)
from attn_cli.render import Format


def multihead(
    x: Annotated[
        str | None,
        input_option("--x", 'Tokens X, n × d_model: "1,0,1,0;0,1,1,0", JSON or @file.'),
    ] = None,
    wq: Annotated[
        str | None,
        input_option("--wq", "W_Q, d_model × d_model, split column-wise into the heads."),
    ] = None,
    wk: Annotated[str | None, input_option("--wk", "W_K, d_model × d_model.")] = None,
    wv: Annotated[str | None, input_option("--wv", "W_V, d_model × d_model.")] = None,
    wo: Annotated[
        str | None,
        input_option(
            "--wo", "W_O, d_model × d_model (default: all four weights drawn from --seed)."
        ),
    ] = None,
    heads: Annotated[
        int | None,
        typer.Option(
            "--heads",
            min=1,
            help="Number of heads h; must divide d_model (default: the example's, else 2).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    n: Annotated[
        int | None, size_option("--n", "Random inputs: number of tokens n (default: 6).")
    ] = None,
    d_model: Annotated[
        int | None, size_option("--d-model", "Random inputs: token width d_model (default: 8).")
    ] = None,
    tokens: TokensOpt = None,
    seed: SeedOpt = 0,
    example: ExampleOpt = None,
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
    """Multi-head attention step by step: Concat(head_1, …, head_h) W_O."""
    from attn_cli.matrices import parse_names
    from attn_cli.runner import RunRequest

    request = RunRequest(
        lesson="multihead",
        inputs={"X": x, "W_Q": wq, "W_K": wk, "W_V": wv, "W_O": wo},
        options={"heads": heads},
        sizes={"n": n, "d_model": d_model},
        example=example,
        lesson_file=lesson,
        labels={"tokens": parse_names(tokens, "--tokens")} if tokens is not None else {},
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
