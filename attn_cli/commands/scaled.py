"""attn scaled: scaled dot-product attention, step by step."""

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
    ValidLenOpt,
    input_option,
    size_option,
)
from attn_cli.render import Format


def scaled(
    q: Annotated[
        str | None, input_option("--q", 'Queries Q, m × d_k: "1,0;0,1", JSON or @file.')
    ] = None,
    k: Annotated[str | None, input_option("--k", "Keys K, n × d_k.")] = None,
    v: Annotated[str | None, input_option("--v", "Values V, n × d_v.")] = None,
    scale: Annotated[
        bool | None,
        typer.Option(
            "--scale/--no-scale",
            help="Divide scores by √d_k (default: the example's, else on).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
    valid_len: ValidLenOpt = None,
    dropout: DropoutOpt = None,
    n: Annotated[int | None, size_option("--n", "Random inputs: number of keys n.")] = None,
    m: Annotated[
        int | None, size_option("--m", "Random inputs: number of queries m (default: n).")
    ] = None,
    dk: Annotated[
        int | None, size_option("--dk", "Random inputs: key width d_k (default: 64).")
    ] = None,
    dv: Annotated[
        int | None, size_option("--dv", "Random inputs: value width d_v (default: d_k).")
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
    """Scaled dot-product attention step by step: softmax(Q Kᵀ / √d_k) V."""
    from attn_cli.runner import RunRequest

    request = RunRequest(
        lesson="scaled",
        inputs={"Q": q, "K": k, "V": v},
        options={"scale": scale, "valid_len": valid_len, "dropout": dropout},
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
