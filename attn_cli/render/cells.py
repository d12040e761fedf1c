"""The cells of a text table, for every text format (Markdown and LaTeX write them in their own
syntax): which rows and columns a large matrix shows (its corner), its numbers in one format,
the statistics a cut table's caption states, and the columns of a records table.

Nothing here computes: a caption reads the statistics recorded with the value (computed where
the value was computed) and falls back to :func:`attn_cli.core.model.summary` only for a value made
without them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.model import Summary, summary
from attn_cli.core.numbers import NumberStyle, format_column, number_style

# The statistics a cut table's caption names, in this order (those the matrix has).
CAPTION_STATS = ("min", "max", "mean", "std")


def shown_indices(count: int, limit: int, corner: int) -> list[int | None]:
    """The indices a corner shows: all of them up to ``limit``, else the first ``corner``, an
    ellipsis (None) and the last."""
    if count <= limit:
        return list(range(count))
    return [*range(corner), None, count - 1]


def matching(labels: tuple[str, ...] | None, count: int) -> tuple[str, ...] | None:
    """The labels, when there is one for each of ``count`` rows (columns); else None."""
    return labels if labels and len(labels) == count else None


def table_style(
    rows: np.ndarray, shown_rows: list[int | None], precision: int, sums: Any = None
) -> NumberStyle | None:
    """One number format for a whole table: its shown rows (every column) and their row sums;
    None for a table of booleans."""
    if rows.dtype == np.bool_:
        return None
    kept = [r for r in shown_rows if r is not None]
    values = [np.ravel(rows[kept])] + ([] if sums is None else [np.ravel(np.asarray(sums)[kept])])
    return number_style(np.concatenate(values), precision)


def cell_texts(
    matrix: np.ndarray, precision: int, style: NumberStyle | None = None
) -> list[list[str]]:
    """Every cell as text, row by row, all in one format (``style``, else the cells' own):
    booleans as True and False."""
    array = np.asarray(matrix)
    if array.dtype == np.bool_:
        return [[str(bool(x)) for x in row] for row in array]
    style = style or number_style(array, precision)  # one format for the whole table
    columns = [
        format_column(array[:, c], precision, unicode=False, style=style)
        for c in range(array.shape[1])
    ]
    return [[column[r] for column in columns] for r in range(array.shape[0])]


def shown_grid(
    rows: np.ndarray,
    shown_rows: list[int | None],
    shown_cols: list[int | None],
    precision: int,
    dots: tuple[str, str, str],
    *,
    style: NumberStyle | None = None,
    cell: Callable[[str], str] = str,
) -> list[list[str]]:
    """The shown cells (each written by ``cell``), with ``dots`` (across, down, diagonal) where
    rows or columns are left out."""
    row_index = [r for r in shown_rows if r is not None]
    col_index = [c for c in shown_cols if c is not None]
    texts = cell_texts(rows[np.ix_(row_index, col_index)], precision, style)
    across, down, diagonal = dots
    lines = []
    kept = iter(texts)
    for r in shown_rows:
        if r is None:
            lines.append([diagonal if c is None else down for c in shown_cols])
            continue
        row = iter(next(kept))
        lines.append([across if c is None else cell(next(row)) for c in shown_cols])
    return lines


@dataclass(frozen=True)
class Caption:
    """What the caption of a cut table states: the statistics (names and numbers, at the
    table's precision) and how many entries are not finite (0: none)."""

    stats: tuple[tuple[str, str], ...]
    non_finite: int


def corner_caption(
    rows: np.ndarray,
    shown_rows: list[int | None],
    shown_cols: list[int | None],
    precision: int,
    recorded: Summary | None,
) -> Caption | None:
    """For a table that leaves rows or columns out: the statistics of the whole matrix, those
    ``recorded`` with it, else computed from it; None for a table shown whole."""
    if None not in shown_rows and None not in shown_cols:
        return None
    described = (recorded or summary(rows)).as_dict()
    names = [name for name in CAPTION_STATS if name in described]
    numbers = format_column([described[name] for name in names], precision, unicode=False)
    return Caption(tuple(zip(names, numbers, strict=True)), int(described.get("non_finite", 0)))


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


def is_record_number(item: Any) -> bool:
    """Whether a records table's cell is a number (a bool is not)."""
    return isinstance(item, int | float | np.number) and not isinstance(item, bool | np.bool_)


def record_styles(records: list[dict[str, Any]], precision: int) -> dict[str, NumberStyle]:
    """The format of each numeric column of a records table: one format for the whole table's
    measured numbers (every column holding a float takes the format all of the table's floats
    would take together, so that 1.000 never sits beside 1 or 1.11e-02 beside 0.456), and
    whole numbers for a column of counts (ints only)."""
    floats = [
        float(item)
        for record in records
        for item in record.values()
        if is_record_number(item) and not isinstance(item, int | np.integer)
    ]
    shared = number_style(floats, precision)
    styles: dict[str, NumberStyle] = {}
    for name in records[0] if records else ():
        numbers = [record.get(name) for record in records if is_record_number(record.get(name))]
        if numbers:
            counts = all(isinstance(number, int | np.integer) for number in numbers)
            styles[name] = number_style(numbers, precision) if counts else shared
    return styles


def record_columns(
    records: list[dict[str, Any]],
    precision: int,
    *,
    unicode: bool = False,
    headings: Mapping[str, str] | None = None,
) -> list[RecordColumn]:
    """The columns of a records table, its numbers in one format (:func:`record_styles`). A
    column is headed by ``headings[key]`` (the lesson file's words), or by its key."""
    headings = headings or {}
    styles = record_styles(records, precision)
    columns = []
    for name in records[0]:
        items = [record.get(name) for record in records]
        is_number = [is_record_number(item) for item in items]
        numbers = iter(
            format_column(
                [item for item, number in zip(items, is_number, strict=True) if number],
                precision,
                unicode=unicode,
                style=styles.get(name),
            )
            if any(is_number)
            else []
        )
        texts = [
            None if item is None else next(numbers) if number else str(item)
            for item, number in zip(items, is_number, strict=True)
        ]
        columns.append(RecordColumn(str(headings.get(name, name)), texts, is_number))
    return columns
