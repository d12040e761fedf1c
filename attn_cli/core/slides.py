"""What a slide printed against what the lesson computed, to the slide's own rounding.

An example's ``printed`` table records the slide's numbers as text in the matrix grammar. Its
keys say which value they show:

* ``weights``      the whole value of step ``weights`` (or ``output``: the walkthrough's output
  when no step has that key);
* ``output[1]``    row 1 of it (1-based, as on the slides);
* ``weights[2,3]`` the single entry in row 2, column 3.

Each printed number is checked to half a unit in its last decimal (see :mod:`attn_cli.core.rounding`).
A printed value that cannot be compared (an unknown step, a shape that does not fit, a text that
is not numbers) is a mistake in the lesson file and a :class:`UserError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import numpy as np

from attn_cli.core.errors import UserError
from attn_cli.core.matrices import split_rows, whole_number
from attn_cli.core.model import Note, Walkthrough
from attn_cli.core.numbers import format_number, shape_text
from attn_cli.core.rounding import OutOfRange, Rounded, parse_rounded

_KEY = re.compile(r"^\s*(?P<name>[^\[\]\s]+)\s*(?:\[\s*(?P<index>[^\]]*)\])?\s*$")
OUTPUT = "output"


ErratumKind = Literal["whole", "rounding", "misprint"]


@dataclass(frozen=True)
class Erratum:
    """One printed number that differs from the exact value by more than its rounding."""

    key: str  # the printed key as written, e.g. "output[1]"
    step: str  # the step it names ("output" may be the walkthrough's output)
    cell: tuple[int, ...]  # 1-based position in the step's value: (row, col), (entry,) or ()
    written: Rounded  # what the slide prints
    exact: float
    # A whole number written where the exact value has decimals the step shows (0.7071 written
    # "1"): wrong however close, since a whole number says the value is whole.
    whole: bool = False
    # The cell's row and column as the step's tables name them (its labels, a number where it
    # has none): ("cats", "sat") for cell (1, 3); () where the step names neither.
    names: tuple[str, ...] = ()
    # The file is the user's own (--lesson FILE, attn check FILE: homework, or a lecturer's
    # slides), not a bundled slide: its notes say "Your file has", and a value further off than
    # a rounding is "wrong", where a bundled slide's is "a misprint".
    own: bool = False

    @property
    def printed(self) -> str:
        return self.written.text

    @property
    def tolerance(self) -> float:
        """Half a unit in the printed number's last decimal."""
        return self.written.half_unit

    @property
    def difference(self) -> float:
        return abs(self.exact - self.written.value)

    def exact_text(self) -> str:
        """The exact value with two decimals more than the slide shows (at least four)."""
        return format_number(self.exact, max(4, self.written.decimals + 2), unicode=False)

    def tolerance_text(self) -> str:
        """What the rounding allows, to one decimal more than the slide shows: ±0.0005 for 0.504;
        for a whole number where the value has decimals, that it needs them."""
        if self.whole:
            return "its decimals"
        return f"±{self.tolerance:.{self.written.decimals + 1}f}"

    def difference_text(self) -> str:
        """How far off, with as many decimals as it takes to read as more than the tolerance:
        0.00051 against ±0.0005 (at four decimals both would show 0.0005)."""
        difference = self.difference
        if not math.isfinite(difference) or self.tolerance == 0 or self.whole:
            return format_number(difference, 4, unicode=False)
        allowed = Decimal(self.tolerance_text()[1:])
        decimals = max(4, self.written.decimals + 1)
        while Decimal(f"{difference:.{decimals}f}") <= allowed and decimals < 20:
            decimals += 1
        return f"{difference:.{decimals}f}"

    @property
    def kind(self) -> ErratumKind:
        """What kind of slip it is: a whole number written for a value with decimals; a
        rounding one off in the last digit the slide prints (0.504 for 0.50349, which is 0.503:
        rounded from a rounded number, or up at a 4); or a misprint, further off (0.24 for
        0.3543)."""
        if self.whole:
            return "whole"
        if self.written.decimals == 0:
            return "misprint"  # 2 for 1.4142: a whole unit off is no slip of rounding
        one_digit = 2 * self.tolerance  # a unit in the printed number's last decimal
        # Strictly less than one unit, with room for binary rounding: 0.3 for an exact 0.2 is
        # one unit off (0.09999999999999998 in floats), a misprint, not a rounding.
        return "rounding" if self.difference < one_digit * (1 - 1e-9) else "misprint"

    def note(self) -> str:
        where = f" for {cell_text(self.cell, self.names)}" if self.cell else ""
        said = f"{'Your file has' if self.own else 'The slide prints'} {self.printed}{where}"
        if self.kind == "whole":
            return (
                f"{said}, a whole number, where the exact value is {self.exact_text()}: write it "
                "with the step's decimals."
            )
        if self.kind == "rounding":
            decimals = self.written.decimals
            rounded = format_number(self.exact, decimals, unicode=False)
            places = f"{decimals} decimal{'s' if decimals != 1 else ''}"
            return (
                f"{said}, a rounding slip (one off in the last digit): the exact value "
                f"{self.exact_text()} is {rounded} to {places}."
            )
        wrong = "wrong" if self.own else "a misprint"
        return f"{said}, {wrong}: the exact value is {self.exact_text()}."


