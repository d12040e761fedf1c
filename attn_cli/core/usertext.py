"""Text from users (lesson files, --tokens) made safe to print at a terminal."""

from __future__ import annotations

import re

# C0 and C1 control characters but tab and newline: ESC starts the sequences that move the
# cursor, recolour or retitle the terminal; CR and BS overwrite what was printed.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """The text with each control character written as a visible escape (ESC as ``\\x1b``),
    so that a file can show its words but never write to the terminal."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)
