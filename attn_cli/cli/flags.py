"""The command line's spelling of a parameter: the one place a keyword becomes a flag.

The library names parameters by keyword (attn_cli.core.errors.param), and no module below this
one writes a flag; the command line shows them as the flags a user types, derived here from the
keyword as Typer derives an option's name (``valid_len`` -> ``--valid-len``).
"""

from __future__ import annotations

import ast
import shlex

from attn_cli.core.errors import SWITCHED_OFF, SWITCHED_ON, Door, UserError

# The one keyword whose flag is not derived from it: Python cannot take `global` as a keyword
# argument, so window's Python function says global_tokens= where its command says --global.
_OWN_FLAGS = {"global_tokens": "--global"}


def flag_for(keyword: str) -> str:
    """The flag that sets ``keyword`` on the command line: ``valid_len`` -> ``--valid-len``."""
    return _OWN_FLAGS.get(keyword) or "--" + keyword.replace("_", "-")


def keyword_for(flag: str) -> str:
    """The keyword a flag sets: ``--d-model`` -> ``d_model`` (the inverse of flag_for)."""
    own = {value: key for key, value in _OWN_FLAGS.items()}
    return own.get(flag) or flag.removeprefix("--").replace("-", "_")


def flag_spelling(keyword: str, value: str | None) -> str:
    """A parameter as the command line spells it: ``--dropout``, or ``--dropout 2`` as given; a
    switch as typed, ``--scale`` or ``--no-scale``; a text as a shell takes it (the Python
    literal ``'cat-slept'`` as ``--example cat-slept``, ``'a b'`` as ``--tokens 'a b'``)."""
    flag = flag_for(keyword)
    if value == SWITCHED_OFF:
        return "--no-" + flag.removeprefix("--")
    return flag if value in (None, SWITCHED_ON) else f"{flag} {_as_typed(value)}"


def _as_typed(value: str) -> str:
    """A value as a shell user types it: a quoted Python string literal (how the library and
    the lesson files write a text) unquoted, then quoted for the shell where it needs it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        try:
            text = ast.literal_eval(value)  # a literal only: never evaluates code
        except (ValueError, SyntaxError):
            return value
        if isinstance(text, str):
            return shlex.quote(text)
    return value


# The command line's door: flags, a list of them as "--m 1 --dk 2".
COMMAND_LINE = Door(flag_spelling, " ")


def message(error: UserError) -> str:
    """A user error's message as the command line says it: each parameter its flag."""
    return COMMAND_LINE.words(error.message)
