"""The tour's stop at attn flash."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "flash",
    "Tiled attention: the online softmax that avoids the n × n matrix",
    topic="tiled attention (FlashAttention)",
    lead_in=(
        "Of vanilla attention's costs, the n × n scores it stores are the first to run out. "
        "FlashAttention, next, does the same O(n²d) work a block of keys at a time and never "
        "holds the n × n matrix."
    ),
    after="cost",
)
