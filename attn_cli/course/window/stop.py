"""The tour's stop at attn window."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "window",
    "Sliding-window attention: a band of keys, plus a global token",
    ("--example", "global-first"),
    topic="sliding window",
    lead_in=(
        "FlashAttention gives the exact result with the same O(n²d) work. The next "
        "stops change attention itself so that it does less work: in sliding-window attention "
        "each token sees only the tokens near it."
    ),
    after="flash",
)
