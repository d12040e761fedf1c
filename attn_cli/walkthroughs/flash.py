"""The tiled (FlashAttention) lesson: attention one key block at a time, with an online softmax.

For every block: its scores, the new running max, the rescale factor, the block's
exponentials, the running sum and the running weighted sum of values. Then the output
acc / ℓ, and the plain softmax attention beside it to show they agree.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Any

import numpy as np

from attn_cli.backend import namespace_of
from attn_cli.errors import UserError
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import masks, tiled
from attn_cli.model import Part, Walkthrough
from attn_cli.walkthroughs import scaled
from attn_cli.walkthroughs.base import (
    Grid,
    Lesson,
    LessonRun,
    StepRecorder,
    Texts,
    check_causal_square,
    row_names,
    whole_at_least,
)

INPUTS = scaled.INPUTS  # Q, K, V: the same inputs and checks as attn scaled
OPTIONS: dict[str, Any] = {"scale": True, "block": 2, "causal": False, "query_block": None}
# Every block is shown as six steps; more blocks than this is no longer a walkthrough.
MAX_BLOCKS = 16
# With --query-block, every query tile visits the key blocks: at most this many visits.
MAX_VISITS = 32


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    scaled.validate(inputs, options)  # Q and K share d_k; K and V share n
    _check_options(inputs["Q"].shape[0], inputs["K"].shape[0], options)


def _check_options(m: int, n: int, options: dict[str, Any]) -> None:
    block = whole_at_least(options.get("block"), "--block")
    blocks = math.ceil(n / block)
    if blocks > MAX_BLOCKS:
        raise UserError(
            f"{n} keys in blocks of {block} make {blocks} blocks, each shown as six steps; "
            f"use at most {MAX_BLOCKS} blocks: raise --block to {math.ceil(n / MAX_BLOCKS)} or "
            "give fewer keys."
        )
    query_block = options.get("query_block")
    if query_block is not None:
        whole_at_least(query_block, "--query-block", meaning="query rows per tile")
        tiles = math.ceil(m / query_block)
        if tiles * blocks > MAX_VISITS:
            raise UserError(
                f"{m} queries in tiles of {query_block} and {n} keys in blocks of {block} make "
                f"{tiles} × {blocks} = {tiles * blocks} tile × block visits, each shown as six "
                f"steps; use at most {MAX_VISITS}: raise --query-block or --block, or give "
                "fewer queries or keys."
            )
    if options.get("causal"):
        check_causal_square(m, n)


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """attn scaled's shapes with smaller defaults, so that every block stays readable: n = 6
    (or m when only m is given) and d_k = 4."""
    return scaled.random_shapes({"n": sizes.get("m") or 6, "dk": 4, **sizes})


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    """Every block's steps are kept for display: about 2·m·n scores and 3·m·d_v per block."""
    (m, _d_k), (n, _), (_, d_v) = shapes["Q"], shapes["K"], shapes["V"]
    _check_options(m, n, options)
    blocks = math.ceil(n / int(options["block"]))
    tiles = math.ceil(m / int(options.get("query_block") or m))
    # Each tile's blocks hold its rows' share of the per-block steps; tiles add their outputs.
    return (3 * m * n + blocks * (3 * m * d_v + 6 * m) + (1 + tiles) * 2 * m * d_v) * itemsize


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    q, k, v = (backend.asarray(run.inputs[name]) for name in ("Q", "K", "V"))
    (m, d_k), n, d_v = q.shape, k.shape[0], v.shape[1]
    use_scale = bool(run.options.get("scale", True))
    causal = bool(run.options.get("causal", False))
    block = int(run.options["block"])
    query_block = run.options.get("query_block")
    queries = row_names(run, "queries", m, "q", "the lesson file")
    keys = row_names(run, "keys", n, "k", "the lesson file")
    blocks = math.ceil(n / block)
    base = {"m": m, "n": n, "dk": d_k, "dv": d_v, "block": block, "blocks": blocks}
    base["sqrt_dk"] = math.sqrt(d_k)
    record = StepRecorder(run)

    if query_block is None:  # one query tile holding every query: the inner loop only
        steps = tiled.block_steps(q, k, v, block=block, causal=causal, use_scale=use_scale)
        final = _inner_loop(record, steps, queries, keys, base)
        output = record.compute(
            "output",
            lambda: tiled.finish(final),
            grid=Grid(queries, context=base),
        )
        largest = {"key": "largest_block", "rows": m}
        skipped = 0
    else:
        output, skipped = _both_loops(record, (q, k, v), int(query_block), queries, keys, base)
        largest = {"key": "largest_tile", "rows": min(int(query_block), m)}
    mask = masks.causal_additive(mech.scores(q, k)) if causal else None  # (m, m), m = n
    plain = mech.attention(q, k, v, use_scale=use_scale, mask=mask).output
    difference = float(np.max(np.abs(backend.to_numpy(output) - backend.to_numpy(plain))))
    record.add(
        "check",
        plain,
        grid=Grid(queries, context=base),
        notes=(record.note("tiled_check", difference=difference),),
    )
    notes = [record.note(str(largest["key"]), rows=largest["rows"], cols=min(block, n), m=m, n=n)]
    if skipped:
        notes.append(record.note("causal_skipped", skipped=skipped, visits=base["tiles"] * blocks))
    if not use_scale:
        notes.append(record.note("no_scale"))
    return record.walkthrough(
        output,
        inputs=scaled.labelled_inputs(run, queries, keys),
        notes=tuple(notes),
        meta={"max_abs_difference": difference},
    )


