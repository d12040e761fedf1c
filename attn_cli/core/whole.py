"""Whole numbers from the user (a count, a size, a position, a seed): the largest any takes,
and the one line that refuses a larger one. No numpy: attn learn's options are checked with it
before anything heavy is imported."""

from __future__ import annotations

import math

from attn_cli.core.errors import UserError

# A whole number from the user (a count, a size, a position, a seed) has at most this many
# digits: more than any size attn can run or any seed it stores (an int64 holds 18 digits), and
# far below Python's limit on int() from text (4,300 digits, past which int() raises).
MAX_WHOLE_DIGITS = 18
LARGEST_WHOLE = 10**MAX_WHOLE_DIGITS - 1


def whole_digits(value: int) -> int:
    """The digits of a whole number, its sign aside, without writing out one too long to be
    written (str() refuses an int of over 4,300 digits; past that, log10's count is used)."""
    size = abs(value)
    if size.bit_length() < 14_000:  # about 4,200 digits
        return len(str(size))
    return math.floor(math.log10(size)) + 1


def check_whole_size(value: object, flag: str, largest: int = LARGEST_WHOLE) -> None:
    """Refuse a whole number above ``largest`` (by default LARGEST_WHOLE, the most any count,
    size or seed of attn's takes), in one line that names ``flag`` and never echoes a
    thousand digits."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= largest:
        return
    digits = whole_digits(value)
    if digits <= 24:
        given = str(value)
    elif digits < 4_000:
        given = f"{str(value)[:6]}… ({digits:,} digits)"
    else:  # str() of such an int raises: only its length is said
        given = f"(a whole number of {digits:,} digits)"
    raise UserError(f"{flag} {given}: at most {largest:,}; give a smaller number.")
