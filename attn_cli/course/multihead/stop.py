"""The tour's stop at attn multihead."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "multihead",
    "Multi-head attention: heads side by side",
    topic="multi-head",
    lead_in=(
        "One set of projections gives each token one way to attend. Multi-head attention, "
        "next, runs several smaller attentions side by side, each with its own projections, "
        "and joins their outputs."
    ),
    after="causal",
)
