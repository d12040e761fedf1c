"""What the explorer shows, as plain data: no Textual here (the tests and the benchmark read it).

A lesson opens on its lecture example (:func:`opening`). Each edit makes a new :class:`State`:
the input tables' cell texts, as typed, the options' values and the seed. A state is a command line:
:func:`request` is the RunRequest that ``attn LESSON ...`` (:func:`command_line`) would make,
and :func:`walkthrough` computes it with the runner the command line uses, so the screen and
the copied command agree by construction. Until an input is edited the example runs as it is
(options changed on top, as ``attn window --causal``); after, the inputs are given in full
(``--q '1,0;0,1' ...``), with the example's row names as --tokens where the lesson has them.

The inputs shown are every input of the lesson's card that the example's run holds: those the
example gives, and those the lesson fills in itself (selfattn's identity weights, attn block's
weights drawn from --seed), so that an input a card declares is editable here without a change
to the explorer. One the lesson fills in shows what each run fills in (it follows the seed) and
is given only once it is edited itself, so that an unedited one stays drawn (and the copied
command line is as short as the screen allows). A control is shown only where it changes the
numbers (:func:`inert_controls`).
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
from attn_cli.core.errors import PYTHON, Door, UserError, param
from attn_cli.course import card
from attn_cli.render import Format, RenderOptions, render_text
from attn_cli.render.cells import cell_texts

if TYPE_CHECKING:
    from attn_cli.core.model import Walkthrough
    from attn_cli.run.runner import RunRequest

Cells = tuple[tuple[str, ...], ...]  # rows of cell texts (a vector: one row)

# The formats an export writes, each to LESSON.<suffix>: every --format that is text.
EXPORTS: dict[Format, str] = {Format.json: "json", Format.markdown: "md", Format.latex: "tex"}

# How far + and - move an entry.
NUDGE = 0.1


# How an entry changed at the last edit (changed_entries): rose, fell, or moved otherwise (to or
# from NaN); 0 where it stayed.
ROSE, FELL, MOVED = 1, -1, 2
# The seed the command line uses when --seed is not given (attn_cli.run.request.RUN_SETTINGS).
SEED = "seed"


@dataclass(frozen=True)
class State:
    """One screen: the lesson, each input's cell texts, each option's value (as the command
    line would hand it over: a bool, a number, a text, or None for "not given"), and the seed
    of what the lesson draws at random."""

    lesson: str
    cells: Mapping[str, Cells] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    own: bool = False  # the inputs given in full (an input edited), not the example's
    seed: int = 0
    edited: frozenset[str] = frozenset()  # the inputs typed in (an input filled in: given)


@dataclass(frozen=True)
class Opening:
    """A lesson as the explorer opens it: the lecture example's inputs and options."""

    card: Card
    state: State  # the example's own screen (reset goes back to it)
    shapes: Mapping[str, str]  # input name -> "matrix" or "vector", in the card's order
    tokens: tuple[str, ...] | None  # the example's row names, kept as --tokens
    example_options: Mapping[str, Any]  # every option as the example runs it
    walkthrough: Walkthrough  # the example's, as the state computes it
    # Inputs the lesson filled in itself (not given by the example): until one is edited it
    # shows what each run fills in (e.g. weights drawn from the seed: see with_filled), and is
    # not given (given_cells).
    filled: frozenset[str] = frozenset()
    door: Door = PYTHON  # how the walkthrough's words name a parameter (the explorer's door)

    @property
    def lesson(self) -> str:
        return self.card.name


def controls(lesson_card: Card) -> tuple[Option, ...]:
    """The options the explorer offers: those the command line takes and the lesson reads."""
    return tuple(option for option in lesson_card.options if option.command_line and option.lesson)


def opening(lesson: str, door: Door = PYTHON) -> Opening:
    """Lesson ``lesson`` on its default lecture example, prepared and computed by the runner as
    `attn LESSON` prepares and computes it, its words naming parameters as ``door`` spells
    them."""
    from attn_cli.run.request import request_for
    from attn_cli.run.runner import compute, prepare

    lesson_card = card(lesson)
    asked = request_for(lesson_card, {}, keep=True, door=door)  # as request() asks for it
    run = prepare(asked)
    example = compute(asked)
    shown = {item.name: item.value for item in example.inputs}
    values = {
        spec.name: run.inputs[spec.name] if spec.name in run.inputs else shown[spec.name]
        for spec in lesson_card.inputs
        if spec.name in run.inputs or _plain(shown.get(spec.name))
    }
    shapes = {name: spec.shape for spec in lesson_card.inputs if (name := spec.name) in values}
    cells = {name: cells_of(values[name]) for name in shapes}
    options = {
        option.name: as_given(option, run.options.get(option.name))
        for option in controls(lesson_card)
    }
    tokens = run.labels.get(lesson_card.rows) if lesson_card.rows else None
    state = State(lesson, cells, options)
    filled = frozenset(shapes) - frozenset(run.inputs)
    return Opening(lesson_card, state, shapes, tokens, options, example, filled, door)


