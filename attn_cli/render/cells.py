"""The cells of a text table, for every text format (Markdown and LaTeX write them in their own
syntax): which rows and columns a large matrix shows (its corner), its numbers in one format,
the statistics a cut table's caption states, the columns and rows of a records table, and the
bins of a histogram.

Nothing here computes: a caption reads the statistics recorded with the value (computed where
the value was computed) and falls back to :func:`attn_cli.core.model.summary` only for a value made
without them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.model import Quantities, Summary, summary
from attn_cli.core.numbers import NumberStyle, format_column, number_style, weights_style

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


@dataclass(frozen=True)
class TableStyles:
    """The number format of each column of a table (None: booleans) and of its row sums."""

    columns: tuple[NumberStyle | None, ...]
    sums: NumberStyle | None = None

    @property
    def of_sums(self) -> TableStyles:
        """The row sums' format, as the styles of a one-column table."""
        return TableStyles((self.sums,))


def quantity_groups(
    names: tuple[str, ...] | None, count: int, quantities: Quantities | None
) -> list[list[int]]:
    """The columns (indices) of each quantity: those ``quantities`` groups by name, and each
    column named in no group (or unnamed) alone."""
    groups = [
        [c for c in range(count) if names and names[c] in group] for group in quantities or ()
    ]
    grouped = {c for group in groups for c in group}
    return [group for group in groups if group] + [[c] for c in range(count) if c not in grouped]


def table_styles(
    rows: np.ndarray,
    shown_rows: list[int | None],
    precision: int,
    sums: Any = None,
    *,
    col_labels: tuple[str, ...] | None = None,
    quantities: Quantities | None = None,
    weights: bool = False,
) -> TableStyles:
    """The number formats of a table, chosen from its shown rows: one for a whole matrix and
    its row sums (``quantities`` None: one quantity), else one for each quantity's columns and
    one for the row sums. ``weights``: a table of attention weights, in fixed decimals (with
    its row sums as their own quantity)."""
    n_cols = rows.shape[1]
    if rows.dtype == np.bool_:
        return TableStyles((None,) * n_cols)
    kept = [r for r in shown_rows if r is not None]
    shown = rows[kept]
    shown_sums = None if sums is None else np.ravel(np.asarray(sums)[kept])
    if weights:
        style = weights_style(number_style(np.ravel(shown), precision))
        sums_style: NumberStyle | None = None
        if shown_sums is not None:  # sums of weights: 1 beside 0s and 1s, else 1.0000
            whole = style == "integer" and number_style(shown_sums, precision) == "integer"
            sums_style = "integer" if whole else "fixed"
        return TableStyles((style,) * n_cols, sums_style)
    if quantities is None:
        values = [np.ravel(shown)] + ([] if shown_sums is None else [shown_sums])
        style = number_style(np.concatenate(values), precision)
        return TableStyles((style,) * n_cols, None if sums is None else style)
    styles: list[NumberStyle | None] = [None] * n_cols
    for group in quantity_groups(col_labels, n_cols, quantities):
        style = number_style(shown[:, group], precision)
        for c in group:
            styles[c] = style
    sums_style = None if shown_sums is None else number_style(shown_sums, precision)
    return TableStyles(tuple(styles), sums_style)


def cell_texts(
    matrix: np.ndarray, precision: int, styles: tuple[NumberStyle | None, ...] | None = None
) -> list[list[str]]:
    """Every cell as text, row by row, each column in its format (``styles``, one per column;
    else one format for the whole matrix, from its cells): booleans as True and False."""
    array = np.asarray(matrix)
    if array.dtype == np.bool_:
        return [[str(bool(x)) for x in row] for row in array]
    if styles is None:
        styles = (number_style(array, precision),) * array.shape[1]
    columns = [
        format_column(array[:, c], precision, unicode=False, style=styles[c])
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
    styles: TableStyles | None = None,
    cell: Callable[[str], str] = str,
) -> list[list[str]]:
    """The shown cells (each written by ``cell``, its column in its format of ``styles``), with
    ``dots`` (across, down, diagonal) where rows or columns are left out."""
    row_index = [r for r in shown_rows if r is not None]
    col_index = [c for c in shown_cols if c is not None]
    chosen = None if styles is None else tuple(styles.columns[c] for c in col_index)
    texts = cell_texts(rows[np.ix_(row_index, col_index)], precision, chosen)
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


def is_number(item: Any) -> bool:
    """Whether a records cell is a number (a bool is not)."""
    return isinstance(item, int | float | np.number) and not isinstance(item, bool | np.bool_)


def record_styles(
    records: list[dict[str, Any]], precision: int, quantities: Quantities | None = None
) -> dict[str, NumberStyle]:
    """The number format of each records column that holds numbers: chosen from its numbers,
    or from those of every column of its quantity (a group of ``quantities``)."""
    names = tuple(records[0])
    styles: dict[str, NumberStyle] = {}
    for group in quantity_groups(names, len(names), quantities):
        values = [
            item for c in group for record in records if is_number(item := record.get(names[c]))
        ]
        if values:
            style = number_style(values, precision)
            styles.update({names[c]: style for c in group})
    return styles


def record_columns(
    records: list[dict[str, Any]],
    precision: int,
    *,
    unicode: bool = False,
    headings: Mapping[str, str] | None = None,
    quantities: Quantities | None = None,
) -> list[RecordColumn]:
    """The columns of a records table; the numbers of a column share one format, chosen from
    its values, and so do those of the columns one of ``quantities`` groups (the keys of one
    quantity: two models' losses). A column is headed by ``headings[key]`` (the lesson file's
    words), or by its key."""
    headings = headings or {}
    names = tuple(records[0])
    numbers_of = {
        name: [item for record in records if is_number(item := record.get(name))] for name in names
    }
    styles = record_styles(records, precision, quantities)
    columns = []
    for name in names:
        items = [record.get(name) for record in records]
        numeric = [is_number(item) for item in items]
        numbers = iter(
            format_column(numbers_of[name], precision, unicode=unicode, style=styles[name])
            if numbers_of[name]
            else []
        )
        texts = [
            None if item is None else next(numbers) if number else str(item)
            for item, number in zip(items, numeric, strict=True)
        ]
        columns.append(RecordColumn(str(headings.get(name, name)), texts, numeric))
    return columns


def record_rows(
    columns: Sequence[RecordColumn],
    count: int,
    *,
    missing: str,
    number: Callable[[str], str],
    text: Callable[[str], str],
) -> list[list[str]]:
    """The ``count`` rows of a records table, each cell written by ``number`` or ``text`` (each
    format's own), ``missing`` where a record has none."""

    def written(column: RecordColumn, index: int) -> str:
        cell = column.cells[index]
        if cell is None:
            return missing
        return number(cell) if column.is_number[index] else text(cell)

    return [[written(column, index) for column in columns] for index in range(count)]


def bin_labels(edges: Sequence[float]) -> list[str]:
    """A histogram's bins as text, each its half-open interval: ``[-0.5, +0.5)``."""
    return [f"[{low:+.1f}, {high:+.1f})" for low, high in itertools.pairwise(edges)]
