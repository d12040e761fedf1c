"""Where the commands write: the consoles on stdout, stderr and an --output file, and what a
closed pipe or a full disk does (one line, the exit code of tools that write to a pipe).

Below every command module (common.py, flash_kernel.py, bench.py, ...) and the app, so that
they share these without importing one another.
"""

from __future__ import annotations

import gc
import io
import os
import stat
import sys
from typing import Any, NoReturn, TextIO

from rich.console import Console
from rich.text import Text


def start_up_done() -> None:
    """The command has imported what it needs: the cyclic garbage collector back on.

    `attn_cli.cli.app.main` turns it off for start-up, which creates objects that live until the
    process ends (modules, classes, Typer's parameters, numpy's tables): the collector's passes
    over them find nothing. They are frozen (moved where the collector never looks) before it
    is turned back on; otherwise its next passes would walk them all once more. What a command
    computes and renders runs with the collector on, as usual. Outside `main` (the collector
    on), this does nothing.
    """
    if gc.isenabled():
        return
    gc.freeze()
    gc.enable()


class _StdoutConsole(Console):
    """The console on stdout: a reader that went away ends the command quietly."""

    def on_broken_pipe(self) -> None:  # rich's own exits with code 1
        self.quiet = True
        stdout_closed()

    def render_str(self, text: str, **options: Any) -> Text:
        """A string as rich text; spelled in ASCII before it is measured when the terminal
        needs it (a table's "Σ row" header is then as wide as its "sum row")."""
        from attn_cli.core.spelling import Spelling, spelled

        if isinstance(self.file, Spelling):
            text = spelled(text, self.file.encoding)
        return super().render_str(text, **options)


def stdout_console(*, output_option: bool = False) -> Console:
    """The console on stdout; on a terminal that cannot show √ or ░, written in ASCII
    spellings (attn_cli.core.spelling). A command makes it before its work, so a stdout that
    was closed before the command started (``>&-``) is refused then (require_stdout; with
    ``output_option`` the command has -o FILE, the fix named)."""
    require_stdout(output_option=output_option)
    return _console_on_stdout()


def _console_on_stdout() -> Console:
    from attn_cli.core.spelling import encodable

    return _StdoutConsole(file=encodable(sys.stdout), highlight=False)


# What stdout may do to a command, and what the command does then (one rule for every command):
# - closed before the command started (``attn ring >&-``): nothing can ever read the output, a
#   mistake in how the command was run, known before any work: one line and exit 2, as for a
#   bad option (StdoutClosed); a command that writes its output to a file (-o FILE) runs as
#   usual, stdout unused;
# - its reader went away midway (``attn tour | head -3``): the reader has what it wanted: stop
#   quietly, exit 0 (stdout_closed), as head's writers do;
# - a write failed (``> /dev/full``, a full disk): the output is incomplete: one line and exit
#   1, as printf and cat do (stdout_failed).


class StdoutClosed(Exception):
    """stdout was closed before the command started (``>&-``): raised by require_stdout, and by
    ClosedStdout on a write; user_errors and main turn it into one line and exit code 2."""

    exit_code = 2

    def __init__(self, output_option: bool = False) -> None:
        fix = "write it to a file with -o FILE, or " if output_option else ""
        super().__init__(
            "stdout is closed (as >&- leaves it), so the output has nowhere to go; "
            f"{fix}run the command with stdout open (> FILE, | less)."
        )


class ClosedStdout(io.TextIOBase):
    """sys.stdout where stdout was closed before the command started (Python makes it None):
    writing to it raises StdoutClosed; flushing what was never written does nothing."""

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            raise StdoutClosed()
        return 0

    def isatty(self) -> bool:
        return False


def require_stdout(*, output_option: bool = False) -> None:
    """Refuse (StdoutClosed) to go on when the output is to go to a stdout that was closed
    before the command started: said before any work, not after it."""
    if isinstance(sys.stdout, ClosedStdout) or sys.stdout is None:
        raise StdoutClosed(output_option)


def reserve_standard_descriptors() -> bool:
    """Put /dev/null on any of descriptors 0, 1 and 2 that is not open (``>&-``, ``2>&-``):
    otherwise the next file or socket the command opens would get that number, and whatever
    writes to fd 1 or 2 (a library's warning, a C printf) would land in it, in a user's output
    file. Whether stdout was closed (where Python found no stdout)."""
    for descriptor in (0, 1, 2):  # in order: os.open gives the lowest free number
        try:
            os.fstat(descriptor)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
            except OSError:
                continue
            if null != descriptor:
                os.dup2(null, descriptor)
                os.close(null)
    return sys.stdout is None


