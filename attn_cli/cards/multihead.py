"""attn multihead: split into heads, attend, concatenate, project."""

from __future__ import annotations

from attn_cli.cards import Card, Option, Size, optional
from attn_cli.cards._shared import DROPOUT, VALID_LEN

CARD = Card(
    "multihead",
    order=50,
    summary="Multi-head attention step by step: Concat(head_1, …, head_h) W_O (+ b_O).",
    inputs=(
        optional(
            "X", "--x", "matrix", "tokens", 'Tokens X, n × d_in: "1,0,1,0;0,1,1,0", JSON or @file.'
        ),
        optional(
            "W_Q",
            "--wq",
            "matrix",
            "query weights",
            "W_Q, d_in × d_out, split column-wise into the heads (d_out = d_in = d_model "
            "in the transformer paper).",
        ),
        optional("W_K", "--wk", "matrix", "key weights", "W_K, d_in × d_out."),
        optional("W_V", "--wv", "matrix", "value weights", "W_V, d_in × d_out."),
        optional(
            "W_O",
            "--wo",
            "matrix",
            "output weights",
            "W_O, d_out × d_o; optional: without it the result is the concatenated heads "
            "(default, with no weights given: all four drawn from --seed).",
        ),
        optional(
            "b_Q",
            "--bq",
            "vector",
            "query bias",
            'Bias b_Q added to X W_Q, d_out wide: "0.1,0,-0.2".',
        ),
        optional("b_K", "--bk", "vector", "key bias", "Bias b_K, d_out wide."),
        optional("b_V", "--bv", "vector", "value bias", "Bias b_V, d_out wide."),
        optional(
            "b_O", "--bo", "vector", "output bias", "Bias b_O added to Concat · W_O, d_o wide."
        ),
    ),
    positional=("x", "wq", "wk", "wv", "wo"),
    rows="tokens",
    options=(
        Option(
            "heads",
            "Number of heads h; must divide d_out (default: the example's, else {default}).",
            2,
            type=int,
            minimum=1,
        ),
        Option(
            "causal",
            "Causal mask in every head: token i attends to tokens 1 … i only.",
            False,
            type=bool,
        ),
        VALID_LEN,
        DROPOUT,
        Option(
            "bias",
            "Draw a bias for every weight from --seed (N(0, 1/rows of the weight), a child "
            "stream of numpy's default_rng(seed)).",
            False,
            type=bool,
        ),
    ),
    sizes=(
        Size("n", "number of tokens n (default: {default}).", 6),
        Size("d_model", "d_in and d_out together (default: {default}).", 8),
        Size("d_in", "token width d_in (default: d_model)."),
        Size("d_out", "width d_out of W_Q, W_K, W_V (default: d_in)."),
    ),
    examples=(
        "attn multihead",
        "attn multihead --n 4 --d-model 12 --heads 3 --seed 7",
    ),
)
