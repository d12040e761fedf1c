"""The walkthrough as a document of the text formats: the one walk that decides what a Markdown
or LaTeX file shows, and in what order.

:func:`document` turns a :class:`~attn_cli.core.model.Walkthrough` into a sequence of plain blocks:
the title, the lesson's prose, the run's remarks, the inputs, each step (heading, explanation,
intermediates, value, notes) and the notes. Each format has an emitter
(``markdown_render.markdown_chunks``, ``latex_render.latex_chunks``) that writes one block as
text in its own syntax, escaping what it must; :func:`written` walks and joins the texts, a
blank line between blocks. An emitter adds nothing and leaves nothing out, but where its syntax
has no room for a detail (the labels of a matrix inside a LaTeX equation).

The walk selects and resolves (which labels a matrix shows, which row sums go beside it, which
statistics describe it); it computes nothing. How much of a large matrix fits on a line or a
page is the format's own, with the shared rules in :mod:`attn_cli.render.cells`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from attn_cli.core.batch import batch_line
from attn_cli.core.model import Part, Quantities, Step, Summary, Walkthrough
from attn_cli.core.numbers import as_matrix
from attn_cli.render.cells import matching
from attn_cli.render.options import RenderOptions

# Kinds of value shown as something other than numbers (a step's heading gives no shape).
_NOT_NUMBERS = ("records", "histogram", "text")


@dataclass(frozen=True)
class Title:
    """The document's title: the lesson's, and the example that ran (None: not an example)."""

    text: str
    example: str | None


# The role of a line of text: a heading over the blocks that follow (the inputs, the notes); a
# remark on how the numbers were made (the backend, the timing), in italics; a banner over
# everything below it (the item of a batch shown), in bold; a note under a step's value.
LineRole = Literal["section", "remark", "banner", "note"]


@dataclass(frozen=True)
class Line:
    """One line of text in its role."""

    role: LineRole
    text: str


@dataclass(frozen=True)
class Prose:
    """Text of the lesson file (an introduction, an explanation, a text value): one or more
    paragraphs, a blank line between them."""

    text: str


def paragraphs(text: str) -> list[str]:
    """The paragraphs of a text (blank lines between them), none empty."""
    return [p for p in re.split(r"\n\s*\n", str(text)) if p.strip()]


@dataclass(frozen=True)
class Description:
    """The example's description (the lecture it comes from), set apart from the prose."""

    text: str


@dataclass(frozen=True)
class InputCaption:
    """The line above an input: its name, what it is, its shape."""

    name: str
    description: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class StepHeading:
    """A step's heading: its number and title, the shape of its value (None: not numbers) and
    its time (None: not timed)."""

    number: int
    title: str
    shape: tuple[int, ...] | None
    time: str | None

    def line(self, text: Callable[[str], str], shape: Callable[[tuple[int, ...]], str]) -> str:
        """The heading's words: ``N. title (shape) (time)``, the title written by ``text`` and
        the shape by ``shape`` (each format's own)."""
        line = f"{self.number}. {text(self.title)}"
        if self.shape is not None:
            line += f" ({shape(self.shape)})"
        if self.time is not None:
            line += f" ({self.time})"
        return line


@dataclass(frozen=True)
class Number:
    """One number: a scalar value. ``name`` says what it is (a step's title, a part's label),
    ``latex`` the lesson's LaTeX for it (None: none)."""

    value: Any
    name: str
    latex: str | None = None


