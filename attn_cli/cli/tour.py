"""``attn tour``: the lecture's lessons in order, one screen at a time.

The tour (attn_cli/cli/itinerary.py, linked from each stop's own declaration and its lead-in)
is the one order of the lecture. Each stop is a real command line
(``attn NAME ARGS``), parsed by the command's own parser, so a stop shows exactly what a
student gets by typing it. A lesson's request is computed and shown a screen at a time (its
header and inputs, then each step); the bench stop runs its sweep and shows its table. A screen
taller than the terminal goes a page at a time, pages ending between two of its parts (a table,
a paragraph), so that the prompt never splits a table that fits on the screen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.control import Control
from rich.rule import Rule
from rich.segment import ControlType, Segment, Segments
from rich.text import Text

from attn_cli.cli import flags
from attn_cli.cli.itinerary import (
    CLOSING,
    CLOSING_WORDS,
    INTRO,
    closing_of,
    first_of_section,
    last_of_section,
    tour,
)
from attn_cli.core.errors import UserError
from attn_cli.core.stop import Stop

if TYPE_CHECKING:
    from attn_cli.core.model import Walkthrough

__all__ = [
    "CLOSING_WORDS",
    "PROMPT",
    "Pager",
    "Stop",
    "TourQuit",
    "pages",
    "run_tour",
    "select",
    "tour",
]


def __getattr__(name: str) -> tuple[Stop, ...]:
    """``TOUR``: the tour as it stands (attn_cli.cli.itinerary.tour)."""
    if name == "TOUR":
        return tour()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PROMPT = "── Enter: next · q: quit ──"
# The prompt while the stop just shown (in brief) can be seen in full.
PROMPT_WITH_FULL = "── Enter: next · f: {stop} in full · q: quit ──"


class TourQuit(Exception):
    """The lecturer typed q (or ended the input) at a pause."""


def select(only: str | None) -> list[Stop]:
    """The stops to run, in the lecture's order; ``only`` is a comma-separated list of names."""
    stops = tour()
    if only is None:
        return list(stops)
    names = [name.strip() for name in only.split(",") if name.strip()]
    valid = [stop.name for stop in stops]
    unknown = [name for name in names if name not in valid]
    if unknown or not names:
        what = f"no tour stop {unknown[0]!r}" if unknown else "--only names no stop"
        raise UserError(f"{what}; choose from: {', '.join(valid)} (e.g. --only scaled,causal).")
    return [stop for stop in stops if stop.name in names]


class Pager:
    """Shows screens; with pauses on, a screenful at a time: the screens' pages are put one
    under another until the next would not fit the terminal, and then it waits for Enter."""

    def __init__(self, console: Console, pause: bool, read_key: Callable[[], str | None]):
        self.console = console
        self.pause = pause
        self.read_key = read_key  # a key (or a line), None at the end of the input
        self.used = 0  # lines shown since the last wait
        # The stop just shown in brief, and how to show it in full: what f does at a wait.
        self.in_full: tuple[str, Callable[[], None]] | None = None

    def screen(self, renderables: Sequence[RenderableType]) -> None:
        """Show a screen (a stop's heading, a step, ...); with pauses, fit it to the terminal's
        height: below what is shown where it fits, else after a wait; a screen taller than the
        terminal goes a page at a time, each page ending between two of its parts (a table, an
        explanation), inside one only where that part alone is taller than the terminal (see
        :func:`pages`)."""
        if not self.pause:
            self.console.print(Group(*renderables))
            return
        height = max(self.console.size.height - 2, 5)  # the prompt's line and a spare one
        for page in pages(self.console, renderables, height):
            if self.used and self.used + len(page) > height:
                self._wait()
                self.used = 0
            self.console.print(Segments(segment for line in page for segment in line))
            self.used += len(page)

    def offer_in_full(self, name: str, show: Callable[[], None]) -> None:
        """At the next wait, f shows stop ``name`` in full (``show``) before going on."""
        self.in_full = (name, show)

    def wait_offering_in_full(self, name: str, show: Callable[[], None]) -> None:
        """With pauses, wait now, f showing stop ``name`` in full (``show``): a brief stop
        ends at a wait, and the next one starts at the top of a screen."""
        if self.pause:
            self.offer_in_full(name, show)
            self._wait()
            self.used = 0

    def _wait(self) -> None:
        offered, self.in_full = self.in_full, None
        prompt = PROMPT if offered is None else PROMPT_WITH_FULL.format(stop=offered[0])
        self.console.print(Text(prompt, style="dim"), end="")
        answer = self.read_key()
        if self.console.is_terminal:  # the reader ended the line: take the prompt line away
            self.console.control(Control.move(0, -1), Control((ControlType.ERASE_IN_LINE, 2)))
        else:
            self.console.print()
        if answer is None or answer.strip().lower() == "q":  # Ctrl-D, the input's end, or q
            raise TourQuit
        if offered is not None and answer.strip().lower() == "f":
            self.used = 0
            offered[1]()  # the stop in full, a screenful at a time, before what was to come
            self._wait()


