"""The tour's stops in the lecture's order: one list, linked from the stops' own declarations.

Each lesson declares its stop in its folder (``attn_cli/course/<lesson>/stop.py``); the tools the
tour visits declare theirs beside their code (attn_cli.cli.bench_stop, attn_cli.learn.stops).
A stop names the stop it follows (``after``): :func:`linked` turns them into ``TOUR``, the one
order `attn tour`, its help and `attn --help` read. Kept light (no rich, numpy or TOML):
`attn --help` builds the tour's help from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from attn_cli import course
from attn_cli.cli.bench_stop import STOP as BENCH
from attn_cli.core.stop import Section, Stop
from attn_cli.learn.stops import GRAMMAR, INDUCTION, TRANSLATE

INTRO = "The tour in {count} stop{s}, in order:"  # the lectures' and those beyond them
CLOSING = "Run any stop on its own:"
# Shown after the lectures' last stop, when it was just shown: the lecture, closed.
CLOSING_WORDS = (
    "That is the lecture: attention as a lookup, its scale, its masks, heads and "
    "positions, the Transformer layer around it, the O(n²) wall, and the ways past it."
)

# The stops of the tools the tour visits (a lesson's stop is in its own folder).
TOOL_STOPS: tuple[Stop, ...] = (TRANSLATE, GRAMMAR, INDUCTION, BENCH)


def linked(lessons: Iterable[Stop], tools: Iterable[Stop]) -> tuple[Stop, ...]:
    """The stops in the lecture's order: the lessons' stops in theirs (attn_cli.course links
    them), each followed by the tools' stops that name it (and those that name them)."""
    tools = tuple(tools)
    order: list[Stop] = []

    def visit(stop: Stop) -> None:
        order.append(stop)
        for tool in tools:
            if tool.after == stop.name and tool not in order:
                visit(tool)

    for stop in lessons:
        visit(stop)
    unplaced = [tool.name for tool in tools if tool not in order]
    if unplaced:
        raise ValueError(f"tour stops that follow no stop of the tour: {', '.join(unplaced)}")
    return tuple(order)


def tour() -> tuple[Stop, ...]:
    """The tour: every stop, in the lecture's order (linked afresh from the lessons the course
    finds now, a lesson added to its folder included, and the visits its folders declare)."""
    return in_sections(linked(course.lecture_stops(), (*TOOL_STOPS, *course.visit_stops())))


def in_sections(stops: tuple[Stop, ...]) -> tuple[Stop, ...]:
    """``stops``, checked to make one run per section: the lectures' own first, then each
    section's stops together (a stop past the lectures that names a lecture stop in ``after``
    starts its section; one that comes back to a section left earlier is refused)."""
    seen: list[Section | None] = [None]
    for stop in stops:
        if stop.section is seen[-1]:
            continue
        if stop.section in seen:
            raise ValueError(
                f"tour stop {stop.name!r} comes back to a section the stops before it left "
                f"({stop.section.title if stop.section else 'the lectures'}): give it an "
                "'after' inside its section"
            )
        seen.append(stop.section)
    return stops


def first_of_section(stops: Sequence[Stop], index: int) -> Section | None:
    """The section that stop ``index`` of ``stops`` opens (None: it opens none)."""
    section = stops[index].section
    opens = index == 0 or stops[index - 1].section is not section
    return section if opens else None


def last_of_section(stop: Stop) -> bool:
    """Whether ``stop`` is the last stop of its section (or of the lectures) in the tour."""
    order = tour()
    if stop not in order:
        return False
    position = order.index(stop)
    return position == len(order) - 1 or order[position + 1].section is not stop.section


def closing_of(section: Section | None) -> str:
    """What is said after a section's last stop: the lectures' closing words, or the section's
    closing with each of its stops and what its numbers were checked against."""
    if section is None:
        return CLOSING_WORDS
    stops = [stop for stop in tour() if stop.section is section and stop.checked]
    checked = [f"  {stop.topic}: {stop.checked}." for stop in stops]
    return "\n".join((section.closing, *checked))


def __getattr__(name: str) -> tuple[Stop, ...]:
    """``TOUR``, the tour as it stands (:func:`tour`)."""
    if name == "TOUR":
        return tour()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def help_text() -> str:
    """The tour command's help: its stops' topics, in order, from the tour itself, each
    section after the lectures' own stops named before its topics."""
    stops = tour()
    parts: list[str] = []
    for index, stop in enumerate(stops):
        section = first_of_section(stops, index)
        if section is not None:
            parts.append(f"; {section.title.lower()}: {stop.topic}")
        else:
            parts.append((", " if index else "") + stop.topic)
    return (
        f"The lecture in order, {len(stops)} stops: {''.join(parts)}; one screen at a time. At "
        "a pause: Enter (or any key) for the next screen, q or Ctrl-D to stop."
    )
