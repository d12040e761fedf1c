"""What every lesson shares: the run request, the step recorder and the lesson registry.

A lesson module (``attn_cli/walkthroughs/<name>.py``) ends with its declaration,
``LESSON = Lesson(...)`` (:class:`Lesson`): its inputs, options, labels, the functions that
check, size and compute it, and its texts (:class:`~attn_cli.lesson_texts.Texts`). One generic
path (CLI commands, ``attn check``, quizzes, lesson files of one's own, the Python API) runs any
lesson through :func:`get_lesson`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

import numpy as np

from attn_cli.backend import Array, Backend
from attn_cli.cards import Card, InputSpec, lesson_names, precision_of
from attn_cli.errors import UserError
from attn_cli.lesson_files import Example, LessonFile
from attn_cli.lesson_texts import Texts as Texts  # declared where the loader reads it
from attn_cli.mechanisms.attention import softmax_parts
from attn_cli.model import InputValue, Kind, Note, Part, Step, Walkthrough
from attn_cli.templates import fill

Inputs = dict[str, np.ndarray]
Shapes = dict[str, tuple[int, ...]]


def draw_standard_normal(shapes: Shapes, seed: int) -> Inputs:
    """Random inputs of the given shapes, in order: N(0, 1) from numpy's default_rng(seed)."""
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape) for name, shape in shapes.items()}


@dataclass(frozen=True)
class Lesson:
    """A lesson, declared once at the bottom of its module: ``LESSON = Lesson(...)``."""

    card: Card  # its name, inputs, options and their defaults (attn_cli/cards/<name>.py)
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
    # Inputs the user may give on top of a lecture example (e.g. W_a for bahdanau --compare).
    example_overrides: frozenset[str] = frozenset()
    memory_fix: str = "choose smaller sizes"  # the fix named when a run would not fit

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

    def flag(self, name: str) -> str:
        """The command-line flag of input ``name`` ("--q" for "Q")."""
        return self.card.flag(name)

    def options_with(self, *layers: Mapping[str, Any]) -> dict[str, Any]:
        """The defaults with each layer (an example's options, then the user's) on top."""
        options = dict(self.options)
        for layer in layers:
            options.update(layer)
        return options


def get_lesson(name: str) -> Lesson:
    """Lesson ``name``'s declaration (its module imported now); a UserError lists the names."""
    if name not in lesson_names():
        known = ", ".join(sorted(lesson_names()))
        raise UserError(f"unknown lesson {name!r}; choose one of: {known}.")
    module = f"attn_cli.walkthroughs.{name}"
    declared = importlib.import_module(module).LESSON
    if not isinstance(declared, Lesson) or declared.name != name:
        raise TypeError(f"{module}.LESSON must be Lesson(CARD, ...) with the card of {name!r}")
    return declared


@dataclass
class LessonRun:
    """Everything a lesson needs to compute its walkthrough."""

    lesson: LessonFile
    example: Example | None
    inputs: dict[str, np.ndarray]  # float64, validated
    options: dict[str, Any]
    backend: Backend
    time_steps: bool = False
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seed: int = 0  # for anything a lesson draws itself (e.g. weights not given)
    drawn: frozenset[str] = frozenset()  # inputs drawn at random (--n and friends)


@dataclass(frozen=True)
class Grid:
    """Where a step's values sit: its row and column labels (None: numbered), and the values
    its title and explanation read (``{n}``, ``{dk}``...). Steps over the same axes share one."""

    rows: tuple[str, ...] | None = None
    cols: tuple[str, ...] | None = None
    context: Mapping[str, Any] = field(default_factory=dict)


NO_GRID = Grid()


