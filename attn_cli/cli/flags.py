"""The command line's spelling of a parameter: the one place a keyword becomes a flag.

The library names parameters by keyword (attn_cli.core.errors.param); the command line shows
them as the flags a user types, derived from the keyword as Typer derives an option's name
(``valid_len`` -> ``--valid-len``), or the flag a lesson's card gives an option instead.
"""

from __future__ import annotations

import functools

from attn_cli.core.errors import SWITCHED_OFF, SWITCHED_ON, UserError


def flag_for(keyword: str) -> str:
    """The flag that sets ``keyword`` on the command line: ``valid_len`` -> ``--valid-len``."""
    return _card_flags().get(keyword) or "--" + keyword.replace("_", "-")


@functools.cache
def _card_flags() -> dict[str, str]:
    """The options whose flag is not their keyword's (window's global_tokens: --global). Read
    from the cards only when an error names a parameter (never on a run that succeeds)."""
    from attn_cli import course

    return {
        option.name: option.flag
        for name in course.lesson_names()
        for option in course.card(name).options
        if option.flag
    }


def flag_spelling(keyword: str, value: str | None) -> str:
    """A parameter as the command line spells it: ``--dropout``, or ``--dropout 2`` as given; a
    switch as typed, ``--scale`` or ``--no-scale``."""
    flag = flag_for(keyword)
    if value == SWITCHED_OFF:
        return "--no-" + flag.removeprefix("--")
    return flag if value in (None, SWITCHED_ON) else f"{flag} {value}"


def message(error: UserError) -> str:
    """A user error's message as the command line says it: each parameter its flag."""
    return error.spelt(flag_spelling, " ")
