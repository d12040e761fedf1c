"""Time the ring of `attn ring` on this machine: P = 1, 2 and 4 processes, beside what moves.

    python benchmarks/ring.py [--n 2048] [--d 64] [--processes 1,2,4] [--runs 5]
                              [--transports gloo,pipes] [--causal]

Each run is the lesson's own ring (attn_cli/course/ring: the processes started, the blocks
passed round, the output gathered, every process stopped), on standard-normal Q, K, V (n × d,
float64, numpy in each process, one BLAS thread each), keeping none of the merges' values
(the lesson keeps them to show them; here only the times). It prints, for each P, the median
wall time of a whole run and its interquartile range, and from the processes' own clocks: the
set-up (starting the process group), the merges of the busiest process, the longest wait for a
block after its merge, and the bytes sent; then the reading those numbers give, and the load
average before and after (os.getloadavg): a timing is trusted only beside its spread and the
load, and a ratio measured in one run more than either time.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

# One BLAS thread per process, set before numpy starts its pool: P processes share the cores.
for variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[variable] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# (after the variables above: numpy reads them when it starts)
import numpy as np  # noqa: E402

from attn_cli.course.ring import launch  # noqa: E402
from attn_cli.course.ring.rank import Ring  # noqa: E402
from attn_cli.mechanisms import ring  # noqa: E402


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    low, median, high = statistics.quantiles(values, n=4, method="inclusive")
    return median, low, high


def one_run(layout, transport: str, causal: bool, qkv) -> tuple[float, list[dict]]:
    """One whole run (start, ring, gather, stop): its wall seconds and each process's record."""
    plan = Ring(layout, causal, True, "numpy", "float64", transport, "", keep=False)
    started = time.perf_counter()
    records = launch.run(plan, *qkv)
    return time.perf_counter() - started, records


def measure(n: int, d: int, processes: int, transport: str, causal: bool, runs: int) -> dict:
    rng = np.random.default_rng(0)
    qkv = tuple(rng.standard_normal((n, d)) for _ in range(3))
    layout = ring.shards(n, processes, "zigzag" if causal else "contiguous")
    walls, set_ups, merges, waits = [], [], [], []
    sent = flops = 0
    for run in range(runs + 1):
        wall, records = one_run(layout, transport, causal, qkv)
        rounds = range(1, processes + 1)
        if run == 0:  # a warm-up: the first fork after the imports pays for page faults
            sent = sum(int(r[f"round{t}.sent"]) for r in records for t in rounds)
            computed = sum(int(r[f"round{t}.computed"]) for r in records for t in rounds)
            flops = 2 * computed * (d + d)
            continue
        walls.append(wall)
        set_ups.append(max(float(r["set_up_seconds"]) for r in records))
        merges.append(
            max(sum(float(r[f"round{t}.merge_seconds"]) for t in rounds) for r in records)
        )
        waits.append(max(sum(float(r[f"round{t}.wait_seconds"]) for t in rounds) for r in records))
        gathered = records[0]["gathered"]
        assert gathered.shape == (n, d)
    return {
        "processes": processes,
        "wall": quartiles(walls),
        "set_up": statistics.median(set_ups),
        "merge": statistics.median(merges),
        "wait": statistics.median(waits),
        "sent": sent,
        "flops": flops,
    }


