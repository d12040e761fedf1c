"""attn posenc: sinusoidal positional encoding, its shift rotation and its similarity."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from attn_cli.options import input_option, lesson_command


class LayoutName(StrEnum):
    interleaved = "interleaved"
    split = "split"  # type: ignore[assignment]  # shadows str.split: the option value is "split"


@lesson_command("posenc", seed=False, item=False, precision=3)
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
) -> None:
    """Sinusoidal positional encoding: frequencies, PE, the shift rotation M_k, similarity."""
