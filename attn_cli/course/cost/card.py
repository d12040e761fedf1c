"""attn cost: the lectures' complexity arguments, evaluated at the sizes given."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, Option

CARD = Card(
    "cost",
    summary="What attention costs: the lectures' complexity tables evaluated at your n and d, "
    "the doubling rule, and the bytes of the n × n score matrix.",
    options=(
        Option(
            "n",
            "Sequence length n in tokens (default: {default}, the lecture's).",
            8192,
            type=int,
            minimum=1,
        ),
        Option(
            "d",
            "Width d of the queries and keys (default: {default}, the lecture's).",
            4096,
            type=int,
            minimum=1,
        ),
        Option(
            "window",
            "Half-width w of a sliding window: query i sees key j when |i − j| ≤ w, as in attn "
            "window (default: {default}, Longformer's window of 512).",
            256,
            type=int,
            minimum=1,
        ),
        Option(
            "features",
            "Features r of linear attention (default: d, elu + 1's, which gives the lecture's "
            "O(nd²)).",
            type=int,
            minimum=1,
            metavar="R",
        ),
        Option(
            "heads",
            "Heads per layer, each with its own n × n scores (default: {default}).",
            32,
            type=int,
            minimum=1,
        ),
        Option("layers", "Layers (default: {default}).", 32, type=int, minimum=1),
        Option(
            "memory_dtype",
            "The dtype each number is stored in, for the bytes (default: {default}).",
            "float16",
            choices=variants.DTYPES,
        ),
    ),
    seed=False,
    batches=False,
    precision=2,
    examples=(
        "attn cost",
        "attn cost --n 1000 --d 512",
        "attn cost --n 16384 --window 64 --memory-dtype float32",
    ),
)
