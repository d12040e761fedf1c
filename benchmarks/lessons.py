"""Each lesson at n = 2048 with the torch backend: the whole run beside its computation.

    python benchmarks/lessons.py [--rounds 3] [--n 2048] [--device cpu] [--dtype float64]
                                 [--lesson NAME ...] [--timeout 300]

For each lesson (at its size options for n: --n, --positions for posenc, at most 16 key blocks
for flash and 32 tokens for kvcache, variance at its defaults), each in a fresh interpreter,
taking turns round by round so that a change in the machine's load hits them alike:

- whole run: ``attn LESSON <its size options> --backend torch``, its output (the rich tables,
  to a pipe) discarded: what a user waits for, start-up and imports included;
- computation: the same command run in-process by this script (``--computation``), timing the
  lesson's build (every step computed on the backend, cold, as the whole run computes it) less
  what the step recorder does besides (each value's copy to the host, its statistics and row
  sums: "recording") and the claims check ("claims"), each printed apart; on a GPU each part
  ends with the device synchronised;
- start-up: the same lesson at n = 8 (the imports, torch's included, and the fixed costs);
- for multihead, a bare torch script of the same computation (Q, K, V, every head's scaled
  scores, weights and output, the heads' pairwise max |A_i − A_j|, the concatenation and W_O;
  torch's own softmax), its ``import torch`` included.

It prints the median of each over the rounds with its range, the ratios the targets read
(whole ≤ 3 × computation for every lesson; multihead's whole ≤ 1.5 × the bare script), the
whole run less the start-up against the computation (what grows with n), and the load average
before and after; each round's figures go to stderr as they come. A timing is trusted only
beside its spread and the load (other work on the machine slows some runs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# The console script that `pip install` writes next to the interpreter (what users run); from a
# source tree on PYTHONPATH, the module.
SCRIPT = Path(sys.executable).parent / "attn"
ATTN = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "attn_cli"]
HERE = Path(__file__).resolve()
# A run that takes longer than this is stopped and counted as this long (and said so).
TIMEOUT = 300.0


def lesson_options(n: int) -> dict[str, list[str]]:
    """Each lesson's size options at ``n`` (the lessons whose size is not --n take theirs)."""
    return {
        "scaled": ["--n", str(n)],
        "bahdanau": ["--n", str(n)],
        "selfattn": ["--n", str(n)],
        "causal": ["--n", str(n)],
        "multihead": ["--n", str(n), "--d-model", "512", "--heads", "8"],
        "posenc": ["--positions", str(n)],
        "block": ["--n", str(n)],
        "variance": [],  # no size of n: its defaults (3000 samples of 8 keys per d_k)
        "cost": ["--n", str(n)],
        "flash": ["--n", str(n), "--block", str(max(n // 16, 1))],  # at most 16 key blocks
        "window": ["--n", str(n)],
        "graph": ["--n", str(n)],
        "linear": ["--n", str(n)],
        "kvcache": ["--n", str(min(n, 32))],  # at most 32 generation steps
    }


def wall(command: list[str]) -> float:
    """The wall time of one run, its output discarded (TIMEOUT, said on stderr, if it is cut)."""
    start = time.perf_counter()
    try:
        subprocess.run(
            command,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        print(f"stopped after {TIMEOUT:.0f} s: {' '.join(command)}", file=sys.stderr)
        return TIMEOUT
    return time.perf_counter() - start


def computation(command: list[str]) -> dict[str, float]:
    """What ``--computation`` prints for the command: its computation and what it left out."""
    try:
        printed = subprocess.run(
            command, check=True, capture_output=True, text=True, timeout=TIMEOUT
        ).stdout
    except subprocess.TimeoutExpired:
        print(f"stopped after {TIMEOUT:.0f} s: {' '.join(command)}", file=sys.stderr)
        return {"computation": math.nan, "recording": math.nan, "claims": math.nan}
    return dict(json.loads(printed.strip().splitlines()[-1]))


def run_computation(argv: list[str]) -> None:
    """Run ``attn ARGV`` in this process, timing the lesson's build (its computation, on the
    backend) less what the step recorder does besides (each value's copy to the host, its
    summary and row sums: StepRecorder.add) and the claims check (StepRecorder.walkthrough);
    print those as JSON on the last line of stdout (the walkthrough itself goes to /dev/null).
    On a GPU each timed part ends with the device synchronised."""
    from attn_cli import __main__ as entry
    from attn_cli.course.recorder import StepRecorder
    from attn_cli.run import runner

    spent = {"build": 0.0, "recording": 0.0, "claims": 0.0}

    def timing(what: str, function: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            backend = getattr(args[0], "backend", None) or args[0].run.backend
            backend.synchronize()
            start = time.perf_counter()
            result = function(*args, **kwargs)
            backend.synchronize()
            spent[what] += time.perf_counter() - start
            return result

        return timed

    runner.build = timing("build", runner.build)  # type: ignore[assignment]
    StepRecorder.add = timing("recording", StepRecorder.add)  # type: ignore[method-assign]
    StepRecorder.walkthrough = timing("claims", StepRecorder.walkthrough)  # type: ignore[method-assign]
    stdout = sys.stdout
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        sys.stdout = devnull
        sys.argv = ["attn", *argv]
        try:
            entry.main()
        except SystemExit as stop:
            if stop.code:
                raise
        finally:
            sys.stdout = stdout
    spent["computation"] = spent["build"] - spent["recording"] - spent["claims"]
    print(json.dumps(spent))


BARE = """
import torch

n, d_model, heads, device, dtype = {n}, 512, 8, "{device}", torch.{dtype}
d_k = d_model // heads
generator = torch.Generator(device=device).manual_seed(0)


def draw(*shape, scale=1.0):
    return torch.randn(shape, generator=generator, dtype=dtype, device=device) * scale


x = draw(n, d_model)
w_q, w_k, w_v, w_o = (draw(d_model, d_model, scale=d_model**-0.5) for _ in range(4))
q, k, v = x @ w_q, x @ w_k, x @ w_v
weights, outputs = [], []
for head in range(heads):
    block = slice(head * d_k, (head + 1) * d_k)
    scaled = q[:, block] @ k[:, block].T / d_k**0.5
    a = torch.softmax(scaled, dim=-1)
    weights.append(a)
    outputs.append(a @ v[:, block])
differences = torch.zeros(heads, heads, dtype=dtype, device=device)
for i in range(heads):
    for j in range(i + 1, heads):
        differences[i, j] = differences[j, i] = (weights[i] - weights[j]).abs().max()
output = torch.cat(outputs, dim=-1) @ w_o
print(float(output.sum()), float(differences.max()))
"""


def spread(values: list[float]) -> str:
    """The median and the range of some times: "1.23 (1.10-1.40)"."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    global TIMEOUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds a run may take")
    parser.add_argument(
        "--module",
        action="store_true",
        help="run `python -m attn_cli` (the attn_cli that PYTHONPATH finds: another checkout's, "
        "for a before-and-after) instead of the console script",
    )
    parser.add_argument("--lesson", action="append", help="only these lessons (repeatable)")
    parser.add_argument("--computation", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    TIMEOUT = arguments.timeout
    if arguments.computation is not None:
        run_computation(arguments.computation)
        return
    attn = [sys.executable, "-m", "attn_cli"] if arguments.module else ATTN
    options = lesson_options(arguments.n)
    small = lesson_options(8)
    names = arguments.lesson or list(options)
    backend = ["--backend", "torch", "--device", arguments.device, "--dtype", arguments.dtype]
    load_before = os.getloadavg()
    columns = ("whole", "computation", "recording", "claims", "start-up", "bare")
    times = {name: {column: [] for column in columns} for name in names}
    for _ in range(arguments.rounds):
        for name in names:
            argv = [name, *options[name], *backend]
            measured: dict[str, list[float]] = times[name]
            measured["whole"].append(wall([*attn, *argv]))
            parts = computation([sys.executable, str(HERE), "--computation", *argv])
            for column in ("computation", "recording", "claims"):
                measured[column].append(parts[column])
            measured["start-up"].append(wall([*attn, name, *small[name], *backend]))
            if name == "multihead":
                script = BARE.format(n=arguments.n, device=arguments.device, dtype=arguments.dtype)
                measured["bare"].append(wall([sys.executable, "-c", script]))
            # Each round's figures as they come (stderr): a run stopped early keeps them.
            latest = ", ".join(
                f"{key} {values[-1]:.2f}" for key, values in measured.items() if values
            )
            print(f"{name}: {latest}", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    print(
        f"n = {arguments.n}, --backend torch --device {arguments.device} --dtype {arguments.dtype}, "
        f"{arguments.rounds} rounds: medians in seconds (range); recording: the steps' copies "
        "to the host, summaries and row sums; start-up: the same lesson at n = 8"
    )
    print(
        f"{'lesson':<10} {'whole run':>18} {'computation':>18} {'recording':>7} {'claims':>7} "
        f"{'start-up':>18} {'whole/comp':>10} {'(whole-start-up)/comp':>22}"
    )
    for name in names:
        measured = times[name]
        whole, work, start = measured["whole"], measured["computation"], measured["start-up"]
        middle = {column: statistics.median(values or [0.0]) for column, values in measured.items()}
        beyond = (middle["whole"] - middle["start-up"]) / middle["computation"]
        print(
            f"{name:<10} {spread(whole):>18} {spread(work):>18} {middle['recording']:7.2f} "
            f"{middle['claims']:7.2f} {spread(start):>18} "
            f"{middle['whole'] / middle['computation']:10.1f} {beyond:22.1f}"
        )
        if measured["bare"]:
            bare = measured["bare"]
            rounds = ", ".join(f"{w / b:.2f}" for w, b in zip(whole, bare, strict=True))
            print(
                f"{'  bare':<10} {spread(bare):>18}   whole / bare "
                f"{middle['whole'] / middle['bare']:.2f} (target <= 1.5; round by round {rounds})"
            )
    print(
        "load average (1, 5, 15 min) before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in load_after)
        + f"; {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