def _both_loops(
    record: StepRecorder,
    qkv: tuple[Any, Any, Any],
    query_block: int,
    queries: tuple[str, ...],
    keys: tuple[str, ...],
    base: dict[str, Any],
) -> tuple[Any, int]:
    """The outer loop over query tiles, each with its own inner loop over the key blocks.

    Returns the output (every tile's rows, stacked) and how many tile × block visits a causal
    mask let the tiles skip.
    """
    q, k, v = qkv
    options = record.run.options
    tiles = math.ceil(q.shape[0] / query_block)
    base.update(tiles=tiles, query_block=query_block)
    loops = tiled.query_tiles(
        q,
        k,
        v,
        block=int(options["block"]),
        query_block=query_block,
        causal=bool(options.get("causal", False)),
        use_scale=bool(options.get("scale", True)),
    )
    rows_out = []
    skipped = 0
    for number, tile in enumerate(loops, start=1):
        names = queries[tile.start : tile.stop]
        q_range = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"
        context = {**base, "t": number, "q_range": q_range}
        context.update(rows=len(names), visited=len(tile.blocks), skipped=tile.skipped)
        context["skip_text"] = _skip_text(tile.skipped) if tile.skipped else ""
        prefix = f"tile{number}."
        record.add(
            f"{prefix}queries",
            q[tile.start : tile.stop],
            text="tile" if number == 1 else "tile_again",
            grid=Grid(names, context=context),
        )
        # The inner loop's texts speak of the tile's rows: m is the tile's row count here.
        inner = {**context, "m": len(names)}
        final = _inner_loop(record, tile.blocks, names, keys, inner, prefix=prefix, tile=number)
        rows_out.append(
            record.compute(
                f"{prefix}output",
                functools.partial(tiled.finish, final),
                text="tile_output",
                grid=Grid(names, context=context),
            )
        )
        skipped += tile.skipped
    xp = namespace_of(*rows_out)
    output = record.compute(
        "output",
        lambda: xp.concat(rows_out, axis=0),
        text="output_tiles",
        grid=Grid(queries, context=base),
    )
    return output, skipped


def _skip_text(skipped: int) -> str:
    if skipped == 1:
        return (
            " The last key block lies wholly in the future of every row of this tile: the causal "
            "mask would make all its scores −∞, so the loop stops before it."
        )
    return (
        f" The last {skipped} key blocks lie wholly in the future of every row of this tile: the "
        "causal mask would make all their scores −∞, so the loop stops before them."
    )


