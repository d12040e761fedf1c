"""The lesson type and registry: what a lesson module declares (``LESSON = Lesson(CARD, ...)``)
and the run it computes from.

A lesson module (``attn_cli/course/<name>.py``) ends with its declaration: its card
(attn_cli/course/<name>.py: inputs, options and their defaults), the example labels it reads, the
functions that check, size and compute it, and its texts (:class:`~attn_cli.lessonfiles.texts.Texts`).
One generic path (CLI commands, ``attn check``, quizzes, lesson files of one's own, the Python
API) runs any lesson through :func:`get_lesson`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from attn_cli.core.backend import Backend
from attn_cli.core.card import Card, InputSpec
from attn_cli.core.errors import PYTHON, Door
from attn_cli.lessonfiles.loader import Example, LessonFile
from attn_cli.lessonfiles.texts import Texts

if TYPE_CHECKING:
    from attn_cli.core.model import Walkthrough

T = TypeVar("T")
Inputs = dict[str, np.ndarray]
Shapes = dict[str, tuple[int, ...]]


def draw_standard_normal(shapes: Shapes, seed: int) -> Inputs:
    """Random inputs of the given shapes, in order: N(0, 1) from numpy's default_rng(seed)."""
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape) for name, shape in shapes.items()}


def sizes_as_given(sizes: dict[str, int], options: dict[str, Any]) -> dict[str, int]:
    """Random sizes that no option fills in (every lesson but those that say otherwise)."""
    return sizes


def same_shapes(shapes: Shapes, options: dict[str, Any]) -> Shapes:
    """Random shapes that no option changes (every lesson but those that say otherwise)."""
    return shapes


@dataclass(frozen=True)
class Lesson:
    """A lesson, declared once at the bottom of its module: ``LESSON = Lesson(...)``."""

    card: Card  # its name, inputs, options and their defaults (attn_cli/course/<name>.py)
    labels: tuple[str, ...]  # the example labels (lesson files' labels = {...}) it reads
    # Raise UserError for inputs (each 2-D, one batch item) and options that do not fit.
    validate: Callable[[Inputs, dict[str, Any]], None]
    # The shapes of random inputs for --n and friends (only the sizes given).
    random_shapes: Callable[[dict[str, int]], Shapes]
    # The memory the walkthrough will hold: (shapes, options, itemsize) -> bytes.
    estimate_bytes: Callable[[Shapes, dict[str, Any], int], int]
    build: Callable[[LessonRun], Walkthrough]  # compute every step
    # Every step text and note it records, with the placeholder names it hands over to each.
    texts: Texts
    # Random inputs of those shapes from a seed (multihead scales its weights).
    draw_random: Callable[[Shapes, int], Inputs] = draw_standard_normal
    # The sizes given, with what the options say of those not given, before the card's defaults
    # fill the rest (block's --weights FILE holds d_model): (sizes given, options) -> sizes.
    option_sizes: Callable[[dict[str, int], dict[str, Any]], dict[str, int]] = sizes_as_given
    # The random shapes as the options change them (multihead's --kv-heads narrows W_K and W_V):
    # (shapes from the sizes, options) -> the shapes drawn.
    option_shapes: Callable[[Shapes, dict[str, Any]], Shapes] = same_shapes
    # Inputs the user may give on top of a lecture example (e.g. W_a for bahdanau --all-scores).
    example_overrides: frozenset[str] = frozenset()
    # The inputs rearranged with the options before a batch is split into items, or None:
    # block's --sequence-first reads a 3-D X as (n, B, d), PyTorch's default layout.
    arrange: Callable[[Inputs, dict[str, Any]], Inputs] | None = None
    memory_fix: str = "choose smaller sizes"  # the fix named when a run would not fit
    # Raise UserError for inputs and options whose work would take minutes here, written as
    # --format names it (None: not written; RunRequest.shown): (inputs, options, shown).
    check_work: Callable[[Inputs, dict[str, Any], str | None], None] | None = None
    # The numbers its --full JSON writes, (shapes, options) -> count, where they are not about
    # the numbers it holds (estimate_bytes: a lesson that holds many scratch matrices per head).
    document_estimate: Callable[[Shapes, dict[str, Any]], int] | None = None

    @property
    def name(self) -> str:
        return self.card.name

    @property
    def inputs(self) -> tuple[InputSpec, ...]:
        return self.card.inputs

    @property
    def options(self) -> dict[str, Any]:
        """Every option and its default, e.g. {"scale": True}."""
        return self.card.defaults

    def check(self, inputs: Inputs, options: dict[str, Any], shown: str | None = None) -> None:
        """``validate``, then the lesson's work guard (``check_work``) where it has one."""
        self.validate(inputs, options)
        if self.check_work is not None:
            self.check_work(inputs, options, shown)

    def document_numbers(self, shapes: Shapes, options: dict[str, Any]) -> int:
        """About how many numbers the walkthrough's steps hold, as --full JSON writes them:
        the lesson's own count, else the numbers it holds at its peak (within a few tenths of
        the document for a lesson whose every matrix is a step)."""
        if self.document_estimate is not None:
            return self.document_estimate(shapes, options)
        return self.estimate_bytes(shapes, options, 8) // 8

    def param(self, name: str) -> str:
        """Input ``name`` in a message, spelt by the door that shows it (Card.param)."""
        return self.card.param(name)

    def options_with(self, *layers: Mapping[str, Any]) -> dict[str, Any]:
        """The defaults with each layer (an example's options, then the user's) on top."""
        options = dict(self.options)
        for layer in layers:
            options.update(layer)
        return options


@dataclass
class LessonRun:
    """Everything a lesson needs to compute its walkthrough."""

    file: LessonFile  # the lesson's words and examples (bundled, or the user's --lesson)
    example: Example | None
    inputs: dict[str, np.ndarray]  # float64, validated
    options: dict[str, Any]
    backend: Backend
    time_steps: bool = False
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seed: int = 0  # for anything a lesson draws itself (e.g. weights not given)
    drawn: frozenset[str] = frozenset()  # inputs drawn at random (--n and friends)
    keep: bool = False  # keep what is drawn for the next run in this process (RunRequest.keep)
    shown: str | None = None  # how the command line will write it (RunRequest.shown)
    door: Door = PYTHON  # how the door that asked names parameters (RunRequest.door)

    @property
    def name(self) -> str:
        """The lesson's name (its command)."""
        return self.file.lesson

    def timed(self, compute: Callable[[], T]) -> tuple[T, float | None]:
        """``compute()``, and with --time the device's time for it (Backend.timed: warm, the
        median of a few runs); without --time it runs once, untimed (time None)."""
        if not self.time_steps:
            return compute(), None
        return self.backend.timed(compute)
