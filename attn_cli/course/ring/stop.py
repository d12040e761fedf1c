"""The tour's stop at attn ring."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "ring",
    "Ring attention: the online softmax spread over processes",
    ("--example", "causal-four"),
    topic="ring attention (context parallelism)",
    lead_in=(
        "FlashAttention keeps the n × n matrix off one chip. Ring attention, next, is for a "
        "sequence that outgrows one GPU altogether: the same running max and running sum spread "
        "over several, each process holding a slice of the queries while the key blocks travel "
        "round a ring."
    ),
    after="flash",
)
