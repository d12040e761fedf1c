"""One command that measures everything the project says about a CUDA GPU.

    python benchmarks/gpu_run.py OUT_DIR [--budget 480] [--old-kernel FILE]

Run it from the repository's root on a machine with an NVIDIA GPU, PyTorch and Triton (the
project need not be installed: its commands run as `python -m attn_cli` from this checkout).
It writes into OUT_DIR the files that tests/data/gpu-runs/ keeps of a run, each made by the
command that `run.json` records beside it (with its exit code and wall time):

| file | what |
|---|---|
| `run.json` | the machine (GPU, driver, CUDA, torch, triton, numpy, Python), the date, every command |
| `nvidia-smi.txt` | the card as found |
| `bench-default.json`, `.txt` | `attn bench --device cuda` with its defaults; the text is `attn bench --from` of the JSON |
| `bench-16k.json`, `bench-gpu.png` | d 128, n 4096..65536, the fused kernels and naive, with the plot |
| `bench-causal.json` | causal at n 16384, d 128 |
| `beyond.json` | the window and linear implementations to n 131072 |
| `bench-backward.json` | `attn bench --device cuda --backward` with its defaults (bfloat16) |
| `bench-backward-16k.json` | `--backward` at d 128, n 4096..16384, bfloat16: the Triton backward kernel beside sdpa's kernels, at the forward's size |
| `lessons.txt` | every lesson at n = 8192 (`--backend torch --device cuda --time`), wall time each |
| `reference.txt` | benchmarks/gpu_reference.py: the same kernels timed with Triton's do_bench, and the Triton backward kernel against sdpa's backward at n 16384, d 128, in bfloat16 and float32 |
| `pytest.txt` | the tests that use the GPU when there is one (the Triton kernel compiled) |

Steps run in that order, each with a time limit; a step that would start after ``--budget``
seconds is recorded as not run. ``--dry-run`` prints the steps' commands and runs none (no
GPU needed). docs/benchmarks.md's GPU section is made from such a folder
(`python benchmarks/gpu_docs.py FOLDER`), once the folder is copied under tests/data/gpu-runs/.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from lessons import lesson_options  # noqa: E402  (benchmarks/lessons.py)

ATTN = [sys.executable, "-m", "attn_cli"]
FUSED = "naive,sdpa,sdpa-flash,sdpa-efficient,sdpa-cudnn,triton-flash"
# Every lesson at a GPU size, with the size options benchmarks/lessons.py gives it at n.
LESSON_N = 8192


@dataclass
class Step:
    name: str
    argv: list[str]
    output: str | None  # the file stdout goes to (None: the step writes its own files)
    seconds: int  # its time limit


def steps(out: Path, old_kernel: Path | None) -> list[Step]:
    bench = [*ATTN, "bench", "--device", "cuda", "--format", "json"]
    reference = [
        sys.executable,
        str(ROOT / "benchmarks" / "gpu_reference.py"),
        "--sizes",
        "4096,16384",
    ]
    if old_kernel is not None:
        reference += ["--old-kernel", str(old_kernel)]
    return [
        Step("nvidia-smi", ["nvidia-smi"], "nvidia-smi.txt", 30),
        # First: it compiles the kernel's launch settings, which the bench's tuner then finds
        # in Triton's cache.
        Step("reference", reference, "reference.txt", 200),
        Step("bench-default", bench, "bench-default.json", 150),
        Step(
            "bench-default-text",
            [*ATTN, "bench", "--from", str(out / "bench-default.json")],
            "bench-default.txt",
            60,
        ),
        Step(
            "bench-16k",
            [
                *bench,
                "--d",
                "128",
                "--sizes",
                "4096..65536",
                "--impl",
                FUSED,
                "--plot",
                str(out / "bench-gpu.png"),
            ],
            "bench-16k.json",
            150,
        ),
        Step(
            "bench-causal",
            [
                *bench,
                "--d",
                "128",
                "--causal",
                "--sizes",
                "16384",
                "--impl",
                "sdpa,sdpa-flash,sdpa-cudnn,triton-flash",
            ],
            "bench-causal.json",
            60,
        ),
        Step(
            "beyond",
            [*bench, "--sizes", "4096..131072", "--impl", "window,sdpa-window,flex-window,linear"],
            "beyond.json",
            150,
        ),
        # The backward (issue 58), after every forward figure.
        Step("bench-backward", [*bench, "--backward"], "bench-backward.json", 150),
        Step(
            "bench-backward-16k",
            [*bench, "--backward", "--d", "128", "--sizes", "4096..16384", "--impl", FUSED],
            "bench-backward-16k.json",
            150,
        ),
        Step("lessons", [], "lessons.txt", 200),  # run_lessons
        Step(
            "pytest",
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-n",
                "8",
                "-p",
                "no:cacheprovider",
                "tests/test_flash_kernel.py",
                "tests/test_bench_backward.py",
                "tests/test_devices.py",
                "tests/test_bench_sweep.py",
                "tests/test_bench_cli.py",
                "tests/test_scaled.py",
            ],
            "pytest.txt",
            200,
        ),
    ]


def run_lessons(limit: int, deadline: float) -> tuple[str, int]:
    """Each lesson at n = LESSON_N on the GPU: its step lines with --time, and the wall time."""
    lines = []
    worst = 0
    for lesson, options in lesson_options(LESSON_N).items():
        argv = [*ATTN, lesson, *options, "--backend", "torch", "--device", "cuda"]
        argv += ["--dtype", "float32", "--time"]
        if time.monotonic() > deadline:
            lines.append(f"== {shlex.join(argv[2:])}: not run (the run's budget was spent)")
            continue
        started = time.perf_counter()
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=limit, cwd=ROOT, env=_env()
            )
            took = time.perf_counter() - started
            lines.append(f"== {shlex.join(argv[2:])}: exit {done.returncode} in {took:.1f} s")
            lines += [line for line in done.stdout.splitlines() if " ms " in line or "Step" in line]
            lines += done.stderr.strip().splitlines()[-3:]
            worst = max(worst, done.returncode)
        except subprocess.TimeoutExpired:
            lines.append(f"== {shlex.join(argv[2:])}: did not finish in {limit} s")
            worst = max(worst, 124)
    return "\n".join(lines) + "\n", worst


def _env() -> dict[str, str]:
    env = dict(os.environ, COLUMNS="160", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def machine() -> dict[str, object]:
    """The versions every figure of the run goes with."""
    facts: dict[str, object] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "host": platform.node(),
    }
    try:
        import numpy
        import torch

        facts.update(numpy=numpy.__version__, torch=torch.__version__, cuda=torch.version.cuda)
        if torch.cuda.is_available():
            facts["gpu"] = torch.cuda.get_device_name()
            facts["capability"] = ".".join(map(str, torch.cuda.get_device_capability()))
        import triton

        facts["triton"] = triton.__version__
    except ImportError as missing:
        facts["missing"] = str(missing)
    try:
        query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        facts["driver"] = subprocess.run(query, capture_output=True, text=True).stdout.strip()
    except OSError:
        facts["driver"] = None
    return facts


def _shown(step: Step) -> str:
    """The step's command as run.json records it (attn ... for the project's commands)."""
    if step.name == "lessons":
        return (
            f"attn LESSON <options at n = {LESSON_N}> --backend torch --device cuda --dtype "
            "float32 --time"
        )
    return shlex.join(["attn", *step.argv[3:]] if step.argv[:3] == ATTN else step.argv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--budget", type=float, default=480.0, help="seconds for the whole run")
    parser.add_argument("--old-kernel", type=Path, default=None)
    parser.add_argument("--commit", default=None, help="the project's commit, for run.json")
    parser.add_argument(
        "--dry-run", action="store_true", help="print each step's command and run none"
    )
    args = parser.parse_args()
    out: Path = args.out
    if args.dry_run:
        for step in steps(out, args.old_kernel):
            shown = _shown(step)
            print(
                f"{step.name:20} {step.seconds:4d} s  {shown} -> {step.output or '(its own files)'}"
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    deadline = started + args.budget
    record: dict[str, object] = {**machine(), "commit": args.commit, "steps": []}
    for step in steps(out, args.old_kernel):
        entry: dict[str, object] = {"name": step.name, "output": step.output}
        if step.argv:
            entry["command"] = shlex.join(
                ["attn", *step.argv[3:]] if step.argv[:3] == ATTN else step.argv
            )
        if time.monotonic() > deadline:
            entry["status"] = "not run: the budget was spent"
            record["steps"].append(entry)  # type: ignore[union-attr]
            continue
        began = time.perf_counter()
        remaining = max(10, int(deadline - time.monotonic()) + 30)
        limit = min(step.seconds, remaining)
        if step.name == "lessons":
            text, code = run_lessons(60, deadline)
            entry["command"] = (
                f"attn LESSON <options at n = {LESSON_N}> --backend torch --device cuda --dtype float32 --time"
            )
        else:
            try:
                done = subprocess.run(
                    step.argv, capture_output=True, text=True, timeout=limit, cwd=ROOT, env=_env()
                )
                text, code = done.stdout, done.returncode
                if done.stderr.strip():
                    (out / f"{step.name}.stderr.txt").write_text(done.stderr, encoding="utf-8")
            except subprocess.TimeoutExpired as expired:
                text = expired.stdout.decode() if isinstance(expired.stdout, bytes) else ""
                code = 124
            except OSError as failure:  # the program is not there
                text, code = f"{failure}\n", 127
        if step.output:
            (out / step.output).write_text(text, encoding="utf-8")
        entry.update(exit=code, seconds=round(time.perf_counter() - began, 1))
        record["steps"].append(entry)  # type: ignore[union-attr]
        print(f"{step.name:20} exit {code:3}  {entry['seconds']:6.1f} s", flush=True)
        (out / "run.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (out / "run.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"whole run: {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
