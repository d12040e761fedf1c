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


def clipped(text: str, limit: int = 40) -> str:
    """The text as a message quotes it: whole up to ``limit`` characters, else its first
    ``limit`` and an ellipsis (a 40,000-character word is never echoed whole)."""
    return text if len(text) <= limit else f"{text[:limit]}…"
