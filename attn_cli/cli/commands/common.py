"""What every lesson command does once its options are parsed: compute, then render."""

from __future__ import annotations

import functools
import gc
import io
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TextIO, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from attn_cli import course
from attn_cli.core.errors import UserError
from attn_cli.render import Format, RenderOptions, render

if TYPE_CHECKING:  # the runner (numpy, the lessons) is imported when a lesson runs
    from attn_cli.cli.options import SharedOptions
    from attn_cli.core.card import Card
    from attn_cli.run.runner import RunRequest

P = ParamSpec("P")
R = TypeVar("R")


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


def user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn a UserError (or a closed stdout: StdoutClosed) into one line on stderr and exit code
    2 (no traceback)."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (UserError, StdoutClosed) as error:
            print_error(str(error))
            raise typer.Exit(code=error.exit_code) from None
        except BrokenPipeError:  # a plain print or write: Typer would exit 1
            stdout_closed()
        except StdoutFailed as failed:
            stdout_failed(failed.error)

    return wrapper


def run_card(card: Card, given: dict[str, Any]) -> None:
    """A lesson command, with what it parsed: the card's ``before_run`` first (which may end the
    command: flash --kernel prints the kernel instead), then the lesson run and shown."""
    from attn_cli.cli.options import lesson_request

    instead = card.before_run(given) if card.before_run else None
    if instead is not None:
        show_instead(instead, given)
        return
    run_lesson_command(*lesson_request(card, given))


def show_instead(shown: Any, given: dict[str, Any]) -> None:
    """What a card's before_run hook gave to show in place of its lesson: a kernel's source."""
    from attn_cli.cli.commands.flash_kernel import show_kernel
    from attn_cli.lessonfiles.kernel_source import KernelSource

    if not isinstance(shown, KernelSource):
        raise TypeError(f"a card's before_run returned {type(shown).__name__}, not a KernelSource")
    show_kernel(shown, Format(given["fmt"]), given["output"])


def run_lesson_command(request: RunRequest, shared: SharedOptions) -> None:
    """List examples, quiz, or compute the walkthrough and render it.

    Files are checked before anything is computed. ``--output`` is written to a new file
    beside it as the text comes (--full JSON is never held whole) and renamed into place only
    when all is written: on an error the old file stays as it was. stdout gets nothing then.
    """
    start_up_done()
    check_output_options(shared.fmt, shared.list_examples, shared.quiz, shared.output, shared.plot)
    if shared.code:
        check_code_options(shared)
    if shared.output is None:
        _lesson_to(stdout_console(output_option=True), request, shared)
        return
    from attn_cli.core.outputs import text_replacing

    with text_replacing(shared.output, "--output") as file:
        _lesson_to(file_console(file), request, shared)


def _lesson_to(console: Console, request: RunRequest, shared: SharedOptions) -> None:
    fmt, precision, full, plot = shared.fmt, shared.precision, shared.full, shared.plot
    from attn_cli.run.runner import compute, lesson_data

    if shared.list_examples and fmt is Format.rich:
        from attn_cli.render.rich_render import examples_table

        console.print(examples_table(lesson_data(request)))
    elif shared.list_examples:
        from attn_cli.render.examples_render import examples_text

        console.out(examples_text(lesson_data(request), fmt), highlight=False)
    elif shared.code:  # computed with numpy: the program's library need not be installed
        from dataclasses import replace

        from attn_cli.render import write_chunks
        from attn_cli.render.code_render import program_text

        backend = shared.backend.value if shared.backend is not None else "numpy"
        walkthrough = compute(replace(request, backend=None, time_steps=False))
        programs = course.programs_of(request.lesson)
        write_chunks(console, [program_text(walkthrough, programs, backend).rstrip("\n")])
    else:
        walkthrough = compute(request)
        if shared.quiz:
            from attn_cli.cli import terminal
            from attn_cli.run.quiz import run_quiz

            interactive = terminal.interactive()
            run_quiz(
                walkthrough,
                console,
                precision=precision,
                interactive=interactive,
                read_line=terminal.read_line,
            )
            return
        if plot is not None:  # refused (minutes of drawing), or drawn and written whole
            from attn_cli.core.outputs import write_bytes  # before anything is printed: a full
            from attn_cli.render.heatmap import check_plot_work, heatmap_file  # disk, one line

            check_plot_work(walkthrough)
            draw = course.figure_of(request.lesson)
            write_bytes(plot, heatmap_file(walkthrough, draw, plot, precision), "--plot")
        whole = not shared.latex_fragment  # LaTeX: a document that compiles as it is
        options = RenderOptions(precision=precision, full=full, whole_document=whole)
        render(walkthrough, fmt, console, options)


def check_code_options(shared: SharedOptions) -> None:
    """--code prints one program: refuse what would show something else."""
    others = {
        "--quiz": shared.quiz,
        "--list-examples": shared.list_examples,
        "--plot": shared.plot is not None,
        "--time": shared.time,
        "--full": shared.full,
        f"--format {shared.fmt.value}": shared.fmt is not Format.rich,
        f"--device {shared.device.value}": shared.device.value != "cpu",
        f"--dtype {shared.dtype.value}": shared.dtype.value != "float64",
    }
    for flag, given in others.items():
        if given:
            raise UserError(f"--code prints a float64 program for the CPU; leave out {flag}.")


def check_output_options(
    fmt: Format, list_examples: bool, quiz: bool, output: Path | None, plot: Path | None
) -> None:
    """Refuse impossible combinations and unwritable files before computing anything."""
    if quiz and fmt is not Format.rich:
        raise UserError(f"--quiz talks to the terminal; leave out --format {fmt.value}.")
    if quiz and output is not None:
        raise UserError("--quiz talks to the terminal; leave out --output.")
    if quiz and plot is not None:
        raise UserError("--quiz asks for the weights; leave out --plot, which would show them.")
    if list_examples and plot is not None:
        raise UserError("--list-examples computes nothing to plot; leave out --plot.")
    if output is not None:
        from attn_cli.core.outputs import check_distinct, check_writable

        check_distinct({"--output": output, "--plot": plot})
        check_writable(output, "--output")
    if plot is not None:
        from attn_cli.render.heatmap import check_heatmap_path

        check_heatmap_path(plot)


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
