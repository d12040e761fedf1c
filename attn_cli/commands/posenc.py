"""attn posenc: sinusoidal positional encoding, its shift rotation and its similarity."""

from __future__ import annotations

from enum import StrEnum
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
    TimeOpt,
    input_option,
)
from attn_cli.render import Format


class LayoutName(StrEnum):
    interleaved = "interleaved"
    split = "split"


def posenc(
    positions: Annotated[
        int | None,
        input_option("--positions", "Number of positions N: rows 0 .. N−1 (default: 8)."),
    ] = None,
    d_model: Annotated[
        int | None, input_option("--d-model", "Width d_model, even: d_model/2 pairs (default: 8).")
    ] = None,
    base: Annotated[
        float | None, input_option("--base", "Base of the wavelengths (default: 10000).")
    ] = None,
    offset: Annotated[
        int | None, input_option("--offset", "Shift k for PE(pos+k) = M_k PE(pos) (default: 3).")
    ] = None,
    layout: Annotated[
        LayoutName | None,
        input_option(
            "--layout",
            "interleaved: sin, cos, sin, … (the paper's); split: all sines, then all cosines "
            "(default: interleaved).",
        ),
    ] = None,
    example: ExampleOpt = None,
    list_examples: ListExamplesOpt = False,
    quiz: QuizOpt = False,
    lesson: LessonFileOpt = None,
    fmt: FormatOpt = Format.rich,
    precision: PrecisionOpt = 3,  # eight columns of signed numbers fit in 80 columns
    full: FullOpt = False,
    output: OutputOpt = None,
    plot: PlotOpt = None,
    time: TimeOpt = False,
    backend: BackendOpt = None,
    device: DeviceOpt = DeviceName.cpu,
    dtype: DtypeOpt = DtypeName.float64,
) -> None:
    """Sinusoidal positional encoding: frequencies, PE, the shift rotation M_k, similarity."""
    from attn_cli.runner import RunRequest

    request = RunRequest(
        lesson="posenc",
        options={
            "positions": positions,
            "d_model": d_model,
            "base": base,
            "offset": offset,
            "layout": None if layout is None else layout.value,
        },
        example=example,
        lesson_file=lesson,
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