Lines = list[list[Segment]]


def pages(console: Console, renderables: Sequence[RenderableType], height: int) -> list[Lines]:
    """The renderables' lines in pages of at most ``height`` lines, each page ending between
    two renderables. A heading (a rule or a blank line) stays with what follows it; only a
    single renderable taller than a page is cut, a page at a time."""
    from rich.columns import Columns

    from attn_cli.render.rich_render import Heading, SideBySideSteps

    parts: list[Lines] = []
    glued: Lines = []
    expanded: list[RenderableType] = []
    for renderable in renderables:  # brief steps: each row of them a part (a page ends between)
        if not isinstance(renderable, SideBySideSteps):
            expanded.append(renderable)
            continue
        for number, row in enumerate(renderable.rows(console, console.options)):
            expanded += [Text(""), row] if number else [row]
    for renderable in expanded:
        lines = console.render_lines(renderable, pad=False, new_lines=True)
        if (
            isinstance(renderable, Columns)
            and len(lines) > height
            and len(renderable.renderables) > 2
        ):
            # Blocks side by side (a softmax's parts) taller than a page: a pair at a time, each
            # pair a part of its own, so that a page ends between tables, never inside one.
            for start in range(0, len(renderable.renderables), 2):
                pair = Columns(
                    renderable.renderables[start : start + 2], padding=renderable.padding
                )
                parts.append(glued + console.render_lines(pair, pad=False, new_lines=True))
                glued = []
            continue
        heading = isinstance(renderable, Rule | Heading)
        if heading or (isinstance(renderable, Text) and not renderable.plain):
            glued += lines  # a heading: kept with the part after it
            continue
        parts.append(glued + lines)
        glued = []
    if glued:
        parts.append(glued)
    out: list[Lines] = [[]]
    for part in parts:
        if out[-1] and len(out[-1]) + len(part) > height:
            out.append([])
        while len(part) > height:  # taller than a page on its own: cut it a page at a time
            if out[-1]:
                out.append([])
            out[-1], part = part[:height], part[height:]
            out.append([])
        out[-1] += part
    return [page for page in out if page]


def run_tour(stops: list[Stop], console: Console, pager: Pager, *, brief: bool = False) -> None:
    """The stops in order; ``brief``: each lesson stop as --brief shows it (f at the next
    wait shows it in full)."""
    try:
        pager.screen(_intro(stops))
        ran: list[Stop] = []
        shown: Stop | None = None  # the stop just shown (None: none, or it could not run)
        for number, stop in enumerate(stops, start=1):
            section = first_of_section(stops, number - 1)
            if section is not None:
                pager.screen([Text(""), Rule(section.title, style="bold"), Text(section.opening)])
            if leads_in(shown, stop):
                pager.screen([Text(""), Text(stop.lead_in, style="italic")])
            label = f"Stop {number}/{len(stops)}"
            shown = stop if _run_stop(stop, label, pager, brief=brief) else None
            if shown is not None:
                ran.append(stop)
                if last_of_section(shown):
                    pager.screen([Text(""), Text(closing_of(shown.section), style="italic")])
    except TourQuit:
        console.print(Text("Tour stopped.", style="bold"))
        return
    ending: list[RenderableType] = [
        Text(""),
        Rule("End of the tour", style="bold"),
        Text(CLOSING),
    ]
    pager.screen(ending + [Text(f"  {stop.command_line}", style="cyan") for stop in ran])


def leads_in(shown: Stop | None, stop: Stop) -> bool:
    """Whether ``stop``'s lead-in applies: it speaks of the stop before it in the lecture, so it
    is shown only when that stop was just shown (not after --only skipped it)."""
    order = [each.name for each in tour()]
    if not stop.lead_in or shown is None or stop.name not in order:
        return False
    position = order.index(stop.name)
    return position > 0 and order[position - 1] == shown.name


def _intro(stops: list[Stop]) -> list[RenderableType]:
    lines: list[RenderableType] = [
        Rule("A tour of attention", style="bold"),
        Text(INTRO.format(count=len(stops), s="s" if len(stops) > 1 else "")),
    ]
    for number, stop in enumerate(stops, start=1):
        section = first_of_section(stops, number - 1)
        if section is not None:
            lines.append(Text(f"{section.title}:", style="bold"))
        line = Text(f"{number:>3}. {stop.name:<10}", style="bold")
        line.append(stop.title)
        lines.append(line)
    return lines