def stdout_closed() -> NoReturn:
    """The reader of stdout went away (``attn tour | head -3``): stop at once, with nothing on
    stderr and exit code 0, as every command does; what is left to print is thrown away
    (stdout is pointed at /dev/null, so the flush at exit cannot fail again)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # stdout is not a file descriptor
        pass
    raise SystemExit(0)


class StdoutFailed(Exception):
    """stdout could not be written (a full disk, /dev/full, an I/O error): raised by the
    stream guard_stdout puts in place, in place of the OSError, so that it is told apart from
    any other (user_errors and main turn it into one line: stdout_failed)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.error = error


class _GuardedStdout(io.RawIOBase):
    """File descriptor 1, written with os.write: a failure other than a closed pipe (which
    keeps its own handling, stdout_closed) is raised as StdoutFailed."""

    def __init__(self, descriptor: int, original: Any) -> None:
        super().__init__()
        self.descriptor = descriptor
        self.original = original  # kept: were it collected, it would close the descriptor

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        try:
            return os.write(self.descriptor, data)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise StdoutFailed(error) from None

    def fileno(self) -> int:
        return self.descriptor

    def isatty(self) -> bool:
        return os.isatty(self.descriptor)


def guard_stdout() -> None:
    """Put a stdout in place whose failures to write are StdoutFailed (see there): the same
    text stream (encoding, errors, line buffering) over the same descriptor. Where stdout is no
    descriptor (a test's capture, a notebook) or none at all, it is left as it is."""
    stream = sys.stdout
    try:
        descriptor = stream.fileno()
        stream.flush()
    except (AttributeError, OSError, ValueError):
        return
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_GuardedStdout(descriptor, stream)),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=bool(getattr(stream, "line_buffering", False)),
        write_through=bool(getattr(stream, "write_through", False)),
    )


def stdout_failed(error: OSError) -> NoReturn:
    """stdout cannot be written (``attn block > /dev/full``, a full disk): one line on stderr
    and exit code 1, as other tools that write to a pipe or a file do (printf, cat); what is
    left to print is thrown away (stdout is pointed at /dev/null, so that the flush at exit
    cannot fail again)."""
    print_error(f"cannot write the output: {error.strerror or error}; the output is incomplete.")
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # stdout is not a file descriptor
        pass
    raise SystemExit(1)


def flush_stdout() -> None:
    """Write out what is left in stdout's buffer (a plain print, Typer's help) while an error
    can still be said in one line (stdout_failed); a reader that went away is stdout_closed."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()
    except StdoutFailed as failed:
        stdout_failed(failed.error)
    except OSError as error:
        stdout_failed(error)


def reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (``attn bench | head -1`` once head
    has its line): a long command checks between pieces of work and stops (stdout_closed)
    instead of computing what nobody will read. A pipe's writing end reports POLLERR then."""
    try:
        descriptor = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(descriptor).st_mode):
            return False
        import select

        poller = select.poll()
    except (AttributeError, OSError, ValueError):  # no descriptor (a test), or no poll
        return False
    poller.register(descriptor, select.POLLOUT)
    return any(event & select.POLLERR for _, event in poller.poll(0))


def print_error(message: str) -> None:
    """One line on stderr, never wrapped or styled: ``attn: error: <message>``."""
    line = " ".join(message.splitlines())  # one line, even from click's multi-line messages
    stderr_console().print(f"attn: error: {line}", markup=False)


def stderr_console() -> Console:
    """The console on stderr (errors, notes, progress), ASCII-spelled where it must be. Where
    there is no stderr (``2>&-``: Python makes it None) it writes nothing: stderr=True, or rich
    would write to stdout instead."""
    from attn_cli.core.spelling import encodable

    return Console(file=encodable(sys.stderr), stderr=True, highlight=False, soft_wrap=True)


def file_console(file: TextIO | None = None) -> Console:
    """A console that writes the text of an --output file (to ``file``, or built in memory):
    plain text (no colour codes; shading becomes marks), as wide as the terminal."""
    import io

    return Console(
        file=io.StringIO() if file is None else file,
        width=_console_on_stdout().width,  # the terminal's, stdout used or not
        color_system=None,
        force_terminal=False,
        highlight=False,
    )