@dataclass(frozen=True)
class Matrix:
    """An array of numbers (a vector is one row) shown as a table or a bracketed matrix.

    ``symbol``: an input's name, written as its symbol; ``latex``: the lesson's LaTeX for a
    step's value (its left-hand side). The labels are given only where there is one for each
    row (column), the row sums (a column) only where there is one for each row; ``stats`` are
    the statistics recorded with the value (None: not recorded); ``quantities``: the columns
    that share a number format (None: the whole matrix, its row sums too; see
    :attr:`attn_cli.core.model.Step.quantities`).
    """

    value: Any
    row_labels: tuple[str, ...] | None = None
    col_labels: tuple[str, ...] | None = None
    row_sums: np.ndarray | None = None
    stats: Summary | None = None
    symbol: str | None = None
    latex: str | None = None
    quantities: Quantities | None = None
    weights: bool = False  # attention weights: in fixed decimals (cells.table_styles)

    @property
    def rows(self) -> np.ndarray:
        """The value as the rows of a table (a vector as one row, a number as one cell)."""
        return as_matrix(self.value)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the value itself, as the text says it."""
        return tuple(np.shape(self.value))


@dataclass(frozen=True)
class Records:
    """A table of records (a list of dicts with the same keys); ``headings``: the lesson file's
    heading of a key (else the key); ``quantities``: keys whose columns share a number format
    (a key in none: its own)."""

    records: list[dict[str, Any]]
    headings: Mapping[str, str] = field(default_factory=dict)
    quantities: Quantities | None = None


@dataclass(frozen=True)
class Histogram:
    """Counts per bin: the bins' edges and, per series, a count for each bin."""

    edges: list[float]
    series: dict[str, list[int]]
    edges_of: dict[str, list[float]] = field(default_factory=dict)  # a series' own bins

    def bins_of(self, name: str) -> list[float]:
        """The edges series ``name`` is counted on: its own, or the histogram's."""
        return self.edges_of.get(name, self.edges)


Value = Prose | Records | Histogram | Number | Matrix


@dataclass(frozen=True)
class Labelled:
    """An intermediate of a step (the row max inside a softmax, ...): its label and value."""

    label: str
    value: Value


@dataclass(frozen=True)
class Intermediates:
    """The labelled intermediates of a step, in the lesson's order."""

    parts: tuple[Labelled, ...]


@dataclass(frozen=True)
class NoteList:
    """The walkthrough's notes, one item each."""

    items: tuple[str, ...]


Block = (
    Title
    | Line
    | Prose
    | Description
    | InputCaption
    | StepHeading
    | Intermediates
    | Records
    | Histogram
    | Number
    | Matrix
    | NoteList
)


def document(walkthrough: Walkthrough, options: RenderOptions) -> list[Block]:
    """The walkthrough's blocks, in the order every text format shows them, with texts and
    notes written at ``options.precision``."""
    precision = options.precision
    blocks: list[Block] = [Title(walkthrough.title, walkthrough.example or None)]
    if walkthrough.intro:
        blocks.append(Prose(walkthrough.intro))
    if walkthrough.example_description:
        blocks.append(Description(walkthrough.example_description))
    if not walkthrough.is_brief:  # brief: the numbers, not how they were made
        blocks.append(
            Line(
                "remark",
                f"backend {walkthrough.backend}, {walkthrough.device}, {walkthrough.dtype}",
            )
        )
    if walkthrough.time_legend:
        blocks.append(Line("remark", walkthrough.time_legend))
    if walkthrough.items:
        blocks.append(Line("banner", batch_line(walkthrough)))
    if walkthrough.inputs:
        blocks.append(Line("section", "Inputs"))
        for item in walkthrough.inputs:
            blocks.append(InputCaption(item.name, item.description, np.shape(item.value)))
            blocks.append(_matrix(item.value, item.row_labels, item.col_labels, symbol=item.name))
    for number, step in walkthrough.numbered():
        blocks += step_blocks(step, number, precision)
    if walkthrough.notes:
        blocks.append(Line("section", "Notes"))
        blocks.append(NoteList(tuple(note.text(precision) for note in walkthrough.notes)))
    return blocks


