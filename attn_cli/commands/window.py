"""attn window: sliding-window (local) attention, with causal and global variants."""

from __future__ import annotations

from typing import Annotated

from attn_cli.options import input_option, lesson_command, size_option


@lesson_command("window")
def window(
    window: Annotated[
        int | None,
        input_option(
            "--window",
            "Half-width w: query i sees key j when |i − j| ≤ w (default: the example's, else 2).",
        ),
    ] = None,
    causal: Annotated[
        bool | None,
        input_option(
            "--causal/--no-causal",
            "Only the past: query i sees key j when 0 ≤ i − j ≤ w (default: the example's, "
            "else off).",
        ),
    ] = None,
    global_tokens: Annotated[
        str | None,
        input_option(
            "--global",
            'Global tokens, positions from 0 (e.g. "0,5"): they see and are seen by every '
            "token, as in Longformer.",
        ),
    ] = None,
    n: Annotated[
        int | None, size_option("--n", "Random inputs: number of tokens n (default: 8).")
    ] = None,
    dk: Annotated[
        int | None, size_option("--dk", "Random inputs: key width d_k (default: 4).")
    ] = None,
    dv: Annotated[
        int | None, size_option("--dv", "Random inputs: value width d_v (default: d_k).")
    ] = None,
) -> None:
    """Sliding-window attention: each token attends to the keys within w of it (softmax over a band)."""
