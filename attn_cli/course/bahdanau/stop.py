"""The tour's stop at attn bahdanau."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "bahdanau",
    "Additive attention: a decoder scores each encoder state",
    ("--example", "cat-slept"),
    topic="Bahdanau (additive)",
    lead_in=(
        "A dot product is one way to score a query against a key. The first attention model, "
        "for translation (Bahdanau, Cho and Bengio, 2015), scored with a small network "
        "instead: additive attention, next, beside the dot-product scores of Luong et al."
    ),
    after="backward",
)
