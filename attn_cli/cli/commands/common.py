"""What every lesson command does once its options are parsed: compute, then render."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from attn_cli import course
from attn_cli.cli.commands.streams import (
    StdoutClosed,
    StdoutFailed,
    file_console,
    print_error,
    start_up_done,
    stdout_closed,
    stdout_console,
    stdout_failed,
)
from attn_cli.core.errors import UserError
from attn_cli.render import Format, RenderOptions, render

if TYPE_CHECKING:  # the runner (numpy, the lessons) is imported when a lesson runs
    from attn_cli.cli.options import SharedOptions
    from attn_cli.core.card import Card
    from attn_cli.core.model import Walkthrough
    from attn_cli.run.runner import RunRequest

P = ParamSpec("P")
R = TypeVar("R")


def user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn a UserError (or a closed stdout: StdoutClosed) into one line on stderr and exit code
    2 (no traceback)."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except UserError as error:
            from attn_cli.cli import flags  # only where a run fails: its parameters spelt

            print_error(flags.message(error))
            raise typer.Exit(code=error.exit_code) from None
        except StdoutClosed as error:
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
    request, shared = lesson_request(card, given)
    other = None if shared.compare is None else compared_request(card, given, shared.compare)
    run_lesson_command(request, shared, compare=other)


# Options that say how to show a run, not what to run: --compare's FLAGS may not hold them.
_SHOWING = frozenset(
    {"fmt", "precision", "full", "latex_fragment", "output", "pager", "pause", "brief",
     "show_weights", "compare", "quiz", "answers", "code", "list_examples", "plot", "item"}
)  # fmt: skip


def compared_request(card: Card, given: dict[str, Any], flags: str) -> RunRequest:
    """The second run of ``--compare FLAGS``: the command's parameters as given, with those that
    FLAGS sets (parsed as the command parses its own) in their place."""
    import shlex

    import typer.main

    from attn_cli.cli.options import lesson_command, lesson_request
    from attn_cli.cli.parsing import UsageError

    try:
        args = shlex.split(flags)
    except ValueError as error:  # an unclosed quote
        message = f"--compare {flags!r}: {error}; write FLAGS as on the command line."
        raise UserError(message) from None
    parser = typer.Typer()  # the command alone, to parse FLAGS with (the CLI is not re-entered)
    parser.command(card.name)(lesson_command(card))
    try:
        context = typer.main.get_command(parser).make_context(card.name, args)
    except UsageError as error:
        raise UserError(f"--compare {flags!r}: {error.format_message()}") from None
    changed = {
        name: value
        for name, value in context.params.items()
        if getattr(context.get_parameter_source(name), "name", "") == "COMMANDLINE"
    }
    showing = sorted(name for name in changed if name in _SHOWING)
    if showing or not changed:
        what = "say how to show the run" if showing else "change nothing"
        raise UserError(
            f"--compare {flags!r}: these flags {what}; give settings or inputs that change the "
            'run, e.g. --compare "--no-scale".'
        )
    return lesson_request(card, {**given, **changed})[0]


def show_instead(shown: Any, given: dict[str, Any]) -> None:
    """What a card's before_run hook gave to show in place of its lesson: a kernel's source."""
    from attn_cli.cli.commands.flash_kernel import show_kernel
    from attn_cli.lessonfiles.kernel_source import KernelSource

    if not isinstance(shown, KernelSource):
        raise TypeError(f"a card's before_run returned {type(shown).__name__}, not a KernelSource")
    show_kernel(shown, Format(given["fmt"]), given["output"])


def run_lesson_command(
    request: RunRequest, shared: SharedOptions, compare: RunRequest | None = None
) -> None:
    """List examples, quiz, or compute the walkthrough and render it.

    Files are checked before anything is computed. ``--output`` is written to a new file
    beside it as the text comes (--full JSON is never held whole) and renamed into place only
    when all is written: on an error the old file stays as it was. stdout gets nothing then.
    """
    start_up_done()
    check_output_options(shared.fmt, shared.list_examples, shared.quiz, shared.output, shared.plot)
    check_answers_option(shared)
    if compare is not None:
        check_compare_options(shared)
    if shared.show_weights and not shared.brief:
        raise UserError(
            "--show-weights adds the learned weights back to what --brief shows (without "
            "--brief every input is shown already): add --brief, or leave --show-weights out."
        )
    if shared.code:
        check_code_options(shared)
    if shared.output is None:
        _lesson_to(stdout_console(output_option=True), request, shared, compare)
        return
    from attn_cli.core.outputs import text_replacing

    with text_replacing(shared.output, "--output") as file:
        _lesson_to(file_console(file), request, shared, compare)


def check_compare_options(shared: SharedOptions) -> None:
    """--compare shows two runs' differing steps: refuse what would show something else."""
    others = {
        "--quiz": shared.quiz,
        "--code": shared.code,
        "--list-examples": shared.list_examples,
        "--brief": shared.brief,
    }
    for flag, given in others.items():
        if given:
            raise UserError(
                f"--compare shows the steps that differ between two runs; {flag} shows "
                f"something else: leave out one of them."
            )


