"""The tour's stop at `attn bench`, declared beside the tour rather than in the command's module
(attn_cli.cli.commands.bench): the tour's itinerary reads it, and the commands import the tour,
so the tour imports no command. Kept light, as the itinerary is (`attn --help` reads it).
"""

from __future__ import annotations

from attn_cli.core.stop import Stop

# The tour's stop at attn bench: the O(n²) wall measured, small enough for any machine.
# The lesson's own numpy code (every n × n score in memory) against the tiled loop (one key
# block of 64 at a time), on every machine, with or without PyTorch. Memory grows as n² against
# n from the first size; time needs n in the hundreds to leave fixed costs behind. About 10 s on
# a 2-core laptop (see docs/benchmarks.md).
BENCH_ARGS = (
    "--device", "cpu", "--impl", "numpy,tiled-numpy", "--sizes", "256..2048", "--d", "32",
    "--heads", "1", "--block", "64",
)  # fmt: skip

STOP = Stop(
    "bench",
    "The O(n²) wall, measured: a small run on the CPU",
    BENCH_ARGS,
    topic="the O(n²) wall measured",
    lead_in=(
        "Of everything in a Transformer layer, only attention compares every token with every"
        " other: its n × n scores, one matrix per head and layer. The next stop measures what"
        " they cost as the sequence grows: the O(n²) wall."
    ),
    after="induction",
    lesson=False,
)
