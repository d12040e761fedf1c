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
    ValidLenOpt,
    input_option,
    size_option,
)
from attn_cli.render import Format


def multihead(
    x: Annotated[
        str | None,
        input_option("--x", 'Tokens X, n × d_in: "1,0,1,0;0,1,1,0", JSON or @file.'),
    ] = None,
    wq: Annotated[
        str | None,
        input_option(
            "--wq",
            "W_Q, d_in × d_out, split column-wise into the heads (d_out = d_in = d_model in "
            "the transformer paper).",
        ),
    ] = None,
    wk: Annotated[str | None, input_option("--wk", "W_K, d_in × d_out.")] = None,
    wv: Annotated[str | None, input_option("--wv", "W_V, d_in × d_out.")] = None,
    wo: Annotated[
        str | None,
        input_option(
            "--wo",
            "W_O, d_out × d_o; optional: without it the result is the concatenated heads "
            "(default, with no weights given: all four drawn from --seed).",
        ),
    ] = None,
    bq: Annotated[
        str | None, input_option("--bq", 'Bias b_Q added to X W_Q, d_out wide: "0.1,0,-0.2".')
    ] = None,
    bk: Annotated[str | None, input_option("--bk", "Bias b_K, d_out wide.")] = None,
    bv: Annotated[str | None, input_option("--bv", "Bias b_V, d_out wide.")] = None,
    bo: Annotated[
        str | None, input_option("--bo", "Bias b_O added to Concat · W_O, d_o wide.")
    ] = None,
    heads: Annotated[
        int | None,
        typer.Option(
            "--heads",
            min=1,
            help="Number of heads h; must divide d_out (default: the example's, else 2).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    causal: Annotated[
        bool,
        typer.Option(
            "--causal",
            help="Causal mask in every head: token i attends to tokens 1 … i only.",
            rich_help_panel=INPUT_PANEL,
        ),
    ] = False,
    valid_len: ValidLenOpt = None,
    dropout: DropoutOpt = None,
    bias: Annotated[
        bool,
        typer.Option(
            "--bias",
            help="Draw a bias for every weight from --seed (N(0, 1/rows of the weight), a "
            "child stream of numpy's default_rng(seed)).",
            rich_help_panel=INPUT_PANEL,
        ),
    ] = False,
    n: Annotated[
        int | None, size_option("--n", "Random inputs: number of tokens n (default: 6).")
    ] = None,
    d_model: Annotated[
        int | None,
        size_option("--d-model", "Random inputs: d_in and d_out together (default: 8)."),
    ] = None,
    d_in: Annotated[
        int | None, size_option("--d-in", "Random inputs: token width d_in (default: d_model).")
    ] = None,
    d_out: Annotated[
        int | None,
        size_option("--d-out", "Random inputs: width d_out of W_Q, W_K, W_V (default: d_in)."),
    ] = None,
    tokens: TokensOpt = None,
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
    """Multi-head attention step by step: Concat(head_1, …, head_h) W_O (+ b_O)."""
    from attn_cli.matrices import parse_names
    from attn_cli.runner import RunRequest

    request = RunRequest(
        lesson="multihead",
        inputs={
            "X": x,
            "W_Q": wq,
            "W_K": wk,
            "W_V": wv,
            "W_O": wo,
            "b_Q": bq,
            "b_K": bk,
            "b_V": bv,
            "b_O": bo,
        },
        options={
            "heads": heads,
            "causal": causal or None,
            "valid_len": valid_len,
            "dropout": dropout,
            "bias": bias or None,
        },
        sizes={"n": n, "d_model": d_model, "d_in": d_in, "d_out": d_out},
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