@dataclass(frozen=True)
class Comparison:
    """The printed values of one example against its computed walkthrough."""

    checked: int  # printed numbers compared
    errata: tuple[Erratum, ...]


# What `attn check` finds in a lesson file (attn_cli.run.check computes it, attn_cli.render.
# check_render lays it out): plain data, kept here beside the errata they hold.
@dataclass(frozen=True)
class ExampleCheck:
    name: str
    checked: int  # printed numbers compared (0: the example has none; its inputs were checked)
    errata: tuple[Erratum, ...] = ()
    # What a wrong row's numbers show, for a working (a student's homework): (step, row from 1,
    # "mistake" or "follows", the words), from attn_cli.course.mistakes.mark.
    diagnoses: tuple[tuple[str, int, str, str], ...] = ()


@dataclass(frozen=True)
class FileCheck:
    path: Path
    lesson: str
    examples: tuple[ExampleCheck, ...] = ()
    skipped: str | None = None  # why the file was not checked
    bundled: bool = False

    @property
    def errata(self) -> int:
        return sum(len(example.errata) for example in self.examples)


def cell_text(cell: tuple[int, ...], names: tuple[str, ...] = ()) -> str:
    """A cell as a reader finds it in the step's table: by its row's and column's labels where
    the table has them ("(cats, sat)"), else by number ("(1, 3)", "entry 2")."""
    shown = names if len(names) == len(cell) else tuple(map(str, cell))
    shown = tuple(f"'{name}'" if ", " in name else name for name in shown)  # one label, clearly
    if len(cell) == 2:
        return f"({shown[0]}, {shown[1]})"
    if len(cell) == 1:
        return f"entry {shown[0]}"
    return ""


def cell_names(walkthrough: Walkthrough, name: str, cell: tuple[int, ...]) -> tuple[str, ...]:
    """The labels of a cell's row and column in step ``name``'s table (a number for a side it
    does not label); () where the step labels neither, or is the walkthrough's output."""
    step = next((step for step in walkthrough.steps if step.key == name), None)
    if step is None or not cell or len(cell) > 2:
        return ()
    sides = (step.row_labels, step.col_labels) if len(cell) == 2 else (step.col_labels,)
    if not any(sides):
        return ()
    names = []
    for position, labels in zip(cell, sides, strict=True):
        known = labels is not None and 0 < position <= len(labels)
        names.append(labels[position - 1] if known else str(position))  # type: ignore[index]
    return tuple(names)


