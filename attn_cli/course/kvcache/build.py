"""The KV-cache lesson: generating token by token, one new key and value row per step.

Step t appends k_t and v_t to the cache and lets q_t attend once over the t cached keys
(scaled by √d_k). The stacked outputs are full causal attention's rows: the lesson measures the
difference as computed (BLAS), and again with every sum taken left to right, where it is exactly
0. Then the work with and without the cache, and the cache's bytes per token for a model's
layers, heads, K/V heads (MHA, GQA, MQA), head width and dtype.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core import variants
from attn_cli.core.backend import EPSILON, ITEMSIZE
from attn_cli.core.errors import UserError, param, params
from attn_cli.core.model import Part, Walkthrough
from attn_cli.course.checks import counted, row_names, whole_at_least
from attn_cli.course.kvcache import long, sinks
from attn_cli.course.kvcache.card import CARD
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.scaled import build as scaled
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import kvcache, masks

# The cache's size is asked of a model like Llama 3 8B: 32 layers, 32 query heads sharing 8 K/V
# heads of width 128, in float16. kv_heads None: a quarter of the heads where 4 divides them.
CACHE_DTYPES = variants.DTYPES
# Every token is one step up to this many; past it, steps at chosen tokens and a summary.
MAX_TOKENS = long.MAX_TOKENS
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
    long.check_length(n)
    for name in ("layers", "heads", "kv_heads", "d_head"):
        value = options.get(name, CARD.defaults[name])
        if name == "kv_heads" and value is None:
            continue
        whole_at_least(value, param(name))
    heads, kv_heads = options.get("heads", 32), _kv_heads(options)
    if heads % kv_heads:
        raise UserError(
            f"{param('kv_heads', kv_heads)} does not divide {param('heads', heads)}: each K/V head is shared by "
            "the same number of query heads; choose a divisor (1 is multi-query attention)."
        )
    dtype = options.get("cache_dtype", "float16")
    if dtype not in CACHE_DTYPES:
        raise UserError(
            f"{param('cache_dtype', repr(dtype))}: choose one of {', '.join(CACHE_DTYPES)}."
        )
    _check_window_and_latent(options)
    if long.summarised(n, options):
        long.chosen_tokens(n, options)


def _check_window_and_latent(options: Mapping[str, Any]) -> None:
    """--window-layers K with --window W (1 ≤ K ≤ layers); --latent-width c, --rope-width r."""
    k, w = options.get("window_layers"), options.get("window")
    if sinks.settings(options) is None and (k is None) != (w is None):
        raise UserError(
            f"give {param('window_layers', 'K')} and {param('window', 'W')} together: K of the layers keep the last W "
            f"tokens (e.g. {params(('window_layers', 16), ('window', 4096))}); or {param('sinks', 'S')} with {param('window', 'W')}."
        )
    if k is not None:
        layers = options.get("layers", CARD.defaults["layers"])
        whole_at_least(k, param("window_layers"), meaning="layers with a window")
        whole_at_least(w, param("window"), meaning="tokens a windowed layer keeps")
        if k > layers:
            raise UserError(
                f"{param('window_layers', k)} is more than the model's {layers} layers ({param('layers')}); "
                f"give at most {layers}."
            )
    latent, rope = options.get("latent_width"), options.get("rope_width") or 0
    if latent is not None:
        whole_at_least(latent, param("latent_width"), meaning="the latent's width c")
    whole_at_least(rope, param("rope_width"), minimum=0, meaning="the decoupled RoPE key's width")
    if rope and latent is None:
        raise UserError(
            f"{param('rope_width')} counts the decoupled RoPE key of a latent cache: give {param('latent_width')} "
            "c as well."
        )


def _kv_heads(options: dict[str, Any]) -> int:
    """--kv-heads, else a quarter of the heads where 4 divides them (8 of 32), else all."""
    heads, given = int(options.get("heads", 32)), options.get("kv_heads")
    if given is not None:
        return int(given)
    return heads // 4 if heads % 4 == 0 else heads


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Q, K, V (n × d_k, d_v) of one sequence."""
    n, d_k = sizes["n"], sizes["dk"]
    d_v = sizes.get("dv") or d_k
    return {"Q": (n, d_k), "K": (n, d_k), "V": (n, d_v)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    """Every step's cache is kept for display: about n²/2 · (d_k + d_v) entries."""
    (n, d_k), (_, d_v) = shapes["Q"], shapes["V"]
    _check_options(n, shapes["K"][0], options)
    if long.summarised(n, options):
        return long.estimate_bytes(n, d_k, d_v, long.chosen_tokens(n, options), itemsize)
    return (n * (n + 1) // 2 * (d_k + d_v + 2) + 9 * n * n + 6 * n * d_v) * itemsize


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    q, k, v = (backend.asarray(run.inputs[name]) for name in ("Q", "K", "V"))
    (n, d_k), d_v = q.shape, v.shape[1]
    queries = row_names(run, "queries", n, "q", "the lesson file")
    keys = row_names(run, "keys", n, "k", "the lesson file")
    base: dict[str, Any] = {"n": n, "dk": d_k, "dv": d_v, "sqrt_dk": math.sqrt(d_k)}
    record = StepRecorder(run)
    summary = long.summarised(n, run.options)
    chosen = long.chosen_tokens(n, run.options) if summary else tuple(range(1, n + 1))
    # Every step, or past MAX_TOKENS only the chosen ones (each over its full cache).
    steps = [long.step_at(q, k, v, t) for t in chosen] if summary else kvcache.generate(q, k, v)
    for step in steps:
        t = step.t + 1
        context = {**base, "t": t, "query": queries[step.t], "key": keys[step.t]}
        context["cached_keys"] = counted(t, "cached key")
        cached_rows, query = keys[:t], (queries[step.t],)
        record.add(
            f"token{t}",
            step.weights,
            kind="weights",
            row_sums=True,
            text="token",
            grid=Grid((queries[step.t],), keys[:t], context),
            # Each part's own labels: the cache's rows are the cached tokens, its columns and the
            # output's are numbered dimensions, never keys.
            parts=(
                Part(f"K cache ({t} × {d_k})", step.keys, rows=cached_rows, cols=numbered(d_k)),
                Part(f"V cache ({t} × {d_v})", step.values, rows=cached_rows, cols=numbered(d_v)),
                Part("scores q Kᵀ / √d_k", step.scaled, rows=query, cols=cached_rows),
                Part("output", step.output, rows=query, cols=numbered(d_v)),
            ),
        )
    grid = Grid(queries, context=base)
    if summary:  # one token at a time, and full attention in blocks: never n × n
        cached = record.compute("cached", lambda: kvcache.cached_rows(q, k, v), grid=grid)
        full = kvcache.blocked_causal_attention(q, k, v, long.BLOCK)
        exact = long.ordered_gap_at(record, (q, k, v), chosen)
        ordered = record.note("ordered_gap_shown", **exact)
    else:
        cached = record.compute("cached", lambda: kvcache.cached_outputs(steps), grid=grid)
        mask = masks.causal_additive(mech.scores(q, k))
        full = mech.attention(q, k, v, mask=mask).output
        exact = _ordered_gap(record, q, k, v)
        ordered = record.note("ordered_gap", **exact)
    gap = float(np.max(np.abs(record.to_numpy(cached) - record.to_numpy(full))))
    blas = {"difference": gap, **_rounding_bound(record, n, d_k, v)}
    record.add(
        "full",
        full,
        grid=Grid(
            queries,
            context={**base, "library": record.run.backend.name}
            | ({"block": long.BLOCK} if summary else {}),
        ),
        notes=(record.note("blas_gap", **blas), ordered),
        text="full_blocked" if summary else None,
    )
    _work(record, n, base, chosen)
    _work_in_a_model(record, n, base, chosen if summary else None)
    _cache_bytes(record, n, base)
    if record.run.options.get("window_layers") is not None:
        _window_cache(record, n, base)
    if record.run.options.get("latent_width") is not None:
        _latent_cache(record, base)
    sizes = sinks.settings(record.run.options)
    if summary:
        long.record_policies(record, (q, k, v), keys, base, chosen)
        options = record.run.options
        dtype = str(options["cache_dtype"])
        long.record_summary(record, n, base, _model_sizes(options), dtype)
    elif sizes is not None:
        sinks.record_sinks(record, (q, k, v), (queries, keys), base, sizes)
    return record.walkthrough(
        cached,
        inputs=scaled.labelled_inputs(run, queries, keys),
        meta={"max_abs_difference": gap, "ordered_max_abs_difference": exact["difference"]},
    )


def _rounding_bound(record: StepRecorder, n: int, d_k: int, v: Any) -> dict[str, Any]:
    """A bound on the rounding difference between two orders of the same sums: each output
    entry is a dot product of d_k terms (a score), a softmax over at most n of them, and a
    weighted sum of n values, so two orders differ by at most about (n + d_k) · ε · max |V|
    (ε: the dtype's machine epsilon). What BLAS's own order gives varies with the machine, its
    threads and its kernels: the note states the bound, not those last bits."""
    dtype = record.run.backend.dtype
    largest = float(np.max(np.abs(record.to_numpy(v)))) if n else 0.0
    return {
        "library": record.run.backend.name,
        "bound": (n + d_k) * EPSILON[dtype] * max(largest, 1.0),
        "epsilon": EPSILON[dtype],
        "dtype": dtype,
        "terms": n + d_k,
    }


def within_rounding(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The cached and the full outputs differ by no more than the rounding bound."""
    return values["difference"] <= values["bound"]


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


def _work(record: StepRecorder, n: int, context: dict[str, Any], tokens: tuple[int, ...]) -> None:
    """Dot products per new token, and in all so far, with the cache and recomputing, at the
    tokens whose steps are shown (every token up to MAX_TOKENS)."""
    table = [
        {
            "token": t,
            "with_cache": t,  # q_t against the t cached keys
            "without_cache": kvcache.scores_with_cache(t),  # causal attention over t tokens
            "total_with_cache": kvcache.scores_with_cache(t),
            "total_without_cache": kvcache.scores_without_cache(t),
        }
        for t in tokens
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


def numbered(count: int) -> tuple[str, ...]:
    """Column labels 1..count: dimensions of a key, a value or an output row."""
    return tuple(str(index) for index in range(1, count + 1))


def _counted_sizes(layers: int, heads: int, kv_heads: int | None = None) -> dict[str, str]:
    """The model's sizes as words for the titles: "32 layers", "1 K/V head"..."""
    words = {"layers_text": counted(layers, "layer"), "heads_text": counted(heads, "head")}
    if kv_heads is not None:
        words["query_heads_text"] = counted(heads, "query head")
        words["kv_heads_text"] = counted(kv_heads, "K/V head")
    return words


def _model_sizes(options: Mapping[str, Any]) -> dict[str, int]:
    """The model the cache is asked of: layers, query heads, K/V heads, d_head, d_model."""
    layers, heads, d_head = (int(options[name]) for name in ("layers", "heads", "d_head"))
    kv_heads = _kv_heads(dict(options))
    return {
        "layers": layers,
        "heads": heads,
        "kv_heads": kv_heads,
        "d_head": d_head,
        "d_model": heads * d_head,
    }


def _model_context(base: dict[str, Any], sizes: dict[str, int], dtype: str) -> dict[str, Any]:
    """What the model's cache texts read: the run's sizes, the model's and its dtype."""
    model = {name: sizes[name] for name in ("layers", "heads", "d_head")}
    return {**base, **model, "dtype": dtype, "itemsize": ITEMSIZE[dtype], "long": LONG_N}


def _attention_kind(kv_heads: int, heads: int) -> str:
    """MHA (a K/V head per query head), MQA (one K/V head) or GQA (between)."""
    return "MHA" if kv_heads == heads else "MQA" if kv_heads == 1 else "GQA"


def _model_work_row(t: int, sizes: dict[str, int]) -> dict[str, int]:
    """FLOPs for new token t in the model, with the cache and recomputing the prefix."""
    layers, heads, kv_heads, d_head = (sizes[k] for k in ("layers", "heads", "kv_heads", "d_head"))
    return {
        "token": t,
        "scores_with_cache": kvcache.score_flops(t, layers, heads, d_head),
        "scores_without_cache": kvcache.score_flops(
            kvcache.scores_with_cache(t), layers, heads, d_head
        ),
        "projections_with_cache": kvcache.projection_flops(1, layers, heads, kv_heads, d_head),
        "projections_without_cache": kvcache.projection_flops(t, layers, heads, kv_heads, d_head),
    }


def _savings(row: Mapping[str, Any]) -> tuple[int, int]:
    """(projection FLOPs saved, dot-product FLOPs saved) by the cache for one new token."""
    projections = int(row["projections_without_cache"]) - int(row["projections_with_cache"])
    scores = int(row["scores_without_cache"]) - int(row["scores_with_cache"])
    return projections, scores


def _work_in_a_model(
    record: StepRecorder, n: int, base: dict[str, Any], tokens: tuple[int, ...] | None
) -> None:
    """The same tokens in the model the cache is sized for, in FLOPs: the dot products, and the
    projections of the queries, keys and values that recomputing repeats for the whole prefix;
    ``tokens``: the shown ones (None: every token), then token LONG_N last."""
    sizes = _model_sizes(record.run.options)
    shown = range(1, n + 1) if tokens is None else [t for t in tokens if t != LONG_N]
    table = [_model_work_row(t, sizes) for t in (*shown, LONG_N)]
    projections, scores = _savings(table[-1])
    values = {"t": LONG_N, "projections": projections, "scores": scores}
    record.add(
        "work_model",
        table,
        kind="records",
        grid=Grid(
            context={
                **base,
                **sizes,
                **_counted_sizes(sizes["layers"], sizes["heads"], sizes["kv_heads"]),
                "long": LONG_N,
            }
        ),
        notes=(
            record.note("model_saving", **values),
            record.note("projections_larger", t=LONG_N, ratio=projections / max(scores, 1)),
            record.note("scores_larger", t=LONG_N, ratio=scores / max(projections, 1)),
        ),
    )


def _larger_saving(walkthrough: Walkthrough, values: Mapping[str, Any]) -> tuple[int, int] | None:
    """(projections, scores) saved at the note's token, read from the walkthrough's table."""
    try:
        rows = walkthrough.step("work_model")
        (row,) = [row for row in rows if row["token"] == values["t"]]
        return _savings(row)
    except (KeyError, ValueError, TypeError):
        return None


def projections_larger(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """At the note's token the cache saves more projection FLOPs than dot-product FLOPs."""
    saved = _larger_saving(walkthrough, values)
    return saved is not None and saved[0] > saved[1]


def scores_larger(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """At the note's token the cache saves more dot-product FLOPs than projection FLOPs."""
    saved = _larger_saving(walkthrough, values)
    return saved is not None and saved[1] > saved[0]


def bit_for_bit(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """No entry of the left-to-right computations differs."""
    return values.get("unequal") == 0 and values.get("difference") == 0.0


def _cache_bytes(record: StepRecorder, n: int, base: dict[str, Any]) -> None:
    """Bytes per token for the model asked about: all K/V heads (MHA), the given ones, one (MQA)."""
    options = record.run.options
    sizes = _model_sizes(options)
    layers, heads, d_head = sizes["layers"], sizes["heads"], sizes["d_head"]
    dtype = str(options["cache_dtype"])
    table = []
    for kv_heads in sorted({heads, sizes["kv_heads"], 1}, reverse=True):
        per_token = kvcache.cache_bytes_per_token(layers, heads, d_head, dtype, kv_heads)
        table.append(
            {
                "attention": _attention_kind(kv_heads, heads),
                "kv_heads": kv_heads,
                "queries_per_kv_head": heads // kv_heads,
                "bytes_per_token": per_token,
                "bytes_long": per_token * LONG_N,
            }
        )
    context = {**_model_context(base, sizes, dtype), **_counted_sizes(layers, heads)}
    width = base["dk"] + base["dv"]  # one key and one value per token, one layer, one head
    backend = record.run.backend
    own = width * backend.itemsize  # in the dtype this walkthrough computes in, not the table's
    record.add(
        "cache_bytes",
        table,
        kind="records",
        grid=Grid(context=context),
        notes=(
            record.note(
                "own_cache",
                n=n,
                width=width,
                dtype=str(backend.dtype),
                itemsize=backend.itemsize,
                per_token=own,
                total=own * n,
            ),
        ),
    )


def _window_cache(record: StepRecorder, n: int, base: dict[str, Any]) -> None:
    """The cache's bytes when K of the layers keep only the last W tokens, against all full."""
    options = record.run.options
    sizes = _model_sizes(options)
    layers, kv_heads, d_head = sizes["layers"], sizes["kv_heads"], sizes["d_head"]
    k, window, dtype = int(options["window_layers"]), int(options["window"]), options["cache_dtype"]
    table = []
    for tokens in sorted({n, window, LONG_N, 8 * LONG_N}):
        full = kvcache.windowed_cache_bytes(tokens, layers, 0, window, kv_heads, d_head, dtype)
        kept = kvcache.windowed_cache_bytes(tokens, layers, k, window, kv_heads, d_head, dtype)
        table.append(
            {"tokens": tokens, "full_bytes": full, "windowed_bytes": kept, "ratio": kept / full}
        )
    long_row = table[-1]  # the longest context: the ratio nearest its limit
    context = {
        **base,
        "layers": layers,
        "kv_heads": kv_heads,
        "d_head": d_head,
        "dtype": dtype,
        "itemsize": ITEMSIZE[dtype],
        "window_layers": k,
        "window": window,
        "full_layers": layers - k,
    }
    note = record.note(
        "window_ratio",
        tokens=long_row["tokens"],
        ratio=long_row["ratio"],
        limit=(layers - k) / layers,
        window_layers=k,
    )
    record.add("window_cache", table, kind="records", grid=Grid(context=context), notes=(note,))


def window_ratio_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of window_ratio: at the note's tokens, windowed ÷ full bytes is its ratio, and the
    limit is the share of full layers (the ratio tends to it from above as n grows)."""
    try:
        rows = walkthrough.step("window_cache")
        (row,) = [row for row in rows if row["tokens"] == values["tokens"]]
        options = walkthrough.meta["options"]
        layers, k = int(options["layers"]), int(options["window_layers"])
    except (KeyError, ValueError, TypeError):
        return False
    ratio = row["windowed_bytes"] / row["full_bytes"]
    limit = (layers - k) / layers
    return (
        math.isclose(ratio, values["ratio"], rel_tol=1e-12)
        and math.isclose(limit, values["limit"], rel_tol=1e-12, abs_tol=1e-15)
        and ratio >= limit
    )


def _latent_cache(record: StepRecorder, base: dict[str, Any]) -> None:
    """Bytes per token of a latent cache of width c (+ the RoPE key) against MHA, GQA and MQA."""
    options = record.run.options
    sizes = _model_sizes(options)
    layers, heads, d_head = sizes["layers"], sizes["heads"], sizes["d_head"]
    latent, rope = int(options["latent_width"]), int(options.get("rope_width") or 0)
    dtype = str(options["cache_dtype"])
    per_token = kvcache.latent_cache_bytes_per_token(layers, latent, rope, dtype)
    table: list[tuple[str, int]] = []  # (cache, bytes per token)
    for kv_heads in sorted({heads, sizes["kv_heads"], 1}, reverse=True):
        kind = _attention_kind(kv_heads, heads)
        each = kvcache.cache_bytes_per_token(layers, heads, d_head, dtype, kv_heads)
        table.append((f"{kind} ({counted(kv_heads, 'K/V head')})", each))
    table.append((f"latent (c = {latent}" + (f", + RoPE {rope})" if rope else ")"), per_token))
    rows = [
        {"cache": name, "bytes": each, "bytes_long": each * LONG_N, "vs_latent": each / per_token}
        for name, each in table
    ]
    context = {**_model_context(base, sizes, dtype), "latent": latent, "rope": rope}
    mha = table[0][1]
    notes = [
        record.note("rope_counted", rope=rope)
        if rope
        else record.note("rope_not_counted", latent=latent)
    ]
    key = "latent_smaller" if per_token < mha else "latent_not_smaller"
    notes.append(record.note(key, latent_bytes=per_token, mha_bytes=mha, ratio=mha / per_token))
    record.add("latent_cache", rows, kind="records", grid=Grid(context=context), notes=tuple(notes))


def _latent_and_mha(walkthrough: Walkthrough, values: Mapping[str, Any]) -> tuple[int, int] | None:
    """(latent bytes, MHA bytes) per token from the table, if they are the note's."""
    try:
        rows = walkthrough.step("latent_cache")
        latent, mha = int(rows[-1]["bytes"]), int(rows[0]["bytes"])
    except (KeyError, ValueError, TypeError, IndexError):
        return None
    if (latent, mha) != (values.get("latent_bytes"), values.get("mha_bytes")):
        return None
    if not math.isclose(mha / latent, values.get("ratio", math.nan), rel_tol=1e-12):
        return None
    return latent, mha


def latent_smaller(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim: the latent cache keeps fewer bytes per token than MHA's, by the note's ratio."""
    pair = _latent_and_mha(walkthrough, values)
    return pair is not None and pair[0] < pair[1]


def latent_not_smaller(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim: the latent cache keeps at least as many bytes per token as MHA's."""
    pair = _latent_and_mha(walkthrough, values)
    return pair is not None and pair[0] >= pair[1]


SIZES = ("n", "dk", "dv", "sqrt_dk")  # what every step text may read

TEXTS = Texts(
    steps={
        "token": (*SIZES, "t", "query", "key", "cached_keys"),
        "cached": SIZES,
        "full": (*SIZES, "library"),
        "work": SIZES,
        "work_model": (
            *(*SIZES, "layers", "heads", "kv_heads", "d_head", "d_model", "long"),
            *("layers_text", "query_heads_text", "kv_heads_text", "heads_text"),
        ),
        "cache_bytes": (
            *(*SIZES, "layers", "heads", "d_head", "dtype", "itemsize", "long"),
            *("layers_text", "heads_text"),
        ),
        "window_cache": (
            *(*SIZES, "layers", "kv_heads", "d_head", "dtype", "itemsize"),
            *("window_layers", "window", "full_layers"),
        ),
        "latent_cache": (
            *(*SIZES, "layers", "heads", "d_head", "dtype", "itemsize"),
            *("latent", "rope", "long"),
        ),
        **dict.fromkeys(sinks.STEPS, (*SIZES, *sinks.STEP_NAMES)),
        "full_blocked": (*SIZES, "library", "block"),
        **{key: (*SIZES, *names) for key, names in long.STEPS.items()},
    },
    notes={
        "blas_gap": ("library", "difference", "bound", "epsilon", "dtype", "terms"),
        "ordered_gap": ("unequal", "entries", "difference"),
        "ordered_gap_shown": ("unequal", "entries", "difference", "tokens"),
        "work_totals": ("n", "with_cache", "without_cache", "long", "ratio"),
        "own_cache": ("n", "width", "dtype", "itemsize", "per_token", "total"),
        "model_saving": ("t", "projections", "scores"),
        "projections_larger": ("t", "ratio"),
        "scores_larger": ("t", "ratio"),
        "window_ratio": ("tokens", "ratio", "limit", "window_layers"),
        "rope_counted": ("rope",),
        "rope_not_counted": ("latent",),
        "latent_smaller": ("latent_bytes", "mha_bytes", "ratio"),
        "latent_not_smaller": ("latent_bytes", "mha_bytes", "ratio"),
        **sinks.NOTES,
    },
    claims={
        "blas_gap": within_rounding,
        "ordered_gap": bit_for_bit,
        "ordered_gap_shown": bit_for_bit,
        "projections_larger": projections_larger,
        "scores_larger": scores_larger,
        "window_ratio": window_ratio_holds,
        "latent_smaller": latent_smaller,
        "latent_not_smaller": latent_not_smaller,
        **sinks.CLAIMS,
    },
    measured=(
        "work_totals",
        "own_cache",
        "model_saving",
    ),
    general=(
        "rope_counted",
        "rope_not_counted",
        *sinks.GENERAL,
    ),
)

LESSON = Lesson(
    card=CARD,
    labels=("queries", "keys"),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
)
