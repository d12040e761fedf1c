"""attn variance: why scores are divided by √d_k, measured on random vectors."""

from __future__ import annotations

from typing import Annotated

from attn_cli.options import input_option, lesson_command


@lesson_command("variance", item=False)
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
) -> None:
    """Why divide by √d_k: the variance of q·k, the softmax and its gradient, measured."""
