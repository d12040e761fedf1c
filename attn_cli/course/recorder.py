"""The step recorder: computes a lesson's steps in order and collects them, with their texts and
notes, into a walkthrough; and the claims check that withholds a note its numbers contradict."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attn_cli.core.backend import Array
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import (
    BY_HAND,
    InputValue,
    Kind,
    Note,
    Part,
    Quantities,
    Step,
    Summary,
    Walkthrough,
    summary,
)
from attn_cli.core.numbers import format_number
from attn_cli.core.templates import fill, spell_parameters
from attn_cli.course import card, get_lesson, is_lesson
from attn_cli.course.lesson import LessonRun
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms.attention import exp_by_hand, softmax_parts


@dataclass(frozen=True)
class Grid:
    """Where a step's values sit: its row and column labels (None: numbered), and the values
    its title and explanation read (``{n}``, ``{dk}``...). Steps over the same axes share one."""

    rows: tuple[str, ...] | None = None
    cols: tuple[str, ...] | None = None
    context: Mapping[str, Any] = field(default_factory=dict)


NO_GRID = Grid()


class StepRecorder:
    """Computes steps in order, timing them with --time, and collects them as plain data.

    What it records is checked against ``texts``: the lesson's declaration's (``LESSON.texts``)
    unless given; an `attn learn` task, which records the same way but is no lesson, hands over
    its own. Texts are recorded as templates with the values they read: a renderer fills them.
    """

    def __init__(self, run: LessonRun, *, texts: Texts | None = None) -> None:
        self.run = run
        self.texts = get_lesson(run.name).texts if texts is None else texts
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
        notes_of: Callable[[np.ndarray], tuple[Note, ...]] | None = None,
    ) -> Array:
        """Compute a step's value on the backend (timed with --time: LessonRun.timed), record
        it, and return the backend array. ``notes_of`` turns the value as shown (copied to the
        host) into notes, so that they describe the numbers on screen in the run's dtype."""
        value, seconds = self.run.timed(compute)
        shown = self.to_numpy(value)
        if notes_of is not None:
            notes = (*notes, *notes_of(np.asarray(shown, dtype=np.float64)))
        self.add(
            key,
            value,
            grid=grid,
            kind=kind,
            parts=parts,
            row_sums=row_sums,
            seconds=seconds,
            notes=notes,
            text=text,
            shown=shown,
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
        shown: Any = None,
        quantities: Quantities | None = None,
        fit: bool = False,
    ) -> None:
        """Record a step whose value is already computed.

        ``text`` names the lesson text to use when it is not the step's key: steps that repeat
        (one per head) or that change meaning with an option share one ``[steps.NAME]`` entry.
        ``shown``: the value's copy on the host, when the caller already made it.
        ``quantities``: the columns that are one quantity each, when not the kind's default
        (:attr:`Step.quantities`): a table whose columns are different units.
        ``fit``: a map that shows every column on a screen, with fewer decimals where it must
        (:attr:`Step.fit`).
        Each array (the value, each part's) is copied to the host once and summarised once,
        where it was computed (Backend.summary).
        """
        self.check_declared("steps", text or key, grid.context)
        words = self.run.file.text(text or key)
        if shown is None:
            shown = self.to_numpy(value)
        sums = None
        if row_sums:
            sums = np.sum(shown, axis=-1)
        self.steps.append(
            Step(
                key=key,
                title_template=spell_parameters(words.title, self.run.door),
                explanation_template=spell_parameters(words.explanation, self.run.door),
                context=dict(grid.context),
                value=shown,
                kind=kind,
                row_labels=grid.rows,
                col_labels=grid.cols,
                parts=tuple(self.recorded_part(part) for part in parts),
                row_sums=sums,
                summary=self.summarised(value, shown),
                seconds=seconds,
                latex=words.latex,
                brief_template=spell_parameters(words.brief, self.run.door) if words.brief else "",
                detail=words.detail,
                notes=notes,
                headings=self.headings(shown) if kind == "records" else {},
                quantities=quantities,
                fit=fit,
            )
        )

    def shown(self, key: str) -> Any:
        """The value of the recorded step ``key`` as copied to the host when it was recorded
        (a note that reads it needs no second copy)."""
        return next(step.value for step in self.steps if step.key == key)

    def recorded_part(self, part: Part) -> Part:
        """The part with its value copied to the host, and its summary."""
        shown = self.to_numpy(part.value)
        return replace(part, value=shown, summary=self.summarised(part.value, shown))

    def summarised(self, value: Any, shown: Any) -> Summary | None:
        """The statistics of a recorded array of numbers (None for anything else), computed
        where it lives (Backend.summary: on the device), or from ``shown``, its host copy,
        where the device cannot."""
        if not (isinstance(shown, np.ndarray) and shown.ndim and shown.dtype.kind in "biuf"):
            return None
        return self.run.backend.summary(value) or summary(shown)

    def note(self, key: str, **values: Any) -> Note:
        """The note ``[notes] key`` of the lesson file with the raw values its placeholders read
        (numpy numbers become Python ones); renderers fill it when they show it.

        It is filled once here, so that a placeholder the values lack (in a lecturer's file) is
        a user error naming the file and key when the note is made, not when it is shown.
        """
        self.check_declared("notes", key, values)
        lesson = self.run.file
        where = f"{lesson.path or lesson.lesson}: [notes] {key}"
        written = lesson.notes.get(key)
        if written is None:
            raise UserError(f'{where}: the lesson file has no such note; add {key} = "...".')
        template = spell_parameters(written, self.run.door)
        plain = {
            name: value.item() if isinstance(value, np.generic) else value
            for name, value in values.items()
        }
        fill(template, plain, where)
        return Note(key, template, plain)

    def check_declared(self, table: str, key: str, names: Mapping[str, Any]) -> None:
        """Refuse a text the lesson does not declare (its ``texts``), or one missing a name the
        declaration promises it; a note must hand over exactly its declared values.

        The lesson file was checked against the declaration when it was loaded, so a text that
        passes here can be filled; failing here is a bug in the lesson, not in the file.
        """
        lesson, texts = self.run.name, self.texts
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
        return {name: self.run.file.headings.get(name, name) for name in names}

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
        softmax, seconds = self.run.timed(lambda: softmax_parts(logits))
        shown = self.to_numpy(softmax.weights)
        notes = notes_of(shown) if notes_of else ()
        by_hand, overflowed = self.by_hand(logits)
        self.add(
            key,
            softmax.weights,
            shown=shown,
            kind="weights",
            row_sums=True,
            parts=(
                *by_hand,
                Part("row max", softmax.row_max),
                Part("shifted = scores − row max", softmax.shifted),
                Part("exp(shifted)", softmax.exp),
                Part("row sum of exp", softmax.row_sum),
            ),
            seconds=seconds,
            grid=grid,
            notes=(*notes, *overflowed),
            text=text,
        )
        return softmax.weights

    def by_hand(
        self, logits: Array, of: str = "scores"
    ) -> tuple[tuple[Part, ...], tuple[Note, ...]]:
        """A softmax as a student works it on paper: e^s and Σ e^s, no maximum subtracted
        (the lectures' softmax([0.707, 1.414]) = [2.03/6.14, 4.11/6.14]), shown before the
        stable form, which gives the same weights (``of``: what the softmax reads, as the
        parts' labels name it). Where e^s or its sum overflows the dtype, no such parts, and a
        note that says so and why only the stable form is shown."""
        scores = np.asarray(self.to_numpy(logits), dtype=np.float64)
        if np.isnan(scores).any() or np.isposinf(scores).any():
            return (), ()  # the scores themselves overflowed: the run's own note says so
        exp, row_sum = exp_by_hand(logits)
        sums = np.asarray(self.to_numpy(row_sum), dtype=np.float64)
        if np.isfinite(sums).all():
            return (
                Part(f"{BY_HAND}exp({of})", exp),
                Part(f"{BY_HAND}Σ exp({of})", row_sum),
            ), ()
        largest = float(np.max(scores))  # finite: −∞ (masked) is never the largest here
        dtype = self.run.backend.dtype
        limit = LARGEST_FINITE.get(dtype, float(np.finfo(np.float64).max))
        text = (
            f"No by-hand form here: the largest of the {of}, {format_number(largest, 4)}, has an "
            f"exp (or a row sum of exps) beyond {dtype}'s largest number, {limit:.4g} (e^s "
            f"overflows above s = {math.log(limit):.2f}). Only the stable form is shown: it "
            "subtracts each row's maximum first, so every exp is at most 1."
        )
        return (), (Note.fixed("by_hand_overflows", text),)

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
        # The learned weights (InputSpec.weight) of a lesson; a learn task has no card.
        specs = card(run.name).inputs if is_lesson(run.name) else ()
        learned = [spec.name for spec in specs if spec.weight]
        if learned:
            inputs = tuple([replace(i, weight=True) if i.name in learned else i for i in inputs])
        drafted = Walkthrough(
            lesson=run.name,
            title=run.file.title,
            intro=spell_parameters(run.file.intro, run.door),
            example=run.example.name if run.example else None,
            example_description=example_description(run),
            backend=run.backend.name,
            device=run.backend.device,
            dtype=run.backend.dtype,
            inputs=inputs,
            steps=tuple(self.steps),
            output=self.to_numpy(output),
            notes=notes,
            meta={"options": dict(run.options), **(meta or {})},
        )
        return keep_true_claims(drafted, self.texts)


# The largest finite number of each dtype a run may compute in (bfloat16 is not numpy's).
LARGEST_FINITE = {
    "float64": float(np.finfo(np.float64).max),
    "float32": float(np.finfo(np.float32).max),
    "float16": float(np.finfo(np.float16).max),
    "bfloat16": 3.3895313892515355e38,  # torch.finfo(torch.bfloat16).max
}


def example_description(run: LessonRun) -> str:
    """The example's description, true of the example as written: where options on the command
    line change it (scale off, of an example that scales), a line that names the example and
    the options changed instead, each spelt by the door that asked (``scale=False``,
    ``--no-scale``)."""
    example = run.example
    if example is None:
        return ""
    described = spell_parameters(example.description, run.door)
    if not is_lesson(run.name):
        return described
    written = get_lesson(run.name).options_with(example.options)
    changed = card(run.name).changed_options(run.options, written)
    if not changed:
        return described
    return run.door.words(
        f"The inputs of example {example.name}, run with {changed}; the example's own "
        f"description is of it as written ({param('example', example.name)})."
    )


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


def on_an_example(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """A claim's condition for a note about a lecture's slide or a worked example: true only
    when the walkthrough runs one of the lesson file's examples, not the user's own inputs."""
    return walkthrough.example is not None
