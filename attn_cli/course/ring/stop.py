"""The tour's stop at attn ring: past the lectures (their notes never name it), before Ulysses."""

from __future__ import annotations

from attn_cli.core.stop import BEYOND_THE_LECTURES, Stop

STOP = Stop(
    "ring",
    "Ring attention: the online softmax spread over processes",
    ("--example", "causal-four"),
    topic="ring attention (context parallelism)",
    lead_in=(
        "Last, a sequence that outgrows one GPU altogether. Ring attention spreads "
        "FlashAttention's running max and running sum over several processes, each holding a "
        "slice of the queries while the key blocks travel round a ring, next."
    ),
    # Past the lectures, before ulysses (the last): after alibi, whose visits (gqa, sinks, softcap) the
    # tour shows before the next lesson's stop.
    after="alibi",
    section=BEYOND_THE_LECTURES,
    checked=(
        "attention computed on one process (the scaled and causal lessons), over pipes and over "
        "PyTorch's gloo process group, in the tests"
    ),
)
