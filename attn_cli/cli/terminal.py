"""The learner's side of the terminal: is someone there, and what did they type.

Quiz and tour ask these through the module (``terminal.interactive()``), so a test can replace
them to drive an interactive session through standard input.

At a terminal, a line is read with ``input()`` after the standard ``readline`` module is
imported (imported only then: it changes how ``input()`` reads), so the arrow keys move the
cursor and recall earlier answers instead of typing ``^[[D``; a single key is read with the
terminal in cbreak mode. Off a terminal (a pipe, a file, a test) both read lines from
``sys.stdin``. At a terminal the cursor always ends on the next line, whatever ended the
read: Enter, a key, Ctrl-D or Ctrl-C (which still interrupts, after the newline).
"""

from __future__ import annotations

import contextlib
import os
import sys

# What a single key read in cbreak mode gives for Ctrl-D (the terminal's EOF character is only
# special in line mode).
END_OF_TRANSMISSION = "\x04"


def interactive() -> bool:
    """True when a person types on stdin and reads stdout (neither a pipe nor a file).

    ``attn scaled --quiz > handout.txt`` typed at a terminal therefore writes the handout
    instead of waiting on prompts nobody can see.
    """
    return _is_terminal(sys.stdin) and _is_terminal(sys.stdout)


def on_screen() -> bool:
    """True when stdout is a terminal: what is printed is read a screen at a time (a pager)."""
    return _is_terminal(sys.stdout)


def page(text: str) -> None:
    """Show ``text`` (rendered, with its colours) in the user's pager from its top: $PAGER, or
    less as pydoc finds it (rich's SystemPager), told to keep the colours (LESS=-R) unless the
    user set LESS."""
    from rich.pager import SystemPager

    os.environ.setdefault("LESS", "-R")
    SystemPager().show(text)


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream is not None and stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def read_line(prompt: str = "") -> str | None:
    """One line from standard input without its newline; None at the end of the input.

    The prompt is written first (plain text: at a terminal ``readline`` redraws it when the
    line is edited, so it is handed to ``input()`` rather than printed beforehand).
    """
    if _is_terminal(sys.stdin):
        return _edited_line(prompt)
    if prompt:
        sys.stdout.write(prompt)
        sys.stdout.flush()
    line = sys.stdin.readline()
    return None if line == "" else line.rstrip("\r\n")


def _edited_line(prompt: str) -> str | None:
    with contextlib.suppress(ImportError):  # Windows: input() still works, unedited
        import readline  # noqa: F401  (imported for its effect: line editing in input())
    try:
        return input(prompt)
    except EOFError:  # Ctrl-D: nothing was echoed, so end the prompt's line here
        _newline()
        return None
    except KeyboardInterrupt:
        _newline()
        raise


def read_key() -> str | None:
    """One key at a terminal (no Enter needed): the key's character, "\\n" for Enter, None for
    Ctrl-D; off a terminal, or where the terminal cannot be switched, a line (see read_line)."""
    if not _is_terminal(sys.stdin):
        return read_line()
    try:
        import termios
        import tty
    except ImportError:  # not a POSIX terminal
        return read_line()
    descriptor = sys.stdin.fileno()
    try:
        saved = termios.tcgetattr(descriptor)
    except termios.error:
        return read_line()
    sys.stdout.flush()
    try:
        tty.setcbreak(descriptor, termios.TCSANOW)  # a key at a time, no echo; Ctrl-C works
        key = os.read(descriptor, 4).decode(errors="replace")  # an arrow key is 3 bytes
    except KeyboardInterrupt:
        _newline()
        raise
    finally:
        termios.tcsetattr(descriptor, termios.TCSADRAIN, saved)
    _newline()  # as the Enter of a line would have
    if key == "" or key.startswith(END_OF_TRANSMISSION):
        return None
    return "\n" if key[:1] in ("\r", "\n") else key[:1]


def _newline() -> None:
    sys.stdout.write("\n")
    sys.stdout.flush()
