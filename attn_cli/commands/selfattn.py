"""attn selfattn: self-attention, with Q, K and V projected from one sequence."""

from __future__ import annotations

from typing import Annotated, Any

from attn_cli.options import DropoutOpt, TokensOpt, input_option, lesson_command, size_option


@lesson_command("selfattn")
def selfattn(
    tokens: TokensOpt = None,
    scale: Annotated[
        bool | None, input_option("--scale/--no-scale", "Divide scores by √d_k (default: on).")
    ] = None,
    dropout: DropoutOpt = None,
    permute: Annotated[
        str | None,
        input_option(
            "--permute",
            'Reorder the tokens, e.g. "2,0,1" (positions from 0), and compare the outputs.',
        ),
    ] = None,
    n: Annotated[
        int | None, size_option("--n", "Random inputs: number of tokens n (default 8).")
    ] = None,
    d: Annotated[
        int | None, size_option("--d", "Random inputs: model width d (default 16).")
    ] = None,
    dk: Annotated[
        int | None, size_option("--dk", "Random inputs: query/key width d_k (default d).")
    ] = None,
    dv: Annotated[
        int | None, size_option("--dv", "Random inputs: value width d_v (default d_k).")
    ] = None,
) -> dict[str, Any]:
    """Self-attention step by step: Q, K, V = X W_Q, X W_K, X W_V, then softmax(Q Kᵀ / √d_k) V."""
    from attn_cli.matrices import parse_int_list

    return {"permute": parse_int_list(permute, "--permute") if permute is not None else None}
