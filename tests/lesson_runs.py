"""What the suite-wide tests run of each lesson, declared once, in the lesson's own test module.

A lesson's test module (tests/test_NAME.py) declares ``RUNS = Runs(...)``; the tests that go over
every lesson (the JSON contract, the texts and claims, the rich tables, the files read back) take
the list of lessons from the cards (:func:`lessons_with_runs`) and each lesson's runs from here.
Adding a lesson adds its runs to its own test, and no table elsewhere.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from attn_cli.course import lesson_names


@dataclass(frozen=True)
class Batch:
    """One item of a batch: its inputs drawn by ``draw(*shape)``, and the inputs batched."""

    inputs: Callable[[Callable[..., np.ndarray]], dict[str, np.ndarray]]
    batched: tuple[str, ...]  # the inputs the books batch; the rest (weights) shared by every item
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Runs:
    # A small random run, as command-line arguments (seeded where the lesson draws).
    random: tuple[str, ...]
    # Random inputs of about one size s, as the Python function's keywords, within the lesson's
    # own rules (an even d_model, a few blocks, ...); run at s = 2, 11 and 40.
    sized: Callable[[int], dict[str, Any]]
    # Command-line arguments whose output holds an array over render.json_render.MAX_ENTRIES
    # entries (None: the lesson has no such size).
    large: tuple[str, ...] | None = None
    # Command lines that, with the bundled examples, make every text of the lesson appear.
    variants: tuple[tuple[str, ...], ...] = ()
    # Options each drawn input of the claims sweep also runs with (those that change the notes).
    options: tuple[dict[str, Any], ...] = ()
    # For a lesson without matrix inputs: the option sets the claims sweep runs instead.
    sweeps: tuple[dict[str, Any], ...] | None = None
    # Notes no input makes (the reason beside each, in the lesson's test).
    never_made: frozenset[str] = field(default_factory=frozenset)
    # A fast run that draws a figure (--plot), and labels the figure must show; None: no figure.
    figure: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    # How an item of a batch is drawn (None: the lesson takes no batch).
    batch: Batch | None = None


def runs_of(lesson: str) -> Runs:
    """The runs tests/test_LESSON.py declares."""
    runs = _declared(lesson)
    assert runs is not None, missing_runs(lesson)
    return runs


def lessons_with_runs() -> tuple[str, ...]:
    """The course's lessons whose test declares their runs, in the course's order: what the
    suite-wide tests go over. A lesson without (a folder just added, its test not yet written)
    is left out of them, so that it breaks no other test's collection; tests/
    test_course_registry.py fails for it, naming the file to add (:func:`missing_runs`)."""
    return tuple(lesson for lesson in lesson_names() if _declared(lesson) is not None)


def missing_runs(lesson: str) -> str | None:
    """What lesson ``lesson`` lacks for the suite-wide tests, in one sentence naming the file;
    None when its test declares its runs."""
    if _declared(lesson) is not None:
        return None
    what = "declares no" if _test_module(lesson) is not None else "is missing; it declares"
    return (
        f"lesson {lesson!r}: tests/test_{lesson}.py {what} RUNS = Runs(...) (tests/lesson_runs.py"
        f"), what the suite-wide tests run of it; see docs/development.md, Adding a lesson."
    )


def _test_module(lesson: str) -> ModuleType | None:
    """tests/test_LESSON.py, imported; None where there is no such file (an error inside one
    that exists is raised: it is that test's to fix, not a missing file)."""
    name = f"tests.test_{lesson}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name != name:
            raise
        return None


def _declared(lesson: str) -> Runs | None:
    runs = getattr(_test_module(lesson), "RUNS", None)
    return runs if isinstance(runs, Runs) else None