def compare(
    walkthrough: Walkthrough,
    printed: dict[str, str],
    where: str,
    decimals: int,
    *,
    own: bool = False,
) -> Comparison:
    """Compare every printed value with the walkthrough; ``where`` names the file and example,
    ``own`` whether it is the user's own file (:attr:`Erratum.own`), not a bundled slide.

    A number is right within half a unit of its last decimal ("0.24" covers 0.235 to 0.245),
    but a whole number is not a free ±0.5: it says the value is whole, so it is right only
    where the exact value is whole to the ``decimals`` the lesson shows (1 for 0.99999, at 4;
    not 1 for 0.7071)."""
    checked = 0
    errata: list[Erratum] = []
    for key, text in printed.items():
        field = f"{where}, printed.{_quoted(key)}"
        name, index = _parse_key(key, field)
        value = _target_value(walkthrough, name, field)
        selected, origin = _select(value, name, index, field)
        numbers, shape = _printed_numbers(text, field)
        _check_shape(selected, shape, name, field)
        expected = np.asarray(selected, dtype=np.float64).reshape(-1)
        for flat, (written, exact) in enumerate(zip(numbers, expected, strict=True)):
            checked += 1
            if written.says(float(exact), decimals):
                continue
            inner = np.unravel_index(flat, np.shape(selected)) if np.ndim(selected) else ()
            cell = tuple(origin) + tuple(int(i) + 1 for i in inner)
            whole = written.matches(float(exact))  # within ±0.5: a whole number, not a slip
            names = cell_names(walkthrough, name, cell)
            errata.append(
                Erratum(key, name, cell, written, float(exact), whole=whole, names=names, own=own)
            )
    return Comparison(checked, tuple(errata))


def working_rows(
    walkthrough: Walkthrough, printed: dict[str, str], where: str
) -> dict[str, list[list[Rounded] | None]]:
    """The printed values that are whole steps (``weights``) or rows of one (``weights[2]``), as
    rows of written numbers, None for a row not printed: a working to mark row by row (attn
    check on a student's homework). A single cell (``weights[2,3]``) is not a row to mark."""
    steps = {step.key: np.asarray(step.value) for step in walkthrough.steps}
    rows: dict[str, list[list[Rounded] | None]] = {}
    for key, text in printed.items():
        field = f"{where}, printed.{_quoted(key)}"
        name, index = _parse_key(key, field)
        value = steps.get(name)
        if value is None or value.ndim != 2 or len(index) > 1:
            continue  # not a step, a vector, or a single cell
        numbers, (count, width) = _printed_numbers(text, field)
        if width != value.shape[1] or count != (1 if index else value.shape[0]):
            continue  # a printed value of the wrong shape: the comparison refuses it
        if index and index[0] > value.shape[0]:
            continue
        marked = rows.setdefault(name, [None] * value.shape[0])
        for row in range(count):
            marked[index[0] - 1 if index else row] = numbers[row * width : (row + 1) * width]
    return rows


def with_notes(walkthrough: Walkthrough, errata: Iterable[Erratum]) -> Walkthrough:
    """The walkthrough with a note under each step whose slide value is wrong.

    The note gives the slide's digits and the exact value at the slide's own rounding, not at
    --precision, and its words are the same for every lesson: it is fixed text.
    """
    by_step: dict[str, list[str]] = {}
    for erratum in errata:
        by_step.setdefault(erratum.step, []).append(erratum.note())
    if not by_step:
        return walkthrough

    def noted(texts: list[str], prefix: str = "") -> tuple[Note, ...]:
        return tuple(Note.fixed("slide_erratum", prefix + text) for text in texts)

    steps = tuple(
        replace(step, notes=(*step.notes, *noted(by_step.pop(step.key))))
        if step.key in by_step
        else step
        for step in walkthrough.steps
    )
    # What no step holds is the walkthrough's output ("output" with no step of that key).
    leftover = tuple(note for texts in by_step.values() for note in noted(texts, "Output: "))
    return replace(walkthrough, steps=steps, notes=(*walkthrough.notes, *leftover))


def _quoted(key: str) -> str:
    return f'"{key}"' if not re.fullmatch(r"[A-Za-z0-9_-]+", key) else key


