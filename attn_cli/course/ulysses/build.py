"""The Ulysses lesson: DeepSpeed-Ulysses's all-to-alls on attn ring's processes, and the bytes
each method sends.

P processes each hold n / P positions of Q, K and V, every head (attn ring's contiguous
shards). Three all-to-alls give each process all n positions of H / P query heads (and G / P
key/value heads); it attends head by head on whole sequences; a fourth all-to-all sends the
outputs back to the processes holding their positions. The processes are attn ring's (its
launch and its Link); their program is process.py. This module shows what they recorded: each
process's shard, its heads after the all-to-all, each head's weights, its outputs before and
after the all-to-all back, the gathered output beside single-device attention, and the bytes of
Ulysses and of ring attention (run by the same processes on the same shards) against their
formulas (attn_cli.mechanisms.ulysses).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core.backend import ITEMSIZE
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import InputValue, Walkthrough
from attn_cli.course.checks import row_names, whole_at_least
from attn_cli.course.flash.build import same_up_to_rounding
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.ring import build as ring_lesson
from attn_cli.course.ring import launch
from attn_cli.course.ring.card import MAX_PROCESSES
from attn_cli.course.ring.costs import table_of
from attn_cli.course.ring.rank import Ring
from attn_cli.course.ulysses import process
from attn_cli.course.ulysses.card import CARD
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import masks, ring, ulysses


def heads_of(options: Mapping[str, Any]) -> tuple[int, int]:
    """H and G (default H); G divides H."""
    heads = whole_at_least(options.get("heads", 2), param("heads"), meaning="heads")
    given = options.get("kv_heads")
    kv_heads = heads if given is None else whole_at_least(given, param("kv_heads"), meaning="heads")
    if heads % kv_heads:
        raise UserError(
            f"{param('kv_heads', kv_heads)} does not divide {param('heads', heads)}: each key/value "
            f"head is shared by H/G query heads; use a divisor of {heads}."
        )
    return heads, kv_heads


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    q, k, v = (inputs[name] for name in ("Q", "K", "V"))
    if not q.shape[0] == k.shape[0] == v.shape[0]:
        raise UserError(
            f"Q, K and V have {q.shape[0]}, {k.shape[0]} and {v.shape[0]} rows: Ulysses splits one "
            "sequence over the processes, so give them the same n."
        )
    heads, kv_heads = heads_of(options)
    if q.shape[1] % heads:
        raise UserError(
            f"Q has {q.shape[1]} columns, which {param('heads', heads)} does not divide: Q holds the "
            f"H heads side by side, d_k columns each; give Q a multiple of {heads} columns."
        )
    d_k = q.shape[1] // heads
    if k.shape[1] != kv_heads * d_k:
        raise UserError(
            f"K has {k.shape[1]} columns but G·d_k = {kv_heads}·{d_k} = {kv_heads * d_k}: K holds the "
            f"G key/value heads side by side, each as wide as a query head."
        )
    if v.shape[1] % kv_heads:
        raise UserError(
            f"V has {v.shape[1]} columns, which G = {kv_heads} does not divide: V holds the G "
            f"key/value heads side by side; give V a multiple of {kv_heads} columns."
        )
    processes = ring_lesson.processes_of(options, q.shape[0])
    n = q.shape[0]
    for count, name, what, letter in (
        (heads, "heads", "query heads", "H"),
        (kv_heads, "kv_heads", "key/value heads", "G"),
    ):
        if count % processes:
            fits = [
                p for p in range(1, MAX_PROCESSES + 1) if not (n % p or heads % p or kv_heads % p)
            ]
            raise UserError(
                f"{param('processes', processes)} does not divide the {count} {what} "
                f"({param(name, count)}): after the all-to-all each process holds {letter}/P of "
                f"them; use {param('processes', ring_lesson.either(fits))}, or {what} a multiple "
                f"of {processes}."
            )
    ring_lesson.validate_transport(options)


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """One head's widths: Q and K n × d_k, V n × d_v; option_shapes makes room for the heads."""
    n, d_k = sizes["n"], sizes["dk"]
    return {"Q": (n, d_k), "K": (n, d_k), "V": (n, sizes.get("dv") or d_k)}


