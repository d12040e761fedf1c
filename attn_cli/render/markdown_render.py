"""Markdown: headings, paragraphs and pipe tables that paste into notes unchanged.

Tables are GitHub-flavoured pipe tables (the table extension of CommonMark renderers): one per
matrix, with a header row. Text from lesson files and the command line (labels, titles, notes)
goes through :func:`md_text`, so a ``|`` or a ``*`` in a label cannot break a table or start
emphasis; each note is a block quote of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.batch import batch_line
from attn_cli.core.model import Part, Step, Summary, Walkthrough, summary
from attn_cli.core.numbers import NumberStyle, as_matrix, format_column, number_style, shape_text
from attn_cli.render import RenderOptions

# A matrix larger than this shows its first CORNER_ROWS rows (CORNER_COLS columns), an
# ellipsis row (column) and the last one, then a line with its shape and statistics.
MAX_ROWS = 20
CORNER_ROWS = 18
MAX_COLS = 12
CORNER_COLS = 10


def to_markdown(walkthrough: Walkthrough, options: RenderOptions) -> str:
    walkthrough = walkthrough.at_precision(options.precision)
    title = md_text(walkthrough.title) + (
        f" — example {_code(walkthrough.example)}" if walkthrough.example else ""
    )
    lines = [f"## {title}", ""]
    for paragraph in (walkthrough.intro, walkthrough.example_description):
        if paragraph:
            lines += [md_paragraph(paragraph), ""]
    backend = f"backend {walkthrough.backend}, {walkthrough.device}, {walkthrough.dtype}"
    lines += [f"*{md_text(backend)}*", ""]
    if walkthrough.time_legend:
        lines += [f"*{md_text(walkthrough.time_legend)}*", ""]
    if walkthrough.items:
        lines += [f"**{md_text(batch_line(walkthrough))}**", ""]
    if walkthrough.inputs:
        lines += ["### Inputs", ""]
        for item in walkthrough.inputs:
            heading = f"**{md_text(item.name)}**"
            if item.description:
                heading += f" {md_text(item.description)}"
            lines += [f"{heading} ({shape_text(np.shape(item.value))})", ""]
            lines += [*table_lines(item.value, options, item.row_labels, item.col_labels), ""]
    for number, step in enumerate(walkthrough.steps, start=1):
        lines += step_lines(step, number, options)
    if walkthrough.notes:
        notes = [f"- {md_text(note.text(options.precision))}" for note in walkthrough.notes]
        lines += ["### Notes", "", *notes, ""]
    return "\n".join(lines).rstrip() + "\n"


def step_lines(step: Step, number: int, options: RenderOptions) -> list[str]:
    """A step: heading, explanation, intermediates, value, then each note as its own quote."""
    heading = f"### {number}. {md_text(step.title)}"
    if step.kind not in ("records", "histogram", "text"):
        heading += f" ({shape_text(np.shape(step.value))})"
    if step.seconds is not None:
        heading += f" ({step.seconds * 1e3:.3f} ms)"
    lines = [heading, ""]
    if step.explanation:
        lines += [md_paragraph(step.explanation), ""]
    for part in step.parts:
        lines += [*part_lines(part, step, options), ""]
    lines += value_lines(
        step.value,
        step.kind,
        options,
        step.row_labels,
        step.col_labels,
        step.row_sums,
        step.headings,
        step.summary,
    )
    lines.append("")
    for note in step.notes:
        # A blank line between quotes: adjacent `>` lines would merge into one paragraph.
        lines += [f"> **Note:** {md_text(note.text(options.precision))}", ""]
    return lines


def part_lines(part: Part, step: Step, options: RenderOptions) -> list[str]:
    """A labelled intermediate (row max, exp, ...): its label, then its value."""
    label = f"*{md_text(part.label)}*"
    if part.kind == "scalar" or np.ndim(part.value) == 0:
        return [f"{label}: {value_lines(part.value, 'scalar', options)[0]}"]
    rows = step.row_labels if np.ndim(part.value) == 2 else None
    same_width = np.shape(part.value)[-1:] == np.shape(step.value)[-1:]
    columns = step.col_labels if same_width else None
    rows = rows if part.rows is None else part.rows
    columns = columns if part.cols is None else part.cols
    return [
        label,
        "",
        *value_lines(part.value, part.kind, options, rows, columns, summary=part.summary),
    ]


def value_lines(
    value: Any,
    kind: str,
    options: RenderOptions,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    row_sums: Any = None,
    headings: Mapping[str, str] | None = None,
    summary: Summary | None = None,
) -> list[str]:
    """A value as its kind shows it; ``summary``: a matrix's statistics, when recorded."""
    if kind == "text":
        return [md_paragraph(str(value))]
    if kind == "records":
        return records_lines(value, options, headings)
    if kind == "histogram":
        return histogram_lines(value)
    if kind == "scalar" or np.ndim(value) == 0:
        return [f"**{format_column([value], options.precision, unicode=False)[0]}**"]
    return table_lines(value, options, row_labels, col_labels, row_sums, summary)


