"""attn window: sliding-window attention, a band of keys around each query."""

from __future__ import annotations

from attn_cli.core.card import Card, Option, Size
from attn_cli.course.scaled.card import QKV
from attn_cli.course.shared import D_K, D_V

CARD = Card(
    "window",
    summary="Sliding-window attention: each token attends to the keys within w of it (softmax "
    "over a band).",
    inputs=QKV,  # one sequence: m = n
    positional=("q", "k", "v"),
    options=(
        Option(
            "window",
            "Half-width w: query i sees key j when |i − j| ≤ w; w counts the keys before the "
            "token, not the token: Mistral's W, which counts it (W = 3: the token and the 2 "
            "before), is w + 1 (default: the example's, else {default}).",
            2,
            type=int,
        ),
        Option(
            "causal",
            "Only the past: query i sees key j when 0 ≤ i − j ≤ w (default: the example's, "
            "else {default}).",
            False,
            type=bool,
            switch=True,
        ),
        Option(
            "global_tokens",
            'Global tokens, positions from 0 (e.g. "0,5"): they see and are seen by every '
            "token, as in Longformer.",
            metavar="POSITIONS",
        ),
        Option(
            "layers",
            "Stack L layers of this window: the earliest position whose information reaches each "
            "token after 1, 2, …, L layers (the receptive field), and the span L·w.",
            type=int,
            metavar="L",
        ),
    ),
    sizes=(
        Size("n", "number of tokens n (default: {default}).", 8),
        Size("dk", "key width d_k (default: {default}).", 4),
        Size("dv", "value width d_v (default: d_k)."),
    ),
    examples=(
        "attn window",
        "attn window --n 16 --window 2 --causal --global 0",
        "attn window --example mistral-7b",
    ),
    symbols=(D_K, D_V),
)
