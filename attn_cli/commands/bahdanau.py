"""attn bahdanau: additive attention for one decoder step, optionally beside Luong's scores."""

from __future__ import annotations

from typing import Annotated

from attn_cli.options import DropoutOpt, TokensOpt, input_option, lesson_command, size_option


@lesson_command("bahdanau", rows="states")
def bahdanau(
    compare: Annotated[
        bool | None,
        input_option(
            "--compare/--no-compare",
            "Add Luong's dot and general scores, side by side, with their cost "
            "(default: on when W_a is given).",
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
) -> None:
    """Bahdanau attention for one decoder step: softmax(vᵀ tanh(W1 hᵢ + W2 sₜ)), context Σ αᵢ hᵢ
    (Σ αᵢ vᵢ with --values)."""
