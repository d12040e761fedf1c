"""The tour's stop at attn multihead."""

from __future__ import annotations

from attn_cli.core.stop import BEYOND_THE_LECTURES, Stop

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

# Visits to attn multihead past the lectures (see attn_cli.course.visit_stops).
VISITS = (
    Stop(
        "gqa",
        "Grouped-query heads: query heads that share keys and values",
        ("--example", "grouped"),
        topic="grouped-query heads (GQA, MQA)",
        lead_in=(
            "ALiBi and RoPE change the positions. The heads change too: in grouped-query "
            "attention, next, several query heads share one key and value head, and the cache "
            "shrinks with them."
        ),
        after="alibi",
        command="multihead",
        lesson=False,
        section=BEYOND_THE_LECTURES,
        checked=(
            "PyTorch's scaled_dot_product_attention with enable_gqa=True, and the same heads "
            "with K and V repeated, in the tests"
        ),
    ),
)
