"""The tour's stop at attn alibi."""

from __future__ import annotations

from attn_cli.core.stop import BEYOND_THE_LECTURES, Stop

STOP = Stop(
    "alibi",
    "ALiBi: a linear penalty on distance, no positional encoding",
    ("--example", "eight-positions"),
    topic="ALiBi",
    lead_in=(
        "RoPE still turns q and k. ALiBi, next, adds no position to them at all: each head "
        "subtracts its slope times the distance from its scores."
    ),
    after="rope",
    section=BEYOND_THE_LECTURES,
    checked=(
        "the ALiBi paper's slope function (non-power-of-two head counts included) and BLOOM's "
        "bias, written in PyTorch in the tests"
    ),
)
