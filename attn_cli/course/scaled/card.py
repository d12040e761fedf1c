"""attn scaled: scaled dot-product attention, step by step."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, InputSpec, Option, Size
from attn_cli.course.shared import D_K, D_V, DROPOUT, QK_NORM, SCALE, SOFTCAP, VALID_LEN

# Q, K, V: also the inputs of flash, window, linear and kvcache (the same checks as here).
QKV = (
    InputSpec("Q", "q", "matrix", "queries", help="Queries Q, m × d_k (m queries of width d_k)."),
    InputSpec("K", "k", "matrix", "keys", help="Keys K, n × d_k (n keys)."),
    InputSpec("V", "v", "matrix", "values", help="Values V, n × d_v (one per key, of width d_v)."),
)
# Random Q, K, V small enough for every block (flash) or feature row (linear) to stay readable.
SMALL_QKV_SIZES = (
    Size("n", "number of keys n (default: {default}).", 6),
    Size("m", "number of queries m (default: n)."),
    Size("dk", "key width d_k (default: {default}).", 4),
    Size("dv", "value width d_v (default: d_k)."),
)

CARD = Card(
    "scaled",
    summary="Scaled dot-product attention step by step: softmax(Q Kᵀ / √d_k) V.",
    inputs=QKV,
    positional=("q", "k", "v"),
    options=(
        SCALE,
        VALID_LEN,
        DROPOUT,
        Option(
            "normalise",
            "What turns each row of scores into weights: softmax, sparsemax (some weights "
            "exactly 0, with its threshold τ), entmax15 (1.5-entmax: between the two, with its "
            "own τ), sigmoid (σ, then divided by the row sum) or hardmax (all on the maximum; "
            "no gradient) (default: {default}).",
            default=variants.NORMALISERS[0],
            choices=variants.NORMALISERS,
            metavar="NAME",  # the five choices' metavar would squeeze the help's column
        ),
        SOFTCAP,
        QK_NORM,
    ),
    sizes=(
        Size("n", "number of keys n (default: {default}).", 8),
        Size("m", "number of queries m (default: n)."),
        Size("dk", "key width d_k (default: {default}).", 64),
        Size("dv", "value width d_v (default: d_k)."),
    ),
    figure=("the weights as a heatmap, one row per query, one column per key"),
    examples=(
        "attn scaled --example library",
        'attn scaled --q "1,0;0,1" --k "1,1;2,0" --v "0.1,0.2;0.3,0.4"',
        "attn scaled --n 512 --dk 64 --time --format json",
    ),
    symbols=(
        D_K,
        D_V,
        ("σ", "the logistic sigmoid, 1 / (1 + e^(−x))"),
        (
            "τ",
            "a row's threshold (sparsemax, entmax15): a weight is exactly 0 where the score "
            "does not exceed it",
        ),
    ),
)
