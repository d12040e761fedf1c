"""The tiled (FlashAttention) lesson: attention one key block at a time, with an online softmax.

For every block: its scores, the new running max, the rescale factor, the block's
exponentials, the running sum and the running weighted sum of values. Then the output
acc / ℓ, and the plain softmax attention beside it to show they agree.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from attn_cli.core.backend import EPSILON, namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Note, Part, Walkthrough
from attn_cli.course.checks import check_causal_square, row_names, whole_at_least
from attn_cli.course.flash.card import CARD
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.scaled import build as scaled
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import masks, tiled

DEFAULT_SRAM_KIB = CARD.defaults["sram"]  # KiB: one H100 streaming multiprocessor's
# Every block is shown as six steps; more blocks than this is no longer a walkthrough.
MAX_BLOCKS = 16
# With --query-block, every query tile visits the key blocks: at most this many visits.
MAX_VISITS = 32


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    scaled.validate(inputs, options)  # Q and K share d_k; K and V share n
    _check_options(inputs["Q"].shape[0], inputs["K"].shape[0], options)


def _check_options(m: int, n: int, options: dict[str, Any]) -> None:
    whole_at_least(options.get("sram", DEFAULT_SRAM_KIB), param("sram"), meaning="KiB on chip")
    block = whole_at_least(options.get("block"), param("block"))
    blocks = math.ceil(n / block)
    if blocks > MAX_BLOCKS:
        raise UserError(
            f"{n} keys in blocks of {block} make {blocks} blocks, each shown as six steps; "
            f"use at most {MAX_BLOCKS} blocks: raise {param('block')} to {math.ceil(n / MAX_BLOCKS)} or "
            "give fewer keys."
        )
    query_block = options.get("query_block")
    if query_block is not None:
        whole_at_least(query_block, param("query_block"), meaning="query rows per tile")
        tiles = math.ceil(m / query_block)
        if tiles * blocks > MAX_VISITS:
            raise UserError(
                f"{m} queries in tiles of {query_block} and {n} keys in blocks of {block} make "
                f"{tiles} × {blocks} = {tiles * blocks} tile × block visits, each shown as six "
                f"steps; use at most {MAX_VISITS}: raise {param('query_block')} or {param('block')}, or give "
                "fewer queries or keys."
            )
    if options.get("causal"):
        check_causal_square(m, n)


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """attn scaled's shapes, with the card's smaller defaults, so that every block stays
    readable."""
    return scaled.random_shapes(sizes)


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
    base: dict[str, Any] = {"m": m, "n": n, "dk": d_k, "dv": d_v, "block": block}
    base["blocks"] = blocks
    base["sqrt_dk"] = math.sqrt(d_k)
    record = StepRecorder(run)

    # What this run does to a block's scores, said once, on the first block's scores.
    first = [record.note("block_scaled", sqrt_dk=math.sqrt(d_k))] if use_scale else []
    first += [] if use_scale else [record.note("block_unscaled")]
    first += [record.note("block_causal")] if causal else []
    if query_block is None:  # one query tile holding every query: the inner loop only
        steps = tiled.block_steps(q, k, v, block=block, causal=causal, use_scale=use_scale)
        final = _inner_loop(record, steps, queries, keys, base, notes=tuple(first))
        output = record.compute(
            "output",
            lambda: tiled.finish(final),
            grid=Grid(queries, context=base),
        )
        largest = {"key": "largest_block", "rows": m}
        skipped = 0
    else:
        output, skipped = _both_loops(
            record, (q, k, v), int(query_block), (queries, keys), base, tuple(first)
        )
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
    _io(record, (m, n, d_k, d_v), base)
    notes = [record.note(str(largest["key"]), rows=largest["rows"], cols=min(block, n), m=m, n=n)]
    if skipped:
        notes.append(record.note("causal_skipped", skipped=skipped, visits=base["tiles"] * blocks))
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
    names: tuple[tuple[str, ...], tuple[str, ...]],
    base: dict[str, Any],
    first_notes: tuple[Note, ...],
) -> tuple[Any, int]:
    """The outer loop over query tiles, each with its own inner loop over the key blocks.

    Returns the output (every tile's rows, stacked) and how many tile × block visits a causal
    mask let the tiles skip.
    """
    q, k, v = qkv
    queries, keys = names
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
        rows = queries[tile.start : tile.stop]
        q_range = rows[0] if len(rows) == 1 else f"{rows[0]}..{rows[-1]}"
        context = {**base, "t": number, "q_range": q_range}
        context.update(rows=len(rows), visited=len(tile.blocks), skipped=tile.skipped)
        context["skip_text"] = _skip_text(tile.skipped) if tile.skipped else ""
        prefix = f"tile{number}."
        record.add(
            f"{prefix}queries",
            q[tile.start : tile.stop],
            text="tile" if number == 1 else "tile_again",
            grid=Grid(rows, context=context),
        )
        # The inner loop's texts speak of the tile's rows: m is the tile's row count here.
        inner = {**context, "m": len(rows)}
        final = _inner_loop(
            record, tile.blocks, rows, keys, inner, prefix=prefix, tile=number, notes=first_notes
        )
        rows_out.append(
            record.compute(
                f"{prefix}output",
                functools.partial(tiled.finish, final),
                text="tile_output",
                grid=Grid(rows, context=context),
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


def _io(record: StepRecorder, sizes: tuple[int, int, int, int], base: dict[str, Any]) -> None:
    """Why FlashAttention is faster: the HBM reads and writes of the standard algorithm, of the
    loops on screen and of the paper's Algorithm 1 with its block sizes for M, each counted by
    running that algorithm's loops (mechanisms/tiled.py)."""
    m, n, d_k, d_v = sizes
    options = record.run.options
    itemsize = record.run.backend.itemsize
    sram_kib = int(options.get("sram", DEFAULT_SRAM_KIB))
    sram = sram_kib * 1024 // itemsize  # M, in elements
    query_block = int(options.get("query_block") or m)
    block = int(options["block"])
    d = max(d_k, d_v)
    b_c, b_r = tiled.paper_blocks(sram, d)
    causal = bool(options.get("causal", False))
    runs = {  # label, block sizes (queries × keys), traffic
        "standard": ("standard", "—", tiled.standard_traffic(m, n, d_k, d_v)),
        "tiled": (
            "tiled, on screen",
            f"{min(query_block, m)} × {min(block, n)}",
            tiled.tiled_traffic(
                m, n, d_k, d_v, block=block, query_block=query_block, causal=causal
            ),
        ),
        "paper": (
            "tiled, paper's M",
            f"{min(b_r, m)} × {min(b_c, n)}",
            tiled.paper_traffic(m, n, d_k, d_v, sram=sram),
        ),
    }
    table = [
        {
            "algorithm": label,
            "blocks": blocks,
            "reads": traffic.reads,
            "writes": traffic.writes,
            "total": traffic.total,
            "bytes": traffic.total * itemsize,
            "on_chip": traffic.on_chip or None,
        }
        for label, blocks, traffic in runs.values()
    ]
    standard, shown, paper = (runs[key][2].total for key in ("standard", "tiled", "paper"))
    tiles = math.ceil(m / query_block)
    notes = [
        record.note("io_fewer", tiled=shown, standard=standard, ratio=standard / shown),
        record.note("io_more", tiled=shown, standard=standard, tiles=tiles, m=m, n=n),
        record.note("io_paper_fewer", paper=paper, standard=standard, ratio=standard / paper),
        record.note("io_paper_more", paper=paper, standard=standard, m=m, n=n),
    ]
    # The counts assume each tile's scores stay on chip; a tile larger than M could not.
    on_chip = runs["tiled"][2].on_chip
    notes.append(record.note("io_spills", on_chip=on_chip, sram=sram))
    if sram_kib == DEFAULT_SRAM_KIB:
        notes.append(record.note("sram_default"))
    context = {**base, "sram_kib": sram_kib, "sram": sram, "itemsize": itemsize, "d": d}
    context.update(b_c=b_c, b_r=b_r)
    record.add("io", table, kind="records", grid=Grid(context=context), notes=tuple(notes))


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
    notes: tuple[Note, ...] = (),
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
        # The long texts once, for the first block of the first tile; then the short ones. A
        # later tile's first block starts the keys again from m = −∞; a block of every key is
        # the whole score matrix of these queries, no tile of it.
        first_of_all = number == 1 and tile in (None, 1)
        texts = dict(BLOCK_TEXTS if first_of_all else BLOCK_TEXTS_AGAIN)
        if number == 1 and not first_of_all:
            texts.update(scores="scores_restart", rescale="rescale_restart")
        if len(columns) == len(keys):
            texts["scores"] = "scores_whole" if first_of_all else "scores_whole_again"
        merge_steps(
            record,
            f"{prefix}block{number}.",
            (update, before),
            replace(rows, cols=columns),
            texts,
            notes=notes if first_of_all else (),  # what this run does to the scores
            number=str(number),
        )
        state = update.state
    assert state is not None  # n >= 1 keys make at least one block, and a tile meets key 1
    return state


def merge_steps(
    record: StepRecorder,
    key: str,
    merge: tuple[tiled.BlockUpdate, tiled.OnlineState],
    grid: Grid,
    texts: Mapping[str, str],
    *,
    notes: tuple[Note, ...] = (),
    number: str = "",
) -> None:
    """One key block folded into the running state (the update, and the state before it), as
    six steps under ``key``: the block's scores S, the new row max m, the rescale c, P, ℓ and
    acc. ``grid``: the query rows by the block's keys; ``number`` names the block in the parts
    (S1, P1 V1). The flash lesson shows each block so, and the ring lesson each round's merge."""
    update, before = merge
    rows = replace(grid, cols=None)
    record.add(f"{key}scores", update.scores, text=texts["scores"], grid=grid, notes=notes)
    record.add(
        f"{key}max",
        update.state.row_max,
        text=texts["max"],
        grid=replace(rows, cols=("m",)),
        parts=(Part("m before", before.row_max), Part(f"row max of S{number}", update.block_max)),
    )
    record.add(
        f"{key}rescale", update.rescale, text=texts["rescale"], grid=replace(rows, cols=("c",))
    )
    record.add(f"{key}p", update.p, text=texts["p"], grid=grid)
    record.add(
        f"{key}sum",
        update.state.row_sum,
        text=texts["sum"],
        grid=replace(rows, cols=("ℓ",)),
        parts=(Part("ℓ before", before.row_sum), Part(f"row sum of P{number}", update.block_sum)),
    )
    record.add(
        f"{key}acc",
        update.state.acc,
        text=texts["acc"],
        grid=rows,
        parts=(Part("acc before", before.acc), Part(f"P{number} V{number}", update.pv)),
    )


def _totals(walkthrough: Walkthrough) -> tuple[int, int, int] | None:
    """The HBM totals (standard, tiled on screen, paper's blocks) of the io step's table."""
    try:
        standard, shown, paper = (int(row["total"]) for row in walkthrough.step("io"))
    except (KeyError, TypeError, ValueError):
        return None
    return standard, shown, paper


def same_up_to_rounding(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The tiled and the plain output differ by no more than rounding in the run's dtype:
    a few ulps of the largest output entry per key (not when a score overflowed to NaN)."""
    try:
        difference = float(values["difference"])
        plain = np.abs(np.asarray(walkthrough.step("check"), dtype=float))
        keys = next(item.value for item in walkthrough.inputs if item.name == "K")
        n = max(1, int(np.shape(keys)[0]))  # each output entry adds n terms
    except (KeyError, TypeError, ValueError, IndexError, StopIteration):
        return False
    if not math.isfinite(difference) or plain.size == 0 or not np.all(np.isfinite(plain)):
        return False
    scale = max(1.0, float(np.max(plain)))
    return difference <= 4 * n * EPSILON.get(walkthrough.dtype, 2.0**-7) * scale


def tile_exceeds_sram(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The io table's on-screen tile holds more elements than M, the note's sram."""
    try:
        shown = next(row for row in walkthrough.step("io") if row["algorithm"].startswith("tiled"))
        on_chip, sram = int(shown["on_chip"]), int(values["sram"])
    except (KeyError, TypeError, ValueError, StopIteration):
        return False
    return on_chip == int(values["on_chip"]) and on_chip > sram


def tiled_moves_fewer(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    totals = _totals(walkthrough)
    return totals is not None and totals[1] < totals[0]


def tiled_moves_more(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    totals = _totals(walkthrough)
    return totals is not None and totals[1] > totals[0]


def paper_blocks_move_fewer(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    totals = _totals(walkthrough)
    return totals is not None and totals[2] < totals[0]


def paper_blocks_move_no_fewer(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    totals = _totals(walkthrough)
    return totals is not None and totals[2] >= totals[0]


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
# A block that holds every key; a later query tile's first block (those read the tile too).
TILE_BLOCK = (*TILE, "b", "first", "last", "width", "where")
TEXTS = Texts(
    steps={
        **dict.fromkeys(BLOCK_TEXTS.values(), BLOCK),
        **dict.fromkeys(BLOCK_TEXTS_AGAIN.values(), BLOCK),
        "scores_whole": BLOCK,
        **dict.fromkeys(("scores_whole_again", "scores_restart", "rescale_restart"), TILE_BLOCK),
        "tile": TILE,
        "tile_again": TILE,
        "tile_output": TILE,
        "output_tiles": TILES,
        "output": SIZES,
        "check": SIZES,
        "io": (*SIZES, "sram_kib", "sram", "itemsize", "d", "b_c", "b_r"),
    },
    notes={
        "tiled_check": ("difference",),
        "largest_block": ("rows", "cols", "m", "n"),
        "largest_tile": ("rows", "cols", "m", "n"),
        "causal_skipped": ("skipped", "visits"),
        "block_scaled": ("sqrt_dk",),
        "block_unscaled": (),
        "block_causal": (),
        "sram_default": (),
        "io_fewer": ("tiled", "standard", "ratio"),
        "io_more": ("tiled", "standard", "tiles", "m", "n"),
        "io_paper_fewer": ("paper", "standard", "ratio"),
        "io_paper_more": ("paper", "standard", "m", "n"),
        "io_spills": ("on_chip", "sram"),
    },
    claims={
        "tiled_check": same_up_to_rounding,
        "io_fewer": tiled_moves_fewer,
        "io_more": tiled_moves_more,
        "io_paper_fewer": paper_blocks_move_fewer,
        "io_paper_more": paper_blocks_move_no_fewer,
        "io_spills": tile_exceeds_sram,
    },
    measured=(
        "largest_block",
        "largest_tile",
        "causal_skipped",
    ),
    general=(
        "block_scaled",
        "block_unscaled",
        "block_causal",
        "sram_default",
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
