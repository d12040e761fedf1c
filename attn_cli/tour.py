"""``attn tour``: the lecture's lessons in order, one screen at a time.

``TOUR`` is the one place that lists the lecture's order. Each stop is a real command line
(``attn NAME ARGS``), parsed by the real command, so a stop shows exactly what a student gets
by typing it. A lesson is shown a screen at a time (its header and inputs, then each step);
a command with output of its own (the bench) is shown a screenful at a time. A stop whose
command is not installed, or that needs PyTorch where it is missing, is skipped with a note.
"""

from __future__ import annotations

import importlib.util
import io
import shlex
from collections.abc import Callable, Collection, Sequence
from contextlib import redirect_stdout
from dataclasses import dataclass

from rich.console import Console, Group, RenderableType
from rich.control import Control
from rich.rule import Rule
from rich.segment import ControlType
from rich.text import Text

from attn_cli.errors import UserError


@dataclass(frozen=True)
class Stop:
    name: str  # the command, and the name for --only
    title: str  # what the stop shows, in a line
    args: tuple[str, ...] = ()  # arguments after `attn NAME`
    needs_torch: bool = False

    @property
    def command_line(self) -> str:
        return shlex.join(("attn", self.name, *self.args))


# The bench stop: the lesson's own numpy code (every n × n score in memory) against the tiled
# loop (one key block of 64 at a time), on every machine, with or without PyTorch. Memory grows
# as n² against n from the first size; time needs n in the hundreds to leave fixed costs behind.
# About 10 s on a 2-core laptop (see docs/benchmarks.md).
BENCH_ARGS = (
    "--device",
    "cpu",
    "--impl",
    "numpy,tiled-numpy",
    "--sizes",
    "256..2048",
    "--d",
    "32",
    "--heads",
    "1",
    "--block",
    "64",
)

# The lecture's order.
TOUR: tuple[Stop, ...] = (
    Stop("scaled", "Attention as retrieval: queries look up keys", ("--example", "library")),
    Stop("bahdanau", "Additive attention: a decoder scores each encoder state"),
    Stop("selfattn", "Self-attention: Q, K and V from one sequence"),
    Stop("causal", "The causal mask: no peeking at later tokens"),
    Stop("multihead", "Multi-head attention: heads side by side"),
    Stop(
        "posenc",
        "Positional encoding: giving tokens an order",
        ("--positions", "8", "--d-model", "6"),
    ),
    Stop("variance", "Why divide by √d_k: the variance of a dot product", ("--dk", "4,64,512")),
    Stop("bench", "The O(n²) wall, measured: a small run on the CPU", BENCH_ARGS),
    Stop("flash", "Tiled attention: the online softmax that avoids the n × n matrix"),
)
PROMPT = "── Enter: next · q: quit ──"


class TourQuit(Exception):
    """The lecturer typed q (or ended the input) at a pause."""


def select(only: str | None) -> list[Stop]:
    """The stops to run, in the lecture's order; ``only`` is a comma-separated list of names."""
    if only is None:
        return list(TOUR)
    names = [name.strip() for name in only.split(",") if name.strip()]
    valid = [stop.name for stop in TOUR]
    unknown = [name for name in names if name not in valid]
    if unknown or not names:
        what = f"no tour stop {unknown[0]!r}" if unknown else "--only names no stop"
        raise UserError(f"{what}; choose from: {', '.join(valid)} (e.g. --only scaled,causal).")
    return [stop for stop in TOUR if stop.name in names]


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def missing(stop: Stop, commands: Collection[str]) -> str | None:
    """Why a stop cannot run here, or None."""
    if stop.name not in commands:
        return "not in this version of attn"
    if stop.needs_torch and not torch_available():
        return "needs PyTorch: pip install 'attn-cli[torch]'"
    return None


def installed_commands() -> list[str]:
    import typer.main

    from attn_cli.cli import app

    return list(getattr(typer.main.get_command(app), "commands", {}))


