"""Time `attn scaled` against the framework's floor (startup_baseline.py) and print the ratio.

    python benchmarks/startup.py [--runs 21]

Each command runs in a fresh interpreter (the same one running this script) with its output
discarded; the median wall time of the runs is reported for both, after two warm-up runs each.
The target is a ratio of at most 1.2.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMANDS = {
    "baseline (typer + numpy + one rich table)": [
        sys.executable,
        str(HERE / "startup_baseline.py"),
        "--q",
        "1,0;0,1",
    ],
    "attn scaled": [sys.executable, "-m", "attn_cli", "scaled"],
    "attn --help": [sys.executable, "-m", "attn_cli", "--help"],
}


def wall_times(command: list[str], runs: int) -> list[float]:
    times = []
    for index in range(runs + 2):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if index >= 2:  # the first two runs warm the file cache
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    medians = {}
    for name, command in COMMANDS.items():
        times = wall_times(command, runs)
        medians[name] = statistics.median(times)
        spread = statistics.quantiles(times, n=4)
        print(
            f"{name:45s} median {medians[name] * 1e3:7.1f} ms  "
            f"(IQR {spread[0] * 1e3:.1f}-{spread[2] * 1e3:.1f} ms, {runs} runs)"
        )
    baseline = medians["baseline (typer + numpy + one rich table)"]
    ratio = medians["attn scaled"] / baseline
    print(f"ratio attn scaled / baseline: {ratio:.3f} (target <= 1.2)")


if __name__ == "__main__":
    main()