def step_blocks(step: Step, number: int, precision: int) -> list[Block]:
    """A step: heading, explanation, intermediates, value, then each note."""
    shape = None if step.kind in _NOT_NUMBERS else tuple(np.shape(step.value))
    time = None if step.seconds is None else f"{step.seconds * 1e3:.3f} ms"
    title, explanation = step.title_at(precision), step.explanation_at(precision)
    blocks: list[Block] = [StepHeading(number, title, shape, time)]
    if explanation:
        blocks.append(Prose(explanation))
    if step.parts:
        blocks.append(Intermediates(tuple(_labelled(part, step) for part in step.parts)))
    if not (step.kind == "text" and not str(step.value)):  # a brief step's left-out value
        blocks.append(_step_value(step, title))
    blocks += [Line("note", note.text(precision)) for note in step.notes]
    return blocks


def _step_value(step: Step, title: str) -> Value:
    value = _other_value(step.value, step.kind, step.headings, step.quantities)
    if value is not None:
        return value
    if step.kind == "scalar" or np.ndim(step.value) == 0:
        return Number(step.value, title, step.latex)
    return _matrix(
        step.value,
        step.row_labels,
        step.col_labels,
        step.row_sums,
        step.summary,
        latex=step.latex,
        quantities=step.quantities,
        weights=step.kind == "weights",
    )


def _labelled(part: Part, step: Step) -> Labelled:
    """A part with its value; a matrix has the step's labels where its shape matches the
    step's (rows: a matrix; columns: the same width), unless it names its own."""
    value = _other_value(part.value, part.kind, {})
    if value is not None:
        return Labelled(part.label, value)
    if part.kind == "scalar" or np.ndim(part.value) == 0:
        return Labelled(part.label, Number(part.value, part.label))
    rows = step.row_labels if np.ndim(part.value) == 2 else None
    same_width = np.shape(part.value)[-1:] == np.shape(step.value)[-1:]
    columns = step.col_labels if same_width else None
    rows = rows if part.rows is None else part.rows
    columns = columns if part.cols is None else part.cols
    return Labelled(part.label, _matrix(part.value, rows, columns, stats=part.summary))


def _other_value(
    value: Any, kind: str, headings: Mapping[str, str], quantities: Quantities | None = None
) -> Value | None:
    """A value that is not numbers (text, records, a histogram); None for numbers."""
    if kind == "text":
        return Prose(str(value))
    if kind == "records":
        return Records(value, headings, quantities)
    if kind == "histogram":
        own = {name: list(edges) for name, edges in value.get("edges_of", {}).items()}
        return Histogram(list(value["edges"]), dict(value["series"]), own)
    return None


def _matrix(
    value: Any,
    row_labels: tuple[str, ...] | None,
    col_labels: tuple[str, ...] | None,
    row_sums: Any = None,
    stats: Summary | None = None,
    *,
    symbol: str | None = None,
    latex: str | None = None,
    quantities: Quantities | None = None,
    weights: bool = False,
) -> Matrix:
    """A matrix block with the labels and row sums that fit its rows and columns."""
    n_rows, n_cols = as_matrix(value).shape
    sums = None
    if row_sums is not None:
        column = np.atleast_1d(np.asarray(row_sums)).reshape(-1, 1)
        sums = column if column.shape[0] == n_rows else None
    return Matrix(
        value,
        matching(row_labels, n_rows),
        matching(col_labels, n_cols),
        sums,
        stats,
        symbol=symbol,
        latex=latex,
        quantities=quantities,
        weights=weights,
    )


# An emitter writes one block in its format: the block's paragraphs (a blank line between them).
Emitter = Callable[[Block, RenderOptions], list[str]]


def written(walkthrough: Walkthrough, options: RenderOptions, emitter: Emitter) -> str:
    """The walkthrough's document in the emitter's format: a blank line between blocks, one
    newline at the end."""
    chunks = (
        chunk for block in document(walkthrough, options) for chunk in emitter(block, options)
    )
    return "\n\n".join(chunks).rstrip() + "\n"
