"""attn kvcache: generation token by token with a key-value cache."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from attn_cli.options import input_option, lesson_command, size_option


class CacheDtype(StrEnum):
    float64 = "float64"
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"


@lesson_command("kvcache")
def kvcache(
    layers: Annotated[
        int | None, input_option("--layers", "Cache size: the model's layers (default: 32).")
    ] = None,
    heads: Annotated[
        int | None, input_option("--heads", "Cache size: query heads per layer (default: 32).")
    ] = None,
    kv_heads: Annotated[
        int | None,
        input_option(
            "--kv-heads",
            "Cache size: K/V heads per layer, dividing --heads: = heads is multi-head, 1 "
            "multi-query, between grouped-query attention (default: a quarter of --heads where 4 "
            "divides it, as Llama 3 8B's 8 of 32; else --heads).",
        ),
    ] = None,
    d_head: Annotated[
        int | None, input_option("--d-head", "Cache size: width of a head (default: 128).")
    ] = None,
    cache_dtype: Annotated[
        CacheDtype | None,
        input_option("--cache-dtype", "Cache size: the cache's dtype (default: float16)."),
    ] = None,
    n: Annotated[
        int | None, size_option("--n", "Random inputs: number of tokens n (default: 5).")
    ] = None,
    dk: Annotated[
        int | None, size_option("--dk", "Random inputs: key width d_k (default: 4).")
    ] = None,
    dv: Annotated[
        int | None, size_option("--dv", "Random inputs: value width d_v (default: d_k).")
    ] = None,
) -> None:
    """Generation with a KV cache: each token appends a key and a value and attends once."""
