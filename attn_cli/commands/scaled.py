"""attn scaled: scaled dot-product attention, step by step."""

from __future__ import annotations

from typing import Annotated

from attn_cli.options import DropoutOpt, ValidLenOpt, input_option, lesson_command, size_option


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
