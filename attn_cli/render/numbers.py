"""How numbers are written: exact integers as integers, the rest to a fixed precision."""

from __future__ import annotations

import math
from typing import Any

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
        return str(int(x))
    if abs(x) < 0.5 * 10.0**-precision or abs(x) >= 1e7:
        return f"{x:.{max(precision - 2, 1)}e}"
    return f"{x:.{precision}f}"


def shape_text(shape: tuple[int, ...]) -> str:
    return " × ".join(str(size) for size in shape) if shape else "scalar"


def as_matrix(value: Any) -> np.ndarray:
    """View a 0-, 1- or 2-D array as rows for a table (a vector is one row)."""
    array = np.asarray(value)
    if array.ndim == 0:
        return array.reshape(1, 1)
    if array.ndim == 1:
        return array.reshape(1, -1)
    return array.reshape(-1, array.shape[-1])
