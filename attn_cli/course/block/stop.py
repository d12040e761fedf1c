"""The tour's stop at attn block."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "block",
    "Attention inside a Transformer layer: residual, LayerNorm, FFN",
    topic="attention inside a Transformer layer",
    lead_in=(
        "Attention, heads and positions are the parts. The next stop puts them together into "
        "one Transformer layer, as the lectures draw it: the embeddings plus the positional "
        "encoding, multi-head self-attention, a residual sum and LayerNorm, then a feed-"
        "forward network, another residual sum and LayerNorm."
    ),
    after="posenc",
)