def _inner_loop(
    record: StepRecorder,
    steps: Any,
    queries: tuple[str, ...],
    keys: tuple[str, ...],
    base: dict[str, Any],
    *,
    prefix: str = "",
    tile: int | None = None,
) -> tiled.OnlineState:
    """The loop over key blocks for the query rows ``queries``: six steps per block.

    Returns the state after the last block (m, ℓ and acc of these rows).
    """
    state = None
    for number, step in enumerate(steps, start=1):
        update, before = step.update, step.before
        columns = keys[step.start : step.stop]
        where = f"Block {number}" if tile is None else f"Tile {tile} · block {number}"
        context = {**base, "b": number, "first": columns[0], "last": columns[-1]}
        context.update(width=len(columns), where=where)
        rows = Grid(queries, context=context)
        # The long texts once, for the first block of the first tile; then the short ones.
        texts = BLOCK_TEXTS if number == 1 and tile in (None, 1) else BLOCK_TEXTS_AGAIN
        key = f"{prefix}block{number}"
        record.add(
            f"{key}.scores",
            update.scores,
            text=texts["scores"],
            grid=replace(rows, cols=columns),
        )
        record.add(
            f"{key}.max",
            update.state.row_max,
            text=texts["max"],
            grid=replace(rows, cols=("m",)),
            parts=(
                Part("m before", before.row_max),
                Part(f"row max of S{number}", update.block_max),
            ),
        )
        record.add(
            f"{key}.rescale",
            update.rescale,
            text=texts["rescale"],
            grid=replace(rows, cols=("c",)),
        )
        record.add(
            f"{key}.p",
            update.p,
            text=texts["p"],
            grid=replace(rows, cols=columns),
        )
        record.add(
            f"{key}.sum",
            update.state.row_sum,
            text=texts["sum"],
            grid=replace(rows, cols=("ℓ",)),
            parts=(
                Part("ℓ before", before.row_sum),
                Part(f"row sum of P{number}", update.block_sum),
            ),
        )
        record.add(
            f"{key}.acc",
            update.state.acc,
            text=texts["acc"],
            parts=(Part("acc before", before.acc), Part(f"P{number} V{number}", update.pv)),
            grid=rows,
        )
        state = update.state
    assert state is not None  # n >= 1 keys make at least one block, and a tile meets key 1
    return state


# What the texts read: attn scaled's sizes and the blocks; each block's steps add the block;
# each query tile's steps add the tile (with --query-block).
SIZES = (*scaled.SIZES, "block", "blocks")
BLOCK = (*SIZES, "b", "first", "last", "width", "where")
TILES = (*SIZES, "tiles", "query_block")
TILE = (*TILES, "t", "q_range", "rows", "visited", "skipped", "skip_text")
# A block's six steps: the long texts explain the first block (of the first tile), the short
# ones ("..._again") every block after it.
BLOCK_TEXTS = {key: key for key in ("scores", "max", "rescale", "p", "sum", "acc")}
BLOCK_TEXTS_AGAIN = {
    "scores": "scores_again",
    "max": "max_again",
    "rescale": "rescale_again",
    "p": "p_again",
    "sum": "sum_again",
    "acc": "acc_again",
}
TEXTS = Texts(
    steps={
        **dict.fromkeys(BLOCK_TEXTS.values(), BLOCK),
        **dict.fromkeys(BLOCK_TEXTS_AGAIN.values(), BLOCK),
        "tile": TILE,
        "tile_again": TILE,
        "tile_output": TILE,
        "output_tiles": TILES,
        "output": SIZES,
        "check": SIZES,
    },
    notes={
        "tiled_check": ("difference",),
        "largest_block": ("rows", "cols", "m", "n"),
        "largest_tile": ("rows", "cols", "m", "n"),
        "causal_skipped": ("skipped", "visits"),
        "no_scale": (),
    },
)

LESSON = Lesson(
    name="flash",
    inputs=INPUTS,
    options=OPTIONS,
    labels=("queries", "keys"),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
)