def table_lines(
    value: Any,
    options: RenderOptions,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    row_sums: Any = None,
    stats: Summary | None = None,
) -> list[str]:
    """A matrix (a vector as one row) as a table: a heading per column, a label per row, the
    weights' row sums as a last column; a large one as its corner and statistics (``stats``,
    the recorded ones, else computed from the matrix)."""
    rows = as_matrix(value)
    n_rows, n_cols = rows.shape
    if rows.size == 0:
        return [f"*(empty, {shape_text(np.shape(value))})*"]
    shown_rows = shown_indices(n_rows, MAX_ROWS, CORNER_ROWS)
    shown_cols = shown_indices(n_cols, MAX_COLS, CORNER_COLS)
    col_names = list(col_labels) if col_labels and len(col_labels) == n_cols else None
    row_names = list(row_labels) if row_labels and len(row_labels) == n_rows else None
    header = [
        "…" if c is None else (md_text(col_names[c]) if col_names else str(c + 1))
        for c in shown_cols
    ]
    sums = None
    kept = [r for r in shown_rows if r is not None]
    values = [np.ravel(rows[kept])]  # one format for the whole table (every column), sums too
    if row_sums is not None:
        sums_array = np.atleast_1d(np.asarray(row_sums)).reshape(-1, 1)
        if sums_array.shape[0] == n_rows:
            values.append(np.ravel(sums_array[kept]))
            header.append("Σ row")
    style = (
        None if rows.dtype == np.bool_ else number_style(np.concatenate(values), options.precision)
    )
    if len(values) == 2:
        sums = shown_grid(sums_array, shown_rows, [0], options, style)
    grid = shown_grid(rows, shown_rows, shown_cols, options, style)
    lines = ["| | " + " | ".join(header) + " |", "|---|" + "---:|" * len(header)]
    for index, r in enumerate(shown_rows):
        label = "⋮" if r is None else (md_text(row_names[r]) if row_names else str(r + 1))
        cells = list(grid[index]) + ([sums[index][0]] if sums is not None else [])
        lines.append(f"| **{label}** | " + " | ".join(cells) + " |")
    if None in shown_rows or None in shown_cols:
        described = (stats or summary(rows)).as_dict()
        names = [name for name in ("min", "max", "mean", "std") if name in described]
        numbers = format_column([described[k] for k in names], options.precision, unicode=False)
        lines.append("")
        lines.append(
            f"*Corner of a {shape_text(np.shape(value))} matrix; "
            + ", ".join(f"{k} {n}" for k, n in zip(names, numbers, strict=True))
            + ".*"
        )
    return lines


def shown_indices(count: int, limit: int, corner: int) -> list[int | None]:
    """The indices a corner shows: all of them up to ``limit``, else the first ``corner``, an
    ellipsis (None) and the last."""
    if count <= limit:
        return list(range(count))
    return [*range(corner), None, count - 1]


def shown_grid(
    rows: np.ndarray,
    shown_rows: list[int | None],
    shown_cols: list[int | None],
    options: RenderOptions,
    style: NumberStyle | None = None,
) -> list[list[str]]:
    """The shown cells as text, in one number format (``style``, else the cells' own), with
    ⋮ … ⋱ for the rest."""
    row_index = [r for r in shown_rows if r is not None]
    col_index = [c for c in shown_cols if c is not None]
    sub = np.asarray(rows)[np.ix_(row_index, col_index)]
    if sub.dtype == np.bool_:
        columns = [[str(bool(x)) for x in sub[:, c]] for c in range(sub.shape[1])]
    else:
        style = style or number_style(sub, options.precision)  # one format for the whole table
        columns = [
            format_column(sub[:, c], options.precision, unicode=False, style=style)
            for c in range(sub.shape[1])
        ]
    grid = []
    position = 0
    for r in shown_rows:
        if r is None:
            grid.append(["⋱" if c is None else "⋮" for c in shown_cols])
            continue
        cells = iter(column[position] for column in columns)
        grid.append(["…" if c is None else next(cells) for c in shown_cols])
        position += 1
    return grid