def _run_stop(stop: Stop, label: str, pager: Pager, *, brief: bool = False) -> bool:
    """Show a stop (``brief``: a lesson as --brief shows it, and in full when asked at the
    next wait); False when it failed (its reason shown instead)."""
    heading: list[RenderableType] = [
        Text(""),
        Rule(Text(f"{label} · {stop.title}", "rule.text"), style="bold magenta", align="left"),
        Text(f"$ {stop.command_line}", style="dim"),
    ]
    try:
        walkthrough, screens = _screens(stop, brief)
    except UserError as error:
        pager.screen(
            [*heading, Text(f"Skipped {stop.name}: {flags.message(error)}", style="yellow")]
        )
        return False
    pager.screen([*heading, *screens[0]])
    for screen in screens[1:]:
        pager.screen(screen)
    if walkthrough is not None:
        from attn_cli.render import RenderOptions
        from attn_cli.render.rich_render import walkthrough_sections

        options = RenderOptions(precision=parsed(stop)["precision"])

        def in_full() -> None:
            full = walkthrough_sections(walkthrough, options)
            pager.screen([*heading[:2], Text(f"$ {stop.command_line} (in full)", style="dim")])
            for screen in full:
                pager.screen(screen)

        pager.wait_offering_in_full(stop.name, in_full)
    return True


def _screens(
    stop: Stop, brief: bool = False
) -> tuple[Walkthrough | None, list[list[RenderableType]]]:
    """A lesson's screens (header and inputs, each step, notes), or the bench's table; with
    ``brief``, a lesson's as --brief shows them, and its walkthrough in full beside them (None
    for the bench and learn stops, shown in full)."""
    params = parsed(stop)
    if stop.command_name == "bench":
        from attn_cli.cli.commands.bench import WITH_SAVED, bench_config, measure
        from attn_cli.render.bench_render import bench_renderable

        config = bench_config(**{k: v for k, v in params.items() if k not in WITH_SAVED})
        result, fits = measure(config)
        if result.interrupted:  # Ctrl-C during the sweep ends the tour, as at a pause
            raise KeyboardInterrupt
        return None, [[bench_renderable(result, fits)]]
    if stop.command == "learn":
        return None, _learn_screens(params)
    from attn_cli.cli.options import lesson_request
    from attn_cli.course import card
    from attn_cli.render import RenderOptions
    from attn_cli.render.rich_render import walkthrough_sections
    from attn_cli.run.runner import compute

    request, shared = lesson_request(card(stop.command_name), params)
    options = RenderOptions(precision=shared.precision, full=shared.full)
    walkthrough = compute(request)
    if not brief:
        return None, walkthrough_sections(walkthrough, options)
    from attn_cli.core.brief import brief as brief_of

    return walkthrough, walkthrough_sections(brief_of(walkthrough), options)


def _learn_screens(params: dict[str, Any]) -> list[list[RenderableType]]:
    """The learn stop: its task trained at the stop's small budget (a progress bar at a
    terminal), shown as a lesson is."""
    from attn_cli.cli.commands.streams import stderr_console
    from attn_cli.learn.common import LearnOptions, progress_bar, require_torch
    from attn_cli.learn.tasks import get_task
    from attn_cli.render import RenderOptions
    from attn_cli.render.rich_render import walkthrough_sections

    task = str(params["task"].value)
    require_torch(task)
    options = LearnOptions(
        task=task,
        seed=params["seed"],
        steps=params["steps"],
        hidden=params["hidden"],
        max_len=params["max_len"],
    )
    with progress_bar(stderr_console()) as progress:
        walkthrough = get_task(task).run(options, progress)
    return walkthrough_sections(walkthrough, RenderOptions(precision=params["precision"]))


def parsed(stop: Stop) -> dict[str, Any]:
    """The stop's arguments as its command parses them (a user error if they do not parse)."""
    import typer
    import typer.main

    from attn_cli import course as cards
    from attn_cli.cli.options import lesson_command
    from attn_cli.cli.parsing import UsageError

    if cards.is_lesson(stop.command_name):
        function = lesson_command(cards.card(stop.command_name))
    elif stop.command == "learn":
        from attn_cli.cli.commands.learn import learn as function
    else:  # the bench stop
        from attn_cli.cli.commands.bench import bench as function
    parser = typer.Typer()  # the stop's command alone, to parse with (the CLI is not re-entered)
    parser.command(stop.command_name)(function)
    command = typer.main.get_command(parser)
    try:
        return dict(command.make_context(stop.command_name, list(stop.args)).params)
    except UsageError as error:
        raise UserError(error.format_message()) from None