def option_shapes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any]
) -> dict[str, tuple[int, ...]]:
    """H heads of Q side by side, G of K and V."""
    heads, kv_heads = heads_of(options)
    (n, d_k), (_, d_v) = shapes["Q"], shapes["V"]
    return {"Q": (n, heads * d_k), "K": (n, kv_heads * d_k), "V": (n, kv_heads * d_v)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    """Each head's n × n weights, and Q, K, V and the outputs a few times over (the shards, the
    heads after the all-to-all, the ring's copy, the gathered and the checks)."""
    (n, q_width), (_, k_width), (_, v_width) = shapes["Q"], shapes["K"], shapes["V"]
    heads, _ = heads_of(options)
    return (heads * n * n + 8 * n * (q_width + k_width + 2 * v_width)) * itemsize


def build(run: LessonRun) -> Walkthrough:
    q, k, v = (run.inputs[name] for name in ("Q", "K", "V"))
    n = q.shape[0]
    heads, kv_heads = heads_of(run.options)
    d_k, d_v = q.shape[1] // heads, v.shape[1] // kv_heads
    processes = ring_lesson.processes_of(run.options, n)
    causal = bool(run.options.get("causal", False))
    use_scale = bool(run.options.get("scale", True))
    transport = ring_lesson.transport_of(run)
    layout = ring.shards(n, processes, "contiguous")
    queries = row_names(run, "queries", n, "q", "the lesson file")
    keys = row_names(run, "keys", n, "k", "the lesson file")
    setup = Ring(
        layout,
        causal,
        use_scale,
        run.backend.name,
        run.backend.dtype,
        transport,
        "",
        method="ulysses",
        heads=heads,
        kv_heads=kv_heads,
    )
    records = launch.run(setup, q, k, v, program=process.run)
    base: dict[str, Any] = {"n": n, "dk": d_k, "dv": d_v, "processes": processes}
    base.update(heads=heads, kv_heads=kv_heads, transport=transport, block=n // processes)
    base.update(local_heads=heads // processes, local_kv_heads=kv_heads // processes)
    record = StepRecorder(run)
    _layout(record, layout, queries, base)
    widths = {"Q": ("h", d_k), "K": ("g", d_k), "V": ("g", d_v)}
    for rank, shard in enumerate(layout):
        rows = tuple(queries[p] for p in shard.positions)
        context = {**base, "r": rank, "held": _spans(rows)}
        for name, (prefix, width) in widths.items():
            count = heads if name == "Q" else kv_heads
            text = "shard" if rank == 0 and name == "Q" else "shard_again"
            record.add(
                f"process{rank}.{name.lower()}",
                records[rank][name.lower()],
                text=text,
                grid=Grid(
                    rows if name == "Q" else tuple(keys[p] for p in shard.positions),
                    _columns(prefix, range(count), width),
                    context={**context, "tensor": name},
                ),
            )
    for rank in range(processes):
        mine = ulysses.heads_of(rank, heads, processes)
        theirs = ulysses.heads_of(rank, kv_heads, processes)
        context = {
            **base,
            "r": rank,
            "mine": _heads_said("h", mine),
            "theirs": _heads_said("g", theirs),
        }
        for name, (prefix, width) in widths.items():
            text = "heads" if rank == 0 and name == "Q" else "heads_again"
            record.add(
                f"process{rank}.heads.{name.lower()}",
                records[rank][f"heads.{name.lower()}"],
                text=text,
                grid=Grid(
                    queries if name == "Q" else keys,
                    _columns(prefix, mine if name == "Q" else theirs, width),
                    context={**context, "tensor": name},
                ),
            )
        for head in mine:
            kv = ulysses.kv_head_of(head, heads, kv_heads)
            text = "weights" if rank == 0 and head == 0 else "weights_again"
            record.add(
                f"process{rank}.head{head + 1}.weights",
                records[rank][f"head{head}.weights"],
                text=text,
                row_sums=True,
                grid=Grid(queries, keys, context={**context, "head": head + 1, "kv_head": kv + 1}),
            )
        record.add(
            f"process{rank}.attended",
            records[rank]["attended"],
            text="attended" if rank == 0 else "attended_again",
            grid=Grid(queries, _columns("h", mine, d_v), context=context),
        )
    for rank, shard in enumerate(layout):
        rows = tuple(queries[p] for p in shard.positions)
        record.add(
            f"process{rank}.output",
            records[rank]["output"],
            text="output" if rank == 0 else "output_again",
            grid=Grid(
                rows,
                _columns("h", range(heads), d_v),
                context={**base, "r": rank, "held": _spans(rows)},
            ),
        )
    output_columns = _columns("h", range(heads), d_v)
    gathered = records[0]["gathered"]
    record.add("gathered", gathered, grid=Grid(queries, output_columns, context=base))
    backend = run.backend
    qb, kb, vb = (backend.asarray(array) for array in (q, k, v))

    def one_device() -> Any:
        outputs = []
        for head in range(heads):
            g = ulysses.kv_head_of(head, heads, kv_heads)
            qh = qb[:, head * d_k : (head + 1) * d_k]
            kh, vh = kb[:, g * d_k : (g + 1) * d_k], vb[:, g * d_v : (g + 1) * d_v]
            mask = masks.causal_additive(mech.scores(qh, kh)) if causal else None
            outputs.append(mech.attention(qh, kh, vh, use_scale=use_scale, mask=mask).output)
        return process._columns(backend, outputs)

    plain = backend.to_numpy(
        record.compute("check", one_device, grid=Grid(queries, output_columns, context=base))
    )
    difference = float(np.max(np.abs(gathered - plain)))
    ring_difference = float(np.max(np.abs(records[0]["ring_gathered"] - plain)))
    itemsize = ITEMSIZE[run.backend.dtype]
    _traffic(record, records, (n, processes, heads, kv_heads, d_k, d_v), base, itemsize)
    notes = [
        record.note("ulysses_check", difference=difference),
        record.note("ring_check", difference=ring_difference),
        record.note(f"transport_{transport}" if processes > 1 else "transport_alone"),
    ]
    notes += ring_lesson.interface_overridden(records, transport)
    return record.walkthrough(
        gathered,
        inputs=(
            InputValue("Q", q, row_labels=queries, description=CARD.inputs[0].description),
            InputValue("K", k, row_labels=keys, description=CARD.inputs[1].description),
            InputValue("V", v, row_labels=keys, description=CARD.inputs[2].description),
        ),
        notes=tuple(notes),
        meta={"max_abs_difference": difference, "ring_max_abs_difference": ring_difference},
    )


def _columns(prefix: str, heads: range, width: int) -> tuple[str, ...]:
    """h1.1, h1.2, h2.1, ...: head, then the entry in it (1-based)."""
    return tuple(f"{prefix}{head + 1}.{i + 1}" for head in heads for i in range(width))


def _heads_said(prefix: str, heads: range) -> str:
    return _spans([f"{prefix}{head + 1}" for head in heads])


def _spans(labels: tuple[str, ...] | list[str]) -> str:
    return ring_lesson.spans(labels)


def _layout(
    record: StepRecorder,
    layout: tuple[ring.Shard, ...],
    queries: tuple[str, ...],
    base: dict[str, Any],
) -> None:
    processes, heads, kv_heads = base["processes"], base["heads"], base["kv_heads"]
    rows = [
        {
            "process": rank,
            "positions": _spans([queries[p] for p in shard.positions]),
            "query_heads": _heads_said("h", ulysses.heads_of(rank, heads, processes)),
            "kv_heads": _heads_said("g", ulysses.heads_of(rank, kv_heads, processes)),
        }
        for rank, shard in enumerate(layout)
    ]
    record.add("layout", rows, kind="records", grid=Grid(context=base))


METHODS = ("ulysses", "ring")


def _traffic(
    record: StepRecorder,
    records: list[dict[str, np.ndarray]],
    sizes: tuple[int, int, int, int, int, int],
    base: dict[str, Any],
    itemsize: int,
) -> None:
    """Per method and process: the bytes the link counted going out and coming in, against the
    formula (attn_cli.mechanisms.ulysses)."""
    n, processes, heads, kv_heads, d_k, d_v = sizes
    formula = {
        "ulysses": ulysses.ulysses_entries(n, processes, heads, kv_heads, (d_k, d_v)) * itemsize,
        "ring": ulysses.ring_entries(n, processes, kv_heads, (d_k, d_v)) * itemsize,
    }
    table = []
    for method in METHODS:
        for rank, values in enumerate(records):
            if method == "ulysses":
                sent = sum(int(values[f"a2a.{name}.sent"]) for name in process.EXCHANGES)
                received = sum(int(values[f"a2a.{name}.received"]) for name in process.EXCHANGES)
                parts: dict[str, int | None] = {
                    f"{name}_sent": int(values[f"a2a.{name}.sent"]) for name in process.EXCHANGES
                }
            else:
                sent, received = int(values["ring.sent"]), int(values["ring.received"])
                parts = dict.fromkeys((f"{name}_sent" for name in process.EXCHANGES), None)
            table.append(
                {
                    "method": method,
                    "process": rank,
                    **parts,
                    "sent": sent,
                    "received": received,
                    "formula": formula[method],
                }
            )
    notes = []
    if all(row["sent"] == row["received"] == row["formula"] for row in table):
        notes.append(record.note("traffic_exact", itemsize=itemsize))
    ulysses_bytes, ring_bytes = formula["ulysses"], formula["ring"]
    said: dict[str, Any] = {
        "ulysses": ulysses_bytes,
        "ring": ring_bytes,
        "processes": processes,
        "threshold": 1 + heads / kv_heads,
    }
    if ulysses_bytes == ring_bytes == 0:
        notes.append(record.note("nothing_sent"))
    elif ulysses_bytes == ring_bytes:
        notes.append(record.note("same_bytes", **said))
    else:
        fewer = "ulysses_fewer" if ulysses_bytes < ring_bytes else "ring_fewer"
        ratio = max(ulysses_bytes, ring_bytes) / min(ulysses_bytes, ring_bytes)
        notes.append(record.note(fewer, ratio=ratio, **said))
    context = {**base, "itemsize": itemsize}
    record.add("traffic", table, kind="records", grid=Grid(context=context), notes=tuple(notes))


def _per_method(walkthrough: Walkthrough) -> dict[str, set[int]] | None:
    """Each method's bytes sent per process, as the traffic table has them (None: no table)."""
    rows = table_of(walkthrough, "traffic")
    if not rows:
        return None
    return {method: {row["sent"] for row in rows if row["method"] == method} for method in METHODS}


def _layout_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    layout = table_of(walkthrough, "layout")
    return layout is not None and len(layout) == values["processes"]


def traffic_exact_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every row's bytes sent and received are its formula's."""
    rows = table_of(walkthrough, "traffic")
    return rows is not None and all(
        row["sent"] == row["received"] == row["formula"] for row in rows
    )


def _bytes_hold(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    sent = _per_method(walkthrough)
    return (
        sent is not None
        and sent["ulysses"] == {values["ulysses"]}
        and sent["ring"] == {values["ring"]}
        and _layout_holds(walkthrough, values)
    )


def ulysses_fewer_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Ulysses's bytes below the ring's, in the ratio said, with P above 1 + H/G."""
    u, r = values["ulysses"], values["ring"]
    return (
        _bytes_hold(walkthrough, values)
        and 0 < u < r
        and math.isclose(r / u, values["ratio"])
        and values["processes"] > values["threshold"]
    )


def ring_fewer_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The ring's bytes below Ulysses's, in the ratio said, with P below 1 + H/G."""
    u, r = values["ulysses"], values["ring"]
    return (
        _bytes_hold(walkthrough, values)
        and 0 < r < u
        and math.isclose(u / r, values["ratio"])
        and values["processes"] < values["threshold"]
    )


def nothing_sent_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """One process: no row of the table sends or receives a byte."""
    rows = table_of(walkthrough, "traffic")
    return rows is not None and all(row["sent"] == row["received"] == 0 for row in rows)


def same_bytes_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The same bytes, at P = 1 + H/G."""
    return (
        _bytes_hold(walkthrough, values)
        and values["ulysses"] == values["ring"] > 0
        and values["processes"] == values["threshold"]
    )


SIZES: tuple[str, ...] = ("n", "dk", "dv", "processes", "heads", "kv_heads", "transport")
SIZES = (*SIZES, "block", "local_heads", "local_kv_heads")
PROCESS = (*SIZES, "r", "held")
SHARD = (*PROCESS, "tensor")
HEADS = (*SIZES, "r", "mine", "theirs")
TEXTS = Texts(
    steps={
        "layout": SIZES,
        "shard": SHARD,
        "shard_again": SHARD,
        "heads": (*HEADS, "tensor"),
        "heads_again": (*HEADS, "tensor"),
        "weights": (*HEADS, "head", "kv_head"),
        "weights_again": (*HEADS, "head", "kv_head"),
        "attended": HEADS,
        "attended_again": HEADS,
        "output": PROCESS,
        "output_again": PROCESS,
        "gathered": SIZES,
        "check": SIZES,
        "traffic": (*SIZES, "itemsize"),
    },
    notes={
        "ulysses_check": ("difference",),
        "ring_check": ("difference",),
        "transport_gloo": (),
        "transport_nccl": (),
        "transport_pipes": (),
        "transport_alone": (),
        "traffic_exact": ("itemsize",),
        "nothing_sent": (),
        "ulysses_fewer": ("ulysses", "ring", "processes", "threshold", "ratio"),
        "ring_fewer": ("ulysses", "ring", "processes", "threshold", "ratio"),
        "same_bytes": ("ulysses", "ring", "processes", "threshold"),
    },
    claims={
        "ulysses_check": same_up_to_rounding,
        "ring_check": same_up_to_rounding,
        "traffic_exact": traffic_exact_holds,
        "nothing_sent": nothing_sent_holds,
        "same_bytes": same_bytes_holds,
        "ulysses_fewer": ulysses_fewer_holds,
        "ring_fewer": ring_fewer_holds,
    },
    general=("transport_gloo", "transport_nccl", "transport_pipes", "transport_alone"),
)

LESSON = Lesson(
    card=CARD,
    labels=("queries", "keys"),
    validate=validate,
    random_shapes=random_shapes,
    option_shapes=option_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
    memory_fix="choose a shorter sequence or fewer heads",
)
