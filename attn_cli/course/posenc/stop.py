"""The tour's stop at attn posenc."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "posenc",
    "Positional encoding: giving tokens an order",
    ("--positions", "8", "--d-model", "6"),
    topic="positional encoding",
    lead_in=(
        "Attention by itself ignores order: permute the tokens (without a causal mask) and "
        "the output rows are permuted the same way. Positional encoding, next, adds each "
        "position's own vector to its token's embedding."
    ),
    after="multihead",
)