class Pager:
    """Shows screens; with pauses on, waits for Enter before each screen (and each screenful)."""

    def __init__(self, console: Console, pause: bool, read_key: Callable[[], str | None]):
        self.console = console
        self.pause = pause
        self.read_key = read_key  # a key (or a line), None at the end of the input
        self.started = False
        self.after_note = False

    def screen(self, renderables: Sequence[RenderableType]) -> None:
        self.after_note = False
        if not self.pause:
            self.console.print(Group(*renderables))
            return
        with self.console.capture() as capture:
            self.console.print(Group(*renderables))
        lines = capture.get().splitlines()
        page = max(self.console.size.height - 2, 5)
        for start in range(0, len(lines), page):
            self._wait()
            self.console.print(Text.from_ansi("\n".join(lines[start : start + page])))

    def note(self, line: RenderableType) -> None:
        """A line that needs no pause of its own (it goes out with the next screen's wait)."""
        if not self.after_note:
            self.console.print()
        self.console.print(line)
        self.after_note = True

    def _wait(self) -> None:
        if not self.started:
            self.started = True
            return
        if not self.pause:
            return
        self.console.print(Text(PROMPT, style="dim"), end="")
        answer = self.read_key()
        if self.console.is_terminal:  # the reader ended the line: take the prompt line away
            self.console.control(Control.move(0, -1), Control((ControlType.ERASE_IN_LINE, 2)))
        else:
            self.console.print()
        if answer is None or answer.strip().lower() == "q":  # Ctrl-D, the input's end, or q
            raise TourQuit


def run_tour(stops: list[Stop], console: Console, pager: Pager) -> None:
    commands = installed_commands()
    reasons = [missing(stop, commands) for stop in stops]
    try:
        pager.screen(_intro(stops, reasons))
        ran = [
            stop
            for number, (stop, reason) in enumerate(zip(stops, reasons, strict=True), start=1)
            if _run_stop(stop, f"Stop {number}/{len(stops)}", reason, pager)
        ]
    except TourQuit:
        console.print(Text("Tour stopped.", style="bold"))
        return
    pager.screen(
        [Text(""), Rule("End of the tour", style="bold"), Text("Run any stop on its own:")]
        + [Text(f"  {stop.command_line}", style="cyan") for stop in ran]
    )


def _intro(stops: list[Stop], reasons: list[str | None]) -> list[RenderableType]:
    lines: list[RenderableType] = [
        Rule("A tour of attention", style="bold"),
        Text(f"The lecture in {len(stops)} stop{'s' if len(stops) > 1 else ''}, in order:"),
    ]
    for number, (stop, reason) in enumerate(zip(stops, reasons, strict=True), start=1):
        line = Text(f"{number:>3}. {stop.name:<10}", style="bold")
        line.append(stop.title, style="" if reason is None else "dim")
        if reason is not None:
            line.append(" (skipped)", style="dim")
        lines.append(line)
    return lines


def _run_stop(stop: Stop, label: str, reason: str | None, pager: Pager) -> bool:
    """Show a stop; False when it was skipped."""
    heading = [
        Text(""),
        Rule(Text(f"{label} · {stop.title}", "rule.text"), style="bold magenta", align="left"),
    ]
    if reason is not None:
        pager.note(Text(f"{label} · skipped {stop.name}: {reason}.", style="dim"))
        return False
    heading.append(Text(f"$ {stop.command_line}", style="dim"))
    try:
        screens = _screens(stop)
    except UserError as error:
        pager.screen([*heading, Text(f"Skipped {stop.name}: {error}", style="yellow")])
        return False
    pager.screen([*heading, *screens[0]])
    for screen in screens[1:]:
        pager.screen(screen)
    return True


def _screens(stop: Stop) -> list[list[RenderableType]]:
    """A lesson's screens (header and inputs, each step, notes), or a command's own output."""
    from attn_cli.commands.common import LessonCall, lesson_call_handler
    from attn_cli.render import RenderOptions
    from attn_cli.render.rich_render import walkthrough_sections
    from attn_cli.runner import compute

    calls: list[LessonCall] = []
    output = io.StringIO()
    token = lesson_call_handler.set(calls.append)
    try:
        with redirect_stdout(output):
            code = _invoke((stop.name, *stop.args))
    finally:
        lesson_call_handler.reset(token)
    if calls:
        call = calls[0]
        walkthrough = compute(call.request)
        return walkthrough_sections(walkthrough, RenderOptions(call.precision, call.full))
    if code != 0:
        raise UserError(f"'{stop.command_line}' exited with code {code} (see above).")
    return [[Group(Text.from_ansi(output.getvalue().rstrip("\n")))]]


def _invoke(argv: Sequence[str]) -> int:
    """Run ``attn ARGV`` through the real command line; its exit code."""
    import typer.main

    from attn_cli.cli import app

    try:
        typer.main.get_command(app).main(args=list(argv), prog_name="attn", standalone_mode=True)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else int(done.code is not None)
    return 0
