"""attn causal: the causal mask, step by step."""

from __future__ import annotations

from enum import StrEnum
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


class Fill(StrEnum):
    neg_inf = "-inf"
    zero = "zero"


def causal(
    scores: Annotated[
        str | None,
        input_option(
            "--scores", 'Scores S, n × n, used as given: "2.1,1.5;0.8,3.1", JSON or @file.'
        ),
    ] = None,
    q: Annotated[str | None, input_option("--q", "Queries Q, n × d_k (with --k).")] = None,
    k: Annotated[str | None, input_option("--k", "Keys K, n × d_k (with --q).")] = None,
    v: Annotated[
        str | None, input_option("--v", "Values V, n × d_v (with --scores or --q/--k).")
    ] = None,
    x: Annotated[
        str | None, input_option("--x", "Tokens X, n × d_model: Q = X W_Q, K = X W_K, V = X W_V.")
    ] = None,
    wq: Annotated[
        str | None, input_option("--wq", "W_Q, d_model × d_k, with --x (default: identity).")
    ] = None,
    wk: Annotated[
        str | None, input_option("--wk", "W_K, d_model × d_k, with --x (default: identity).")
    ] = None,
    wv: Annotated[
        str | None, input_option("--wv", "W_V, d_model × d_v, with --x (default: identity).")
    ] = None,
    scale: Annotated[
        bool | None,
        typer.Option(
            "--scale/--no-scale",
            help="Divide Q Kᵀ by √d_k (default: on; given --scores are never scaled).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    fill: Annotated[
        Fill | None,
        typer.Option(
            "--fill",
            help="What the future scores become: -inf (right) or zero (the classic bug, "
            "with the weight that leaks).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    conventions: Annotated[
        bool,
        typer.Option(
            "--conventions",
            help="Also show PyTorch's boolean mask conventions and a row with no visible key.",
            rich_help_panel=INPUT_PANEL,
        ),
    ] = False,
    valid_len: ValidLenOpt = None,
    dropout: DropoutOpt = None,
    n: Annotated[
        int | None, size_option("--n", "Random inputs: number of tokens n (default: 5).")
    ] = None,
    dk: Annotated[
        int | None,
        size_option("--dk", "Random inputs: draw Q, K, V of width d_k instead of scores."),
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
    """Causal attention step by step: softmax(S + M) with M = −∞ above the diagonal."""
    from attn_cli.matrices import parse_names
    from attn_cli.runner import RunRequest

    request = RunRequest(
        lesson="causal",
        inputs={"S": scores, "Q": q, "K": k, "V": v, "X": x, "W_Q": wq, "W_K": wk, "W_V": wv},
        options={
            "scale": scale,
            "fill": None if fill is None else fill.value,
            "conventions": conventions or None,
            "valid_len": valid_len,
            "dropout": dropout,
        },
        sizes={"n": n, "dk": dk},
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
