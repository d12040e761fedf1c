"""Numbers as people write them: the value and the rounding its decimals promise.

A number written with k decimals claims to be the exact value rounded to k decimals, so it is
right when it lies within half a unit in the k-th decimal: "0.24" covers 0.235 to 0.245, "1"
covers 0.5 to 1.5, "4e-5" covers 3.5e-5 to 4.5e-5 (a comparison with a step's values holds a
whole number to more: attn_cli.core.slides.compare). The decimals are counted from the text,
which is why slide values are kept as strings. Used for slides (``attn check``) and for a
learner's answers (``--quiz``); a text of several numbers is split into rows and entries by
:func:`attn_cli.core.matrices.split_rows`, the grammar of matrix inputs.
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

    def says(self, exact: float, decimals: int) -> bool:
        """Whether ``exact`` is what this number says in a step shown to ``decimals``: within
        its rounding, and for a whole number ("1", no decimal point), whole to those decimals:
        a whole number says the value is whole, not that it is 0.7071 to no decimals."""
        if not self.matches(exact):
            return False
        whole = not self.has_decimals and math.isfinite(self.value)
        return not whole or abs(exact - self.value) <= 0.5 * 10.0**-decimals + 1e-12


# The decimals a written number may have: float64 holds nothing below 5e-324, so a number
# written to more decimals claims a rounding no value can show (and "1e-5000000" took attn
# check 20 s and 13 MB of output to report).
MAX_DECIMALS = 330
_LARGEST_EXPONENT = 308  # 1e308: the largest power of ten a float64 holds


class OutOfRange(ValueError):
    """A written number that float64 cannot hold; the message says why, in words."""


def parse_rounded(text: str) -> Rounded | None:
    """The written number, or None when the text is not a number; OutOfRange when it is a
    number beyond float64 (1e400, 1e-5000000, a 400-digit integer)."""
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
    shown = _shortened(text.strip())
    if exponent > _LARGEST_EXPONENT or math.isinf(float(number)):
        raise OutOfRange(f"{shown} is beyond the range of a float64 (±1.8e308)")
    if -exponent > MAX_DECIMALS:
        raise OutOfRange(
            f"{shown} has {-exponent:,} decimals; a number may have at most {MAX_DECIMALS} "
            "(a float64 holds nothing below 5e-324)"
        )
    has_decimals = "." in normal or "e" in normal.lower()
    return Rounded(
        text.strip(), float(number), 0.5 * 10.0**exponent, max(0, -exponent), has_decimals
    )


def _shortened(text: str, limit: int = 24) -> str:
    """A written number as a message quotes it: at most ``limit`` characters."""
    return repr(text) if len(text) <= limit else repr(text[: limit - 1] + "…")


def plain_number(text: str) -> str:
    """A number's text with its typographic spellings made plain: "−1" (U+2212, the minus
    sign slides and word processors write) and "–1" read as "-1", "∞" as "inf"."""
    return _normal(text)


def _normal(text: str) -> str:
    normal = text.strip()
    for spelling, plain in _SPELLINGS.items():
        normal = normal.replace(spelling, plain)
    return normal
