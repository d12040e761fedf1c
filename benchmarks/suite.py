"""Measure the README's set-up figures afresh and write them where the docs state them.

    python benchmarks/suite.py [--busy 6] [--write]

What a new contributor meets, measured as they would meet it: the README's second set-up
command (read from README.md, as .ci/run reads it) in a fresh copy of this checkout, its
install and its test run timed apart, with the machine's load average sampled every 5 s while
each runs. ``--busy N`` starts N busy processes beside it (``python -c "while True: pass"``),
the load the suite must pass under; they are stopped when the run ends.

It prints the figures; ``--write`` also writes them between the ``suite-figures`` markers of
README.md and docs/development.md (one sentence, the same in both), so that no figure there is
typed by hand. tests/test_suite_figures.py fails when the number of tests the sentence states
is more than 10% away from the number collected today: rerun this script then.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "README.md", ROOT / "docs" / "development.md")
BEGIN = "<!-- BEGIN suite-figures: measured by python benchmarks/suite.py --write -->"
END = "<!-- END suite-figures -->"
# The most of pytest's failure reports printed (their end, where the assertions are).
MAX_REPORT = 40_000
# pytest's closing line, e.g. "4,352 passed, 454 skipped, 2 warnings in 1577.12s (0:26:17)".
OUTCOME = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def readme_test_command() -> str:
    """The README's second set-up command (install the dev tools and run the tests)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", setup, flags=re.S)
    if len(blocks) != 2:
        raise SystemExit(f"README.md: expected two set-up commands, found {len(blocks)}")
    return blocks[1]


@dataclass
class Loads:
    """The 1-minute load average, sampled every 5 s while a phase runs."""

    samples: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append(os.getloadavg()[0])
            self.stop.wait(5)

    def span(self) -> str:
        return f"{min(self.samples):.1f} to {max(self.samples):.1f}" if self.samples else "?"


def timed(command: str, cwd: Path) -> tuple[float, str, Loads]:
    """Run ``command`` in bash in ``cwd``: its wall time, its output and the load meanwhile."""
    loads = Loads()
    sampler = threading.Thread(target=loads.run, daemon=True)
    sampler.start()
    started = time.monotonic()
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
    )
    seconds = time.monotonic() - started
    loads.stop.set()
    sampler.join()
    if result.returncode not in (0, 1):  # 1: tests failed, which the figures say
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise SystemExit(f"{command!r} exited {result.returncode}")
    return seconds, result.stdout + result.stderr, loads


def minutes(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


def sentence(
    install: tuple[float, Loads],
    tests: tuple[float, Loads],
    counts: dict[str, int],
    busy: int,
    day: str,
) -> str:
    """The figures, as the README and docs/development.md state them."""
    outcome = ", ".join(
        f"{counts[k]:,} {k}" for k in ("passed", "failed", "skipped", "errors") if counts.get(k)
    )
    beside = f", {busy} busy processes beside it" if busy else ""
    return (
        f"Measured on {day} with `python benchmarks/suite.py` (a {os.cpu_count()}-core machine"
        f"{beside}): the install took {minutes(install[0])} at a load average of "
        f"{install[1].span()}, and the tests {minutes(tests[0])} at {tests[1].span()} "
        f"({outcome}, without PyTorch: the tests that need it skip)."
    )


def write(text: str) -> None:
    for doc in DOCS:
        document = doc.read_text(encoding="utf-8")
        head, found, rest = document.partition(BEGIN)
        if not found:
            raise SystemExit(f"{doc}: no {BEGIN!r} marker")
        _old, end, tail = rest.partition(END)
        doc.write_text(f"{head}{BEGIN}\n{text}\n{end}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=0, help="busy processes to run beside it")
    parser.add_argument("--write", action="store_true", help="write README.md and development.md")
    args = parser.parse_args()
    command = readme_test_command()
    install, _, test = command.rpartition(" && ")  # the install, then the test run
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        with tempfile.TemporaryDirectory(prefix="attn-suite-") as folder:
            copy = Path(folder) / "attn"
            # The checkout as a fresh clone has it: its tracked and untracked files, no venv.
            shutil.copytree(
                ROOT,
                copy,
                ignore=shutil.ignore_patterns(
                    ".venv", ".git", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info"
                ),
            )
            print(f"install: {install}", flush=True)
            install_seconds, _, install_loads = timed(install, copy)
            print(f"tests: {test}", flush=True)
            test_seconds, output, test_loads = timed(test, copy)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    closing = [line for line in output.splitlines() if " in " in line and OUTCOME.search(line)]
    if not closing:
        raise SystemExit("no closing line from pytest:\n" + output[-4000:])
    counts = {
        "errors" if kind.startswith("error") else kind: int(n)
        for n, kind in OUTCOME.findall(closing[-1])
    }
    day = datetime.date.today().isoformat()
    text = sentence(
        (install_seconds, install_loads), (test_seconds, test_loads), counts, args.busy, day
    )
    for line in output.splitlines():  # what failed, by name (pytest's short summary)
        if line.startswith(("FAILED ", "ERROR ")):
            print(line)
    # And how: pytest's report of each failure, which the copy's folder does not outlive.
    failures = re.search(
        r"^=+ (?:FAILURES|ERRORS) =+$.*?(?=^=+ short test summary)", output, re.M | re.S
    )
    if failures:
        print(failures.group(0)[-MAX_REPORT:])
    print(closing[-1])
    print(f"load while testing: median {statistics.median(test_loads.samples or [0]):.1f}")
    print(text)
    if args.write:
        write(text)
        print("written:", ", ".join(str(doc.relative_to(ROOT)) for doc in DOCS))


if __name__ == "__main__":
    main()