@dataclass(frozen=True)
class RecordColumn:
    """One column of a records table: its heading and cells (None where a record has none)."""

    name: str
    cells: list[str | None]
    is_number: list[bool]

    @property
    def numeric(self) -> bool:
        return any(self.is_number) and all(
            number or cell is None for number, cell in zip(self.is_number, self.cells, strict=True)
        )


def record_columns(
    records: list[dict[str, Any]],
    precision: int,
    *,
    unicode: bool = False,
    headings: Mapping[str, str] | None = None,
) -> list[RecordColumn]:
    """The columns of a records table; the numbers of a column share one format. A column is
    headed by ``headings[key]`` (the lesson file's words), or by its key."""
    headings = headings or {}
    columns = []
    for name in records[0]:
        items = [record.get(name) for record in records]
        is_number = [
            isinstance(item, int | float | np.number) and not isinstance(item, bool | np.bool_)
            for item in items
        ]
        numbers = iter(
            format_column(
                [item for item, number in zip(items, is_number, strict=True) if number],
                precision,
                unicode=unicode,
            )
            if any(is_number)
            else []
        )
        cells = [
            None if item is None else next(numbers) if number else str(item)
            for item, number in zip(items, is_number, strict=True)
        ]
        columns.append(RecordColumn(str(headings.get(name, name)), cells, is_number))
    return columns


def records_lines(
    records: list[dict[str, Any]],
    options: RenderOptions,
    headings: Mapping[str, str] | None = None,
) -> list[str]:
    if not records:
        return ["(no rows)"]
    columns = record_columns(records, options.precision, unicode=False, headings=headings)
    lines = [
        "| " + " | ".join(md_text(column.name) for column in columns) + " |",
        "|" + "".join("---:|" if column.numeric else "---|" for column in columns),
    ]
    for index in range(len(records)):
        cells = []
        for column in columns:
            cell = column.cells[index]
            if cell is None:
                cells.append("—")
            else:
                cells.append(cell if column.is_number[index] else md_text(cell))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def histogram_lines(value: dict[str, Any]) -> list[str]:
    series = dict(value["series"])
    edges = list(value["edges"])
    return [
        f"| bin | {' | '.join(md_text(str(name)) for name in series)} |",
        "|---|" + "---:|" * len(series),
        *(
            f"| [{edges[i]:+.1f}, {edges[i + 1]:+.1f}) | "
            + " | ".join(str(counts[i]) for counts in series.values())
            + " |"
            for i in range(len(edges) - 1)
        ),
    ]


# Characters that would end a table cell or start emphasis, code, HTML, an entity, a link or (on
# GitHub) math or strikethrough; CommonMark lets a backslash escape any ASCII punctuation.
_INLINE = re.compile(r"([\\|*`<>$~]|&(?=#?\w+;)|\](?=[(\[:]))")
_LINE_START = re.compile(r"^(\d*)([#>+=.)\[-])")


def md_text(text: str) -> str:
    """Text for one line of Markdown (a table cell, heading or label): whitespace runs become
    single spaces, and nothing in it can break the table or turn into markup."""
    flat = " ".join(str(text).split())
    escaped = _INLINE.sub(r"\\\1", flat)
    # An underscore inside a word (d_k) is literal; at a word's edge it could start emphasis.
    escaped = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", escaped)
    # ... and a line must not start a heading, quote or list.
    return _LINE_START.sub(r"\1\\\2", escaped)


def md_paragraph(text: str) -> str:
    """Text that may hold several paragraphs (blank lines between them), each escaped."""
    paragraphs = [p for p in re.split(r"\n\s*\n", str(text)) if p.strip()]
    return "\n\n".join(md_text(paragraph) for paragraph in paragraphs)


def _code(text: str) -> str:
    """Inline code that holds any text: a fence longer than any run of backticks inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
