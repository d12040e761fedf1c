"""attn selfattn: self-attention, with Q, K and V projected from one sequence."""

from __future__ import annotations

from typing import Annotated

import typer

from attn_cli.commands.common import run_lesson_command
from attn_cli.options import (
    INPUT_PANEL,
    BackendOpt,
    DeviceName,
    DeviceOpt,
    DropoutOpt,
    DropoutSeedOpt,
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
    TimeOpt,
    TokensOpt,
    input_option,
    size_option,
)
from attn_cli.render import Format


def selfattn(
    x: Annotated[
        str | None, input_option("--x", 'Tokens X as rows, n × d: "1,0;0,1;1,1", JSON or @file.')
    ] = None,
    wq: Annotated[
        str | None, input_option("--wq", "W_Q, d × d_k (Q = X W_Q; default: identity).")
    ] = None,
    wk: Annotated[
        str | None, input_option("--wk", "W_K, d × d_k (K = X W_K; default: identity).")
    ] = None,
    wv: Annotated[
        str | None, input_option("--wv", "W_V, d × d_v (V = X W_V; default: identity).")
    ] = None,
    tokens: TokensOpt = None,
    scale: Annotated[
        bool | None,
        typer.Option(
            "--scale/--no-scale",
            help="Divide scores by √d_k (default: on).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    dropout: DropoutOpt = None,
    permute: Annotated[
        str | None,
        typer.Option(
            "--permute",
            help='Reorder the tokens, e.g. "2,0,1" (positions from 0), and compare the outputs.',
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    n: Annotated[
        int | None, size_option("--n", "Random inputs: number of tokens n (default 8).")
    ] = None,
    d: Annotated[
        int | None, size_option("--d", "Random inputs: model width d (default 16).")
    ] = None,
    dk: Annotated[
        int | None, size_option("--dk", "Random inputs: query/key width d_k (default d).")
    ] = None,
    dv: Annotated[
        int | None, size_option("--dv", "Random inputs: value width d_v (default d_k).")
    ] = None,
    seed: DropoutSeedOpt = 0,
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
    """Self-attention step by step: Q, K, V = X W_Q, X W_K, X W_V, then softmax(Q Kᵀ / √d_k) V."""
    from attn_cli.matrices import parse_int_list, parse_names
    from attn_cli.runner import RunRequest

    request = RunRequest(
        lesson="selfattn",
        inputs={"X": x, "W_Q": wq, "W_K": wk, "W_V": wv},
        options={
            "scale": scale,
            "permute": parse_int_list(permute, "--permute") if permute is not None else None,
            "dropout": dropout,
        },
        sizes={"n": n, "d": d, "dk": dk, "dv": dv},
        example=example,
        item=item,
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
