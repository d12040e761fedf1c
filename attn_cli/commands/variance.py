"""attn variance: why scores are divided by √d_k, measured on random vectors."""

from __future__ import annotations

from typing import Annotated

from attn_cli.commands.common import run_lesson_command
from attn_cli.options import (
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
    input_option,
)
from attn_cli.render import Format


def variance(
    dk: Annotated[
        str | None,
        input_option(
            "--dk", 'Widths d_k: one value or a list, e.g. "1,4,16,64,256,1024" (the default).'
        ),
    ] = None,
    samples: Annotated[
        int | None,
        input_option("--samples", "Samples per d_k, each one query and its keys (default: 3000)."),
    ] = None,
    keys: Annotated[
        int | None, input_option("--keys", "Keys n per softmax, at least 2 (default: 8).")
    ] = None,
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
    """Why divide by √d_k: the variance of q·k, the softmax and its gradient, measured."""
    from attn_cli.runner import RunRequest

    request = RunRequest(
        lesson="variance",
        options={"dk": dk, "samples": samples, "keys": keys},
        example=example,
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
