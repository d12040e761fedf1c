"""The ring attention lesson: the flash lesson's online softmax, spread over P real processes.

Each process holds the queries of its shard and, round by round, one block of keys and values:
it merges the block into its running max, running sum and accumulator exactly as attn flash
does (attn_cli.mechanisms.ring.merge calls the same update), and passes the block on to the
next process. The processes are started here (launch.py) and run rank.py; this module shows
what they recorded: the layout, each round's blocks, every merge (six steps, as flash shows a
block), each process's rows, the gathered output beside single-device attention, the work per
process per round under a causal mask for each sharding, and the bytes sent against the FLOPs.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core import variants
from attn_cli.core.errors import UserError, param, params
from attn_cli.core.install import install_command
from attn_cli.core.model import Note, Walkthrough
from attn_cli.core.usertext import printable
from attn_cli.course.checks import counted, row_names, whole_at_least
from attn_cli.course.flash.build import merge_steps, same_up_to_rounding
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.ring import costs, launch
from attn_cli.course.ring.card import AUTO, CARD, MAX_PROCESSES
from attn_cli.course.ring.rank import SOCKET_VARIABLES, Ring
from attn_cli.course.scaled import build as scaled
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import masks, ring, tiled


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    q, k = inputs["Q"], inputs["K"]
    if q.shape[0] != k.shape[0]:
        raise UserError(
            f"Q has {q.shape[0]} rows but K has {k.shape[0]}: ring attention splits one sequence "
            "over the processes (each holds the queries and the keys of the same positions), so "
            "give Q and K the same n."
        )
    scaled.validate({name: inputs[name] for name in ("Q", "K", "V")}, {})
    sharding_of(options, processes_of(options, k.shape[0]), k.shape[0])
    validate_transport(options)


def validate_transport(options: Mapping[str, Any]) -> None:
    """--dist-backend one of auto, gloo, nccl, pipes (attn ulysses's processes too)."""
    transport = options.get("dist_backend") or AUTO
    if transport not in (AUTO, *variants.TRANSPORTS):
        raise UserError(
            f"{param('dist_backend', repr(transport))}: choose one of {AUTO}, {', '.join(variants.TRANSPORTS)}."
        )


def processes_of(options: Mapping[str, Any], n: int) -> int:
    """P: a whole number from 1 to MAX_PROCESSES that divides n (each process holds n / P
    queries and one block of n / P keys and values)."""
    processes = whole_at_least(options.get("processes"), param("processes"), meaning="processes")
    if processes > MAX_PROCESSES:
        raise UserError(
            f"{param('processes', processes)} is more than {MAX_PROCESSES}: the lesson shows every "
            f"process in every round ({processes}² merges); use at most {MAX_PROCESSES}."
        )
    if n % processes:
        fits = [p for p in range(1, min(n, MAX_PROCESSES) + 1) if n % p == 0]
        raise UserError(
            f"{param('processes', processes)} does not divide n = {n}: each process holds n / P queries "
            f"and one block of n / P keys; use {param('processes', either(fits))}, or a sequence "
            f"length that is a multiple of {processes}."
        )
    return processes


def either(choices: list[int]) -> str:
    """1, 2 or 4."""
    words = [str(choice) for choice in choices]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def sharding_of(options: Mapping[str, Any], processes: int, n: int) -> str:
    """The sharding; zigzag's 2P runs of equal length need n a multiple of 2P."""
    sharding = options.get("sharding") or variants.SHARDINGS[0]
    if sharding not in variants.SHARDINGS:
        raise UserError(
            f"{param('sharding', repr(sharding))}: choose one of {', '.join(variants.SHARDINGS)}."
        )
    if sharding == "zigzag" and n % (2 * processes):
        fits = [p for p in range(1, min(n, MAX_PROCESSES) + 1) if n % (2 * p) == 0]
        fix = f"{param('processes', either(fits))}, " if fits else ""
        raise UserError(
            f"{param('sharding', 'zigzag')} cuts the sequence into 2P = {2 * processes} runs of equal length, "
            f"but n = {n} is not a multiple of {2 * processes}; use {fix}a sequence length that "
            f"is a multiple of {2 * processes}, or {param('sharding', 'contiguous')} or striped."
        )
    return str(sharding)


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """One sequence: Q and K n × d_k, V n × d_v (d_v defaults to d_k)."""
    n, d_k = sizes["n"], sizes["dk"]
    return {"Q": (n, d_k), "K": (n, d_k), "V": (n, sizes.get("dv") or d_k)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    """Every merge is kept for display: over the P rounds each process's scores and exponentials
    cover its rows × all n keys (2 n²), and each merge keeps three accumulators and six columns;
    the processes hold their shard and its copies while they run."""
    (n, d_k), (_, d_v) = shapes["Q"], shapes["V"]
    processes = processes_of(options, n)
    kept = 2 * n * n + processes * n * (3 * d_v + 6) + 4 * n * d_v
    running = 4 * n * (2 * d_k + d_v)  # the inputs, each process's shard and one block in flight
    return (kept + running) * itemsize


def transport_of(run: LessonRun) -> str:
    """How the blocks move (--dist-backend, else the default for the run's device), checked
    against the run's backend and device and against what is installed."""
    backend = run.backend
    chosen = run.options.get("dist_backend") or AUTO
    if backend.device not in ("cpu", "cuda"):
        raise UserError(
            f"{param('device', backend.device)}: the ring runs on the CPU (gloo, pipes) or on CUDA GPUs "
            f"(nccl); use {param('device', 'cpu')} or cuda."
        )
    if chosen == AUTO:
        if backend.device == "cuda":
            chosen = "nccl"
        elif importlib.util.find_spec("torch") is not None:
            chosen = "gloo"
        else:
            chosen = "pipes"
    if chosen == "nccl" and backend.device != "cuda":
        raise UserError(
            f"{param('dist_backend', 'nccl')} moves CUDA tensors between GPUs: add {params(('backend', 'torch'), ('device', 'cuda'))}, "
            "or use gloo on the CPU."
        )
    if chosen != "nccl" and backend.device == "cuda":
        raise UserError(
            f"{param('dist_backend', chosen)} moves blocks between CPU processes: use {param('dist_backend', 'nccl')} "
            f"with {param('device', 'cuda')}, or {param('device', 'cpu')}."
        )
    if chosen == "pipes" and backend.name != "numpy":
        raise UserError(
            f"{param('dist_backend', 'pipes')} moves numpy arrays: leave out {param('backend', 'torch')}, or use "
            f"{param('dist_backend', 'gloo')}."
        )
    if chosen != "pipes" and importlib.util.find_spec("torch") is None:
        raise UserError(
            f"{param('dist_backend', chosen)} needs PyTorch (torch.distributed), which is not installed; "
            f"install it with: {install_command('torch')}, or use {param('dist_backend', 'pipes')}."
        )
    if chosen == "nccl":
        _check_gpus(processes_of(run.options, run.inputs["K"].shape[0]))
    return str(chosen)


def _check_gpus(processes: int) -> None:
    import torch

    count = torch.cuda.device_count()
    if count < processes:
        raise UserError(
            f"{param('processes', processes)} with nccl needs {processes} GPUs (one per process) but "
            f"{count} {'is' if count == 1 else 'are'} here; use {param('processes', max(count, 1))}."
        )


def build(run: LessonRun) -> Walkthrough:
    q, k, v = (run.inputs[name] for name in ("Q", "K", "V"))
    n, d_k = q.shape
    d_v = v.shape[1]
    processes = processes_of(run.options, n)
    sharding = sharding_of(run.options, processes, n)
    causal = bool(run.options.get("causal", False))
    use_scale = bool(run.options.get("scale", True))
    transport = transport_of(run)
    layout = ring.shards(n, processes, sharding)
    queries = row_names(run, "queries", n, "q", "the lesson file")
    keys = row_names(run, "keys", n, "k", "the lesson file")
    records = launch.run(
        Ring(layout, causal, use_scale, run.backend.name, run.backend.dtype, transport, ""),
        q,
        k,
        v,
    )
    base: dict[str, Any] = {"n": n, "dk": d_k, "dv": d_v, "sqrt_dk": math.sqrt(d_k)}
    base.update(processes=processes, sharding=sharding, transport=transport)
    base["block"] = max(shard.size for shard in layout)
    record = StepRecorder(run)
    names = (queries, keys)
    _layout(record, layout, names, base)
    first = [record.note("block_scaled", sqrt_dk=math.sqrt(d_k))] if use_scale else []
    first += [] if use_scale else [record.note("block_unscaled")]
    first += [record.note("block_causal")] if causal else []
    for t in range(1, processes + 1):
        _round(record, records, layout, names, {**base, "t": t}, tuple(first))
    for rank, shard in enumerate(layout):
        rows = tuple(queries[p] for p in shard.positions)
        context = {**base, "r": rank, "rows": shard.size, "held": spans(rows)}
        record.add(
            f"process{rank}.output",
            records[rank]["output"],
            text="process_output",
            grid=Grid(rows, context=context),
        )
    gathered = records[0]["gathered"]
    record.add("gathered", gathered, grid=Grid(queries, context=base))
    backend = run.backend
    qb, kb, vb = (backend.asarray(array) for array in (q, k, v))
    mask = masks.causal_additive(mech.scores(qb, kb)) if causal else None
    plain = record.compute(
        "check",
        lambda: mech.attention(qb, kb, vb, use_scale=use_scale, mask=mask).output,
        grid=Grid(queries, context=base),
    )
    difference = float(np.max(np.abs(gathered - backend.to_numpy(plain))))
    if causal and processes > 1:  # one process: no work to spread
        costs.work_step(record, records, (n, processes, sharding), base)
    costs.traffic_step(record, records, layout, (d_k, d_v), base, run.backend.dtype)
    notes = [record.note("ring_check", difference=difference)]
    # One process passes nothing: no sentence about how blocks travelled.
    notes.append(record.note(f"transport_{transport}" if processes > 1 else "transport_alone"))
    notes += interface_overridden(records, transport)
    return record.walkthrough(
        gathered,
        inputs=scaled.labelled_inputs(run, queries, keys),
        notes=tuple(notes),
        meta={"max_abs_difference": difference},
    )


def interface_overridden(records: list[dict[str, np.ndarray]], transport: str) -> list[Note]:
    """A note when the user's environment named another interface for the backend's
    connections (GLOO_SOCKET_IFNAME=eth0, or a name of none) than the loopback one the processes
    used instead (rank.DistributedLink sets it): said, not done silently. The words are the
    command's, as the overflow note's are: they tell of this machine, not of the lesson."""
    variable = SOCKET_VARIABLES.get(transport)
    used = records[0].get("interface")
    value = os.environ.get(variable, "") if variable else ""
    if variable is None or used is None or not value or value == str(used):
        return []
    text = (
        f"The environment set {variable}={printable(value)}; the lesson's processes used "
        f"{used}, the loopback interface, instead, so that their connections stayed on this "
        "machine."
    )
    return [Note.fixed("interface_overridden", text)]


def spans(labels: tuple[str, ...] | list[str]) -> str:
    """Labels as the lesson writes them: the first and last of a run of three or more joined by
    "..", the rest by commas ("k1..k4", "k1, k3, k5")."""
    if len(labels) >= 3 and _consecutive(labels):
        return f"{labels[0]}..{labels[-1]}"
    return ", ".join(labels)


def _consecutive(labels: tuple[str, ...] | list[str]) -> bool:
    numbers = [label[1:] for label in labels]
    if not all(number.isdigit() for number in numbers):
        return False
    values = [int(number) for number in numbers]
    return values == list(range(values[0], values[0] + len(values)))


def _held(keys: tuple[str, ...], shard: ring.Shard) -> str:
    """A shard's labels, each of its runs written on its own ("k1..k2, k7..k8")."""
    return ", ".join(spans([keys[p] for p in shard.positions[a:b]]) for a, b in shard.runs)


def _layout(
    record: StepRecorder,
    layout: tuple[ring.Shard, ...],
    names: tuple[tuple[str, ...], tuple[str, ...]],
    base: dict[str, Any],
) -> None:
    queries, keys = names
    rows = [
        {
            "process": rank,
            "queries": _held(queries, shard),
            "block": _held(keys, shard),
            "rows": shard.size,
        }
        for rank, shard in enumerate(layout)
    ]
    record.add("layout", rows, kind="records", grid=Grid(context=base))


def _round(
    record: StepRecorder,
    records: list[dict[str, np.ndarray]],
    layout: tuple[ring.Shard, ...],
    names: tuple[tuple[str, ...], tuple[str, ...]],
    context: dict[str, Any],
    first_notes: tuple[Note, ...],
) -> None:
    """Round t: who holds which block (a table), then each process's merge, six steps each."""
    queries, keys = names
    t, processes = context["t"], context["processes"]
    prefix = f"round{t}."
    table = []
    for rank in range(processes):
        held = int(records[rank][prefix + "source"])
        table.append(
            {
                "process": rank,
                "block_of": held,
                "keys": _held(keys, layout[held]),
                "computed": int(records[rank][prefix + "computed"]),
                "sent": int(records[rank][prefix + "sent"]),
                "to": (rank + 1) % processes if t < processes else None,
            }
        )
    record.add(
        f"round{t}",
        table,
        kind="records",
        text="round" if t == 1 else "round_again",
        grid=Grid(
            context=context
            if t == 1
            else {**context, "behind": counted(t - 1, "process", "processes")}
        ),
    )
    for rank in range(processes):
        values = records[rank]
        if prefix + "scores" not in values:
            continue  # every tile of the held block lay in the future: skipped
        held = int(values[prefix + "source"])
        rows = tuple(queries[p] for p in layout[rank].positions)
        columns = tuple(keys[p] for p in layout[held].positions)
        where = f"Round {t} · process {rank}"
        step_context = {**context, "r": rank, "source": held, "where": where}
        step_context.update(width=len(columns), rows=len(rows), held=spans(columns))
        before = _before(records[rank], t, values[prefix + "acc"].shape)
        is_first = t == 1 and rank == 0
        merge_steps(
            record,
            f"{prefix}process{rank}.",
            (_update(values, prefix), before),
            Grid(rows, columns, context=step_context),
            BLOCK_TEXTS if is_first else BLOCK_TEXTS_AGAIN,
            notes=first_notes if is_first else (),
        )


STATE = ("row_max", "row_sum", "acc")  # tiled.OnlineState's fields, in its order


def _update(values: dict[str, np.ndarray], prefix: str) -> tiled.BlockUpdate:
    """A process's merge of one round, as its record holds it (``prefix``: "round{t}.")."""
    return tiled.BlockUpdate(
        scores=values[prefix + "scores"],
        block_max=values[prefix + "block_max"],
        rescale=values[prefix + "rescale"],
        p=values[prefix + "p"],
        block_sum=values[prefix + "block_sum"],
        pv=values[prefix + "pv"],
        state=tiled.OnlineState(*(values[prefix + name] for name in STATE)),
    )


def _before(values: dict[str, np.ndarray], t: int, acc_shape: tuple[int, ...]) -> tiled.OnlineState:
    """The running state before round t's merge: the last merge's, else m = −∞, ℓ = 0, acc = 0."""
    dtype = values["output"].dtype
    for earlier in range(t - 1, 0, -1):
        prefix = f"round{earlier}."
        if prefix + "row_max" in values:
            return tiled.OnlineState(*(values[prefix + name] for name in STATE))
    rows = acc_shape[0]
    return tiled.OnlineState(
        row_max=np.full((rows, 1), -np.inf, dtype=dtype),
        row_sum=np.zeros((rows, 1), dtype=dtype),
        acc=np.zeros(acc_shape, dtype=dtype),
    )


# What the texts read: the sizes and the ring; each round adds t; each merge adds the process,
# the block's origin and its keys.
SIZES = (*scaled.SIZES[1:], "processes", "sharding", "transport", "block")
ROUND = (*SIZES, "t")
MERGE = (*ROUND, "r", "source", "where", "width", "rows", "held")
PROCESS = (*SIZES, "r", "rows", "held")
# A merge's six steps: the long texts explain the first (round 1, process 0), the short ones
# ("..._again") every merge after it.
BLOCK_TEXTS = {key: key for key in ("scores", "max", "rescale", "p", "sum", "acc")}
BLOCK_TEXTS_AGAIN = {key: f"{key}_again" for key in BLOCK_TEXTS}
TEXTS = Texts(
    steps={
        "layout": SIZES,
        "round": ROUND,
        "round_again": (*ROUND, "behind"),  # "1 process", "2 processes": how far it came
        **dict.fromkeys(BLOCK_TEXTS.values(), MERGE),
        **dict.fromkeys(BLOCK_TEXTS_AGAIN.values(), MERGE),
        "process_output": PROCESS,
        "gathered": SIZES,
        "check": SIZES,
        "work": SIZES,
        "traffic": (*SIZES, "itemsize"),
    },
    notes={
        "block_scaled": ("sqrt_dk",),
        "block_unscaled": (),
        "block_causal": (),
        "ring_check": ("difference",),
        "transport_gloo": (),
        "transport_nccl": (),
        "transport_pipes": (),
        "transport_alone": (),
        "work_spread": ("sharding", "most", "least", "ratio"),
        "work_contiguous": ("first", "last", "ratio", "processes"),
        "traffic_total": ("sent", "flops", "ratio"),
        "traffic_machine": costs.MACHINE,
    },
    claims={
        "ring_check": same_up_to_rounding,
        "work_spread": costs.work_spread_holds,
        "work_contiguous": costs.contiguous_last_does_more,
        "traffic_total": costs.traffic_total_holds,
        "traffic_machine": costs.machine_verdict,
    },
    # What the run was asked for (scale, mask, transport), true of every input.
    general=(
        "block_scaled",
        "block_unscaled",
        "block_causal",
        "transport_gloo",
        "transport_nccl",
        "transport_pipes",
        "transport_alone",
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
    memory_fix="choose a shorter sequence",
)
