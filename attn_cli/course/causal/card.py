"""attn causal: each token attends to itself and the tokens before it."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, Option, Size, optional
from attn_cli.course.shared import D_K, D_V, DROPOUT, QKV_WEIGHTS, VALID_LEN

CARD = Card(
    "causal",
    summary="Causal attention step by step: softmax(S + M) with M = −∞ above the diagonal.",
    inputs=(
        optional(
            "S",
            "scores",
            "matrix",
            "scores, used as given",
            "Scores S, n × n (n tokens), used as given.",
        ),
        optional("Q", "q", "matrix", "queries", "Queries Q, n × d_k (with {k})."),
        optional("K", "k", "matrix", "keys", "Keys K, n × d_k (with {q})."),
        optional("V", "v", "matrix", "values", "Values V, n × d_v (with {scores} or {q}/{k})."),
        optional(
            "X",
            "x",
            "matrix",
            "tokens",
            "Tokens X, n × d_model: Q = X W_Q, K = X W_K, V = X W_V.",
        ),
        optional(
            "W_Q",
            "wq",
            "matrix",
            "query weights",
            "Query weights W_Q, d_model × d_k, with {x} (default: identity).",
        ),
        optional(
            "W_K",
            "wk",
            "matrix",
            "key weights",
            "Key weights W_K, d_model × d_k, with {x} (default: identity).",
        ),
        optional(
            "W_V",
            "wv",
            "matrix",
            "value weights",
            "Value weights W_V, d_model × d_v, with {x} (default: identity).",
        ),
    ),
    positional=("q", "k", "v"),
    rows="tokens",
    options=(
        Option(
            "scale",
            "Divide Q Kᵀ by √d_k (default: {default}; given {scores} are never scaled).",
            True,
            type=bool,
            switch=True,
        ),
        Option(
            "fill",
            "What the future scores become: -inf (right) or zero (the classic bug, with the "
            "weight that leaks).",
            default=variants.FILLS[0],
            choices=variants.FILLS,
        ),
        Option(
            "conventions",
            "Also show PyTorch's boolean mask conventions and a row with no visible key.",
            False,
            type=bool,
        ),
        VALID_LEN,
        DROPOUT,
    ),
    sizes=(
        Size("n", "number of tokens n (default: {default}).", 5),
        Size("dk", "draw Q, K, V of width d_k instead of scores."),
    ),
    figure=(
        "the weights as a heatmap, the masked future cells in grey (with {fill=zero}, "
        "hatched: the weight that leaks)"
    ),
    examples=(
        "attn causal",
        "attn causal --fill zero",
        "attn causal --n 4 --dk 8 --conventions",
    ),
    symbols=(
        D_K,
        D_V,
        ("d_model", "the width of a token, a row of X"),
        QKV_WEIGHTS,
    ),
)
