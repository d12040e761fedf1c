"""The tour's stop at attn scaled."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "scaled",
    "Attention as retrieval: queries look up keys",
    ("--example", "library"),
    topic="retrieval view",
    after=None,
)
