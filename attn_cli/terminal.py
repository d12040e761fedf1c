"""The learner's side of the terminal: is someone there, and what did they type.

Quiz and tour ask these through the module (``terminal.interactive()``), so a test can replace
them to drive an interactive session through standard input.
"""

from __future__ import annotations

import sys


def interactive() -> bool:
    """True when a person types on stdin and reads stdout (neither a pipe nor a file).

    ``attn scaled --quiz > handout.txt`` typed at a terminal therefore writes the handout
    instead of waiting on prompts nobody can see.
    """
    return _is_terminal(sys.stdin) and _is_terminal(sys.stdout)


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream is not None and stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def read_line() -> str | None:
    """One line from standard input without its newline; None at the end of the input."""
    line = sys.stdin.readline()
    return None if line == "" else line.rstrip("\r\n")
