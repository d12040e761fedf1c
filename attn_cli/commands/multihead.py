"""attn multihead: h attention heads, concatenated and projected."""

from __future__ import annotations

from typing import Annotated

import typer

from attn_cli.options import (
    INPUT_PANEL,
    DropoutOpt,
    TokensOpt,
    ValidLenOpt,
    lesson_command,
    size_option,
)


@lesson_command("multihead")
def multihead(
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
        int | None, size_option("--d-model", "Random inputs: d_in and d_out together (default: 8).")
    ] = None,
    d_in: Annotated[
        int | None, size_option("--d-in", "Random inputs: token width d_in (default: d_model).")
    ] = None,
    d_out: Annotated[
        int | None,
        size_option("--d-out", "Random inputs: width d_out of W_Q, W_K, W_V (default: d_in)."),
    ] = None,
    tokens: TokensOpt = None,
) -> None:
    """Multi-head attention step by step: Concat(head_1, …, head_h) W_O (+ b_O)."""
