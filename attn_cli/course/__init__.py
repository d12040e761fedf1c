"""The lessons, one folder each, and the registry that finds them.

A lesson is a folder of this package, ``attn_cli/course/<name>/``: its card (``card.py``,
``CARD``: what the command line and the Python API know of it, kept light), its build
(``build.py``, ``LESSON``: how it computes its walkthrough), its ``--code`` programs
(``program.py``), its figure and its tour stop where it has them; plus its words and examples in
``lessons/<name>.toml`` and its tests. Nothing else names it: the command line, the Python API,
the tour and the explorer find it here, by walking this package's folders (``__path__``, which
a plugin, or a test, may extend with a folder of its own).

The modules beside the folders (the step recorder, the lesson type, checks shared by lessons)
are what lessons are built from; they are not lessons.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from types import ModuleType
from typing import TYPE_CHECKING, Any

from attn_cli.core.errors import UserError

if TYPE_CHECKING:
    from attn_cli.core.card import Card
    from attn_cli.core.stop import Stop
    from attn_cli.course.lesson import Lesson


def _is_lesson_folder(name: str, is_package: bool) -> bool:
    return is_package and name.isidentifier() and not name.startswith("_")


@functools.cache
def _folders() -> frozenset[str]:
    """The lessons' folders, found where this package's path leads (no card imported); scanned
    once (:func:`forget` scans again)."""
    return frozenset(
        m.name for m in pkgutil.iter_modules(__path__) if _is_lesson_folder(m.name, m.ispkg)
    )


def _found() -> list[str]:
    """The lessons' folders, by name."""
    return sorted(_folders())


@functools.cache
def lesson_names() -> tuple[str, ...]:
    """Every lesson, in the lecture's order, as the tour and `attn --help` list them: the first
    lesson's stop follows none, and each lesson's stop names the lesson it follows
    (``STOP.after``); a lesson without a stop comes after those, by name."""
    stops = {name: stop for name in _found() if (stop := stop_of(name)) is not None}
    after: dict[str | None, str] = {}
    for name, stop in stops.items():
        if stop.after in after:
            raise ValueError(
                f"lessons {after[stop.after]!r} and {name!r} both follow {stop.after!r} in the "
                "tour: give one of their stops another 'after'"
            )
        after[stop.after] = name
    order: list[str] = []
    current = after.get(None)
    while current is not None and current not in order:
        order.append(current)
        current = after.get(current)
    unlinked = sorted(name for name in stops if name not in order)
    if unlinked:
        raise ValueError(f"lessons whose stops follow no lesson of the tour: {', '.join(unlinked)}")
    return (*order, *(name for name in _found() if name not in stops))


def stop_of(name: str) -> Stop | None:
    """Lesson ``name``'s tour stop (its folder's ``stop.STOP``), or None for a lesson without."""
    module = folder_part(name, "stop")
    return None if module is None else module.STOP


def lecture_stops() -> tuple[Stop, ...]:
    """The lessons' tour stops, in the lecture's order."""
    return tuple(stop for name in lesson_names() if (stop := stop_of(name)) is not None)


def visit_stops() -> tuple[Stop, ...]:
    """The stops that visit a lesson's command again with other options (its folder's
    ``stop.VISITS``: multihead's grouped-query heads, scaled's soft-capping), each placed as a
    tool's stop is, right after the stop it names."""
    visits: list[Stop] = []
    for name in lesson_names():
        module = folder_part(name, "stop")
        for visit in getattr(module, "VISITS", ()):
            if visit.lesson or visit.command_name != name:
                raise ValueError(
                    f"attn_cli.course.{name}.stop.VISITS: a visit is Stop(..., command={name!r}, "
                    "lesson=False)"
                )
            visits.append(visit)
    return tuple(visits)


@functools.cache
def is_lesson(name: str) -> bool:
    """Whether ``name`` is a lesson (its folder holds a card), without importing any card; asked
    once per name (:func:`forget` asks again)."""
    return name in _folders() and importlib.util.find_spec(f"{__name__}.{name}.card") is not None


def _unknown(name: str) -> UserError:
    return UserError(
        f"unknown lesson {name!r}; choose one of: {', '.join(sorted(lesson_names()))}."
    )


@functools.cache
def card(name: str) -> Card:
    """Lesson ``name``'s card (its card module imported now); a UserError lists the lessons."""
    from attn_cli.core.card import Card

    if not is_lesson(name):
        raise _unknown(name)
    declared = importlib.import_module(f"{__name__}.{name}.card").CARD
    if not isinstance(declared, Card) or declared.name != name:
        raise TypeError(f"attn_cli.course.{name}.card.CARD must be Card({name!r}, ...)")
    return declared


def get_lesson(name: str) -> Lesson:
    """Lesson ``name``'s declaration (its build imported now); a UserError lists the names."""
    from attn_cli.course.lesson import Lesson

    if not is_lesson(name):
        raise _unknown(name)
    module = f"{__name__}.{name}.build"
    declared = importlib.import_module(module).LESSON
    if not isinstance(declared, Lesson) or declared.name != name:
        raise TypeError(f"{module}.LESSON must be Lesson(CARD, ...) with the card of {name!r}")
    return declared


def folder_part(name: str, part: str) -> ModuleType | None:
    """Module ``part`` of lesson ``name``'s folder (its ``figure``, ``program`` or ``stop``),
    imported now; None where the folder has no such module."""
    if not is_lesson(name):
        raise _unknown(name)
    module = f"{__name__}.{name}.{part}"
    if importlib.util.find_spec(module) is None:
        return None
    return importlib.import_module(module)


def figure_of(name: str) -> Any:
    """Lesson ``name``'s figure (``figure.draw``: the walkthrough and a precision in, a
    matplotlib figure out), or None for a lesson that draws none."""
    module = folder_part(name, "figure")
    return None if module is None else module.draw


def mistakes_of(name: str) -> dict[str, Any]:
    """Lesson ``name``'s mistakes, by step (``mistakes.STEPS``: attn_cli.course.mistakes), or
    none for a lesson that declares none."""
    module = folder_part(name, "mistakes")
    return {} if module is None else dict(module.STEPS)


def programs_of(name: str) -> ModuleType | None:
    """Lesson ``name``'s ``--code`` programs (``program``: numpy_program, torch_program)."""
    return folder_part(name, "program")


def forget() -> None:
    """Find the lessons afresh (after ``__path__`` gained or lost a folder)."""
    for cached in (_folders, is_lesson, lesson_names, card):
        cached.cache_clear()