def _plain(value: Any) -> bool:
    """Whether an input the lesson filled in can be typed as a table: numbers, one or two axes."""
    return isinstance(value, np.ndarray) and value.ndim in (1, 2) and value.dtype.kind in "fiu"


def with_filled(start: Opening, state: State, walkthrough: Walkthrough) -> State:
    """The state showing each input the lesson filled in, and the user has not edited, as
    ``walkthrough`` (its run) filled it in; an edited one stays as typed (and is given)."""
    names = start.filled - state.edited
    if not names:
        return state
    shown = {item.name: item.value for item in walkthrough.inputs}
    cells = dict(state.cells)
    for name in names:
        if _plain(shown.get(name)):
            cells[name] = cells_of(shown[name])
    return replace(state, cells=cells)


def given_cells(start: Opening, state: State) -> dict[str, Cells]:
    """The inputs a run of the user's own gives: every one the example gave, and those the
    lesson fills in once they are edited."""
    return {
        name: cells
        for name, cells in state.cells.items()
        if name not in start.filled or name in state.edited
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


def shown_cells(cells: Cells, precision: int) -> Cells:
    """An input's entries as its table shows them. The cells are the exact texts (what the
    editor opens, + and - move, and the command line gives); the table shows them at the
    rendering's precision: as typed while every entry reads back the same at that precision
    (an example's 0.5 stays 0.5), else every entry as the renderers write a matrix
    (:func:`attn_cli.render.cells.cell_texts`: drawn weights 0.7218, not 0.7218454773490628).
    An entry that is not a number yet shows as typed, and so does its table."""
    try:
        values = np.array([[float(text) for text in row] for row in cells], dtype=np.float64)
    except ValueError:
        return cells
    if values.size == 0:
        return cells
    rendered = cell_texts(values, precision)
    if all(
        float(text) == float(typed) or (math.isnan(value) and math.isnan(float(text)))
        for row, typed_row, value_row in zip(rendered, cells, values, strict=True)
        for text, typed, value in zip(row, typed_row, value_row, strict=True)
    ):
        return cells
    return tuple(tuple(row) for row in rendered)


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
    if start.card.seed:
        given[SEED] = state.seed
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
    return request_for(start.card, given, keep=True, door=start.door)


def walkthrough(start: Opening, state: State) -> Walkthrough:
    """The walkthrough of the state, computed as the command line computes it (a UserError
    carries the command line's one-line message)."""
    from attn_cli.run.runner import compute

    return compute(request(start, state))


def command_line(start: Opening, state: State, door: Door) -> str:
    """The `attn` command that prints this state's walkthrough, each parameter spelt by
    ``door`` (the command line's, handed down by `attn explore`)."""

    def named(keyword: str, value: object = None) -> str:
        return door.words(param(keyword, value))

    words = ["attn", state.lesson]
    own = runs_own(start, state)
    if own:
        cells = given_cells(start, state)
        for spec in start.card.inputs:
            if spec.name in cells:
                words += [named(spec.keyword), matrix_text(cells[spec.name])]
        if start.tokens and start.card.rows:
            words += [named("tokens"), ",".join(start.tokens)]
    options = {option.name: option for option in controls(start.card)}
    for name, value in given_options(start, state).items():
        option = options[name]
        if isinstance(value, bool):
            if value or option.switch:
                words.append(named(name, value))
            continue
        words += [named(name), number_text(value) if isinstance(value, float) else str(value)]
    if start.card.seed and state.seed != 0:
        words += [named("seed"), str(state.seed)]
    return " ".join(shlex.quote(word) for word in words)


def with_cell(state: State, name: str, row: int, col: int, text: str) -> State:
    """The state with entry (row, col) of input ``name`` typed as ``text`` (checked when it runs)."""
    cells = [list(each) for each in state.cells[name]]
    cells[row][col] = text.strip()
    new = {**state.cells, name: tuple(tuple(each) for each in cells)}
    return replace(state, cells=new, own=True, edited=state.edited | {name})


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


def with_seed(state: State, seed: int) -> State:
    return replace(state, seed=seed)


def checked_controls(start: Opening) -> tuple[str, ...]:
    """The controls :func:`inert_controls` checks: the flags and the lists of choices (a number
    or a text the user types is an input of its own), and the seed where the lesson takes one."""
    names = [
        option.name for option in controls(start.card) if option.type is bool or option.choices
    ]
    return (*names, SEED) if start.card.seed else tuple(names)


def inert_controls(
    start: Opening, state: State, shown: Walkthrough, names: tuple[str, ...]
) -> frozenset[str]:
    """Those of controls ``names`` that change no number of ``shown`` (the state's walkthrough):
    a flag turned over, every other choice of a list, the seed one more (a lesson that draws
    nothing gives the same numbers). Each is checked by computing it; a value the lesson refuses
    counts as a change (its message says why)."""
    options = {option.name: option for option in controls(start.card)}
    inert = set()
    for name in names:
        if name == SEED:
            others = [with_seed(state, state.seed + 1)]
        elif options[name].type is bool:
            others = [with_option(state, name, not state.options[name])]
        else:
            value = state.options[name]
            others = [
                with_option(state, name, choice)
                for choice in options[name].choices
                if choice != value
            ]
        try:
            if all(same_numbers(shown, walkthrough(start, other)) for other in others):
                inert.add(name)
        except UserError:
            continue
    return frozenset(inert)


def same_numbers(a: Walkthrough, b: Walkthrough) -> bool:
    """Whether two walkthroughs show the same numbers: the same steps, each with the same value
    and intermediates, and the same output (their words may differ)."""
    if [step.key for step in a.steps] != [step.key for step in b.steps]:
        return False
    for one, other in zip(a.steps, b.steps, strict=True):
        if not same(one.value, other.value) or len(one.parts) != len(other.parts):
            return False
        if not all(same(x.value, y.value) for x, y in zip(one.parts, other.parts, strict=True)):
            return False
    return same(a.output, b.output)


def focus_step(walkthrough: Walkthrough) -> int:
    """The step the explorer opens on (from 0): the first step of attention weights, the numbers
    the lectures point at; in a lesson without one, its first scores (attn rope's, which an edit
    of Q or K changes; attn ring's first merge, after its layout); else the first step."""
    names = [step.key.rsplit(".", 1)[-1] for step in walkthrough.steps]
    for wanted in ("weights", "scores"):
        if wanted in names:
            return names.index(wanted)
    return 0


@dataclass(frozen=True)
class StepChange:
    """What changed in one step at the last edit: in its value, and in each of its
    intermediates (a softmax's row max, shifted scores, exponentials and row sums), each as
    :func:`value_changes` gives it."""

    value: Any
    parts: tuple[Any, ...] = ()

    @property
    def count(self) -> int:
        """How many entries changed, of the value and the intermediates together."""
        return changed_count(self.value) + sum(changed_count(part) for part in self.parts)


def changed_entries(before: Walkthrough | None, after: Walkthrough) -> dict[str, StepChange]:
    """What changed from one walkthrough to the next, step by step (:class:`StepChange`). A step
    that is new counts as changed as a whole; so does an intermediate that is new."""
    old = {} if before is None else {step.key: step for step in before.steps}
    changes: dict[str, StepChange] = {}
    for step in after.steps:
        previous = old.get(step.key)
        if previous is None:
            changes[step.key] = StepChange(
                before is not None, (before is not None,) * len(step.parts)
            )
            continue
        earlier = {part.label: part.value for part in previous.parts}
        parts = tuple(
            value_changes(earlier[part.label], part.value) if part.label in earlier else True
            for part in step.parts
        )
        changes[step.key] = StepChange(value_changes(previous.value, step.value), parts)
    return changes


def value_changes(old: Any, new: Any) -> Any:
    """Where ``new`` differs from ``old``: for numeric arrays of one shape, an int8 array that
    says how each entry changed (ROSE, FELL, MOVED, or 0: the same, within a part in 10¹², NaN
    where NaN was); for any other value, a bool (changed as a whole)."""
    if isinstance(old, np.ndarray) and isinstance(new, np.ndarray) and old.shape == new.shape:
        if old.dtype.kind in "fiub" and new.dtype.kind in "fiub":
            a = old.astype(np.float64)
            b = new.astype(np.float64)
            with np.errstate(invalid="ignore"):
                equal = (a == b) | (np.isnan(a) & np.isnan(b))
                # close: within a part in 10¹², both finite (-inf to 0 is a change)
                close = (np.abs(a - b) <= 1e-12 * np.maximum(np.abs(a), np.abs(b))) & (
                    np.isfinite(a) & np.isfinite(b)
                )
                moved = ~(equal | np.nan_to_num(close, nan=0.0).astype(bool))
                direction = np.where(b > a, ROSE, np.where(b < a, FELL, MOVED))
            return np.where(moved, direction, 0).astype(np.int8)
        return (old != new).astype(np.int8) * MOVED
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
    """How many entries a change (from :func:`value_changes`) touches (a whole value: 1)."""
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
