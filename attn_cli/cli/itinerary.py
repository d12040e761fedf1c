"""The tour's stops in the lecture's order: one list, linked from the stops' own declarations.

Each lesson declares its stop in its folder (``attn_cli/course/<lesson>/stop.py``); the tools the
tour visits declare theirs beside their commands (attn_cli.cli.commands.bench, attn_cli.learn.stops).
A stop names the stop it follows (``after``): :func:`linked` turns them into ``TOUR``, the one
order `attn tour`, its help and `attn --help` read. Kept light (no rich, numpy or TOML):
`attn --help` builds the tour's help from it.
"""

from __future__ import annotations

from collections.abc import Iterable

from attn_cli import course
from attn_cli.cli.commands.bench import STOP as BENCH
from attn_cli.core.stop import Stop
from attn_cli.learn.stops import GRAMMAR, INDUCTION, TRANSLATE

INTRO = "The lecture in {count} stop{s}, in order:"
CLOSING = "Run any stop on its own:"
# Shown after the tour's last stop when the tour ends there: the lecture, closed.
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
    finds now, a lesson added to its folder included)."""
    return linked(course.lecture_stops(), TOOL_STOPS)


def __getattr__(name: str) -> tuple[Stop, ...]:
    """``TOUR``, the tour as it stands (:func:`tour`)."""
    if name == "TOUR":
        return tour()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def help_text() -> str:
    """The tour command's help: its stops' topics, in order, from the tour itself."""
    stops = tour()
    topics = ", ".join(stop.topic for stop in stops)
    return (
        f"The lecture in order, {len(stops)} stops: {topics}; one screen at a time. At a "
        "pause: Enter (or any key) for the next screen, q or Ctrl-D to stop."
    )
