"""attn bahdanau: additive attention for one decoder step, optionally beside Luong's scores."""

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


def bahdanau(
    s: Annotated[
        str | None, input_option("--s", 'Decoder state s_t, d_s entries: "1,3", JSON or @file.')
    ] = None,
    h: Annotated[
        str | None, input_option("--h", "Encoder states h_i, one per row: n × d_h.")
    ] = None,
    w1: Annotated[
        str | None, input_option("--w1", "W1, d_a × d_h (W1 h_i: matrix times column).")
    ] = None,
    w2: Annotated[str | None, input_option("--w2", "W2, d_a × d_s.")] = None,
    v: Annotated[str | None, input_option("--v", "v, d_a entries.")] = None,
    wa: Annotated[
        str | None,
        input_option(
            "--wa", "Luong's general W_a, d_s × d_h; implies --compare (default: identity)."
        ),
    ] = None,
    values: Annotated[
        str | None,
        input_option(
            "--values",
            "Values vᵢ (not the score vector --v), one row per encoder state: n × d_v; the "
            "context is Σ αᵢ vᵢ "
            "(default: the encoder states themselves, Σ αᵢ hᵢ).",
        ),
    ] = None,
    compare: Annotated[
        bool | None,
        typer.Option(
            "--compare/--no-compare",
            help="Add Luong's dot and general scores, side by side, with their cost "
            "(default: on when W_a is given).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    dropout: DropoutOpt = None,
    tokens: TokensOpt = None,
    n: Annotated[
        int | None, size_option("--n", "Random inputs: number of encoder states n (default 6).")
    ] = None,
    d: Annotated[
        int | None, size_option("--d", "Random inputs: width d of s_t and h_i (default 8).")
    ] = None,
    da: Annotated[
        int | None, size_option("--da", "Random inputs: attention width d_a (default d).")
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
    """Bahdanau attention for one decoder step: softmax(vᵀ tanh(W1 hᵢ + W2 sₜ)), context Σ αᵢ hᵢ
    (Σ αᵢ vᵢ with --values)."""
    from attn_cli.matrices import parse_names
    from attn_cli.runner import RunRequest

    request = RunRequest(
        lesson="bahdanau",
        inputs={"s_t": s, "H": h, "W1": w1, "W2": w2, "v": v, "W_a": wa, "values": values},
        options={"compare": compare, "dropout": dropout},
        sizes={"n": n, "d": d, "da": da},
        example=example,
        item=item,
        lesson_file=lesson,
        labels={"states": parse_names(tokens, "--tokens")} if tokens is not None else {},
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
