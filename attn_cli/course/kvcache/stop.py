"""The tour's stop at attn kvcache."""

from __future__ import annotations

from attn_cli.core.stop import BEYOND_THE_LECTURES, Stop

STOP = Stop(
    "kvcache",
    "KV caching: one new key and value per generated token",
    topic="KV caching",
    lead_in=(
        "Each stop so far computed attention over a whole sequence at once. A model that "
        "generates text adds one token per step and would redo the earlier tokens' work every"
        " time: KV caching, next (the lectures' last stop), keeps their keys and values instead."
    ),
    after="linear",
)

# Visits to attn kvcache past the lectures (see attn_cli.course.visit_stops).
VISITS = (
    Stop(
        "sinks",
        "Attention sinks: the first token a cache must keep",
        ("--example", "sink"),
        topic="attention sinks",
        lead_in=(
            "A shared key and value head makes the cache smaller; a window makes it stop "
            "growing, by evicting the oldest tokens. What that does when the oldest token "
            "is where softmax parks its weight, and StreamingLLM's fix, next."
        ),
        after="gqa",
        command="kvcache",
        lesson=False,
        section=BEYOND_THE_LECTURES,
        checked=(
            "PyTorch's scaled_dot_product_attention with each cache as its boolean mask, in the "
            "tests"
        ),
    ),
)