def _parse_key(key: str, field: str) -> tuple[str, tuple[int, ...]]:
    match = _KEY.match(key)
    fix = 'write a step key ("weights"), a row ("weights[1]") or a cell ("weights[2,3]")'
    if not match:
        raise UserError(f"{field}: cannot read this key; {fix}.")
    index_text = match["index"]
    if index_text is None:
        return match["name"], ()
    try:
        index = tuple(whole_number(part, field) for part in index_text.split(","))
    except ValueError:
        raise UserError(f"{field}: the index must be whole numbers; {fix}.") from None
    if len(index) > 2 or any(i < 1 for i in index):
        raise UserError(f"{field}: indices are 1-based and at most two (row, column); {fix}.")
    return match["name"], index


def _target_value(walkthrough: Walkthrough, name: str, field: str) -> Any:
    for step in walkthrough.steps:
        if step.key == name:
            value = step.value
            break
    else:
        if name != OUTPUT:
            keys = ", ".join(step.key for step in walkthrough.steps)
            raise UserError(
                f"{field}: this run has no step {name!r}; use one of its step keys ({keys}) "
                "or output."
            )
        value = walkthrough.output
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise UserError(
            f"{field}: step {name!r} is a table or text, not numbers; printed values can only "
            "record numeric steps."
        ) from None
    if array.ndim > 2:
        raise UserError(f"{field}: step {name!r} has {array.ndim} dimensions; pick a row or cell.")
    return array


def _select(
    value: np.ndarray, name: str, index: tuple[int, ...], field: str
) -> tuple[np.ndarray, tuple[int, ...]]:
    """The part of the value the key names, and the 1-based index where it starts."""
    if not index:
        return value, ()
    if len(index) > value.ndim:
        raise UserError(
            f"{field}: step {name!r} is {shape_text(value.shape)}, which has no "
            f"{'cell (row, column)' if len(index) == 2 else 'rows'}; write the key {name!r}."
        )
    for axis, position in enumerate(index):
        size = value.shape[axis]
        if position > size:
            what = "rows" if axis == 0 and value.ndim == 2 else "columns"
            what = what if value.ndim == 2 else "entries"
            raise UserError(
                f"{field}: step {name!r} has {size} {what}, so index {position} is out of range "
                "(indices are 1-based)."
            )
    return value[tuple(i - 1 for i in index)], index


def _printed_numbers(text: str, field: str) -> tuple[list[Rounded], tuple[int, int]]:
    rows = written_rows(text, field)
    return [number for row in rows for number in row], (len(rows), len(rows[0]))


def written_rows(
    text: str, field: str, numbers: str = "the numbers the slide shows"
) -> list[list[Rounded]]:
    """A matrix as written (a slide's printed values, a student's working): its rows of
    numbers, each held to the decimals it is written with; ``numbers`` names them in a
    UserError (the file's ``field``, or the Python answer's)."""
    rows = split_rows(text, field)
    if not rows:
        raise UserError(f'{field} is empty; write {numbers}, e.g. "0.33,0.67".')
    width = len(rows[0])
    written = []
    for row_number, row in enumerate(rows, start=1):
        if len(row) != width:
            raise UserError(
                f"{field}: row {row_number} has {len(row)} entries but row 1 has {width}; every "
                "row needs the same number of entries."
            )
        numbers_of_row = []
        for entry in row:
            try:
                number = parse_rounded(entry)
            except OutOfRange as error:
                raise UserError(f"{field}: {error}; write {numbers}.") from None
            if number is None:
                raise UserError(
                    f'{field}: {entry!r} is not a number; write {numbers} as "0.33,0.67; '
                    '0.67,0.33".'
                )
            numbers_of_row.append(number)
        written.append(numbers_of_row)
    return written


def _check_shape(selected: np.ndarray, shape: tuple[int, int], name: str, field: str) -> None:
    """Rows and columns must agree; a single row or column may stand for a vector."""
    if [size for size in shape if size != 1] == [size for size in selected.shape if size != 1]:
        return
    printed = "1 number" if shape == (1, 1) else f"{shape[0]} × {shape[1]}"
    raise UserError(
        f"{field}: the slide value is {printed} but the value it names is "
        f'{shape_text(selected.shape)}; record all of it, or a row with "{name}[1]" or a cell '
        f'with "{name}[1,2]".'
    )
