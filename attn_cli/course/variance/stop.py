"""The tour's stop at attn variance."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "variance",
    "Why divide by √d_k: the variance of a dot product",
    ("--dk", "4,64,512"),
    topic="why √d_k",
    lead_in=(
        "The lecture's formula is softmax(Q Kᵀ / √d_k) V: every score is divided by √d_k "
        "before the softmax. Why that number? The next stop measures how the spread of a dot "
        "product grows with the width d_k of the vectors, and what a wide spread does to the "
        "softmax."
    ),
    after="scaled",
)
