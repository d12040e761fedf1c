"""What the explorer shows, as plain data: no Textual here (the tests and the benchmark read it).

A lesson opens on its lecture example (:func:`opening`). Each edit makes a new :class:`State`:
the input tables' cell texts, as typed, and the options' values. A state is a command line:
:func:`request` is the RunRequest that ``attn LESSON ...`` (:func:`command_line`) would make,
and :func:`walkthrough` computes it with the runner the command line uses, so the screen and
the copied command agree by construction. Until an input is edited the example runs as it is
(options changed on top, as ``attn window --causal``); after, the inputs are given in full
(``--q '1,0;0,1' ...``), with the example's row names as --tokens where the lesson has them.

An input the example does not give but the lesson draws (attn block's weights, drawn from the
seed) is shown too, with the values drawn: it is given only once it is edited, so that an
unedited one stays drawn (and the screen says so).
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.core.card import Card, Option, shown
from attn_cli.core.errors import UserError
from attn_cli.course import card
from attn_cli.render import Format, RenderOptions, render_text

if TYPE_CHECKING:
    from attn_cli.core.model import Walkthrough
    from attn_cli.run.runner import RunRequest

Cells = tuple[tuple[str, ...], ...]  # rows of cell texts (a vector: one row)

# The formats an export writes, each to LESSON.<suffix>: every --format that is text.
EXPORTS: dict[Format, str] = {Format.json: "json", Format.markdown: "md", Format.latex: "tex"}

# How far + and - move an entry.
NUDGE = 0.1


@dataclass(frozen=True)
class State:
    """One screen: the lesson, each input's cell texts, each option's value (as the command
    line would hand it over: a bool, a number, a text, or None for "not given")."""

    lesson: str
    cells: Mapping[str, Cells] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    own: bool = False  # the inputs given in full (an input edited), not the example's


@dataclass(frozen=True)
class Opening:
    """A lesson as the explorer opens it: the lecture example's inputs and options."""

    card: Card
    state: State  # the example's own screen (reset goes back to it)
    shapes: Mapping[str, str]  # input name -> "matrix" or "vector"
    tokens: tuple[str, ...] | None  # the example's row names, kept as --tokens
    example_options: Mapping[str, Any]  # every option as the example runs it
    # Inputs the example leaves to the lesson to draw, with the cells drawn: given once edited.
    drawn: Mapping[str, Cells] = field(default_factory=dict)

    @property
    def lesson(self) -> str:
        return self.card.name


def controls(lesson_card: Card) -> tuple[Option, ...]:
    """The options the explorer offers: those the command line takes and the lesson reads."""
    return tuple(option for option in lesson_card.options if option.command_line and option.lesson)


def opening(lesson: str) -> Opening:
    """Lesson ``lesson`` on its default lecture example, prepared by the runner as `attn LESSON`
    prepares it."""
    from attn_cli.run.runner import RunRequest, compute, prepare

    lesson_card = card(lesson)
    request = RunRequest(lesson=lesson)
    run = prepare(request)
    shown = {item.name: item.value for item in compute(request).inputs}
    drawn = {
        spec.name: cells_of(shown[spec.name])
        for spec in lesson_card.inputs
        if spec.name not in run.inputs and _editable(shown.get(spec.name))
    }
    shapes = {
        spec.name: spec.shape
        for spec in lesson_card.inputs
        if spec.name in run.inputs or spec.name in drawn
    }
    cells = {
        name: cells_of(run.inputs[name]) if name in run.inputs else drawn[name] for name in shapes
    }
    options = {
        option.name: as_given(option, run.options.get(option.name))
        for option in controls(lesson_card)
    }
    tokens = run.labels.get(lesson_card.rows) if lesson_card.rows else None
    state = State(lesson, cells, options)
    return Opening(lesson_card, state, shapes, tokens, options, drawn)


def _editable(value: Any) -> bool:
    """Whether a value the walkthrough lists is an array of numbers of 1 or 2 dimensions."""
    return isinstance(value, np.ndarray) and value.ndim in (1, 2) and value.dtype.kind in "fiu"


def given_cells(start: Opening, state: State) -> dict[str, Cells]:
    """The inputs a run of the user's own gives: every one the example gave, and those it left
    to be drawn once they are edited."""
    return {
        name: cells
        for name, cells in state.cells.items()
        if name not in start.drawn or cells != start.drawn[name]
    }


