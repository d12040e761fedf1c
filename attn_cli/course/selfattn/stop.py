"""The tour's stop at attn selfattn."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "selfattn",
    "Self-attention: Q, K and V from one sequence",
    topic="self-attention",
    lead_in=(
        "There the query came from the decoder and the keys and values from the encoder. In "
        "self-attention, next, one sequence supplies all three: each token is projected to a "
        "query, a key and a value by learned matrices W_Q, W_K and W_V."
    ),
    after="bahdanau",
)
