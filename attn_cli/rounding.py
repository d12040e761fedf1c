"""Numbers as people write them: the value and the rounding its decimals promise.

A number written with k decimals claims to be the exact value rounded to k decimals, so it is
right when it lies within half a unit in the k-th decimal: "0.24" covers 0.235 to 0.245, "1"
covers 0.5 to 1.5, "4e-5" covers 3.5e-5 to 4.5e-5. The decimals are counted from the text,
which is why slide values are kept as strings. Used for slides (``attn check``) and for a
learner's answers (``--quiz``); a text of several numbers is split into rows and entries by
:func:`attn_cli.matrices.split_rows`, the grammar of matrix inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

# Typographic spellings a slide or a learner may use.
_SPELLINGS = {"−": "-", "–": "-", "∞": "inf"}


@dataclass(frozen=True)
class Rounded:
    """A written number: its text, its value and half a unit of its last decimal."""

    text: str
    value: float
    half_unit: float  # 0 for inf and nan, which match only themselves
    decimals: int  # decimals the text shows: 2 for "0.24", 0 for "1", 5 for "4e-5"
    has_decimals: bool  # written with a decimal point or an exponent ("0.5", "4e-5"; not "1")

    def matches(self, exact: float, at_least: float = 0.0) -> bool:
        """Whether ``exact`` rounds to this number (within ``at_least`` in any case)."""
        if not math.isfinite(self.value) or not math.isfinite(exact):
            return self.value == exact or (math.isnan(self.value) and math.isnan(exact))
        allowed = max(self.half_unit, at_least)
        # A tiny slack so a value exactly half-way (0.245 against "0.24") is not lost to binary
        # floating point; it is far below any rounding a person writes.
        return abs(exact - self.value) <= allowed + 1e-12 * (1.0 + abs(exact))


def parse_rounded(text: str) -> Rounded | None:
    """The written number, or None when the text is not a number."""
    normal = _normal(text)
    try:
        number = Decimal(normal)
    except InvalidOperation:
        return None
    if number.is_snan():
        return None
    if number.is_nan() or number.is_infinite():
        return Rounded(text.strip(), float(number), 0.0, 0, False)
    exponent = int(number.as_tuple().exponent)
    has_decimals = "." in normal or "e" in normal.lower()
    return Rounded(
        text.strip(), float(number), 0.5 * 10.0**exponent, max(0, -exponent), has_decimals
    )


def _normal(text: str) -> str:
    normal = text.strip()
    for spelling, plain in _SPELLINGS.items():
        normal = normal.replace(spelling, plain)
    return normal
