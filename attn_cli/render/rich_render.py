"""Rich layout of a walkthrough: a table per matrix, weights shaded, big matrices as corners.

Tables never cut a number. A matrix table picks its columns when it is drawn, from the width
it is given (a terminal of 60 columns, a cell of a side-by-side layout, a notebook's 100):
what does not fit is left out behind an explicit ``…`` column, never shortened to ``-0.53…``.
Records tables wrap their words and split into column groups rather than shorten a cell.

Rich's Table does the drawing and, where it can, the sizing. What rich lacks is ours, and each
place says why: which columns of a matrix show at a width (:class:`MatrixTable`: rich narrows
or crops columns, never leaves one out), and a records table's column groups and wrapped widths
(:class:`FittedTable`: rich folds words where another column has room).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from rich import box
from rich.cells import cell_len
from rich.columns import Columns
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.rule import Rule
from rich.style import Style
from rich.table import Table
from rich.text import Text

from attn_cli.core.backend import EPSILON
from attn_cli.core.batch import batch_line
from attn_cli.core.model import (
    InputValue,
    Part,
    Quantities,
    Step,
    Summary,
    Walkthrough,
    summary,
)
from attn_cli.core.numbers import NumberStyle, as_matrix, format_column, format_number, shape_text
from attn_cli.lessonfiles.loader import LessonFile
from attn_cli.render.cells import bin_labels, is_number, record_styles, table_styles
from attn_cli.render.options import RenderOptions

# A matrix larger than this prints as its top-left corner plus summary statistics.
MAX_ROWS = 12
MAX_COLS = 8
CORNER = 6
# A heatmap larger than this is drawn as blocks, one character per cell, sampled to fit.
HEATMAP_MAX_ROWS = 40
HEATMAP_MAX_COLS = 64
_BLOCKS = " ░▒▓█"
# Without colour a shaded cell carries one of these after its number: its shade, light to dark.
SHADE_MARKS = " ░▒▓█"
SHADE_LEGEND = "No colour here: the mark after a weight is its shade, ░ light to █ darkest."
ELLIPSIS = "…"
# Space between blocks laid side by side (inputs, a step's intermediates): captions stay apart.
GUTTER = 3
# Text cells of records tables wrap at spaces; a word longer than this folds instead.
LONGEST_WORD = 20


def print_walkthrough(walkthrough: Walkthrough, console: Console, options: RenderOptions) -> None:
    console.print(walkthrough_renderable(walkthrough, options))


# Notebook cells, web pages and slides are wider than a terminal's 80 columns.
HTML_WIDTH = 100
_HTML_PRE = (
    "<pre style=\"font-family: Menlo, 'DejaVu Sans Mono', Consolas, monospace; "
    'line-height: 1.25; white-space: pre; overflow-x: auto">{code}</pre>'
)


def _recorded(walkthrough: Walkthrough, options: RenderOptions) -> Console:
    """A console that recorded the walkthrough in colour, for export as HTML or SVG."""
    return recorded(walkthrough_renderable(walkthrough, options))


def recorded(renderable: RenderableType) -> Console:
    """A console that recorded ``renderable`` in colour, for export as HTML or SVG."""
    import io

    console = Console(
        record=True,
        file=io.StringIO(),
        width=HTML_WIDTH,
        color_system="truecolor",
        force_terminal=True,
        force_jupyter=False,
    )
    console.print(renderable)
    return console


def walkthrough_html(walkthrough: Walkthrough, options: RenderOptions, page: bool = False) -> str:
    """The rich tables, colours and shading in HTML: a fragment for Jupyter, or with
    ``page=True`` a whole page (``--format html``)."""
    console = _recorded(walkthrough, options)
    if page:
        return console.export_html(inline_styles=True)
    return console.export_html(inline_styles=True, code_format=_HTML_PRE)


def walkthrough_svg(walkthrough: Walkthrough, options: RenderOptions) -> str:
    """The rich tables, colours and shading as an SVG picture (``--format svg``)."""
    title = f"attn {walkthrough.lesson}" + (
        f" · {walkthrough.example}" if walkthrough.example else ""
    )
    return _recorded(walkthrough, options).export_svg(title=title)


def walkthrough_text(walkthrough: Walkthrough, options: RenderOptions) -> str:
    """The tables as plain text (no colour), at the width of the terminal the process has (80
    columns off one), as ``print(w)`` shows them."""
    import io

    console = Console(file=io.StringIO(), color_system=None, highlight=False)
    console.width = Console().width  # the terminal's (a StringIO console would take 80)
    console.print(walkthrough_renderable(walkthrough, options))
    return console.file.getvalue()  # type: ignore[attr-defined]


def walkthrough_renderable(walkthrough: Walkthrough, options: RenderOptions) -> Group:
    parts: list[RenderableType] = []
    for section in walkthrough_sections(walkthrough, options):
        parts += section
    return Group(*parts)


def walkthrough_sections(
    walkthrough: Walkthrough, options: RenderOptions
) -> list[list[RenderableType]]:
    """The walkthrough in screens: header and inputs, each step, then the notes (if any). A
    brief one (:meth:`Walkthrough.brief`) has compact tables, and its steps in one section,
    side by side where they fit (:class:`SideBySideSteps`)."""
    side_by_side = walkthrough.is_brief or bool(walkthrough.compared)
    if side_by_side:
        options = replace(options, compact=True)
    sections = [[header(walkthrough), *inputs_renderables(walkthrough, options)]]
    if side_by_side:
        panels = [step_panel(step, number, options) for number, step in walkthrough.numbered()]
        groups = compared_pairs(walkthrough) if walkthrough.compared else None
        sections.append([Text(""), SideBySideSteps(panels, groups)])
    else:
        for number, step in walkthrough.numbered():
            sections.append(step_renderables(step, number, options, dtype=walkthrough.dtype))
    if walkthrough.notes:
        sections.append(notes_renderables(walkthrough, options.precision))
    return sections


def inputs_renderables(walkthrough: Walkthrough, options: RenderOptions) -> list[RenderableType]:
    if not walkthrough.inputs:
        return []
    return [
        Text(""),
        Rule("Inputs", align="left", style="dim"),
        side_by_side([_input_block(item, options) for item in walkthrough.inputs]),
    ]


def side_by_side(blocks: list[RenderableType]) -> Columns:
    """Blocks next to each other as the width allows, a clear gutter between them."""
    return Columns(blocks, padding=(0, GUTTER))


def notes_renderables(walkthrough: Walkthrough, precision: int) -> list[RenderableType]:
    return [
        Text(""),
        Rule("Notes", align="left", style="dim"),
        *(Text(f"• {note.text(precision)}", style="yellow") for note in walkthrough.notes),
    ]


def header(walkthrough: Walkthrough) -> RenderableType:
    title = Text(walkthrough.title, style="bold")
    if walkthrough.example:
        title.append(f" · example {walkthrough.example}", style="bold cyan")
    lines: list[RenderableType] = [title]
    if walkthrough.intro:
        lines.append(Text(walkthrough.intro))
    if walkthrough.example_description:
        lines.append(Text(walkthrough.example_description, style="italic"))
    if not walkthrough.is_brief:  # brief: the numbers, not how they were made
        lines.append(
            Text(
                f"backend {walkthrough.backend} · device {walkthrough.device} · "
                f"{walkthrough.dtype}",
                style="dim",
            )
        )
    if walkthrough.time_legend:
        lines.append(Text(walkthrough.time_legend, style="dim"))
    if walkthrough.items:
        lines.append(Text(batch_line(walkthrough), style="bold yellow"))
    return Group(*lines)


def _input_block(item: InputValue, options: RenderOptions) -> RenderableType:
    shape = np.shape(item.value)
    label = Text(f"{item.name}", style="bold")
    if item.description:
        label.append(f" {item.description}")
    label.append(f" · {shape_text(shape)}", style="dim")
    return Group(
        label,
        value_renderable(
            item.value, "matrix", options, row_labels=item.row_labels, col_labels=item.col_labels
        ),
    )


def step_renderables(
    step: Step, number: int, options: RenderOptions, *, dtype: str | None = None
) -> list[RenderableType]:
    """A step: its rule with title and shape, explanation, intermediates, value and notes.

    ``dtype`` (the walkthrough's) explains row sums that visibly differ from 1.
    """
    out: list[RenderableType] = [Text(""), step_rule(step, number, options.precision)]
    explanation = step.explanation_at(options.precision)
    if explanation:
        out.append(Text(explanation))
    if step.parts:
        out.append(side_by_side([_part_block(part, step, options) for part in step.parts]))
    out.append(step_value(step, options))
    out.extend(step_notes(step, options.precision))
    sums_note = row_sum_note(step, options.precision, dtype)
    if sums_note:
        out.append(Text(f"Note: {sums_note}", style="yellow"))
    return out


@dataclass(frozen=True)
class StepPanel:
    """A brief step: its heading, its why and its value, as wide as its value (the texts wrap
    to it), to stand beside others."""

    heading: str
    why: str
    value: RenderableType | None  # None: left out (a detail, Step.detail)
    text: bool = False  # the value is a sentence (or none): it stands alone on its row

    def full_width(self) -> list[RenderableType]:
        """The step alone on its row: the heading as a rule across the width (a heading too
        long for one line wraps, without a rule under it)."""
        shown: list[RenderableType] = [Heading(self.heading, style="cyan", rule_below=False)]
        if self.why:
            shown.append(Text(self.why))
        return [*shown, *([] if self.value is None else [self.value])]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.heading, style="cyan")
        if self.why:
            yield Text(self.why)
        if self.value is not None:
            yield self.value


def step_panel(step: Step, number: int, options: RenderOptions) -> StepPanel:
    return StepPanel(
        step_heading(step, number, options.precision),
        step.explanation_at(options.precision),
        None if step.kind == "text" and not str(step.value) else step_value(step, options),
        text=step.kind == "text",
    )


# The narrowest a brief step stands beside another: its texts wrap to no fewer columns.
PANEL_MIN_WIDTH = 24


def compared_pairs(walkthrough: Walkthrough) -> list[list[int]]:
    """The steps of two compared runs in pairs (their indices): a step as given with the one
    after it when that is the same step with the flags (the two share a number); else alone."""
    numbers = [number for number, _ in walkthrough.numbered()]
    groups: list[list[int]] = []
    for index in range(len(numbers)):
        pairs = index and numbers[index] == numbers[index - 1]
        if pairs and len(groups[-1]) == 1:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


class SideBySideSteps:
    """Steps in rows (brief, or two runs compared): consecutive steps side by side where their
    values fit the width together (a gutter between them), or the ``groups`` given (a pair of
    runs' steps) where they fit; a step alone on its row drawn as the full walkthrough draws
    it. What rich lacks: its Columns gives every column the widest one's width."""

    def __init__(self, panels: list[StepPanel], groups: list[list[int]] | None = None) -> None:
        self.panels = panels
        self.groups = groups

    def row_indices(self, console: Console, options: ConsoleOptions) -> list[list[int]]:
        """The panels of each row (their indices), at this width: consecutive ones while
        their values fit beside each other (within a group, where groups are given), a text
        alone on its row."""
        widths = self.widths(console, options)
        if self.groups is not None:
            rows = []
            for group in self.groups:
                wide = sum(widths[i] for i in group) + GUTTER * (len(group) - 1)
                rows += [group] if wide <= options.max_width else [[i] for i in group]
            return rows
        rows = []
        used = 0
        for index, width in enumerate(widths):
            if rows and used + GUTTER + width <= options.max_width:
                rows[-1].append(index)
                used += GUTTER + width
            else:
                rows.append([index])
                used = width
        return rows

    def widths(self, console: Console, options: ConsoleOptions) -> list[int]:
        """Each panel's width: its value's (at least PANEL_MIN_WIDTH); a text's, the line's."""
        return [
            options.max_width
            if panel.text or panel.value is None
            else max(PANEL_MIN_WIDTH, Measurement.get(console, options, panel.value).maximum)
            for panel in self.panels
        ]

    def rows(self, console: Console, options: ConsoleOptions) -> list[RenderableType]:
        """One renderable per row of steps, at this width."""
        widths = self.widths(console, options)
        rows = self.row_indices(console, options)
        shown: list[RenderableType] = []
        for row in rows:
            if len(row) == 1:
                shown.append(Group(*self.panels[row[0]].full_width()))
                continue
            grid = Table.grid(padding=(0, GUTTER))
            for index in row:
                grid.add_column(width=widths[index], vertical="top")
            grid.add_row(*(self.panels[index] for index in row))
            shown.append(grid)
        return shown

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        valued = [
            any(self.panels[index].value is not None for index in row)
            for row in self.row_indices(console, options)
        ]
        for number, row in enumerate(self.rows(console, options)):
            # A blank line between rows, but none between two steps without a value in a row.
            if number and (valued[number] or valued[number - 1]):
                yield Text("")
            yield row


def step_value(step: Step, options: RenderOptions) -> RenderableType:
    """The step's value as a table (or heatmap, histogram, ...) with its labels and row sums."""
    return value_renderable(
        step.value,
        step.kind,
        options,
        row_labels=step.row_labels,
        col_labels=step.col_labels,
        row_sums=step.row_sums,
        headings=step.headings,
        summary=step.summary,
        quantities=step.quantities,
        fit=step.fit,
    )


def step_notes(step: Step, precision: int) -> list[RenderableType]:
    return [Text(f"Note: {note.text(precision)}", style="yellow") for note in step.notes]


def row_sum_note(step: Step, precision: int, dtype: str | None) -> str | None:
    """Why a weights row sums to 1.0010 rather than 1: each weight was rounded to ``dtype``.

    Only when a shown sum reads differently from 1 at ``precision`` decimals, and only when
    the difference is the size rounding can make (at most one epsilon per weight). This is
    about the printed digits, so it lives here rather than with the computation: the same
    float16 sums need no note at two decimals.
    """
    if step.row_sums is None or dtype not in EPSILON:
        return None
    sums = np.atleast_1d(np.asarray(step.row_sums, dtype=np.float64))
    finite = sums[np.isfinite(sums)]
    if not finite.size:
        return None
    off = float(np.max(np.abs(finite - 1.0)))
    epsilon = EPSILON[dtype]
    terms = max(int(np.shape(step.value)[-1]) if np.ndim(step.value) else 1, 1)
    if off <= 0.5 * 10.0**-precision or off > terms * epsilon:
        return None
    return (
        f"The row sums differ from 1 by up to {format_number(off, precision)}: each weight is "
        f"stored as {dtype}, whose numbers near 1 are {epsilon:.2g} apart (eps), and the "
        f"rounding of the {terms} weights of a row adds up."
    )


def step_rule(step: Step, number: int, precision: int) -> RenderableType:
    """The step's heading as a rule across the width."""
    return Heading(step_heading(step, number, precision), style="cyan")


def step_heading(step: Step, number: int, precision: int) -> str:
    """The step's heading: number, title (its numbers at ``precision``), shape (and time with
    --time)."""
    heading = f"Step {number} · {step.title_at(precision)}"
    if step.kind not in ("records", "histogram", "text"):
        heading += f" · {shape_text(np.shape(step.value))}"
    if step.seconds is not None:
        heading += f" · {step.seconds * 1e3:.3f} ms"
    return heading


class Heading:
    """A rule with a title, as rich's Rule; a title too long for the width wraps above a plain
    rule instead of losing its end (the shape, the time) to an ellipsis."""

    def __init__(self, title: str, style: str, *, rule_below: bool = True) -> None:
        self.title = title
        self.style = style
        self.rule_below = rule_below  # False: a title too long for the line wraps, no rule

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Rule draws "title ─…" and needs room for the title, a space and a few dashes.
        if cell_len(self.title) + 4 <= options.max_width:
            # The title as Text: a step title from a lesson file is text, not rich markup.
            yield Rule(Text(self.title, style="rule.text"), align="left", style=self.style)
        else:
            yield Text(self.title, style=self.style)
            if self.rule_below:
                yield Rule(style=self.style)


def _part_block(part: Part, step: Step, options: RenderOptions) -> RenderableType:
    value: Any = part.value if isinstance(part.value, list | dict) else np.asarray(part.value)
    columns = step.col_labels if np.shape(value)[-1:] == np.shape(step.value)[-1:] else None
    columns = columns if part.cols is None else part.cols
    rows = step.row_labels if part.rows is None else part.rows
    # A per-row quantity (row max, row sum) shows as one column: (m, 1), or (1,) for a vector.
    per_row = isinstance(value, np.ndarray) and (
        (value.ndim == 2 and value.shape[-1] == 1)
        or (value.ndim == 1 and value.size == 1 and np.ndim(step.value) == 1)
    )
    if per_row:
        return Group(
            Text(part.label, style="dim"),
            _matrix_table(value.reshape(-1, 1), options, rows, (part.label,), summary=part.summary),
        )
    return Group(
        Text(part.label, style="dim"),
        value_renderable(
            value, part.kind, options, row_labels=rows, col_labels=columns, summary=part.summary
        ),
    )


def value_renderable(
    value: Any,
    kind: str,
    options: RenderOptions,
    *,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    row_sums: np.ndarray | None = None,
    headings: Mapping[str, str] | None = None,
    summary: Summary | None = None,
    quantities: Quantities | None = None,
    fit: bool = False,
) -> RenderableType:
    """A value as its kind shows it; ``summary``: a matrix's statistics, when recorded;
    ``quantities``: the columns that share a number format (see
    :attr:`attn_cli.core.model.Step.quantities`); ``fit``: weights that show every column
    with fewer decimals where they must (:class:`FittedWeights`)."""
    if kind == "text":
        return Padding(Text(str(value)), (0, 0, 0, 2))
    if kind == "records":
        return records_table(value, options, headings, quantities)
    if kind == "histogram":
        return histogram(value)
    if kind == "scalar" or np.ndim(value) == 0:
        return Padding(Text(format_number(value, options.precision), style="bold"), (0, 0, 0, 2))
    array = np.asarray(value)
    if kind == "heatmap" and (
        array.shape[0] > HEATMAP_MAX_ROWS or array.shape[-1] > HEATMAP_MAX_COLS
    ):
        return block_heatmap(array)
    shading = {"weights": "weights", "heatmap": "signed"}.get(kind)
    if fit and shading == "weights" and not options.whole_tables:
        return fitted_weights(array, options, row_labels, col_labels, row_sums, summary)
    return _matrix_table(
        array, options, row_labels, col_labels, row_sums, shading, summary, quantities
    )


def _matrix_table(
    value: np.ndarray,
    options: RenderOptions,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None,
    row_sums: np.ndarray | None = None,
    shading: str | None = None,
    summary: Summary | None = None,
    quantities: Quantities | None = None,
) -> RenderableType:
    table = MatrixTable(
        value,
        options.precision,
        row_labels,
        col_labels,
        row_sums,
        shading,
        summary,
        options.full,
        quantities,
        whole=options.whole_tables,
        compact=options.compact,
    )
    return table if options.compact else Padding(table, (0, 0, 0, 2))


# The decimals a map that must show every column (Step.fit) drops to where it does not fit.
FIT_DECIMALS = 2


def fitted_weights(
    value: np.ndarray,
    options: RenderOptions,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None,
    row_sums: np.ndarray | None,
    summary: Summary | None,
) -> RenderableType:
    """Weights as the first of these tables that shows every column at the width: at the
    decimals asked; then without a Σ row column whose sums all read 1; then at FIT_DECIMALS;
    last, at FIT_DECIMALS without the table's borders (its marks of shade kept)."""
    decimals = min(options.precision, FIT_DECIMALS)

    def ones(precision: int) -> bool:
        """Whether every row sum reads 1 at ``precision`` decimals: a column of no news."""
        return row_sums is not None and bool(
            np.all(np.abs(np.asarray(row_sums, dtype=np.float64) - 1.0) < 0.5 * 10.0**-precision)
        )

    def table(precision: int, sums: np.ndarray | None, compact: bool) -> MatrixTable:
        return MatrixTable(
            value,
            precision,
            row_labels,
            col_labels,
            sums,
            "weights",
            summary,
            options.full,
            compact=compact,
            marked=compact and not options.compact,
        )

    tables = [(table(options.precision, row_sums, options.compact), "")]
    for precision in dict.fromkeys((options.precision, decimals)):
        if ones(precision):
            left_out = f"Σ row left out: every row sums to {1:.{precision}f}."
            tables.append((table(precision, None, options.compact), left_out))
        elif precision != options.precision:
            tables.append((table(precision, row_sums, options.compact), ""))
    if not options.compact:
        last = ones(decimals)
        left_out = f"Σ row left out: every row sums to {1:.{decimals}f}." if last else ""
        tables.append((table(decimals, None if last else row_sums, True), left_out))
    if len(tables) == 1:
        chosen: RenderableType = tables[0][0]
    else:
        chosen = FittedWeights(tables)
    return chosen if options.compact else Padding(chosen, (0, 0, 0, 2))


class FittedWeights:
    """A map that shows every column (Step.fit): the first of its ``tables`` (each with the
    line that says what it leaves out, or "") that shows every column at the width drawn;
    the last where none does."""

    def __init__(self, tables: list[tuple[MatrixTable, str]]) -> None:
        self.tables = tables

    def _chosen(self, console: Console, max_width: int) -> tuple[MatrixTable, str]:
        for table, left_out in self.tables:
            if table.layout_widths(table._marks(console))[0] <= max_width:
                return table, left_out
        return self.tables[-1]

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._chosen(console, options.max_width)[0])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table, left_out = self._chosen(console, options.max_width)
        yield table
        if left_out:
            yield Text(left_out, style="dim")


def colourless(console: Console) -> bool:
    """Whether this console shows no colour (NO_COLOR, TERM=dumb, a pipe or a file)."""
    return bool(console.no_color or console.color_system is None)


# Table borders: "│ a │ b │" is each cell's width plus 3 (a bar and two spaces), plus 1; a
# compact table ("a  b": no border, no padding at its edges) two spaces between cells.
def _table_width(widths: Iterable[int], compact: bool = False) -> int:
    widths = list(widths)
    if compact:
        return sum(widths) + 2 * (len(widths) - 1)
    return sum(widths) + 3 * len(widths) + 1


class MatrixTable:
    """A matrix as a table of numbers that fits the width it is drawn at.

    Rows beyond MAX_ROWS and columns beyond MAX_COLS always show as a corner (the first
    CORNER, ``⋮`` or ``…``, the last). When even that is too wide, fewer leading columns
    show before the ``…`` column. The whole table, its Σ row column included, has one number
    format (see :func:`number_style`), chosen from the rows on show; a table whose columns are
    different quantities (``quantities``) has one per quantity. Without colour a weight
    carries a mark of its shade after the number.

    Only the cells that can show are formatted; the statistics of the caption (and the scale of
    a signed table's shading) come from ``summary``, the matrix's recorded statistics, or are
    computed from the matrix only when a caption or a signed shading needs them.

    ``whole``: every row and every column, in groups of columns that each fit the width (the
    row sums after the last group), each group captioned with its columns; one format still.
    """

    def __init__(
        self,
        value: Any,
        precision: int,
        row_labels: Sequence[str] | None = None,
        col_labels: Sequence[str] | None = None,
        row_sums: np.ndarray | None = None,
        shading: str | None = None,
        summary: Summary | None = None,
        full: bool = False,
        quantities: Quantities | None = None,
        *,
        whole: bool = False,
        compact: bool = False,
        marked: bool = False,
    ) -> None:
        rows = as_matrix(value)
        self.whole = whole
        self.compact = compact  # no outer border (RenderOptions.compact)
        self.marked = marked  # compact, but with the marks of shade without colour
        self.shape = tuple(np.shape(value))
        self.full = full  # --full: every row and every column that fits the width, no corner
        self.rows = rows
        self.precision = precision
        self.shading = shading
        n_rows, n_cols = rows.shape
        self.n_cols = n_cols
        row_names = list(row_labels) if row_labels and len(row_labels) == n_rows else None
        col_names = list(col_labels) if col_labels and len(col_labels) == n_cols else None
        self.shown_rows = _shown_indices(n_rows, n_rows if full or whole else MAX_ROWS)
        data_rows = [row for row in self.shown_rows if row is not None]
        self.labels = [
            "⋮" if row is None else (row_names[row] if row_names else str(row + 1))
            for row in self.shown_rows
        ]
        # The columns that can show: all of them, or the standard corner's.
        self.candidates = (
            list(range(n_cols))
            if n_cols <= MAX_COLS or full or whole
            else [*range(CORNER), n_cols - 1]
        )
        self.headers = {c: col_names[c] if col_names else str(c + 1) for c in self.candidates}
        sums = None if row_sums is None else np.atleast_1d(np.asarray(row_sums, dtype=np.float64))
        # One format for the whole table, its row sums included (1 never beside 1.0000), or
        # one per quantity; chosen from every column of the rows shown.
        styles = table_styles(
            rows,
            self.shown_rows,
            precision,
            sums,
            col_labels=tuple(col_names) if col_names else None,
            quantities=quantities,
            weights=shading == "weights",
        )
        self.cells = {
            c: format_column(rows[data_rows, c], precision, style=styles.columns[c])
            for c in self.candidates
        }
        self.sums = (
            None if sums is None else format_column(sums[data_rows], precision, style=styles.sums)
        )
        self._summary = summary
        self.label_width = max(map(cell_len, self.labels))
        self.sums_width = (
            None if self.sums is None else max(cell_len("Σ row"), *map(cell_len, self.sums))
        )
        # Widths measured once per marks (rich measures a table many times while laying it out).
        self._column_widths: dict[bool, dict[int | None, int]] = {}
        self._layout_widths: dict[bool, list[int]] = {}

    @property
    def stats(self) -> Summary:
        """The matrix's statistics: as recorded, else computed from it (once)."""
        if self._summary is None:
            self._summary = summary(self.rows)
        return self._summary

    @property
    def scale(self) -> float:
        """The largest |entry| of the finite ones (1 when none is): a signed shading's
        darkest."""
        largest = self.stats.largest_magnitude
        return 1.0 if largest is None else largest

    # What rich lacks: a table that leaves columns out. Rich fits a table too wide for its
    # width by shrinking its columns, cropping a no_wrap number ("-0.53…"), never by dropping
    # one; so the table measures each choice of columns (a layout) and draws the widest that
    # fits, with an explicit "…" column for the rest. The widths of the columns drawn are
    # rich's own (none is set): these sums only choose the layout.
    @functools.cached_property
    def _layouts(self) -> list[list[int | None]]:
        n = self.n_cols
        if self.whole:
            return [list(range(n))]
        if n <= MAX_COLS or self.full:
            full: list[int | None] = list(range(n))
            most = n - 2  # leading columns when at least one is left out
        else:
            full = [*range(CORNER), None, n - 1]
            most = CORNER - 1
        out = [full]
        out += [[*range(k), None, n - 1] for k in range(most, 0, -1)]
        if n > 1:
            out += [[0, None], [None]]
        return out

    def layouts(self) -> list[list[int | None]]:
        """Column choices, the widest first: the full (or corner) view, then ever fewer."""
        return self._layouts

    def layout_widths(self, marks: bool) -> list[int]:
        """The width of each of the layouts, measured once."""
        if marks not in self._layout_widths:
            self._layout_widths[marks] = [self.width(layout, marks) for layout in self._layouts]
        return self._layout_widths[marks]

    def _marks(self, console: Console) -> bool:
        # Weights only: their shading says how much attention a cell gets; a signed table's
        # signs are in its numbers.
        # A compact table (--brief) is for a screen with colour: no marks, one column narrower.
        shown = not self.compact or self.marked
        return self.shading == "weights" and colourless(console) and shown

    def column_widths(self, marks: bool) -> dict[int | None, int]:
        """Each column's width on screen, as rich sizes it: its widest cell (its mark of shade
        included) or its header; the "…" column's is 1."""
        if marks not in self._column_widths:
            widths: dict[int | None, int] = {None: 1}
            for col in self.candidates:
                widest = max(map(cell_len, self.cells[col]), default=0) + marks
                widths[col] = max(cell_len(self.headers[col]), widest)
            self._column_widths[marks] = widths
        return self._column_widths[marks]

    def width(self, layout: list[int | None], marks: bool, sums: bool = True) -> int:
        """The table's width showing the columns ``layout`` (with the row sums, if any)."""
        widths = self.column_widths(marks)
        columns = [self.label_width, *map(widths.__getitem__, layout)]
        if self.sums_width is not None and sums:
            columns.append(self.sums_width)
        return _table_width(columns, self.compact)

    def groups(self, max_width: int, marks: bool) -> list[list[int | None]]:
        """``whole``: the columns in consecutive groups, each as many as fit ``max_width`` (at
        least one), the row sums with the last."""
        groups: list[list[int | None]] = [[]]
        for col in range(self.n_cols):
            grown = [*groups[-1], col]
            last = col == self.n_cols - 1
            if groups[-1] and self.width(grown, marks, sums=last) > max_width:
                groups.append([col])
            else:
                groups[-1] = grown
        return groups

    def layout_for(self, max_width: int, marks: bool) -> list[int | None]:
        """The widest layout that fits (the narrowest when none does)."""
        for layout, width in zip(self._layouts, self.layout_widths(marks), strict=True):
            if width <= max_width:
                return layout
        return self._layouts[-1]

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        marks = self._marks(console)
        if self.whole:
            widest = self.width(self.layouts()[0], marks)
            narrowest = max(self.width([col], marks) for col in range(self.n_cols))
            return Measurement(min(narrowest, widest), widest).with_maximum(options.max_width)
        widths = self.layout_widths(marks)
        return Measurement(min(widths), widths[0]).with_maximum(options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        marks = self._marks(console)
        if self.whole:
            groups = self.groups(options.max_width, marks)
            for number, group in enumerate(groups, start=1):
                last = number == len(groups)
                yield self.columns_table(group, marks, sums=last)
                if len(groups) > 1:
                    first, final = group[0], group[-1]
                    assert first is not None and final is not None
                    shown = f"columns {first + 1}–{final + 1} of {self.n_cols}"
                    yield Text(f"{shown} (group {number} of {len(groups)})", style="dim")
            if marks:
                yield Text(SHADE_LEGEND, style="dim")
            return
        layout = self.layout_for(options.max_width, marks)
        yield self.table(layout, marks)
        # The terminal width that shows every column: the widest layout, and what the
        # table is indented by in this console (its width less the table's).
        indent = max(0, console.width - options.max_width)
        caption = self.caption(layout, self.layout_widths(marks)[0] + indent)
        if caption is not None:
            yield caption
        if marks:
            yield Text(SHADE_LEGEND, style="dim")

    def table(self, layout: list[int | None], marks: bool) -> Table:
        return self.columns_table(layout, marks, sums=True)

    def columns_table(self, layout: list[int | None], marks: bool, *, sums: bool) -> Table:
        """The table of the columns ``layout``, with the row sums or without."""
        if self.compact:
            table = Table(
                box=box.SIMPLE_HEAD,
                show_edge=False,
                collapse_padding=True,
                pad_edge=False,
                header_style="bold",
            )
        else:
            table = Table(box=box.ROUNDED, show_header=True, header_style="bold", pad_edge=True)
        # Labels and headers as Text: a token such as "[CLS]" is not rich markup.
        table.add_column("", style="bold", justify="right", no_wrap=True)
        for col in layout:
            head = Text(ELLIPSIS if col is None else self.headers[col])
            table.add_column(head, justify="right", no_wrap=True)
        sums = sums and self.sums is not None
        if sums:
            table.add_column("Σ row", justify="right", style="dim", no_wrap=True)
        index = 0  # position among the rows on show that are not the "⋮" row
        for label, row in zip(self.labels, self.shown_rows, strict=True):
            if row is None:
                cells: list[RenderableType] = ["⋮", *("⋱" if c is None else "⋮" for c in layout)]
                table.add_row(*cells, *(["⋮"] if sums else []))
                continue
            cells = [Text(label)]
            for col in layout:
                if col is None:
                    cells.append(ELLIPSIS)
                    continue
                cells.append(self._cell(self.cells[col][index], self.rows[row, col], marks))
            if sums and self.sums is not None:
                cells.append(self.sums[index])
            table.add_row(*cells)
            index += 1
        return table

    def _cell(self, text: str, number: float, marks: bool) -> Text:
        scale = self.scale if self.shading == "signed" else 1.0  # weights shade by value alone
        strength = _strength(number, scale, self.shading)
        if marks and strength is not None:
            return Text(text + SHADE_MARKS[round(strength * (len(SHADE_MARKS) - 1))])
        return Text(text, style=_shade_of(number, strength, self.shading) or "")

    def caption(self, layout: list[int | None], every_column: int | None = None) -> Text | None:
        """Under a cut table: its shape, what is hidden, the option that shows it, and the
        statistics of the whole matrix. ``every_column``: the terminal width that shows every
        column (of the corner's, without --full)."""
        rows_cut = None in self.shown_rows
        cols_cut = None in layout
        if not rows_cut and not cols_cut:
            return None
        hidden = []
        if rows_cut:
            rows = [row for row in self.shown_rows if row is not None]
            hidden.append(f"rows {_runs_hidden(rows, len(self.rows))}")
        cornered = not self.full and self.n_cols > MAX_COLS
        if cols_cut:
            columns = [col for col in layout if col is not None]
            hidden.append(f"columns {_runs_hidden(columns, self.n_cols)}")
        how = []
        if rows_cut or cornered:
            how.append("--full shows every row and column")
        if layout != self.layouts()[0] and every_column is not None:
            what = "every column of the corner" if cornered else "every column"
            how.append(
                f"a terminal {every_column} columns wide shows {what} (COLUMNS={every_column})"
            )
        stats = self.stats.as_dict()
        described = " · ".join(
            f"{name} {format_number(stats[name], self.precision)}"
            for name in ("min", "max", "mean", "std")
            if name in stats
        )
        text = f"shape {shape_text(self.shape)} · {' and '.join(hidden)} hidden"
        if how:
            text += f" ({'; '.join(how)})"
        caption = Text(f"{text} · {described}", style="dim")
        if "non_finite" in stats:
            caption.append(f" · {stats['non_finite']} non-finite", style="dim")
        return caption


def _runs_hidden(shown: Sequence[int], count: int) -> str:
    """The 1-based indices not in ``shown`` (of 0..count-1), as runs: "7–31" or "3, 5–9"."""
    missing = sorted(set(range(count)) - set(shown))
    runs: list[list[int]] = []
    for index in missing:
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ", ".join(
        f"{run[0] + 1}–{run[-1] + 1}" if len(run) > 1 else str(run[0] + 1) for run in runs
    )


def _shown_indices(count: int, limit: int) -> list[int | None]:
    """Indices to show; None marks the ellipsis (first CORNER entries, …, the last)."""
    if count <= limit:
        return list(range(count))
    return [*range(CORNER), None, count - 1]


def _strength(value: float, scale: float, shading: str | None) -> float | None:
    """How dark a cell is, 0 to 1: a weight's size, or a signed value's size against the
    largest in the table."""
    if shading is None or not np.isfinite(value):
        return None
    if shading == "weights":
        return min(max(float(value), 0.0), 1.0)
    return min(abs(float(value)) / scale, 1.0) if scale else 0.0


def _shade(value: float, scale: float, shading: str | None) -> Style | None:
    """Darker = larger. Weights shade blue from 0 to 1; signed values red (+) and blue (−)."""
    return _shade_of(value, _strength(value, scale, shading), shading)


def _shade_of(value: float, strength: float | None, shading: str | None) -> Style | None:
    """The shade of a cell of ``strength`` (:func:`_strength`)."""
    if strength is None:
        return None
    if shading == "weights":
        red, green, blue = (
            int(235 - 205 * strength),
            int(240 - 180 * strength),
            int(255 - 95 * strength),
        )
    else:
        fade = int(235 - 175 * strength)
        red, green, blue = (235, fade, fade) if value >= 0 else (fade, fade, 235)
    text = "white" if strength > 0.55 else "black"
    return Style.parse(f"{text} on rgb({red},{green},{blue})")


def block_heatmap(array: np.ndarray) -> RenderableType:
    """A matrix too large for numbers: one shaded character per sampled cell."""
    return Padding(BlockHeatmap(array), (0, 0, 0, 2))


class BlockHeatmap:
    """One shaded character per sampled cell, as many columns as the width allows."""

    def __init__(self, array: np.ndarray) -> None:
        self.rows = as_matrix(array)
        self.shape = tuple(np.shape(array))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(8, min(self.rows.shape[1], HEATMAP_MAX_COLS)).with_maximum(
            options.max_width
        )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = self.rows
        max_cols = max(1, min(HEATMAP_MAX_COLS, options.max_width))
        row_step = max(1, -(-rows.shape[0] // HEATMAP_MAX_ROWS))
        col_step = max(1, -(-rows.shape[1] // max_cols))
        sampled = rows[::row_step, ::col_step]
        finite = np.isfinite(sampled)
        low = float(sampled[finite].min()) if finite.any() else 0.0
        high = float(sampled[finite].max()) if finite.any() else 1.0
        span = (high - low) or 1.0
        picture = Text(no_wrap=True)
        for row in sampled:
            for number in row:
                level = (
                    0
                    if not np.isfinite(number)
                    else round((number - low) / span * (len(_BLOCKS) - 1))
                )
                picture.append(
                    _BLOCKS[level], style=_shade(2 * (number - low) / span - 1, 1.0, "signed")
                )
            picture.append("\n")
        picture.rstrip()
        yield picture
        yield Text(
            f"shape {shape_text(self.shape)} · every {row_step} row(s), every {col_step} "
            f"column(s) · ' ' = {format_number(low, 3)} … '█' = {format_number(high, 3)}",
            style="dim",
        )


@dataclass(frozen=True)
class FitColumn:
    """A column of a :class:`FittedTable`: cells that are numbers never wrap, text wraps."""

    header: str
    cells: tuple[Text, ...]
    numbers: tuple[bool, ...]  # per cell: a number (never wrapped or shortened)
    justify: str = "right"
    style: str | None = None

    def desired(self) -> int:
        return max(cell_len(self.header), *(cell.cell_len for cell in self.cells), 1)

    def minimum(self) -> int:
        """The narrowest it can be: its widest number, else its longest word (capped)."""
        words = [_longest_word(self.header)]
        words += [
            cell.cell_len if number else _longest_word(cell.plain)
            for cell, number in zip(self.cells, self.numbers, strict=True)
        ]
        numbers = [
            cell.cell_len for cell, number in zip(self.cells, self.numbers, strict=True) if number
        ]
        return max(min(max(words), LONGEST_WORD), *numbers, 1)


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


class FittedTable:
    """A records table that fits its width without shortening a cell.

    Columns get their full width when they can; otherwise text wraps at spaces (numbers
    never do); when even that is too wide, the columns split into groups shown one under
    the other, each repeating the first (key) column.

    What rich lacks, and this adds: the groups (a rich table never splits its columns), and
    the widths of a table that must wrap (:func:`_fit_widths`), set on its columns. Rich's own
    (``Table._collapse_widths``) narrows the widest wrapping column first, to any width, words
    or not: ``attn kinds`` at 60 columns folds "self-attent|ion" while the other columns have
    room; and a ``Column.min_width`` is not kept by that narrowing (rich widens the column
    again after it, and the table, wider than the terminal, loses its right edge).
    """

    def __init__(
        self, columns: Sequence[FitColumn], *, title: str | None = None, keys: int = 1
    ) -> None:
        self.columns = list(columns)
        self.title = title
        self.keys = min(keys, len(self.columns))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = _table_width(column.desired() for column in self.columns)
        key = [column.minimum() for column in self.columns[: self.keys]]
        rest = [column.minimum() for column in self.columns[self.keys :]]
        narrowest = _table_width([*key, max(rest, default=0)][: len(self.columns)])
        return Measurement(min(narrowest, widest), widest).with_maximum(options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        groups = self.groups(options.max_width)
        for number, group in enumerate(groups):
            title = self.title if number == 0 else "(continued)"
            yield self.table(group, options.max_width, title, number)

    def groups(self, max_width: int) -> list[list[FitColumn]]:
        """The columns in groups that each fit (keys first in every group)."""
        if _table_width(c.minimum() for c in self.columns) <= max_width:
            return [self.columns]
        keys, rest = self.columns[: self.keys], self.columns[self.keys :]
        groups: list[list[FitColumn]] = []
        for column in rest:
            if groups and _table_width(c.minimum() for c in [*groups[-1], column]) <= max_width:
                groups[-1].append(column)
            else:
                groups.append([*keys, column])
        return groups or [self.columns]

    def table(
        self, columns: list[FitColumn], max_width: int, title: str | None, number: int = 0
    ) -> Table:
        widths = _fit_widths(columns, max_width)
        table = Table(
            box=box.ROUNDED,
            header_style="bold",
            # Text, not a str: an example's name in the title is not rich markup.
            title=None if title is None else Text(title, style="bold" if number == 0 else "dim"),
            title_justify="left",
        )
        for column, width in zip(columns, widths, strict=True):
            table.add_column(
                Text(column.header),  # a lesson file's words, not rich markup
                justify=column.justify,  # type: ignore[arg-type]
                style=column.style,
                width=width,
                overflow="fold",
            )
        for index in range(len(columns[0].cells) if columns else 0):
            table.add_row(*(column.cells[index] for column in columns))
        return table


def _fit_widths(columns: list[FitColumn], max_width: int) -> list[int]:
    """Each column's width: its full width when all fit (as rich would give it); else its
    minimum (its longest word, its widest number), and the room left goes to the columns that
    need least to be whole, so that as few as possible wrap (rich narrows the widest instead,
    below its longest word if need be: see :class:`FittedTable`)."""
    desired = [column.desired() for column in columns]
    if _table_width(desired) <= max_width:
        return desired
    widths = [min(column.minimum(), want) for column, want in zip(columns, desired, strict=True)]
    spare = max_width - _table_width(widths)
    for index in sorted(range(len(columns)), key=lambda i: desired[i] - widths[i]):
        grow = max(0, min(spare, desired[index] - widths[index]))
        widths[index] += grow
        spare -= grow
    return widths


# A records table longer than this shows its first RECORDS_CORNER rows, a "⋮" row and its
# last row (a table with a row per token, at thousands of tokens, is a corner too).
MAX_RECORDS = 32
RECORDS_CORNER = 16


def records_table(
    records: list[dict[str, Any]],
    options: RenderOptions,
    headings: Mapping[str, str] | None = None,
    quantities: Quantities | None = None,
) -> RenderableType:
    """A records table; each column headed by ``headings[key]`` (the lesson file's words), or
    by its key. Of a long one only the rows shown are formatted (every row under --full),
    each column's numbers in the format that all of its numbers (and its quantity's, see
    :func:`record_styles`) would take, as in the table shown whole."""
    if not records:
        return Text("(no rows)", style="dim")
    headings = headings or {}
    whole = options.full or options.whole_tables
    shown: list[int | None] = list(range(len(records))) if whole else _shown_records(len(records))
    styles = record_styles(records, options.precision, quantities)
    columns = [
        _record_column(
            headings.get(name, name),
            [record.get(name) for record in records],
            shown,
            options.precision,
            styles.get(name),
        )
        for name in records[0]
    ]
    table = Padding(FittedTable(columns), (0, 0, 0, 2))
    if None not in shown:
        return table
    caption = f"{len(records)} rows: the first {RECORDS_CORNER} and the last shown"
    return Group(table, Padding(Text(caption, style="dim"), (0, 0, 0, 2)))


def _shown_records(count: int) -> list[int | None]:
    """The rows of a records table shown (None: the "⋮" row)."""
    if count <= MAX_RECORDS:
        return list(range(count))
    return [*range(RECORDS_CORNER), None, count - 1]


def _record_column(
    name: str,
    values: list[Any],
    shown: list[int | None],
    precision: int,
    style: NumberStyle | None,
) -> FitColumn:
    """A records column, its rows ``shown`` (None: "⋮"): its numbers in one format
    (``style``), None as "—", anything else as text."""
    cells: list[Text] = []
    kinds: list[bool] = []
    for row in shown:
        value = "⋮" if row is None else values[row]
        if value is None:
            cells.append(Text("—"))
            kinds.append(True)
        elif is_number(value):
            cells.append(Text(format_column([value], precision, style=style)[0]))
            kinds.append(True)
        else:
            cells.append(Text(str(value)))
            kinds.append(row is None)  # "⋮" is never wrapped
    return FitColumn(name, tuple(cells), tuple(kinds))


def histogram(value: dict[str, Any], width: int = 40) -> RenderableType:
    """Bars per bin for each series: {"edges": [e0, ..., eB], "series": {name: [c1..cB]}} (and
    "edges_of": {name: edges} for a series counted on bins of its own)."""
    return Padding(Histogram(value, width), (0, 0, 0, 2))


class Histogram:
    """Bars of at most ``width`` characters, shorter when the console is narrower."""

    def __init__(self, value: dict[str, Any], width: int = 40) -> None:
        self.series = dict(value["series"])
        own = value.get("edges_of", {})
        self.width = width
        self.labels = {
            name: bin_labels(list(own.get(name, value["edges"]))) for name in self.series
        }
        counts = [str(count) for counts in self.series.values() for count in counts]
        labels = [label for labels in self.labels.values() for label in labels]
        # label, two spaces, bar, two spaces, count
        self.frame = max(map(cell_len, labels), default=0) + max(map(len, counts), default=1) + 4

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.frame + 1, self.frame + self.width).with_maximum(options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, min(self.width, options.max_width - self.frame))
        for name, counts in self.series.items():
            peak = max(max(counts), 1)
            table = Table(box=None, show_header=False, pad_edge=False)
            table.add_column(justify="right", style="dim", no_wrap=True)
            table.add_column(no_wrap=True)
            table.add_column(justify="right", style="dim", no_wrap=True)
            for label, count in zip(self.labels[name], counts, strict=True):
                table.add_row(label, "█" * round(width * count / peak), str(count))
            yield Text(str(name), style="bold")
            yield table


def examples_table(lesson: LessonFile) -> RenderableType:
    """The examples of a lesson file: name, description and where it comes from."""
    # Names, descriptions and titles come from lesson files: Text, so none is rich markup.
    title = Text(f"{lesson.title}: examples", style="table.title")
    table = Table(title=title, box=box.ROUNDED, header_style="bold")
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("description", overflow="fold")
    table.add_column("source", style="dim", overflow="fold")
    for row in example_rows(lesson):
        table.add_row(*(Text(row[column]) for column in EXAMPLE_COLUMNS))
    return table


# The columns of --list-examples, in every format.
EXAMPLE_COLUMNS = ("name", "description", "source")


def example_rows(lesson: LessonFile) -> list[dict[str, str]]:
    """One row per example of the lesson file, the default one marked after its name."""
    return [
        {
            "name": example.name + (" (default)" if example.name == lesson.default_example else ""),
            "description": example.description,
            "source": example.source,
        }
        for example in lesson.examples
    ]
