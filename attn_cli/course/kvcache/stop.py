"""The tour's stop at attn kvcache."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "kvcache",
    "KV caching: one new key and value per generated token",
    topic="KV caching",
    lead_in=(
        "Each stop so far computed attention over a whole sequence at once. A model that "
        "generates text adds one token per step and would redo the earlier tokens' work every"
        " time: KV caching, next and last, keeps their keys and values instead."
    ),
    after="linear",
)
