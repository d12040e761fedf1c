"""attn multihead: split into heads, attend, concatenate, project."""

from __future__ import annotations

from attn_cli.core.card import Card, Option, Size, optional
from attn_cli.course.shared import DROPOUT, QK_NORM, QKV_WEIGHTS, SOFTCAP, VALID_LEN

CARD = Card(
    "multihead",
    summary="Multi-head attention step by step: Concat(head_1, …, head_h) W_O (+ b_O).",
    inputs=(
        optional(
            "X",
            "x",
            "matrix",
            "tokens",
            "Tokens X, n × d_in (n tokens of width d_in): the queries, and the keys and values "
            "unless {xk} and {xv} give their own.",
        ),
        optional(
            "X_K",
            "xk",
            "matrix",
            "key sequence",
            "The sequence the keys come from, m × kdim (cross-attention: the encoder's output; "
            "nn.MultiheadAttention's key; default X).",
        ),
        optional(
            "X_V",
            "xv",
            "matrix",
            "value sequence",
            "The sequence the values come from, m × vdim, as many rows as {xk} "
            "(nn.MultiheadAttention's value; default {xk}'s, else X).",
        ),
        optional(
            "W_Q",
            "wq",
            "matrix",
            "query weights",
            "Query weights W_Q, d_in × d_out, split column-wise into the heads (d_out = d_in = d_model "
            "in the transformer paper).",
            weight=True,
        ),
        optional(
            "W_K", "wk", "matrix", "key weights", "Key weights W_K, kdim × d_out.", weight=True
        ),
        optional(
            "W_V", "wv", "matrix", "value weights", "Value weights W_V, vdim × d_out.", weight=True
        ),
        optional(
            "W_O",
            "wo",
            "matrix",
            "output weights",
            "Output weights W_O, d_out × d_o (d_o: the width of the output, yours to choose); "
            "optional: without it the result is the concatenated heads "
            "(default, with no weights given: all four drawn from {seed}).",
            weight=True,
        ),
        optional(
            "b_Q", "bq", "vector", "query bias", "Bias b_Q added to X W_Q, d_out wide.", weight=True
        ),
        optional("b_K", "bk", "vector", "key bias", "Bias b_K, d_out wide.", weight=True),
        optional("b_V", "bv", "vector", "value bias", "Bias b_V, d_out wide.", weight=True),
        optional(
            "b_O",
            "bo",
            "vector",
            "output bias",
            "Bias b_O added to Concat · W_O, d_o wide.",
            weight=True,
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
            "kv_heads",
            "Key/value heads g (grouped-query attention; 1: multi-query): the query heads share "
            "them h/g at a time, and W_K and W_V have g·d_k columns; g must divide h (default: h, "
            "one key/value head per query head).",
            type=int,
            minimum=1,
            metavar="G",
        ),
        Option(
            "causal",
            "Causal mask in every head: token i attends to tokens 1 … i only.",
            False,
            type=bool,
        ),
        VALID_LEN,
        DROPOUT,
        SOFTCAP,
        QK_NORM,
        Option(
            "bias",
            "Add a random bias to every projection (b_Q, b_K, b_V and, with W_O, b_O), drawn "
            "from {seed}: each entry from N(0, 1/r), r the rows of its weight.",
            False,
            type=bool,
        ),
        Option(
            "weights",
            "The weights from an nn.MultiheadAttention's state_dict (packed in_proj_weight, or "
            "q_proj_weight, k_proj_weight, v_proj_weight when kdim or vdim differ; biases if it "
            "has them), saved as .pt (read with torch.load(weights_only=True)), .safetensors or "
            ".npz; from Python, the state_dict itself. Give {heads} as its num_heads. With {n} N, "
            "the tokens (and key and value sequences where kdim or vdim differ) are drawn from "
            "{seed} at the file's widths.",
            metavar="FILE",
            path=True,
        ),
    ),
    sizes=(
        Size("n", "number of tokens n (default: {default}).", 6),
        Size("d_model", "d_in and d_out together (default: {default}).", 8),
        Size("d_in", "token width d_in (default: d_model)."),
        Size("d_out", "width d_out of W_Q, W_K, W_V (default: d_in)."),
        Size("m", "rows m of the key and value sequences (default: n, keys and values from X)."),
        Size("kdim", "width kdim of the key sequence (default: d_in)."),
        Size("vdim", "width vdim of the value sequence (default: kdim)."),
    ),
    figure=("each head's weights, one panel per head, on one colour scale"),
    examples=(
        "attn multihead",
        "attn multihead --n 4 --d-model 12 --heads 6 --kv-heads 2 --seed 7",
        "attn multihead --n 3 --m 5 --d-model 4 --kdim 6 --vdim 2",
    ),
    symbols=(
        ("d_in", "the width of a token, a row of X"),
        ("d_out", "the width of Q, K and V, split into h heads of d_out / h"),
        ("d_k", "the width of one head, d_out / h"),
        ("d_o", "the width of the output, W_O's columns"),
        ("d_model", "the transformer paper's single width: d_in = d_out = d_model"),
        QKV_WEIGHTS,
        ("W_O", "the output weights, applied to the concatenated heads"),
        ("b_Q, b_K, b_V, b_O", "the biases added to X W_Q, X W_K, X W_V and Concat · W_O"),
    ),
)
