"""The KV-cache lesson: generating token by token, one new key and value row per step.

Step t appends k_t and v_t to the cache and lets q_t attend once over the t cached keys
(scaled by √d_k). The stacked outputs are full causal attention's rows: the lesson measures the
difference as computed (BLAS), and again with every sum taken left to right, where it is exactly
0. Then the work with and without the cache, and the cache's bytes per token for a model's
layers, heads, K/V heads (MHA, GQA, MQA), head width and dtype.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attn_cli import lesson_specs
from attn_cli.backend import ITEMSIZE
from attn_cli.errors import UserError
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import kvcache, masks
from attn_cli.model import Part, Walkthrough
from attn_cli.walkthroughs import scaled
from attn_cli.walkthroughs.base import (
    Grid,
    Lesson,
    LessonRun,
    StepRecorder,
    Texts,
    row_names,
    whole_at_least,
)

INPUTS = lesson_specs.SCALED  # Q, K, V of one sequence: row t is token t's query, key, value
# The cache's size is asked of a model like Llama 3 8B: 32 layers, 32 query heads sharing 8 K/V
# heads of width 128, in float16. kv_heads None: a quarter of the heads where 4 divides them.
OPTIONS: dict[str, Any] = {
    "layers": 32,
    "heads": 32,
    "kv_heads": None,
    "d_head": 128,
    "cache_dtype": "float16",
}
CACHE_DTYPES = tuple(ITEMSIZE)
# Every token is one step; more than this is no longer a walkthrough.
MAX_TOKENS = 32
# The work and bytes are also given at this length.
LONG_N = 4096


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    scaled.validate(inputs, {})  # Q and K share d_k; K and V share n
    _check_options(inputs["Q"].shape[0], inputs["K"].shape[0], options)


def _check_options(m: int, n: int, options: dict[str, Any]) -> None:
    if m != n:
        raise UserError(
            f"Q has {m} rows but K has {n}: generation is over one sequence, one query, key and "
            "value per token (the same n)."
        )
    if n > MAX_TOKENS:
        raise UserError(
            f"{n} tokens make {n} generation steps; use at most {MAX_TOKENS} (--n {MAX_TOKENS})."
        )
    for name in ("layers", "heads", "kv_heads", "d_head"):
        value = options.get(name, OPTIONS[name])
        if name == "kv_heads" and value is None:
            continue
        whole_at_least(value, "--" + name.replace("_", "-"))
    heads, kv_heads = options.get("heads", 32), _kv_heads(options)
    if heads % kv_heads:
        raise UserError(
            f"--kv-heads {kv_heads} does not divide --heads {heads}: each K/V head is shared by "
            "the same number of query heads; choose a divisor (1 is multi-query attention)."
        )
    dtype = options.get("cache_dtype", "float16")
    if dtype not in CACHE_DTYPES:
        raise UserError(f"--cache-dtype {dtype!r}: choose one of {', '.join(CACHE_DTYPES)}.")


def _kv_heads(options: dict[str, Any]) -> int:
    """--kv-heads, else a quarter of the heads where 4 divides them (8 of 32), else all."""
    heads, given = int(options.get("heads", 32)), options.get("kv_heads")
    if given is not None:
        return int(given)
    return heads // 4 if heads % 4 == 0 else heads


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Q, K, V (n × d_k, d_v) of one sequence: n = 5 and d_k = 4 by default."""
    n, d_k = sizes.get("n") or 5, sizes.get("dk") or 4
    d_v = sizes.get("dv") or d_k
    return {"Q": (n, d_k), "K": (n, d_k), "V": (n, d_v)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    """Every step's cache is kept for display: about n²/2 · (d_k + d_v) entries."""
    (n, d_k), (_, d_v) = shapes["Q"], shapes["V"]
    _check_options(n, shapes["K"][0], options)
    return (n * (n + 1) // 2 * (d_k + d_v + 2) + 8 * n * n + 6 * n * d_v) * itemsize


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    q, k, v = (backend.asarray(run.inputs[name]) for name in ("Q", "K", "V"))
    (n, d_k), d_v = q.shape, v.shape[1]
    queries = row_names(run, "queries", n, "q", "the lesson file")
    keys = row_names(run, "keys", n, "k", "the lesson file")
    base: dict[str, Any] = {"n": n, "dk": d_k, "dv": d_v, "sqrt_dk": math.sqrt(d_k)}
    record = StepRecorder(run)
    steps = kvcache.generate(q, k, v)
    for step in steps:
        t = step.t + 1
        context = {**base, "t": t, "query": queries[step.t], "key": keys[step.t]}
        record.add(
            f"token{t}",
            step.weights,
            kind="weights",
            row_sums=True,
            text="token",
            grid=Grid((queries[step.t],), keys[:t], context),
            parts=(
                Part(f"K cache ({t} × {d_k})", step.keys),
                Part(f"V cache ({t} × {d_v})", step.values),
                Part("scores q Kᵀ / √d_k", step.scaled),
                Part("output", step.output),
            ),
        )
    grid = Grid(queries, context=base)
    cached = record.compute("cached", lambda: kvcache.cached_outputs(steps), grid=grid)
    mask = masks.causal_additive(mech.scores(q, k))
    full = mech.attention(q, k, v, mask=mask).output
    gap = float(np.max(np.abs(record.to_numpy(cached) - record.to_numpy(full))))
    exact = _ordered_gap(record, q, k, v)
    record.add(
        "full",
        full,
        grid=grid,
        notes=(record.note("blas_gap", difference=gap), record.note("ordered_gap", **exact)),
    )
    _work(record, n, base)
    _cache_bytes(record, n, base)
    return record.walkthrough(
        cached,
        inputs=scaled.labelled_inputs(run, queries, keys),
        meta={"max_abs_difference": gap, "ordered_max_abs_difference": exact["difference"]},
    )


def _ordered_gap(record: StepRecorder, q: Any, k: Any, v: Any) -> dict[str, Any]:
    """Both computations again with every sum left to right: how many entries differ, by how
    much (0 and 0: the same operations on the same numbers)."""
    _, full = kvcache.ordered_attention(q, k, v, causal=True)
    rows = [
        record.to_numpy(kvcache.ordered_attention(q[t : t + 1], k[: t + 1], v[: t + 1])[1])
        for t in range(q.shape[0])
    ]
    cached, whole = np.concatenate(rows, axis=0), record.to_numpy(full)
    return {
        "unequal": int(np.count_nonzero(cached != whole)),
        "entries": int(whole.size),
        "difference": float(np.max(np.abs(cached - whole))),
    }


def _work(record: StepRecorder, n: int, context: dict[str, Any]) -> None:
    """Dot products per new token, and in all so far, with the cache and recomputing."""
    table = [
        {
            "token": t,
            "with_cache": t,  # q_t against the t cached keys
            "without_cache": kvcache.scores_with_cache(t),  # causal attention over t tokens
            "total_with_cache": kvcache.scores_with_cache(t),
            "total_without_cache": kvcache.scores_without_cache(t),
        }
        for t in range(1, n + 1)
    ]
    ratio = kvcache.scores_without_cache(LONG_N) / kvcache.scores_with_cache(LONG_N)
    record.add(
        "work",
        table,
        kind="records",
        grid=Grid(context=context),
        notes=(
            record.note(
                "work_totals",
                n=n,
                with_cache=kvcache.scores_with_cache(n),
                without_cache=kvcache.scores_without_cache(n),
                long=LONG_N,
                ratio=ratio,
            ),
        ),
    )


def _cache_bytes(record: StepRecorder, n: int, base: dict[str, Any]) -> None:
    """Bytes per token for the model asked about: all K/V heads (MHA), the given ones, one (MQA)."""
    options = record.run.options
    layers, heads, d_head = (int(options[name]) for name in ("layers", "heads", "d_head"))
    dtype = str(options["cache_dtype"])
    table = []
    for kv_heads in sorted({heads, _kv_heads(options), 1}, reverse=True):
        per_token = kvcache.cache_bytes_per_token(layers, heads, d_head, dtype, kv_heads)
        table.append(
            {
                "attention": "MHA" if kv_heads == heads else "MQA" if kv_heads == 1 else "GQA",
                "kv_heads": kv_heads,
                "queries_per_kv_head": heads // kv_heads,
                "bytes_per_token": per_token,
                "bytes_long": per_token * LONG_N,
            }
        )
    context = {
        **base,
        "layers": layers,
        "heads": heads,
        "d_head": d_head,
        "dtype": dtype,
        "itemsize": ITEMSIZE[dtype],
        "long": LONG_N,
    }
    width = base["dk"] + base["dv"]  # one key and one value per token, one layer, one head
    own = width * record.run.backend.itemsize
    record.add(
        "cache_bytes",
        table,
        kind="records",
        grid=Grid(context=context),
        notes=(record.note("own_cache", n=n, width=width, per_token=own, total=own * n),),
    )


SIZES = ("n", "dk", "dv", "sqrt_dk")  # what every step text may read

TEXTS = Texts(
    steps={
        "token": (*SIZES, "t", "query", "key"),
        "cached": SIZES,
        "full": SIZES,
        "work": SIZES,
        "cache_bytes": (*SIZES, "layers", "heads", "d_head", "dtype", "itemsize", "long"),
    },
    notes={
        "blas_gap": ("difference",),
        "ordered_gap": ("unequal", "entries", "difference"),
        "work_totals": ("n", "with_cache", "without_cache", "long", "ratio"),
        "own_cache": ("n", "width", "per_token", "total"),
    },
)

LESSON = Lesson(
    name="kvcache",
    inputs=INPUTS,
    options=OPTIONS,
    labels=("queries", "keys"),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
)
