"""attn rope: rotary position embedding, q and k turned by their position."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, InputSpec, Option, Size

CARD = Card(
    "rope",
    summary="Rotary position embedding (RoPE): q and k turned by m·θᵢ, so each score depends on "
    "the offset m − n only.",
    inputs=(
        InputSpec(
            "Q",
            "q",
            "matrix",
            "queries",
            help="Queries Q, n × d (row m: the query at position m).",
        ),
        InputSpec("K", "k", "matrix", "keys", help="Keys K, n × d (row n: the key at position n)."),
    ),
    positional=("q", "k"),
    options=(
        Option(
            "layout",
            "Which dimensions a pair turns: interleaved, pairs (2i, 2i+1) as the RoFormer paper "
            "and Meta's Llama code; split, pairs (i, i + r/2) as Hugging Face's rotate_half "
            "(default: the example's, else {default}).",
            default=variants.LAYOUTS[0],
            choices=variants.LAYOUTS,
        ),
        Option(
            "base",
            "θᵢ = base^(−2i/r) (default: {default}, the paper's; Llama 3: 500000).",
            10000.0,
            type=float,
        ),
        Option(
            "rotary_dim",
            "Partial rotary: turn only the first r dimensions, even, the rest pass through "
            "(GPT-NeoX's rotary_pct; default: all d).",
            type=int,
            metavar="R",
        ),
        Option(
            "offset",
            "Shift s: every position moved by s, to show the scores do not change (default: "
            "{default}).",
            3,
            type=int,
            metavar="S",
        ),
    ),
    sizes=(
        Size("n", "number of positions n (default: {default}).", 6),
        Size("dk", "width d of each query and key, even (default: {default}).", 4),
    ),
    examples=(
        "attn rope",
        "attn rope --example four-tokens --layout split",
        "attn rope --n 8 --dk 8 --rotary-dim 4 --base 500000",
    ),
    symbols=(("θ", "θᵢ is pair i's angle per position, base^(−2i/r)"),),
)