def number_text(value: float) -> str:
    """A number as typed: 1 for 1.0, the shortest text that reads back the same otherwise."""
    value = float(value)
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def cells_of(array: np.ndarray) -> Cells:
    """A 1-D or 2-D array as rows of cell texts."""
    rows = np.atleast_2d(np.asarray(array, dtype=np.float64))
    if rows.ndim != 2:
        raise UserError("the explorer edits one item at a time; give 2-D inputs.")
    return tuple(tuple(number_text(value) for value in row) for row in rows)


def as_given(option: Option, value: Any) -> Any:
    """An option's value as the command line hands it over (a list as its text, "1,4,16")."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, list | tuple):
        return shown(value)
    if option.type is int and not option.choices:
        return int(value)
    if option.type is float:
        return float(value)
    return value if option.type is not str else str(value)


def _inexpressible(option: Option, value: Any, baseline: Any) -> bool:
    """Whether the command line cannot set ``value`` on top of an example that has ``baseline``:
    an option left out (None) or a flag turned off are "not given" there."""
    if value == baseline:
        return False
    return value is None or (option.type is bool and not option.switch and value is False)


def runs_own(start: Opening, state: State) -> bool:
    """Whether the state runs as the user's own (inputs in full, options over the defaults)
    rather than as the example with options changed on top."""
    if state.own:
        return True
    changed = {
        option.name
        for option in controls(start.card)
        if state.options.get(option.name) != start.example_options.get(option.name)
    }
    if not start.shapes and changed:  # a lesson without inputs: its options are its inputs
        return True
    return any(
        _inexpressible(option, state.options.get(option.name), start.example_options[option.name])
        for option in controls(start.card)
        if option.name in changed
    )


def given_options(start: Opening, state: State) -> dict[str, Any]:
    """The options the command line names: those that differ from what the run would take
    without them (the example's, or the defaults when the inputs are the user's own)."""
    own = runs_own(start, state)
    baseline = {
        option.name: as_given(option, option.default) if own else start.example_options[option.name]
        for option in controls(start.card)
    }
    given = {}
    for option in controls(start.card):
        value = state.options[option.name]
        flag_off = value is False and option.type is bool and not option.switch
        if value != baseline[option.name] and value is not None and not flag_off:
            given[option.name] = value
    if own and not start.shapes and not given:  # a lesson without inputs, back on its defaults:
        first = controls(start.card)[0]  # one option named makes the run its own (not the example)
        given[first.name] = state.options[first.name]
    return given


def matrix_text(cells: Cells) -> str:
    """An input as the command line writes it: "1,0;0,1" (a vector "0.1,0,-0.2")."""
    return ";".join(",".join(row) for row in cells)


def request(start: Opening, state: State) -> RunRequest:
    """The run ``attn LESSON`` with :func:`command_line`'s options asks for, made as the command
    line makes it (attn_cli.run.request)."""
    from attn_cli.run.request import request_for

    own = runs_own(start, state)
    given: dict[str, Any] = dict(given_options(start, state))
    if own:
        keywords = {spec.name: spec.keyword for spec in start.card.inputs}
        given.update(
            {
                keywords[name]: matrix_text(cells)
                for name, cells in given_cells(start, state).items()
            }
        )
        if start.tokens and start.card.rows:
            given["tokens"] = start.tokens
    # keep: each edit runs the lesson again, and what it drew before may serve
    return request_for(start.card, given, keep=True)


def walkthrough(start: Opening, state: State) -> Walkthrough:
    """The walkthrough of the state, computed as the command line computes it (a UserError
    carries the command line's one-line message)."""
    from attn_cli.run.runner import compute

    return compute(request(start, state))


def command_line(start: Opening, state: State) -> str:
    """The `attn` command that prints this state's walkthrough."""
    words = ["attn", state.lesson]
    own = runs_own(start, state)
    if own:
        cells = given_cells(start, state)
        for spec in start.card.inputs:
            if spec.name in cells:
                words += [spec.option, matrix_text(cells[spec.name])]
        if start.tokens and start.card.rows:
            words += ["--tokens", ",".join(start.tokens)]
    options = {option.name: option for option in controls(start.card)}
    for name, value in given_options(start, state).items():
        option = options[name]
        if isinstance(value, bool):
            if value or option.switch:
                prefix = "--" if value else "--no-"
                words.append(prefix + option.option.removeprefix("--"))
            continue
        words += [option.option, number_text(value) if isinstance(value, float) else str(value)]
    return " ".join(shlex.quote(word) for word in words)


def with_cell(state: State, name: str, row: int, col: int, text: str) -> State:
    """The state with entry (row, col) of input ``name`` typed as ``text`` (checked when it runs)."""
    cells = [list(each) for each in state.cells[name]]
    cells[row][col] = text.strip()
    new = {**state.cells, name: tuple(tuple(each) for each in cells)}
    return replace(state, cells=new, own=True)


def nudged(state: State, name: str, row: int, col: int, delta: float) -> State:
    """The state with entry (row, col) of input ``name`` moved by ``delta``, rounded to 12
    significant digits (0.2 + 0.1 is 0.3, not 0.30000000000000004)."""
    text = state.cells[name][row][col]
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{text!r} is not a number; type one to nudge it.") from None
    moved = float(f"{value + delta:.12g}")
    return with_cell(state, name, row, col, number_text(moved))


def with_option(state: State, name: str, value: Any) -> State:
    return replace(state, options={**state.options, name: value})


def changed_entries(before: Walkthrough | None, after: Walkthrough) -> dict[str, Any]:
    """What changed from one walkthrough to the next, step by step: for a step whose value is an
    array of the same shape as before, a boolean array (True where the entry changed); for any
    other step, True or False (its value as a whole). A step that is new counts as changed.
    Entries within a part in 10¹² of each other count as the same (NaN equals NaN)."""
    old = {} if before is None else {step.key: step.value for step in before.steps}
    changes: dict[str, Any] = {}
    for step in after.steps:
        if step.key not in old:
            changes[step.key] = before is not None
            continue
        changes[step.key] = value_changes(old[step.key], step.value)
    return changes


def value_changes(old: Any, new: Any) -> Any:
    """Where ``new`` differs from ``old``: an entrywise mask for arrays of one shape, else a bool."""
    if isinstance(old, np.ndarray) and isinstance(new, np.ndarray) and old.shape == new.shape:
        if old.dtype.kind in "fiub" and new.dtype.kind in "fiub":
            a = old.astype(np.float64)
            b = new.astype(np.float64)
            with np.errstate(invalid="ignore"):
                same = (a == b) | (np.isnan(a) & np.isnan(b))
                close = np.abs(a - b) <= 1e-12 * np.maximum(np.abs(a), np.abs(b))
            return ~(same | np.nan_to_num(close, nan=0.0).astype(bool))
        return old != new
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        return True
    try:
        return bool(old != new)
    except (TypeError, ValueError):
        return True


def same(old: Any, new: Any) -> bool:
    """Whether two pieces of a walkthrough (steps, their values, parts, notes) are the same, so
    that what is drawn of one stands for the other: arrays of one shape and dtype, entry for
    entry (NaN equal to NaN); dataclasses, mappings and sequences item by item; else ``==``."""
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        return (
            isinstance(old, np.ndarray)
            and isinstance(new, np.ndarray)
            and old.shape == new.shape
            and old.dtype == new.dtype
            and bool(np.array_equal(old, new, equal_nan=old.dtype.kind in "fc"))
        )
    if type(old) is not type(new):
        return False
    if dataclasses.is_dataclass(old) and not isinstance(old, type):
        return all(
            same(getattr(old, item.name), getattr(new, item.name))
            for item in dataclasses.fields(old)
        )
    if isinstance(old, Mapping):
        return old.keys() == new.keys() and all(same(old[key], new[key]) for key in old)
    if isinstance(old, list | tuple):
        return len(old) == len(new) and all(same(a, b) for a, b in zip(old, new, strict=True))
    if isinstance(old, float) and math.isnan(old):
        return math.isnan(new)
    return bool(old == new)


def changed_count(change: Any) -> int:
    """How many entries a change (from :func:`changed_entries`) touches (a whole value: 1)."""
    if isinstance(change, np.ndarray):
        return int(np.count_nonzero(change))
    return int(bool(change))


def export(walkthrough: Walkthrough, folder: Path, precision: int) -> list[Path]:
    """The walkthrough in every text --format, written to FOLDER/LESSON.json, .md and .tex."""
    from attn_cli.core.outputs import check_writable, write_text

    options = RenderOptions(precision=precision, whole_document=True)  # LaTeX: it compiles
    written = []
    for fmt, suffix in EXPORTS.items():
        path = folder / f"{walkthrough.lesson}.{suffix}"
        check_writable(path, "--export-dir")
        write_text(path, render_text(walkthrough, fmt, options) + "\n", "--export-dir")
        written.append(path)
    return written
