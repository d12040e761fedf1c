"""Markdown: headings, paragraphs and pipe tables that paste into notes unchanged.

The document's blocks (what appears, in what order) come from :func:`document.document`; this
module writes each as Markdown. Tables are GitHub-flavoured pipe tables (the table extension of
CommonMark renderers): one per matrix, with a header row. Text from lesson files and the command
line (labels, titles, notes) goes through :func:`md_text`, so a ``|`` or a ``*`` in a label
cannot break a table or start emphasis; each note is a block quote of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, assert_never

from attn_cli.core.model import Quantities, Walkthrough
from attn_cli.core.numbers import format_column, shape_text
from attn_cli.render import document as doc
from attn_cli.render.cells import (
    bin_labels,
    corner_caption,
    record_columns,
    record_rows,
    shown_grid,
    shown_indices,
    table_styles,
)
from attn_cli.render.options import RenderOptions

# A matrix larger than this shows its first CORNER_ROWS rows (CORNER_COLS columns), an
# ellipsis row (column) and the last one, then a line with its shape and statistics.
MAX_ROWS = 20
CORNER_ROWS = 18
MAX_COLS = 12
CORNER_COLS = 10
_DOTS = ("…", "⋮", "⋱")  # across, down, diagonal

# A line of text in each role (document.LineRole), its text escaped. A note is a quote of its
# own, a blank line between quotes: adjacent `>` lines would merge into one paragraph.
_LINES: dict[doc.LineRole, str] = {
    "section": "### {}",
    "remark": "*{}*",
    "banner": "**{}**",
    "note": "> **Note:** {}",
}


def to_markdown(walkthrough: Walkthrough, options: RenderOptions) -> str:
    return doc.written(walkthrough, options, markdown_chunks)


def markdown_chunks(block: doc.Block, options: RenderOptions) -> list[str]:
    """A block as Markdown: its paragraphs (blank lines go between them)."""
    match block:
        case doc.Title(text, example):
            title = md_text(text) + (f" — example {_code(example)}" if example else "")
            return [f"## {title}"]
        case doc.Line(role, text):
            return [_LINES[role].format(md_text(text))]
        case doc.Description(text):
            return [md_paragraph(text)]
        case doc.InputCaption(name, description, shape):
            heading = f"**{md_text(name)}**"
            if description:
                heading += f" {md_text(description)}"
            return [f"{heading} ({shape_text(shape)})"]
        case doc.StepHeading():
            return [f"### {block.line(md_text, shape_text)}"]
        case doc.Intermediates(parts):
            chunks = []
            for part in parts:
                label = f"*{md_text(part.label)}*"
                if isinstance(part.value, doc.Number):
                    chunks.append(f"{label}: {_number(part.value.value, options)}")
                else:
                    chunks.append(f"{label}\n\n{value_text(part.value, options)}")
            return chunks
        case doc.NoteList(items):
            return ["\n".join(f"- {md_text(item)}" for item in items)]
        case doc.Prose() | doc.Records() | doc.Histogram() | doc.Number() | doc.Matrix():
            return [value_text(block, options)]
    assert_never(block)


def value_text(value: doc.Value, options: RenderOptions) -> str:
    """A value as Markdown: a paragraph, a table, or a number in bold."""
    match value:
        case doc.Prose(text):
            return md_paragraph(text)
        case doc.Records(records, headings, quantities):
            return "\n".join(records_lines(records, options, headings, quantities))
        case doc.Histogram():
            return "\n".join(histogram_lines(value))
        case doc.Number():
            return _number(value.value, options)
        case doc.Matrix():
            return "\n".join(table_lines(value, options))
    assert_never(value)


def _number(value: Any, options: RenderOptions) -> str:
    return f"**{format_column([value], options.precision, unicode=False)[0]}**"


def table_lines(matrix: doc.Matrix, options: RenderOptions) -> list[str]:
    """A matrix (a vector as one row) as a table: a heading per column, a label per row, the
    weights' row sums as a last column; a large one as its corner and statistics."""
    rows = matrix.rows
    n_rows, n_cols = rows.shape
    if rows.size == 0:
        return [f"*(empty, {shape_text(matrix.shape)})*"]
    shown_rows = shown_indices(n_rows, MAX_ROWS, CORNER_ROWS)
    shown_cols = shown_indices(n_cols, MAX_COLS, CORNER_COLS)
    col_names, row_names = matrix.col_labels, matrix.row_labels
    header = [
        "…" if c is None else (md_text(col_names[c]) if col_names else str(c + 1))
        for c in shown_cols
    ]
    # One number format for the whole matrix and its row sums, or one per quantity.
    styles = table_styles(
        rows,
        shown_rows,
        options.precision,
        matrix.row_sums,
        col_labels=matrix.col_labels,
        quantities=matrix.quantities,
        weights=matrix.weights,
    )
    sums = None
    if matrix.row_sums is not None:
        sums = shown_grid(
            matrix.row_sums, shown_rows, [0], options.precision, _DOTS, styles=styles.of_sums
        )
        header.append("Σ row")
    cells = shown_grid(rows, shown_rows, shown_cols, options.precision, _DOTS, styles=styles)
    lines = ["| | " + " | ".join(header) + " |", "|---|" + "---:|" * len(header)]
    for index, r in enumerate(shown_rows):
        label = "⋮" if r is None else (md_text(row_names[r]) if row_names else str(r + 1))
        row = cells[index] + ([sums[index][0]] if sums is not None else [])
        lines.append(f"| **{label}** | " + " | ".join(row) + " |")
    caption = corner_caption(rows, shown_rows, shown_cols, options.precision, matrix.stats)
    if caption is not None:
        lines.append("")
        lines.append(
            f"*Corner of a {shape_text(matrix.shape)} matrix; "
            + ", ".join(f"{name} {number}" for name, number in caption.stats)
            + ".*"
        )
    return lines


def records_lines(
    records: list[dict[str, Any]],
    options: RenderOptions,
    headings: Mapping[str, str] | None = None,
    quantities: Quantities | None = None,
) -> list[str]:
    if not records:
        return ["(no rows)"]
    columns = record_columns(
        records, options.precision, unicode=False, headings=headings, quantities=quantities
    )
    rows = record_rows(columns, len(records), missing="—", number=str, text=md_text)
    return [
        "| " + " | ".join(md_text(column.name) for column in columns) + " |",
        "|" + "".join("---:|" if column.numeric else "---|" for column in columns),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def histogram_lines(histogram: doc.Histogram) -> list[str]:
    series = histogram.series
    if histogram.edges_of:  # a series on bins of its own: a bin column before each series
        names = [md_text(str(name)) for name in series]
        labels = [bin_labels(histogram.bins_of(name)) for name in series]
        return [
            "| " + " | ".join(f"{name} bin | {name}" for name in names) + " |",
            "|" + "---|---:|" * len(series),
            *(
                "| "
                + " | ".join(
                    f"{labels[s][i]} | {counts[i]}" for s, counts in enumerate(series.values())
                )
                + " |"
                for i in range(len(histogram.edges) - 1)
            ),
        ]
    return [
        f"| bin | {' | '.join(md_text(str(name)) for name in series)} |",
        "|---|" + "---:|" * len(series),
        *(
            f"| {label} | " + " | ".join(str(counts[i]) for counts in series.values()) + " |"
            for i, label in enumerate(bin_labels(histogram.edges))
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
    return "\n\n".join(md_text(paragraph) for paragraph in doc.paragraphs(text))


def _code(text: str) -> str:
    """Inline code that holds any text: a fence longer than any run of backticks inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
