"""The ring lesson's last two steps: the work each process does in each round under a causal
mask, for every sharding, and what moves (bytes sent against FLOPs, and the ratio that decides
whether a transfer hides behind a merge, on a GPU whose figures attn bench knows); with the
claims that check the notes on them against their tables."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.bench.peaks import dense_peak_tflops, known_device
from attn_cli.core import variants
from attn_cli.core.backend import ITEMSIZE
from attn_cli.core.model import Walkthrough
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import ring

# What the traffic step concludes, from the machine's figures: whether a process holds the
# queries it takes for a round's merge to outlast its transfer.
VERDICTS = {
    True: "there the transfers would hide behind the merges",
    False: "there every round would wait for the link",
}
# What the machine's note reads.
MACHINE = ("device", "dtype", "tflops", "link", "balance", "itemsize", "needed", "rows", "verdict")
# The GPU the traffic step measures the ratio against when the run is not on a listed one: an
# H100 SXM in bfloat16, the usual card and dtype of long-context training.
REFERENCE_GPU = "NVIDIA H100 80GB HBM3"
REFERENCE_DTYPE = "bfloat16"
# NVLink between two GPUs of a node, GB/s each way: half the bidirectional figure of NVIDIA's
# datasheets (H100 SXM and H200 SXM 900 GB/s, A100 600 GB/s, H100 PCIe with its bridge
# 600 GB/s). Keyed by attn bench's labels (attn_cli.bench.peaks); a GPU not listed has none.
NVLINK_GB_PER_S = {"H100 SXM": 450.0, "H200 SXM": 450.0, "A100": 300.0, "H100 PCIe": 300.0}


def work_step(
    record: StepRecorder,
    records: list[dict[str, np.ndarray]],
    sizes: tuple[int, int, str],
    base: dict[str, Any],
) -> None:
    """The scores each process computes in each round under the causal mask (P above 1), for
    every sharding that n and P allow: this run's counted by its processes as they ran, the others by
    the same rule."""
    n, processes, shown = sizes
    table = []
    spread = {}
    for sharding in variants.SHARDINGS:
        if sharding == "zigzag" and n % (2 * processes):
            continue  # zigzag needs n a multiple of 2P (its 2P runs of equal length)
        if sharding == shown:
            counts = [
                [
                    ring.Work(int(values[f"round{t}.computed"]), int(values[f"round{t}.kept"]))
                    for t in range(1, processes + 1)
                ]
                for values in records
            ]
        else:
            counts = ring.work_table(n, processes, sharding, causal=True)
        totals = []
        for rank, rounds in enumerate(counts):
            row: dict[str, Any] = {"sharding": sharding, "process": rank}
            row.update({f"round{t}": work.computed for t, work in enumerate(rounds, start=1)})
            row["total"] = sum(work.computed for work in rounds)
            row["kept"] = sum(work.kept for work in rounds)
            table.append(row)
            totals.append(row["total"])
        spread[sharding] = totals
    notes = []
    for sharding, totals in spread.items():
        most, least = max(totals), min(totals)
        notes.append(
            record.note(
                "work_spread",
                sharding=sharding,
                most=most,
                least=least,
                ratio=most / least if least else math.inf,
            )
        )
    contiguous = spread["contiguous"]
    if contiguous[0]:
        notes.append(
            record.note(
                "work_contiguous",
                first=contiguous[0],
                last=contiguous[-1],
                ratio=contiguous[-1] / contiguous[0],
                processes=processes,
            )
        )
    record.add("work", table, kind="records", grid=Grid(context=base), notes=tuple(notes))


def traffic_step(
    record: StepRecorder,
    records: list[dict[str, np.ndarray]],
    layout: tuple[ring.Shard, ...],
    widths: tuple[int, int],
    base: dict[str, Any],
    dtype: str,
) -> None:
    """Per round: the bytes every process sends (the block it holds, passed on) and the FLOPs
    of the merges that run meanwhile; their ratio decides whether the transfer hides."""
    d_k, d_v = widths
    processes = len(layout)
    table = []
    total_sent = total_flops = 0
    for t in range(1, processes + 1):
        prefix = f"round{t}."
        sent = [int(values[prefix + "sent"]) for values in records]
        flops = [
            ring.Work(int(values[prefix + "computed"]), 0).flops(d_k, d_v) for values in records
        ]
        ratios = [f / s for f, s in zip(flops, sent, strict=True) if s]
        table.append(
            {
                "round": t,
                "sent": sum(sent),
                "flops": sum(flops),
                "per_byte": sum(flops) / sum(sent) if sum(sent) else None,
                "lowest": min(ratios) if ratios else None,
            }
        )
        total_sent += sum(sent)
        total_flops += sum(flops)
    notes = []
    if total_sent:
        notes.append(
            record.note(
                "traffic_total",
                sent=total_sent,
                flops=total_flops,
                ratio=total_flops / total_sent,
            )
        )
    machine = _machine(records, dtype)
    if machine is not None and processes > 1:
        label, machine_dtype, tflops, link = machine
        balance = tflops * 1e12 / (link * 1e9)
        itemsize = ITEMSIZE[machine_dtype]
        needed = math.ceil(balance * itemsize / 2)
        rows = base["block"]
        values = {
            "device": label,
            "dtype": machine_dtype,
            "tflops": tflops,
            "link": link,
            "balance": balance,
            "itemsize": itemsize,
            "needed": needed,
            "rows": rows,
            "verdict": VERDICTS[rows >= needed],
        }
        notes.append(record.note("traffic_machine", **values))
    context = {**base, "itemsize": ITEMSIZE[dtype]}
    record.add("traffic", table, kind="records", grid=Grid(context=context), notes=tuple(notes))


def _machine(
    records: list[dict[str, np.ndarray]], dtype: str
) -> tuple[str, str, float, float] | None:
    """The GPU the ratio is weighed against: the run's own where it is listed with a link and a
    peak for the run's dtype; else the reference (an H100 SXM in bfloat16)."""
    if "device" in records[0]:
        name = str(records[0]["device"])
        entry = known_device(name)
        peak = dense_peak_tflops(name, dtype)
        if entry is not None and peak is not None and entry[0] in NVLINK_GB_PER_S:
            return entry[0], dtype, peak, NVLINK_GB_PER_S[entry[0]]
    entry = known_device(REFERENCE_GPU)
    peak = dense_peak_tflops(REFERENCE_GPU, REFERENCE_DTYPE)
    if entry is None or peak is None:
        return None
    return entry[0], REFERENCE_DTYPE, peak, NVLINK_GB_PER_S[entry[0]]


