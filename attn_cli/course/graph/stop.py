"""The tour's stop at attn graph."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "graph",
    "Graph attention: a node attends only to its neighbours",
    ("--example", "lonely-node"),
    topic="graph attention",
    lead_in=(
        "A window is one rule for which keys a query may see. Graph attention, next, takes "
        "the rule from a graph: a node attends only to its neighbours."
    ),
    after="window",
)
