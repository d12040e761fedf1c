"""How numbers are written: exact integers as integers, the rest to a fixed precision."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np


def format_number(value: Any, precision: int = 4, *, unicode: bool = True) -> str:
    """One number for a table cell.

    Integers (1, 0, -2) print without decimals, so an exact 0 is never confused with a rounded
    one; tiny non-zero numbers that would round to 0 use scientific notation.
    """
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, str):
        return value
    x = float(value)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        if unicode:
            return "∞" if x > 0 else "−∞"
        return "inf" if x > 0 else "-inf"
    if x == int(x) and abs(x) < 1e15:
        return whole_text(int(x))
    if needs_scientific(x, precision):
        return f"{x:.{max(precision - 2, 1)}e}"
    return f"{x:.{precision}f}"


# Whole numbers of more than 6 digits are grouped in threes wherever they are written (a table
# column, a note, a title), for a projector (issue 57): 1,000,000, never 1000000.
GROUPED_FROM = 10**6


def whole_text(count: int) -> str:
    """A whole number as the lessons write it: ``513``, ``4096``, ``1,000,000``."""
    return f"{count:,}" if abs(count) >= GROUPED_FROM else str(count)


def needs_scientific(x: float, precision: int) -> bool:
    """Whether fixed-point at this precision would hide the number: a non-zero that would round
    to 0 (with at least one decimal asked for), or one too large to read as digits."""
    if not math.isfinite(x) or x == 0:
        return False
    return abs(x) >= 1e7 or (precision > 0 and abs(x) < 0.5 * 10.0**-precision)


NumberStyle = Literal["integer", "scientific", "fixed", "probability"]


def number_style(values: Any, precision: int = 4) -> NumberStyle:
    """The one format for ``values`` (a column, or a whole matrix with its row sums):

    * every finite value a whole number: integers (``0``, ``1``, ``-2``);
    * any value that fixed-point would hide (see :func:`needs_scientific`): scientific
      notation, ``precision`` significant digits;
    * otherwise fixed-point with ``precision`` decimals (an exact 0, also -0.0, as ``0.0000``).

    A table of attention weights is never scientific (:func:`weights_style`).
    """
    # The tests of needs_scientific, on every finite value at once (a table's shown rows
    # hold every column of them: thousands of values for a wide matrix).
    numbers = np.asarray(values, dtype=np.float64).ravel()
    finite = numbers[np.isfinite(numbers)]
    size = np.abs(finite)
    if np.all((finite == np.trunc(finite)) & (size < 1e15)):
        return "integer"
    hidden = size >= 1e7
    if precision > 0:
        hidden |= size < 0.5 * 10.0**-precision
    if np.any(hidden & (finite != 0)):
        return "scientific"
    return "fixed"


def weights_style(style: NumberStyle) -> NumberStyle:
    """The format of attention weights, for a projector (issue 57): fixed decimals always, a
    weight too small to show written as below them (``<0.0001``), never e-notation; whole
    numbers (a one-hot row of 0s and 1s) stay integers."""
    return "integer" if style == "integer" else "probability"


def format_column(
    values: Any, precision: int = 4, *, unicode: bool = True, style: NumberStyle | None = None
) -> list[str]:
    """The numbers of one table column, all in one format (``style``: the whole table's, or
    else the column's own, :func:`number_style`), so that digits line up and an exact 1 never
    sits beside a rounded 1.0000. NaN and infinities print as words or symbols in any column.
    """
    # + 0.0 turns a negative zero into 0, so that an exact zero never shows a minus sign.
    numbers = [float(v) + 0.0 for v in np.asarray(values, dtype=np.float64).ravel()]
    if style is None:
        style = number_style(numbers, precision)
    # Whole numbers of more than 6 digits, for a projector: the column's digits in groups of
    # three (274,877,906,944), exact as before.
    grouped = style == "integer" and bool(
        np.any(np.abs(np.nan_to_num(numbers, posinf=0, neginf=0)) >= GROUPED_FROM)
    )
    cells = []
    for x in numbers:
        if not math.isfinite(x):
            cells.append(format_number(x, precision, unicode=unicode))
        elif style == "integer":
            cells.append(f"{int(x):,}" if grouped else str(int(x)))
        elif style == "scientific":
            cells.append(f"{x:.{max(precision - 1, 1)}e}")
        elif style == "probability" and 0 < x < 0.5 * 10.0**-precision:
            cells.append(f"<{10.0**-precision:.{precision}f}")  # below the decimals shown
        else:
            cells.append(f"{x:.{precision}f}")
    return cells


def shape_text(shape: tuple[int, ...]) -> str:
    return " × ".join(map(str, shape)) if shape else "scalar"


def as_matrix(value: Any) -> np.ndarray:
    """View a 0-, 1- or 2-D array as rows for a table (a vector is one row)."""
    array = np.asarray(value)
    if array.ndim == 0:
        return array.reshape(1, 1)
    if array.ndim == 1:
        return array.reshape(1, -1)
    return array.reshape(-1, array.shape[-1])


# Past a million TiB, bytes are written in powers of ten (3.6e+48 TiB), never as 49 digits.
_MOST_PLAIN_TIB = 10**6


def format_bytes(count: float, significant: int | None = None) -> str:
    """Bytes in binary units: to one decimal (1.5 KiB, 10.0 GiB), or to ``significant`` digits
    for a narrow column (384 KiB, 1.25 MiB, 10.5 GiB; the unit steps up at 1000 so that the
    number never needs more digits). Any whole number of bytes, however large (the estimate
    for --n 10**300): past a million TiB in powers of ten, 3.6e+48 TiB."""
    tib = 1024**4
    if abs(count) >= _MOST_PLAIN_TIB * tib:
        exponent = math.log10(abs(count)) - math.log10(tib)  # log10 takes any int, no float()
        whole = math.floor(exponent)
        return f"{'-' if count < 0 else ''}{10 ** (exponent - whole):.1f}e+{whole:02d} TiB"
    step_up = 1024 if significant is None else 1000
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(count) < step_up or unit == "TiB":
            if unit == "B":
                return f"{count:.0f} B"
            digits = ".1f" if significant is None else f".{significant}g"
            return f"{count:{digits}} {unit}"
        count /= 1024
    raise AssertionError("unreachable")
