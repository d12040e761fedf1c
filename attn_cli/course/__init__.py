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
    from attn_cli.course.lesson import Lesson


def _is_lesson_folder(name: str, is_package: bool) -> bool:
    return is_package and name.isidentifier() and not name.startswith("_")


@functools.cache
def lesson_names() -> tuple[str, ...]:
    """Every lesson, in the order `attn --help` lists them (each card's ``order``)."""
    found = [m.name for m in pkgutil.iter_modules(__path__) if _is_lesson_folder(m.name, m.ispkg)]
    cards = [card(name) for name in found]
    return tuple(each.name for each in sorted(cards, key=lambda each: each.order))


def is_lesson(name: str) -> bool:
    """Whether ``name`` is a lesson (its folder holds a card), without importing any card."""
    if not name.isidentifier() or name.startswith("_"):
        return False
    return (
        any(m.name == name and m.ispkg for m in pkgutil.iter_modules(__path__))
        and importlib.util.find_spec(f"{__name__}.{name}.card") is not None
    )


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


def programs_of(name: str) -> ModuleType | None:
    """Lesson ``name``'s ``--code`` programs (``program``: numpy_program, torch_program)."""
    return folder_part(name, "program")


def precision_of(name: str) -> int:
    """The decimals lesson ``name``'s command prints unless --precision says otherwise."""
    return card(name).precision if is_lesson(name) else 4


def forget() -> None:
    """Find the lessons afresh (after ``__path__`` gained a folder)."""
    lesson_names.cache_clear()
    card.cache_clear()
