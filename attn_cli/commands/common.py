"""What every lesson command does once its options are parsed: compute, then render."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console

from attn_cli.errors import UserError
from attn_cli.render import Format, RenderOptions, render
from attn_cli.runner import RunRequest, compute, lesson_data

P = ParamSpec("P")
R = TypeVar("R")


def stdout_console() -> Console:
    return Console(highlight=False)


def user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn a UserError into one line on stderr and exit code 2 (no traceback)."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except UserError as error:
            Console(stderr=True, highlight=False, soft_wrap=True).print(
                f"attn: error: {error}", markup=False
            )
            raise typer.Exit(code=UserError.exit_code) from None

    return wrapper


def run_lesson_command(
    request: RunRequest,
    *,
    fmt: Format,
    precision: int,
    full: bool,
    list_examples: bool = False,
    quiz: bool = False,
) -> None:
    """List examples, quiz, or compute the walkthrough and render it in one piece."""
    console = stdout_console()
    if list_examples:
        from attn_cli.render.rich_render import examples_table

        console.print(examples_table(lesson_data(request)))
        return
    walkthrough = compute(request)
    if quiz:
        raise UserError("--quiz is not available yet.")  # issue 6 fills this in
    render(walkthrough, fmt, console, RenderOptions(precision=precision, full=full))
