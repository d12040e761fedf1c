"""Time `attn learn TASK` at its defaults and print its scores beside the issue's targets.

    python benchmarks/learn.py [--runs 1] [TASK ...]

Runs each task present (attn_cli/learn/<task>.py; default: every one of translate, grammar,
induction that this checkout has) at its default budget, in a fresh interpreter as a user would
(`python -m attn_cli learn TASK --format json`), and prints for each run: the wall time of the
whole command, the machine's load average before and after (os.getloadavg: the machine may be
shared, and a busy one trains slower), the CPU, torch's version, and the held-out scores the
command printed, beside the targets:

- translate: at most 60 s; the attention model's held-out alignment score at least 0.9 and its
  exact-match accuracy on the longest trained length at least 0.9, with the fixed-vector
  model's figure beside it (never tuned down; every figure is on held-out sentences);
- grammar: at most 30 s; the held-out share of words whose largest weight is on their head word
  at least 0.9, with the control's accuracy beside the model's (where another word would decide
  the ending otherwise, and where none would);
- induction: at most 10 s; the prefix-matching score of its best head at least 0.8, with the
  one-layer control's beside it, and the ablation of the circuit's heads.

Each run also prints what its numbers depend on (meta["reproducibility"]: the versions, torch's
CPU kernels, MKL's code path, the threads).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TASKS = ("translate", "grammar", "induction")
SECONDS = {"translate": 60.0, "grammar": 30.0, "induction": 10.0}


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def present(task: str) -> bool:
    sys.path.insert(0, str(ROOT))
    return importlib.util.find_spec(f"attn_cli.learn.{task}") is not None


def run(task: str) -> tuple[float, float, dict[str, Any], tuple[float, ...], tuple[float, ...]]:
    """One run of the default: wall seconds, CPU seconds (user and system, of the command's
    process: what a loaded machine changes least), the JSON document, load before and after."""
    before = os.getloadavg()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "attn_cli", "learn", task, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    seconds = time.perf_counter() - started
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)
    after = os.getloadavg()
    if completed.returncode != 0:
        raise SystemExit(f"attn learn {task} failed:\n{completed.stderr}")
    return seconds, cpu, json.loads(completed.stdout), before, after


def translate_scores(document: dict[str, Any]) -> list[str]:
    meta = document["meta"]
    score = meta["alignment_score"]["after"]
    longest = document_step(document, "by_length")[-1]
    return [
        f"alignment score (held-out, attention): argmax share {score['share']:.3f} "
        f"(target >= 0.9), mean weight {score['weight']:.3f}",
        f"exact match at the longest trained length ({longest['length']} words): attention "
        f"{longest['attention_exact']:.3f} (target >= 0.9), fixed vector "
        f"{longest['fixed_exact']:.3f}",
        f"training {meta['training_seconds']:.1f} s, {meta['threads']} thread(s), "
        f"parameters {meta['parameters']}",
    ]


def grammar_scores(document: dict[str, Any]) -> list[str]:
    meta = document["meta"]
    scores = {(row["model"], row["when"]): row for row in document_step(document, "scores")}
    after, before = (
        scores[("attention", "after training")],
        scores[("attention", "before training")],
    )
    control = scores[("control", "after training")]
    competition = {row["case"]: row for row in document_step(document, "competition")}
    single, competing = competition.values()
    return [
        f"head words (held-out, layer {meta['best']['layer']} head {meta['best']['head']}): "
        f"largest weight on the head {after['share']:.3f} (target >= 0.9; before training "
        f"{before['share']:.3f}), mean weight there {after['weight']:.3f}; control "
        f"{control['share']:.3f}, {control['weight']:.3f}",
        f"held-out accuracy of the endings: attention {meta['accuracy']['attention']:.3f}, "
        f"control {meta['accuracy']['control']:.3f} ({single['control']:.3f} where only the head "
        f"could decide, {competing['control']:.3f} where another word would decide otherwise)",
    ]


def document_step(document: dict[str, Any], key: str) -> Any:
    return next(step["value"] for step in document["steps"] if step["key"] == key)


def induction_scores(document: dict[str, Any]) -> list[str]:
    meta = document["meta"]
    two, one = meta["models"]["two"], meta["models"]["one"]
    return [
        f"prefix-matching (held-out), best head of the last layer: two layers "
        f"{max(two['prefix_matching']['data'][-1]):.3f} (target >= 0.8), one-layer control "
        f"{max(one['prefix_matching']['data'][-1]):.3f}; an even spread {meta['chance']['prefix']:.3f}",
        f"held-out accuracy on the predictable tokens: two layers {two['accuracy']:.3f}, one "
        f"layer {one['accuracy']:.3f}; best previous-token score in layer 1 "
        f"{max(two['previous_token']['data'][0]):.3f}",
        f"parameters {two['parameters']} (two layers) and {one['parameters']} (one layer)",
        "ablation (held-out accuracy with each zeroed): "
        + ", ".join(
            f"{row['zeroed']} {row['accuracy']:.3f}" for row in document_step(document, "ablation")
        ),
    ]


SCORES = {"translate": translate_scores, "grammar": grammar_scores, "induction": induction_scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", default=[task for task in TASKS if present(task)])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    import torch

    print(f"CPU: {cpu_name()} ({os.cpu_count()} cores); torch {torch.__version__}; "
          f"python {platform.python_version()}")  # fmt: skip
    for task in args.tasks:
        for number in range(1, args.runs + 1):
            seconds, cpu, document, before, after = run(task)
            verdict = "within" if seconds <= SECONDS.get(task, float("inf")) else "OVER"
            load = f"load {before[0]:.2f} before, {after[0]:.2f} after (1-min averages)"
            print(f"attn learn {task} (run {number}): {seconds:.1f} s wall ({cpu:.1f} s CPU), "
                  f"{verdict} the {SECONDS.get(task, float('nan')):.0f} s target; {load}")  # fmt: skip
            for line in SCORES[task](document):
                print(f"  {line}")
            found = document["meta"].get("reproducibility", {})
            print(f"  numbers depend on: {', '.join(f'{k} {v}' for k, v in found.items())}")


if __name__ == "__main__":
    main()
