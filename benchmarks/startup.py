"""Time `attn scaled` against the framework's floor (startup_baseline.py) and print the ratio.

    python benchmarks/startup.py [--runs 21]

Each command runs in a fresh interpreter (the same one running this script) with its output
discarded. The commands take turns, one run each per round, so that a change in the machine's
load hits them alike; after two warm-up rounds, the median wall time over the rounds is reported
for each. The target is a ratio of at most 1.2.

The package is byte-compiled first, as `pip install` does: with PYTHONDONTWRITEBYTECODE set (or a
read-only checkout) every run would otherwise recompile our modules from source (~20 ms here)
while the libraries, installed by pip, load their cached bytecode.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The console script that `pip install` writes next to the interpreter (what users run).
ATTN = Path(sys.executable).parent / "attn"
MATRICES = ["--q", "1,0;0,1", "--k", "1,1;2,0", "--v", "0.1,0.2;0.3,0.4"]
COMMANDS = {
    "baseline (typer + numpy + one rich table)": [
        sys.executable,
        str(HERE / "startup_baseline.py"),
        "--q",
        "1,0;0,1",
    ],
    "attn scaled": [str(ATTN), "scaled"],
    # The user's own matrices (text options), and a number option: each taken plainly, without
    # Typer's pydantic coercion (attn_cli/cli/parsing.py), which the floor's option pays.
    "attn scaled --q --k --v": [str(ATTN), "scaled", *MATRICES],
    "attn scaled --precision 2": [str(ATTN), "scaled", "--precision", "2"],
    "attn --help": [str(ATTN), "--help"],
}
# The ratios printed: each of these against the floor.
MEASURED = ("attn scaled", "attn scaled --q --k --v", "attn scaled --precision 2")


def timed_run(command: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, from the kernel's child accounting) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def interleaved_times(runs: int) -> dict[str, tuple[list[float], list[float]]]:
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in COMMANDS}
    for round_index in range(runs + 2):
        for name, command in COMMANDS.items():
            wall, cpu = timed_run(command)
            if round_index >= 2:  # the first two rounds warm the file cache
                times[name][0].append(wall)
                times[name][1].append(cpu)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    import attn_cli

    compileall.compile_dir(Path(attn_cli.__file__).parent, quiet=1)
    compileall.compile_file(HERE / "startup_baseline.py", quiet=1)
    load_before = os.getloadavg()
    times = interleaved_times(runs)
    walls, cpus = {}, {}
    for name, (wall, cpu) in times.items():
        walls[name], cpus[name] = statistics.median(wall), statistics.median(cpu)
        spread = statistics.quantiles(wall, n=4)
        print(
            f"{name:45s} wall median {walls[name] * 1e3:6.1f} ms "
            f"(IQR {spread[0] * 1e3:.1f}-{spread[2] * 1e3:.1f}), "
            f"CPU median {cpus[name] * 1e3:6.1f} ms, {runs} runs"
        )
    baseline = "baseline (typer + numpy + one rich table)"
    for measured in MEASURED:
        print(
            f"ratio {measured} / baseline: wall {walls[measured] / walls[baseline]:.3f}, "
            f"CPU {cpus[measured] / cpus[baseline]:.3f} (target <= 1.2)"
        )
        # The same ratio round by round (each round's runs are seconds apart, same load).
        for kind, index in (("wall", 0), ("CPU", 1)):
            ratios = [
                ours / floor
                for ours, floor in zip(times[measured][index], times[baseline][index], strict=True)
            ]
            quartiles = statistics.quantiles(ratios, n=4)
            print(
                f"  per-round ratio ({kind}): median {statistics.median(ratios):.3f}, "
                f"IQR {quartiles[0]:.3f}-{quartiles[2]:.3f}, min {min(ratios):.3f}, "
                f"max {max(ratios):.3f}"
            )
    load_after = os.getloadavg()
    print(
        f"load average (1, 5, 15 min) before {', '.join(f'{x:.2f}' for x in load_before)}; "
        f"after {', '.join(f'{x:.2f}' for x in load_after)}; {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