class StepRecorder:
    """Computes steps in order, timing them with --time, and collects them as plain data."""

    def __init__(self, run: LessonRun) -> None:
        self.run = run
        self.steps: list[Step] = []

    def compute(
        self,
        key: str,
        compute: Callable[[], Array],
        *,
        grid: Grid = NO_GRID,
        kind: Kind = "matrix",
        parts: tuple[Part, ...] = (),
        row_sums: bool = False,
        notes: tuple[Note, ...] = (),
        text: str | None = None,
    ) -> Array:
        """Compute a step's value on the backend, record it, and return the backend array."""
        value, seconds = self.run.backend.timed(compute)
        self.add(
            key,
            value,
            grid=grid,
            kind=kind,
            parts=parts,
            row_sums=row_sums,
            seconds=seconds if self.run.time_steps else None,
            notes=notes,
            text=text,
        )
        return value

    def add(
        self,
        key: str,
        value: Any,
        *,
        grid: Grid = NO_GRID,
        kind: Kind = "matrix",
        parts: tuple[Part, ...] = (),
        row_sums: bool = False,
        seconds: float | None = None,
        notes: tuple[Note, ...] = (),
        text: str | None = None,
    ) -> None:
        """Record a step whose value is already computed.

        ``text`` names the lesson text to use when it is not the step's key: steps that repeat
        (one per head) or that change meaning with an option share one ``[steps.NAME]`` entry.
        """
        self.check_declared("steps", text or key, grid.context)
        words = self.run.lesson.text(text or key)
        shown = self.to_numpy(value)
        sums = None
        if row_sums:
            sums = np.sum(shown, axis=-1)
        self.steps.append(
            Step(
                key=key,
                title_template=words.title,
                explanation_template=words.explanation,
                context=dict(grid.context),
                precision=precision_of(self.run.lesson.lesson),  # renderers: --precision
                value=shown,
                kind=kind,
                row_labels=grid.rows,
                col_labels=grid.cols,
                parts=tuple(replace(p, value=self.to_numpy(p.value)) for p in parts),
                row_sums=sums,
                seconds=seconds,
                latex=words.latex,
                notes=notes,
                headings=self.headings(shown) if kind == "records" else {},
            )
        )

    def note(self, key: str, **values: Any) -> Note:
        """The note ``[notes] key`` of the lesson file with the raw values its placeholders read
        (numpy numbers become Python ones); renderers fill it at their precision.

        It is filled once here, so that a placeholder the values lack (in a lecturer's file) is
        a user error naming the file and key when the note is made, not when it is shown.
        """
        self.check_declared("notes", key, values)
        lesson = self.run.lesson
        where = f"{lesson.path or lesson.lesson}: [notes] {key}"
        template = lesson.notes.get(key)
        if template is None:
            raise UserError(f'{where}: the lesson file has no such note; add {key} = "...".')
        plain = {
            name: value.item() if isinstance(value, np.generic) else value
            for name, value in values.items()
        }
        fill(template, plain, where, precision=4)
        return Note(key, template, plain)

    def check_declared(self, table: str, key: str, names: Mapping[str, Any]) -> None:
        """Refuse a text the lesson does not declare (``LESSON.texts``), or one missing a name
        the declaration promises it; a note must hand over exactly its declared values.

        The lesson file was checked against the declaration when it was loaded, so a text that
        passes here can be filled; failing here is a bug in the lesson, not in the file.
        """
        lesson = self.run.lesson.lesson
        texts = get_lesson(lesson).texts
        promised = (texts.steps if table == "steps" else texts.notes).get(key)
        if promised is None:
            raise TypeError(
                f"lesson {lesson!r} records {table} text {key!r} but its texts do not declare it"
            )
        missing = sorted(set(promised) - set(names))
        extra = sorted(set(names) - set(promised)) if table == "notes" else []
        if missing or extra:
            raise TypeError(
                f"lesson {lesson!r}, {table} text {key!r}: declared {list(promised)}, but the code "
                f"hands over {sorted(names)} (missing {missing}, undeclared {extra})"
            )

    def headings(self, records: Any) -> dict[str, str]:
        """The display heading of each key of a records table (``[headings]``; else the key)."""
        names = records[0] if isinstance(records, list) and records else {}
        return {name: self.run.lesson.headings.get(name, name) for name in names}

    def softmax(
        self,
        key: str,
        logits: Array,
        *,
        grid: Grid = NO_GRID,
        text: str | None = None,
        notes_of: Callable[[np.ndarray], tuple[Note, ...]] | None = None,
    ) -> Array:
        """Record a row-wise softmax as a weights step, with its stable-softmax intermediates.

        ``notes_of`` turns the computed weights (as numpy) into notes shown with the step.
        """
        softmax, seconds = self.run.backend.timed(lambda: softmax_parts(logits))
        notes = notes_of(self.run.backend.to_numpy(softmax.weights)) if notes_of else ()
        self.add(
            key,
            softmax.weights,
            kind="weights",
            row_sums=True,
            parts=(
                Part("row max", softmax.row_max),
                Part("shifted = scores − row max", softmax.shifted),
                Part("exp(shifted)", softmax.exp),
                Part("row sum of exp", softmax.row_sum),
            ),
            seconds=seconds if self.run.time_steps else None,
            grid=grid,
            notes=notes,
            text=text,
        )
        return softmax.weights

    def to_numpy(self, value: Any) -> Any:
        if isinstance(value, list | dict | str | float | int | np.ndarray):
            return value
        return self.run.backend.to_numpy(value)

    def walkthrough(
        self,
        output: Any,
        *,
        inputs: tuple[InputValue, ...] | None = None,
        notes: tuple[Note, ...] = (),
        meta: dict[str, Any] | None = None,
    ) -> Walkthrough:
        run = self.run
        if inputs is None:
            inputs = tuple(InputValue(name, value) for name, value in run.inputs.items())
        drafted = Walkthrough(
            lesson=run.lesson.lesson,
            title=run.lesson.title,
            intro=run.lesson.intro,
            example=run.example.name if run.example else None,
            example_description=run.example.description if run.example else "",
            backend=run.backend.name,
            device=run.backend.device,
            dtype=run.backend.dtype,
            inputs=inputs,
            steps=tuple(self.steps),
            output=self.to_numpy(output),
            notes=notes,
            meta={"options": dict(run.options), **(meta or {})},
            precision=precision_of(run.lesson.lesson),
        )
        return keep_true_claims(drafted, get_lesson(run.lesson.lesson).texts)