def reading(rows: list[dict], cores: int, load: float) -> list[str]:
    """What the numbers say, each sentence computed from them."""
    lines = []
    one = next((row for row in rows if row["processes"] == 1), None)
    for row in rows:
        processes = row["processes"]
        if one is None or processes == 1:
            continue
        speed_up = one["wall"][0] / row["wall"][0]
        merge_ratio = row["merge"] / one["merge"]
        lines.append(
            f"P = {processes}: {speed_up:.2f}x the speed of P = 1 (at most "
            f"{min(processes, cores)}x on {cores} cores). The busiest process merges for "
            f"{row['merge'] * 1e3:.0f} ms, {merge_ratio:.2f} of P = 1's {one['merge'] * 1e3:.0f} "
            f"ms where a core of its own would give {1 / processes:.2f}; it waits "
            f"{row['wait'] * 1e3:.0f} ms for blocks ({row['sent'] / 2**20:.1f} MiB in all, "
            f"{row['flops'] / row['sent']:.0f} FLOPs per byte) and sets up for "
            f"{row['set_up'] * 1e3:.0f} ms."
        )
    more = [row for row in rows if row["processes"] > 1]
    if one is None or not more:
        return lines
    flops = {row["flops"] for row in rows}
    lines.append(
        f"Why: the work is {'the same' if len(flops) == 1 else 'about the same'} for every P "
        f"({max(flops) / 1e9:.2f} GFLOP); the ring only spreads it."
    )
    last = more[-1]
    processes = last["processes"]
    # P processes on C cores: each does 1/P of the work with min(1, C/P) of a core.
    bound = (1 / processes) / min(1.0, cores / processes)
    took = last["merge"] / one["merge"]
    verdict = (
        f"other work on the cores (a load of {load:.1f} before the runs; the transfers) took "
        "the rest"
        if took > 1.2 * bound
        else "as the cores allow"
    )
    lines.append(
        f"On {cores} cores the busiest of {processes} processes could merge in {bound:.2f} of "
        f"P = 1's time (1/{processes} of the work on {min(1.0, cores / processes):.2f} of a "
        f"core); it took {took:.2f}: {verdict}."
    )
    costs = []
    if last["set_up"] > one["set_up"] + 0.005:
        costs.append(
            f"set-up ({one['set_up'] * 1e3:.0f} ms at P = 1, {last['set_up'] * 1e3:.0f} ms at "
            f"P = {last['processes']})"
        )
    if last["wait"] > one["wait"] + 0.005:
        costs.append(
            f"waits for blocks ({last['wait'] * 1e3:.0f} ms at P = {last['processes']}: a "
            "neighbour not yet running, or its bytes in flight)"
        )
    if costs:
        lines.append(
            f"More processes add {' and '.join(costs)}, which the wall time pays on top of the "
            "merges."
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--runs", type=int, default=5)
    default = "gloo,pipes" if importlib.util.find_spec("torch") else "pipes"
    parser.add_argument("--transports", default=default)
    parser.add_argument("--causal", action="store_true")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    before = os.getloadavg()[0]
    print(
        f"ring attention, n = {args.n}, d_k = d_v = {args.d}, float64, numpy in each process "
        f"(one BLAS thread), {'causal, zigzag' if args.causal else 'not causal, contiguous'}; "
        f"{cores} cores; median of {args.runs} runs after a warm-up"
    )
    for transport in args.transports.split(","):
        rows = [
            measure(args.n, args.d, int(p), transport, args.causal, args.runs)
            for p in args.processes.split(",")
        ]
        print(f"\n{transport}")
        print(
            f"{'P':>2} {'wall ms':>9} {'IQR ms':>13} {'set-up ms':>10} {'merges ms':>10} "
            f"{'waits ms':>9} {'sent MiB':>9} {'FLOPs/byte':>11}"
        )
        for row in rows:
            median, low, high = row["wall"]
            per_byte = f"{row['flops'] / row['sent']:.0f}" if row["sent"] else "—"
            print(
                f"{row['processes']:>2} {median * 1e3:9.0f} {low * 1e3:6.0f}–{high * 1e3:<6.0f} "
                f"{row['set_up'] * 1e3:10.0f} {row['merge'] * 1e3:10.0f} "
                f"{row['wait'] * 1e3:9.0f} {row['sent'] / 2**20:9.1f} {per_byte:>11}"
            )
        for line in reading(rows, cores, before):
            print(line)
    print(f"\nload average (1 min): {before:.2f} before, {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
