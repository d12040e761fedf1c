"""The tour's stop at attn causal."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "causal",
    "The causal mask: no peeking at later tokens",
    topic="causal mask",
    lead_in=(
        "Every token attended to every token, the later ones included. A model that writes "
        "text one token at a time must not look ahead: the causal mask, next, hides the "
        "future from each token."
    ),
    after="selfattn",
)
