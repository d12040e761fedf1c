"""The tour's stop at attn cost."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "cost",
    "What attention costs: the complexity tables evaluated",
    topic="the costs evaluated",
    lead_in=(
        "That was up to 2048 tokens of width 32 on one CPU. The next stop evaluates the "
        "lectures' complexity formulas at a real model's sizes, 8192 tokens of width 4096: "
        "the work of each layer type and attention variant, and the bytes of the n × n "
        "scores."
    ),
    after="block",
)