def keep_true_claims(walkthrough: Walkthrough, texts: Texts) -> Walkthrough:
    """``walkthrough`` without the notes whose declared claim (``texts.claims``) does not hold
    for its numbers; those move to ``withheld``. Each condition reads the walkthrough as drafted,
    every note still in it, so the order of the checks does not matter."""
    withheld: list[Note] = []

    def true_ones(notes: tuple[Note, ...]) -> tuple[Note, ...]:
        kept = []
        for note in notes:
            claim = texts.claims.get(note.key)
            if claim is None or claim(walkthrough, note.values):
                kept.append(note)
            else:
                withheld.append(note)
        return tuple(kept)

    steps = tuple(replace(step, notes=true_ones(step.notes)) for step in walkthrough.steps)
    notes = true_ones(walkthrough.notes)
    if not withheld:
        return walkthrough
    return replace(walkthrough, steps=steps, notes=notes, withheld=tuple(withheld))


def is_whole(value: object) -> TypeGuard[int]:
    """Whether an option is a whole number (a lesson file's ``true`` is not 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def counted(count: int, word: str, plural: str | None = None) -> str:
    """A count and its noun, singular for exactly one: 1 head, 2 heads."""
    return f"{count} {word if count == 1 else plural or word + 's'}"


def whole_option(value: object, flag: str) -> int:
    """An option that must be a whole number, else a UserError naming its ``flag``."""
    if not is_whole(value):
        raise UserError(f"{flag} {value!r}: give a whole number.")
    return value


def whole_at_least(value: object, flag: str, minimum: int = 1, meaning: str = "") -> int:
    """An option that must be a whole number >= ``minimum``, else a UserError naming ``flag``
    (and what the number counts, ``meaning``)."""
    if not is_whole(value) or value < minimum:
        counts = f" ({meaning})" if meaning else ""
        raise UserError(f"{flag} must be a whole number >= {minimum}{counts}, not {value!r}.")
    return value


def check_causal_square(m: int, n: int) -> None:
    """--causal pairs query i with keys 1..i: it needs as many queries as keys."""
    if m != n:
        raise UserError(
            f"--causal needs as many queries as keys (query i sees keys 1..i), but Q has {m} "
            f"rows and K has {n}."
        )


def labels(prefix: str, count: int) -> tuple[str, ...]:
    """Row or column labels: q1, q2, ... (1-based, as on the slides)."""
    return tuple(f"{prefix}{index}" for index in range(1, count + 1))


def row_names(run: LessonRun, key: str, count: int, prefix: str, option: str) -> tuple[str, ...]:
    """The names given for ``count`` rows (``run.labels[key]``), else prefix1, prefix2, ..."""
    names = run.labels.get(key)
    if not names:
        return labels(prefix, count)
    if len(names) != count:
        raise UserError(
            f"{option} (or the example's labels.{key}) gives {counted(len(names), 'name')} but "
            f"there {'is' if count == 1 else 'are'} {counted(count, 'row')}; give one name per row."
        )
    return tuple(names)


def on_an_example(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """A claim's condition for a note about a lecture's slide or a worked example: true only
    when the walkthrough runs one of the lesson file's examples, not the user's own inputs."""
    return walkthrough.example is not None
