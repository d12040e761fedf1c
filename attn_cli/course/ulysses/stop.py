"""The tour's stop at attn ulysses: past the lectures, after the ring, the last stop."""

from __future__ import annotations

from attn_cli.core.stop import BEYOND_THE_LECTURES, Stop

STOP = Stop(
    "ulysses",
    "Ulysses: sequence shards turned into head shards",
    ("--example", "gqa-four"),
    topic="Ulysses (context parallelism by all-to-all)",
    lead_in=(
        "The ring is one shape of context parallelism. The other, Ulysses, sends no key "
        "blocks round a ring: an all-to-all turns each process's shard of the sequence into "
        "whole sequences of a few heads, next, with the bytes of both methods side by side."
    ),
    after="ring",
    section=BEYOND_THE_LECTURES,
    checked=(
        "attention computed on one process, head by head, over pipes and over PyTorch's gloo "
        "process group, and the bytes against their formulas, in the tests"
    ),
)
