"""The tour's stop at attn linear."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "linear",
    "Linear attention: the n × n matrix reassociated away",
    topic="linear attention",
    lead_in=(
        "Windows and graphs drop keys. Linear attention, next, keeps every key but replaces "
        "the softmax by a product of feature maps, so the products can be regrouped and the n"
        " × n matrix never forms."
    ),
    after="graph",
)