def _lesson_to(
    console: Console, request: RunRequest, shared: SharedOptions, compare: RunRequest | None = None
) -> None:
    fmt, precision, full, plot = shared.fmt, shared.precision, shared.full, shared.plot
    from attn_cli.run.runner import compute, listed_examples

    if shared.list_examples and fmt is Format.rich:
        from attn_cli.render.rich_render import examples_table

        console.print(examples_table(listed_examples(request)))
    elif shared.list_examples:
        from attn_cli.render.examples_render import examples_text

        console.out(examples_text(listed_examples(request), fmt), highlight=False)
    elif shared.code:  # computed with numpy: the program's library need not be installed
        from dataclasses import replace

        from attn_cli.render import write_chunks
        from attn_cli.render.code_render import program_text

        backend = shared.backend.value if shared.backend is not None else "numpy"
        walkthrough = compute(replace(request, backend=None, time_steps=False))
        programs = course.programs_of(request.lesson)
        write_chunks(console, [program_text(walkthrough, programs, backend).rstrip("\n")])
    else:
        if not shared.quiz:  # the work guards count the writing too (tables, --full JSON)
            from dataclasses import replace

            request = replace(request, shown=fmt.value, full=full)
        walkthrough = compute(request)
        if compare is not None and shared.compare is not None:
            from dataclasses import replace

            second = compute(replace(compare, shown=fmt.value, full=full))
            if plot is not None:  # both runs' weights, one colour scale; before any printing
                from attn_cli.core.outputs import write_bytes
                from attn_cli.render.heatmap import compared_figure, figure_bytes

                figure = compared_figure(walkthrough, second, shared.compare, precision)
                write_bytes(plot, figure_bytes(figure, plot), "--plot")
                plot = None
            options = RenderOptions(precision=precision, full=full, whole_document=True)
            if fmt is Format.json:
                from attn_cli.render.json_render import comparison_json

                text = comparison_json(walkthrough, second, shared.compare, options)
                console.out(text, highlight=False)
                return
            from attn_cli.core.compare import compared

            walkthrough = compared(walkthrough, second, shared.compare)
        if shared.brief and not shared.quiz:  # a quiz asks for every step's value
            from attn_cli.core.brief import brief

            walkthrough = brief(walkthrough, weights=shared.show_weights)
        if shared.quiz:
            from attn_cli.cli import terminal
            from attn_cli.run.quiz import run_quiz

            interactive = terminal.interactive()
            quiz = functools.partial(
                run_quiz,
                walkthrough,
                console,
                precision=precision,
                interactive=interactive,
                read_line=terminal.read_line,
                door=request.door,
            )
            if shared.answers is None:
                quiz()
                return
            from attn_cli.core.outputs import text_replacing

            with text_replacing(shared.answers, "--answers") as file:
                quiz(answers=file_console(file))
            from rich.text import Text

            from attn_cli.core.usertext import printable

            said = f"The answer key is in {printable(str(shared.answers))}."
            console.print(Text(said), soft_wrap=True)  # the path whole, to copy
            return
        if plot is not None:  # refused (minutes of drawing), or drawn and written whole
            from attn_cli.core.outputs import write_bytes  # before anything is printed: a full
            from attn_cli.render.heatmap import check_plot_work, heatmap_file  # disk, one line

            check_plot_work(walkthrough)
            draw = course.figure_of(request.lesson)
            write_bytes(plot, heatmap_file(walkthrough, draw, plot, precision), "--plot")
        whole = not shared.latex_fragment  # LaTeX: a document that compiles as it is
        options = RenderOptions(precision=precision, full=full, whole_document=whole)
        if fmt is Format.rich and shared.output is None and shared.pause:
            paused(console, walkthrough, options)
        elif fmt is Format.rich and shared.output is None and shared.pager is not False:
            paged(console, shared.pager, lambda: render(walkthrough, fmt, console, options))
        else:
            render(walkthrough, fmt, console, options)


# What --pause says between two steps (Enter goes on; q, or the end of the input, stops).
PAUSE_PROMPT = "Enter: next · q: stop "


def paused(console: Console, walkthrough: Walkthrough, options: RenderOptions) -> None:
    """The walkthrough a section at a time (the header and inputs, each step, the notes), with
    Enter between them, at a terminal; anywhere else written whole, as without --pause."""
    from rich.text import Text

    from attn_cli.cli import terminal
    from attn_cli.render.rich_render import walkthrough_sections

    sections = walkthrough_sections(walkthrough, options)
    if not terminal.interactive():
        for section in sections:
            console.print(*section)
        return
    for number, section in enumerate(sections):
        console.print(*section)
        if number == len(sections) - 1:
            break
        console.print(Text(PAUSE_PROMPT, style="dim"), end="")
        key = terminal.read_key()
        if key is None or key.strip().lower() == "q":
            break


def paged(console: Console, asked: bool | None, show: Callable[[], None]) -> None:
    """What ``show`` prints on ``console`` (stdout), in a pager where someone reads a screen at
    a time: at a terminal, when it is taller than the screen (``asked`` None) or always with
    --pager (True). Measured by rendering it once; what is not paged is written as rendered."""
    from attn_cli.cli import terminal

    if not terminal.on_screen():
        show()
        return
    with console.capture() as captured:
        show()
    text = captured.get()
    if asked or text.count("\n") > console.height:
        terminal.page(text)
    else:
        console.file.write(text)
        console.file.flush()


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


def check_answers_option(shared: SharedOptions) -> None:
    """--answers: a quiz's answer key, to a file that can be written (checked before any
    work) and is none of the command's other outputs."""
    if shared.answers is None:
        return
    if not shared.quiz:
        raise UserError(
            "--answers writes a quiz's answer key: give --quiz, or leave out --answers."
        )
    from attn_cli.core.outputs import check_writable

    check_writable(shared.answers, "--answers")


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
