"""What the suite-wide tests run of each lesson, declared once, in the lesson's own test module.

A lesson's test module (tests/test_NAME.py) declares ``RUNS = Runs(...)``; the tests that go over
every lesson (the JSON contract, the texts and claims, the rich tables, the files read back) take
the list of lessons from the cards and each lesson's runs from here. Adding a lesson adds its
runs to its own test, and no table elsewhere.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


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
    module = importlib.import_module(f"tests.test_{lesson}")
    runs = getattr(module, "RUNS", None)
    assert isinstance(runs, Runs), f"tests/test_{lesson}.py declares no RUNS = Runs(...)"
    return runs
