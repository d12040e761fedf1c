"""Time `attn explore`: from an edit to the screen updated, for each lesson's lecture example.

    python benchmarks/explore.py [--edits 15] [--only scaled,block]

Each lesson opens at 80 × 24 under Textual's Pilot (headless); the Pilot presses + and - in
turn on the first entry of its first input (a lesson without inputs: its first number option
set to one more, then back). For each edit the app records two times, both from the handler of
the key (perf_counter) on:

- screen: until the frame after the edit is drawn (``call_after_refresh``): the walkthrough
  recomputed through the runner and every step in sight drawn again by the rich renderer;
- all steps: until the last step out of sight is drawn too (the app draws those right after the
  frame, one at a time, keys served between them).

It prints the median and the spread (IQR, min, max) of each, in milliseconds, with the load
average before and after (os.getloadavg). The target is a median of at most 100 ms for the
screen. The first edit of a lesson (imports, caches) is left out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attn_cli import cards
from attn_cli.explore import state as st
from attn_cli.explore.app import Explorer, InputTable

SIZE = (80, 24)


async def measure(lesson: str, edits: int) -> tuple[list[float], list[float]]:
    """Seconds to the screen updated and to every step drawn, one pair per edit."""
    app = Explorer(lesson)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        numbers = [
            option
            for option in st.controls(app.start.card)
            if option.type is int and isinstance(app.state.options[option.name], int)
        ]
        for index in range(edits + 1):
            if app.query(InputTable):
                await pilot.press("+" if index % 2 == 0 else "-")
            else:
                option = numbers[0]
                value = app.state.options[option.name] + (1 if index % 2 == 0 else -1)
                app.apply(st.with_option(app.state, option.name, value))
            while app.edit_started is not None:  # until every step is drawn
                await pilot.pause(0.01)
            await pilot.pause()
        return app.latencies[1:], app.settled[1:]


def spread(seconds: list[float]) -> str:
    ms = sorted(value * 1e3 for value in seconds)
    quartiles = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
    return (
        f"{statistics.median(ms):7.1f} (IQR {quartiles[0]:.1f}–{quartiles[2]:.1f}, "
        f"{ms[0]:.1f}–{ms[-1]:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=15, help="Edits per lesson (default 15).")
    parser.add_argument("--only", default="", help="Comma-separated lessons (default: all).")
    args = parser.parse_args()
    lessons = [name for name in args.only.split(",") if name] or list(cards.lesson_names())
    before = os.getloadavg()
    print(f"attn explore at {SIZE[0]} × {SIZE[1]}: ms from an edit, median (IQR, min–max)")
    print(f"{'lesson':<10} {'screen':<34} all steps")
    worst = 0.0
    for lesson in lessons:
        screen, settled = asyncio.run(measure(lesson, args.edits))
        worst = max(worst, statistics.median(screen) * 1e3)
        print(f"{lesson:<10} {spread(screen):<34} {spread(settled)}", flush=True)
    after = os.getloadavg()
    print(f"load average: {before[0]:.2f} before, {after[0]:.2f} after ({os.cpu_count()} cores)")
    verdict = "met" if worst <= 100 else "missed"
    print(f"target (screen median ≤ 100 ms for every lesson): {verdict}, worst {worst:.1f} ms")


if __name__ == "__main__":
    main()
