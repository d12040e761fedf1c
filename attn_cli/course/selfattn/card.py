"""attn selfattn: Q, K and V projected from one sequence X."""

from __future__ import annotations

from attn_cli.core.card import Card, InputSpec, Option, Size, optional
from attn_cli.course.shared import D_K, D_V, DROPOUT, QKV_WEIGHTS

CARD = Card(
    "selfattn",
    summary="Self-attention step by step: Q, K, V = X W_Q, X W_K, X W_V, then "
    "softmax(Q Kᵀ / √d_k) V.",
    inputs=(
        InputSpec(
            "X",
            "x",
            "matrix",
            "tokens as rows",
            help="Tokens X, one per row: n × d (n tokens of width d).",
        ),
        optional(
            "W_Q",
            "wq",
            "matrix",
            "query projection",
            "Query weights W_Q, d × d_k (Q = X W_Q; default: identity).",
            weight=True,
        ),
        optional(
            "W_K",
            "wk",
            "matrix",
            "key projection",
            "Key weights W_K, d × d_k (K = X W_K; default: identity).",
            weight=True,
        ),
        optional(
            "W_V",
            "wv",
            "matrix",
            "value projection",
            "Value weights W_V, d × d_v (V = X W_V; default: identity).",
            weight=True,
        ),
    ),
    positional=("x", "wq", "wk", "wv"),
    rows="tokens",
    options=(
        Option(
            "scale", "Divide scores by √d_k (default: {default}).", True, type=bool, switch=True
        ),
        DROPOUT,
        Option(
            "permute",
            'Reorder the tokens, e.g. "2,0,1" (positions from 0), and compare the outputs.',
            metavar="ORDER",
        ),
    ),
    sizes=(
        Size("n", "number of tokens n (default {default}).", 8),
        Size("d", "model width d (default {default}).", 16),
        Size("dk", "query/key width d_k (default d)."),
        Size("dv", "value width d_v (default d_k)."),
    ),
    figure=("the weights as a heatmap, one row per query token, one column per key token"),
    examples=(
        "attn selfattn --permute 2,0,1",
        'attn selfattn --x "1,0;0,1;1,1" --tokens "the,cat,slept"',
    ),
    symbols=(D_K, D_V, QKV_WEIGHTS),
)
