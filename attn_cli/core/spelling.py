"""Output for a terminal that cannot show every character: ASCII spellings, never a traceback.

A Windows code-page console, an old SSH login (LANG=C) or PYTHONIOENCODING=ascii gives Python
a stdout that raises UnicodeEncodeError on √, ², τ or ░. The consoles of the command line
write through ``encodable(stream)``: a stream that takes every character is used as it is;
one that does not is wrapped, and each character it cannot take is written in an ASCII
spelling (√ sqrt, ² ^2, τ tau, Σ sum, ∞ inf, ░▒▓█ . : + #), once noted on stderr. rich sees
the stream's encoding and draws its boxes and rules in ASCII by itself; the JSON writer escapes
instead (``\\u221a``), which keeps the document's data exact.
"""

from __future__ import annotations

import io
import sys
from typing import Any, TextIO

SPELLINGS: dict[str, str] = {
    "√": "sqrt",
    "²": "^2",
    "³": "^3",
    "¹": "^1",
    "⁻": "^-",
    "ˣ": "^x",
    "ᵀ": "^T",
    "ᵢ": "_i",
    "ₐ": "_a",
    "ₚ": "_p",
    "ₜ": "_t",
    "τ": "tau",
    "φ": "phi",
    "σ": "sigma",
    "Σ": "sum",
    "δ": "delta",
    "Δ": "Delta",
    "α": "alpha",
    "β": "beta",
    "γ": "gamma",
    "ε": "eps",
    "θ": "theta",
    "Θ": "Theta",
    "λ": "lambda",
    "μ": "mu",
    "π": "pi",
    "ω": "omega",
    "ℓ": "l",
    "∂": "d",
    "·": ".",
    "×": "x",
    "−": "-",
    "–": "-",
    "—": "--",
    "±": "+/-",
    "∞": "inf",
    "…": "...",
    "⋮": ":",
    "⋱": "\\",
    "→": "->",
    "←": "<-",
    "∈": "in",
    "•": "*",
    "≤": "<=",
    "≥": ">=",
    "≈": "~",
    "≠": "!=",
    "‖": "||",
    "⌈": "ceil(",
    "⌉": ")",
    "¼": "1/4",
    "½": "1/2",
    # Shading, light to dark, in characters every encoding has.
    "░": ".",
    "▒": ":",
    "▓": "+",
    "█": "#",
}

NOTE = (
    "attn: note: this terminal's encoding ({encoding}) cannot show some characters; they are "
    "written in ASCII (sqrt for the root sign, ^2, tau, shading as . : + #). Set "
    "PYTHONIOENCODING=utf-8 to see them.\n"
)

# Characters the lessons print: a stream that takes them all is left as it is.
PROBE = "√²τ·×−∞…░▒▓█─│╭ᵀΣφ"


def takes(encoding: str | None, text: str = PROBE) -> bool:
    """Whether ``encoding`` can write ``text``."""
    try:
        text.encode(encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def spelled(text: str, encoding: str) -> str:
    """``text`` with each character ``encoding`` cannot take in its ASCII spelling: the table
    above, a box-drawing line as - | +, a letter without its accent, else ?."""
    out = []
    for char in text:
        if takes(encoding, char):
            out.append(char)
        elif char in SPELLINGS and takes(encoding, SPELLINGS[char]):
            out.append(SPELLINGS[char])
        else:
            out.append(_fallback(char))
    return "".join(out)


def _fallback(char: str) -> str:
    import unicodedata

    if "\u2500" <= char <= "\u257f":  # box drawing
        name = unicodedata.name(char, "")
        if " AND " in name:  # a corner or a junction
            return "+"
        return "-" if "HORIZONTAL" in name else "|" if "VERTICAL" in name else "+"
    bare = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
    return bare or "?"


class Spelling(io.TextIOBase):
    """A text stream that writes what ``stream`` cannot encode in ASCII spellings (see
    module doc), with one note on stderr the first time."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.noted = False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.stream, "encoding", None) or "ascii")

    def write(self, text: str) -> int:
        try:
            text.encode(self.encoding)
        except UnicodeEncodeError:
            text = spelled(text, self.encoding)
            self._note()
        except LookupError:
            pass
        return self.stream.write(text)

    def _note(self) -> None:
        if self.noted:
            return
        self.noted = True
        stderr = sys.stderr
        if stderr is not None and stderr is not self.stream:
            try:
                stderr.write(NOTE.format(encoding=self.encoding))
                stderr.flush()
            except (OSError, ValueError):
                pass

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:  # what else rich may ask of a stream
        return getattr(self.stream, name)


def encodable(stream: TextIO) -> TextIO:
    """``stream`` itself when it takes the lessons' characters, else it wrapped in Spelling."""
    if isinstance(stream, Spelling) or takes(getattr(stream, "encoding", None) or "utf-8"):
        return stream
    return Spelling(stream)  # type: ignore[return-value]
