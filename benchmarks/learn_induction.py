"""attn learn induction at its defaults: wall time, the machine's load, and the scores.

    python benchmarks/learn_induction.py [--runs N] [extra attn learn options...]

Each run is a fresh `attn learn induction --format json` process (the wall time includes
Python's and PyTorch's start-up, as a user sees it). Printed per run: wall seconds, the load
average before and after (os.getloadavg: the machine is shared, and a loaded one trains slower),
the two-layer model's best prefix-matching score of layer 2 (target >= 0.8) with the one-layer
control's beside it, both held-out accuracies, and layer 1's best previous-token score.
Target (issue 29): at most 10 s on a 2-core machine. Until benchmarks/learn.py takes this task,
it is measured here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def run(extra: list[str]) -> dict[str, float]:
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "attn_cli", "learn", "induction", "--format", "json", *extra],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - start
    models = json.loads(done.stdout)["meta"]["models"]
    two, one = models["two"], models["one"]
    return {
        "seconds": seconds,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "prefix_two": max(two["prefix_matching"]["data"][-1]),
        "prefix_one": max(one["prefix_matching"]["data"][-1]),
        "accuracy_two": two["accuracy"],
        "accuracy_one": one["accuracy"],
        "previous_two": max(two["previous_token"]["data"][0]),
    }


def main(argv: list[str]) -> None:
    runs = 3
    if argv[:1] == ["--runs"]:
        runs, argv = int(argv[1]), argv[2:]
    print(f"attn learn induction {' '.join(argv) or '(defaults)'}, {os.cpu_count()} cores")
    for number in range(1, runs + 1):
        r = run(argv)
        print(
            f"run {number}: {r['seconds']:.1f} s (load {r['load_before']:.2f} -> "
            f"{r['load_after']:.2f}); prefix-matching {r['prefix_two']:.3f} (two layers) vs "
            f"{r['prefix_one']:.3f} (one layer); held-out accuracy {r['accuracy_two']:.3f} vs "
            f"{r['accuracy_one']:.3f}; layer 1 previous-token {r['previous_two']:.3f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
