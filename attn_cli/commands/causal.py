"""attn causal: the causal mask, step by step."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from attn_cli.options import (
    INPUT_PANEL,
    DropoutOpt,
    TokensOpt,
    ValidLenOpt,
    input_option,
    lesson_command,
    size_option,
)


class Fill(StrEnum):
    neg_inf = "-inf"
    zero = "zero"


@lesson_command("causal")
def causal(
    scale: Annotated[
        bool | None,
        input_option(
            "--scale/--no-scale",
            "Divide Q Kᵀ by √d_k (default: on; given --scores are never scaled).",
        ),
    ] = None,
    fill: Annotated[
        Fill | None,
        input_option(
            "--fill",
            "What the future scores become: -inf (right) or zero (the classic bug, "
            "with the weight that leaks).",
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
) -> None:
    """Causal attention step by step: softmax(S + M) with M = −∞ above the diagonal."""
