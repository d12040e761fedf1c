"""attn alibi: attention with linear biases, a slope per head and no positional encoding."""

from __future__ import annotations

from attn_cli.core.card import Card, InputSpec, Option, Size

CARD = Card(
    "alibi",
    summary="ALiBi: each head adds −m·|i − j| to its scores (causal: −m·(i − j)), a slope m per "
    "head and no positional encoding.",
    inputs=(
        InputSpec(
            "Q",
            "q",
            "matrix",
            "queries",
            help="Queries Q, n × d (row i: the query at position i).",
        ),
        InputSpec("K", "k", "matrix", "keys", help="Keys K, n × d (row j: the key at position j)."),
    ),
    positional=("q", "k"),
    options=(
        Option(
            "heads",
            "Number of heads H: slopes 2^(−8h/H), the paper's rule when H is not a power of two "
            "(default: the example's, else {default}).",
            4,
            type=int,
            minimum=1,
        ),
        Option(
            "causal",
            "Causal: query i sees keys j ≤ i, bias −m·(i − j) (default: the example's, else "
            "{default}).",
            False,
            type=bool,
            switch=True,
        ),
        Option(
            "train_length",
            "The length L the model was trained at: keys L or more positions away are past it "
            "(default: half the positions, n/2 rounded down, at least 1).",
            type=int,
            metavar="L",
        ),
    ),
    sizes=(
        Size("n", "number of positions n (default: {default}).", 8),
        Size("dk", "width d of each query and key (default: {default}).", 2),
    ),
    figure="each head's weights beside its slope, one panel per head, on one colour scale",
    examples=(
        "attn alibi",
        "attn alibi --heads 6 --causal",
        "attn alibi --n 12 --dk 4 --train-length 4 --seed 3",
    ),
)
