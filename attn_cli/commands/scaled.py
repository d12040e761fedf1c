"""attn scaled: scaled dot-product attention, step by step."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from attn_cli.options import (
    INPUT_PANEL,
    DropoutOpt,
    ValidLenOpt,
    input_option,
    lesson_command,
    size_option,
)


class Normaliser(StrEnum):  # the choices of mechanisms/normalise.NORMALISERS (a test holds them)
    softmax = "softmax"
    sparsemax = "sparsemax"
    sigmoid = "sigmoid"
    hardmax = "hardmax"


@lesson_command("scaled")
def scaled(
    scale: Annotated[
        bool | None,
        input_option(
            "--scale/--no-scale", "Divide scores by √d_k (default: the example's, else on)."
        ),
    ] = None,
    valid_len: ValidLenOpt = None,
    dropout: DropoutOpt = None,
    normalise: Annotated[
        Normaliser | None,
        typer.Option(
            "--normalise",
            metavar="NAME",  # the four choices' metavar would squeeze the panel's help column
            help="What turns each row of scores into weights: softmax (default), sparsemax "
            "(some weights exactly 0, with its threshold τ), sigmoid (σ, then divided by the "
            "row sum) or hardmax (all on the maximum; no gradient).",
            rich_help_panel=INPUT_PANEL,
            show_default=False,
        ),
    ] = None,
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
) -> None:
    """Scaled dot-product attention step by step: softmax(Q Kᵀ / √d_k) V."""