def table_of(walkthrough: Walkthrough, key: str) -> list[dict[str, Any]] | None:
    try:
        rows = walkthrough.step(key)
    except KeyError:
        return None
    return rows if isinstance(rows, list) else None


def _close(a: Any, b: Any) -> bool:
    return isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b)


def work_spread_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The busiest and the least busy process of that sharding, as the work table has them."""
    rows = table_of(walkthrough, "work")
    if not rows:
        return False
    totals = [row["total"] for row in rows if row["sharding"] == values["sharding"]]
    if not totals:
        return False
    most, least = max(totals), min(totals)
    ratio = most / least if least else math.inf
    return most == values["most"] and least == values["least"] and ratio == values["ratio"]


def contiguous_last_does_more(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The last contiguous process computes more than the first, in the ratio said."""
    rows = table_of(walkthrough, "work")
    if not rows:
        return False
    totals = [row["total"] for row in rows if row["sharding"] == "contiguous"]
    if len(totals) < 2 or not totals[0]:
        return False
    return (
        totals[0] == values["first"]
        and totals[-1] == values["last"]
        and totals[-1] > totals[0]
        and _close(totals[-1] / totals[0], values["ratio"])
    )


def traffic_total_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The bytes and FLOPs said are the traffic table's sums, and their ratio the one said."""
    rows = table_of(walkthrough, "traffic")
    if not rows:
        return False
    sent = sum(row["sent"] for row in rows)
    flops = sum(row["flops"] for row in rows)
    return (
        sent == values["sent"]
        and flops == values["flops"]
        and sent > 0
        and _close(flops / sent, values["ratio"])
    )


def _machine_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The machine's balance and the queries it takes, computed from the figures the note
    states; the queries each process holds as the layout table has them."""
    layout = table_of(walkthrough, "layout")
    if not layout:
        return False
    balance = values["tflops"] * 1e12 / (values["link"] * 1e9)
    needed = math.ceil(balance * ITEMSIZE[values["dtype"]] / 2)
    rows = {row["rows"] for row in layout}  # each process holds the same number
    return (
        _close(balance, values["balance"])
        and needed == values["needed"]
        and rows == {values["rows"]}
        and values["itemsize"] == ITEMSIZE[values["dtype"]]
    )


def machine_verdict(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The machine's figures hold, and the verdict is the one its numbers give."""
    hides = values["rows"] >= values["needed"]
    return _machine_holds(walkthrough, values) and values["verdict"] == VERDICTS[hides]
