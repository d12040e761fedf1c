"""The tour's stop at attn ring."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "ring",
    "Ring attention: the online softmax spread over processes that pass key blocks",
    ("--example", "causal-four"),
    topic="ring attention (context parallelism)",
    lead_in=(
        "FlashAttention keeps the n × n matrix off one chip. When the sequence outgrows one "
        "GPU altogether, the same running max and running sum spread over several: each "
        "process holds a slice of the queries, and the key blocks travel round a ring."
    ),
    after="flash",
)
