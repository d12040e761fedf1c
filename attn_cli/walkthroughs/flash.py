"""The tiled (FlashAttention) lesson: attention one key block at a time, with an online softmax.

For every block: its scores, the new running max, the rescale factor, the block's
exponentials, the running sum and the running weighted sum of values. Then the output
acc / ℓ, and the plain softmax attention beside it to show they agree.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attn_cli.errors import UserError
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import masks, tiled
from attn_cli.model import Part, Walkthrough
from attn_cli.walkthroughs import scaled
from attn_cli.walkthroughs.base import LessonRun, StepRecorder, row_names

INPUTS = scaled.INPUTS  # Q, K, V: the same inputs and checks as attn scaled
OPTIONS: dict[str, Any] = {"scale": True, "block": 2, "causal": False}
# The example labels (lesson files' labels = {...}) this lesson reads, by row_names.
LABELS: tuple[str, ...] = ("queries", "keys")
# Every block is shown as six steps; more blocks than this is no longer a walkthrough.
MAX_BLOCKS = 16


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    scaled.validate(inputs, options)  # Q and K share d_k; K and V share n
    _check_options(inputs["Q"].shape[0], inputs["K"].shape[0], options)


def _check_options(m: int, n: int, options: dict[str, Any]) -> None:
    block = options.get("block")
    if not isinstance(block, int) or isinstance(block, bool) or block < 1:
        raise UserError(f"--block must be a whole number >= 1, not {block!r}.")
    blocks = math.ceil(n / block)
    if blocks > MAX_BLOCKS:
        raise UserError(
            f"{n} keys in blocks of {block} make {blocks} blocks, each shown as six steps; "
            f"use at most {MAX_BLOCKS} blocks: raise --block to {math.ceil(n / MAX_BLOCKS)} or "
            "give fewer keys."
        )
    if options.get("causal") and m != n:
        raise UserError(
            f"--causal needs as many queries as keys (query i sees keys 1..i), but Q has {m} "
            f"rows and K has {n}."
        )


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
    return (3 * m * n + blocks * (3 * m * d_v + 6 * m) + 2 * m * d_v) * itemsize


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    q, k, v = (backend.asarray(run.inputs[name]) for name in ("Q", "K", "V"))
    (m, d_k), n, d_v = q.shape, k.shape[0], v.shape[1]
    use_scale = bool(run.options.get("scale", True))
    causal = bool(run.options.get("causal", False))
    block = int(run.options["block"])
    queries = row_names(run, "queries", m, "q", "the lesson file")
    keys = row_names(run, "keys", n, "k", "the lesson file")
    blocks = math.ceil(n / block)
    base = {"m": m, "n": n, "dk": d_k, "dv": d_v, "block": block, "blocks": blocks}
    base["sqrt_dk"] = math.sqrt(d_k)
    record = StepRecorder(run)

    state = None
    steps = tiled.block_steps(q, k, v, block=block, causal=causal, use_scale=use_scale)
    for number, step in enumerate(steps, start=1):
        update, before = step.update, step.before
        columns = keys[step.start : step.stop]
        context = {**base, "b": number, "first": columns[0], "last": columns[-1]}
        context["width"] = len(columns)
        rows = {"row_labels": queries, "context": context}
        again = "" if number == 1 else "_again"  # later blocks: the short texts
        record.add(
            f"block{number}.scores",
            update.scores,
            text="scores" + again,
            col_labels=columns,
            **rows,
        )
        record.add(
            f"block{number}.max",
            update.state.row_max,
            text="max" + again,
            col_labels=("m",),
            parts=(
                Part("m before", before.row_max),
                Part(f"row max of S{number}", update.block_max),
            ),
            **rows,
        )
        record.add(
            f"block{number}.rescale",
            update.rescale,
            text="rescale" + again,
            col_labels=("c",),
            **rows,
        )
        record.add(f"block{number}.p", update.p, text="p" + again, col_labels=columns, **rows)
        record.add(
            f"block{number}.sum",
            update.state.row_sum,
            text="sum" + again,
            col_labels=("ℓ",),
            parts=(
                Part("ℓ before", before.row_sum),
                Part(f"row sum of P{number}", update.block_sum),
            ),
            **rows,
        )
        record.add(
            f"block{number}.acc",
            update.state.acc,
            text="acc" + again,
            parts=(Part("acc before", before.acc), Part(f"P{number} V{number}", update.pv)),
            **rows,
        )
        state = update.state
    assert state is not None  # n >= 1 keys make at least one block
    final = state
    output = record.compute("output", lambda: tiled.finish(final), row_labels=queries, context=base)
    mask = masks.causal_additive(mech.scores(q, k)) if causal else None  # (m, m), m = n
    plain = mech.attention(q, k, v, use_scale=use_scale, mask=mask).output
    difference = float(np.max(np.abs(backend.to_numpy(output) - backend.to_numpy(plain))))
    record.add(
        "check",
        plain,
        row_labels=queries,
        context=base,
        notes=(f"max |tiled − plain| = {difference:.1e}: the same numbers, up to rounding.",),
    )
    notes = [
        f"The largest score array held at once was {m} × {min(block, n)} (one block); the plain "
        f"computation holds all {m} × {n} scores."
    ]
    if not use_scale:
        notes.append("Scores are not scaled here (the example uses the plain dot product).")
    return record.walkthrough(
        output,
        inputs=scaled.labelled_inputs(run, queries, keys),
        notes=tuple(notes),
        meta={"max_abs_difference": difference},
    )
