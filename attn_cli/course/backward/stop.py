"""The tour's stop at attn backward."""

from __future__ import annotations

from attn_cli.core.stop import Stop

STOP = Stop(
    "backward",
    "How attention learns: the backward pass and √d_k",
    ("--vanishing",),
    topic="how attention learns",
    lead_in=(
        "The lectures' reason for √d_k is the gradient: without it the softmax turns one-hot "
        "and learning stalls. The next stop runs the lecture's first example backwards, from "
        "the gradient at the output to dV, dA, the softmax's Jacobian, dQ and dK, then "
        "measures the gradient that reaches the scores at d_k = 16, 64 and 512, with the "
        "division and without."
    ),
    after="variance",
)
