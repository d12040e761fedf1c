"""Time `attn explore`: from an edit to the screen updated, for each lesson's lecture example.

    python benchmarks/explore.py [--edits 15] [--only scaled,block]

Each lesson opens at 80 × 24 under Textual's Pilot (headless); the Pilot presses + and - in
turn on the first entry of its first input (a lesson without inputs: its first number option
set to one more each time, a value not seen before). For each edit the app records two times,
both from the handler of the key (perf_counter) on:

- screen: until the frame after the edit is drawn (``call_after_refresh``): the walkthrough
  recomputed through the runner and every step in sight drawn again by the rich renderer;
- all steps: until the last step out of sight is drawn too (the app draws those right after the
  frame, a few at a time, keys served between them).

The variance lesson keeps the tallies of the chunks it drew for the next run (an edit of
--samples draws only the last chunk of each width, one of --keys the queries and the new key).
More rows time an edit of --keys, and edits with nothing kept (as after a new --seed or width):
on its lecture example and at the lecture's width, d_k = 512.

It prints the median and the spread (IQR, min, max) of each, in milliseconds, with the load
average before and after (os.getloadavg). The target is a median of at most 100 ms for every
step. The first edit of a lesson (imports, caches) is left out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attn_cli import course as cards
from attn_cli.course.variance import build as variance
from attn_cli.explore import state as st
from attn_cli.explore.app import Explorer
from attn_cli.explore.widgets import InputTable

SIZE = (80, 24)


@dataclass(frozen=True)
class Case:
    """One row of the table: a lesson, the options it is set to first, and whether the variance
    lesson's kept chunk tallies are forgotten before each edit (every number drawn again, as
    after an edit of --keys, or of --samples to a value not seen before)."""

    label: str
    lesson: str
    options: tuple[tuple[str, Any], ...] = ()
    forget: bool = False
    edited: str | None = None  # the number option edited (default: the first)


# Beyond each lesson's lecture example: variance's --keys, and variance with nothing kept (on
# its lecture example and at the lecture's width, d_k = 512).
EXTRA = (
    Case("variance --keys", "variance", edited="keys"),
    Case("variance, nothing kept", "variance", forget=True),
    Case("variance --dk 512, nothing kept", "variance", (("dk", "512"),), forget=True),
)


async def measure(case: Case, edits: int) -> tuple[list[float], list[float]]:
    """Seconds to the screen updated and to every step drawn, one pair per edit."""
    app = Explorer(case.lesson)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for name, value in case.options:
            app.apply(st.with_option(app.state, name, value))
            await pilot.pause()
        first = len(app.latencies) + 1  # the first edit (imports, caches) is left out
        numbers = [
            option
            for option in st.controls(app.start.card)
            if option.type is int and isinstance(app.state.options[option.name], int)
        ]
        for index in range(edits + 1):
            if case.forget:
                variance.forget_kept()
            if app.query(InputTable):
                await pilot.press("+" if index % 2 == 0 else "-")
            else:
                # One more each time: a value not seen before, so nothing kept is its own.
                name = case.edited or numbers[0].name
                app.apply(st.with_option(app.state, name, app.state.options[name] + 1))
            while app.edit_started is not None:  # until every step is drawn
                await pilot.pause(0.01)
            await pilot.pause()
        return app.latencies[first:], app.settled[first:]


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
    print(f"{'lesson':<32} {'screen':<36} all steps")
    cases = [Case(lesson, lesson) for lesson in lessons]
    cases += [case for case in EXTRA if case.lesson in lessons]
    screens, alls = 0.0, 0.0
    for case in cases:
        screen, settled = asyncio.run(measure(case, args.edits))
        screens = max(screens, statistics.median(screen) * 1e3)
        alls = max(alls, statistics.median(settled) * 1e3)
        print(f"{case.label:<32} {spread(screen):<36} {spread(settled)}", flush=True)
    after = os.getloadavg()
    print(f"load average: {before[0]:.2f} before, {after[0]:.2f} after ({os.cpu_count()} cores)")
    print(f"worst median: screen {screens:.1f} ms, all steps {alls:.1f} ms (target: 100 ms)")


if __name__ == "__main__":
    main()
