"""attn kvcache: generation token by token, one new key and value row per step."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, Option, Size
from attn_cli.course.scaled.card import QKV
from attn_cli.course.shared import D_K, D_V

CARD = Card(
    "kvcache",
    summary="Generation with a KV cache: each token appends a key and a value and attends once.",
    inputs=QKV,
    positional=("q", "k", "v"),
    options=(
        Option("layers", "Cache size: the model's layers (default: {default}).", 32, type=int),
        Option("heads", "Cache size: query heads per layer (default: {default}).", 32, type=int),
        Option(
            "kv_heads",
            "Cache size: K/V heads per layer, dividing {heads}: = heads is multi-head, 1 "
            "multi-query, between grouped-query attention (default: a quarter of {heads} where 4 "
            "divides it, as Llama 3 8B's 8 of 32; else {heads}).",
            type=int,
        ),
        Option("d_head", "Cache size: width of a head (default: {default}).", 128, type=int),
        Option(
            "cache_dtype",
            "Cache size: the cache's dtype (default: {default}).",
            "float16",
            choices=variants.DTYPES,
        ),
        Option(
            "window_layers",
            "Cache size with sliding-window layers: K of the {layers} keep only the last {window} "
            "tokens, the rest keep all (give both; e.g. half the layers, as models that "
            "alternate local and global layers).",
            type=int,
            metavar="K",
        ),
        Option(
            "window",
            "The window W: the last tokens a windowed cache keeps (with {window_layers}, the "
            "windowed layers' cache size; with {sinks}, the sliding-window cache compared).",
            type=int,
            metavar="W",
        ),
        Option(
            "sinks",
            "Attention sinks (StreamingLLM): compare full attention with a cache that keeps "
            "only the last {window} W tokens and one that also keeps the first S (give both).",
            type=int,
            metavar="S",
        ),
        Option(
            "latent_width",
            "Cache size of a latent (MLA-style) cache: each layer keeps one vector of width c "
            "per token, from which the heads' keys and values are re-projected (DeepSeek-V2: "
            "c = 512).",
            type=int,
            metavar="C",
        ),
        Option(
            "rope_width",
            "With {latent_width}: the decoupled RoPE key's width counted on top of c, per layer "
            "and token (DeepSeek-V2: 64; default: {default}, not counted).",
            0,
            type=int,
            metavar="R",
        ),
        Option(
            "show_tokens",
            "Past 32 tokens (or with this), the steps are shown in full only at these tokens, from "
            '1 (e.g. "1,1024,1025"), and a summary covers the rest (default: the first three, '
            "where each cache first fills and first evicts, and the last).",
            metavar="TOKENS",
        ),
    ),
    sizes=(
        Size("n", "number of tokens n (default: {default}).", 5),
        Size("dk", "key width d_k (default: {default}).", 4),
        Size("dv", "value width d_v (default: d_k)."),
    ),
    figure=("each generation step's weights as one row: the lower triangle of causal attention"),
    examples=(
        "attn kvcache",
        "attn kvcache --n 6 --dk 4 --seed 2",
        "attn kvcache --layers 32 --heads 32 --kv-heads 8 --d-head 128",
    ),
    symbols=(D_K, D_V),
)
