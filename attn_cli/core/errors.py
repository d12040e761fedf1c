"""User errors: a wrong input is one clear line and exit code 2, never a traceback.

A message names the parameters it is about by their keyword, through :func:`param`, and each
door spells them its own way when it shows the message: the Python API writes the keyword
(``dropout=2``, "give m=1, dk=2"), the command line the flag (``--dropout 2``, "give --m 1
--dk 2"). The library never writes a flag: it does not know it has a command line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# A parameter in a message: START keyword [VALUE value] END, and SEPARATOR between the members
# of a list of them. ASCII's separators: control characters, which no text a user gives keeps
# (core.usertext makes it printable), so no message holds one by chance.
_START, _VALUE, _END, _SEPARATOR = "\x1e", "\x1f", "\x1d", "\x1c"
_PARAM = re.compile(f"{_START}([^{_VALUE}{_END}]*)(?:{_VALUE}([^{_END}]*))?{_END}")

# How a door spells one parameter: its keyword, and the value as given (None: the name alone).
Spelling = Callable[[str, str | None], str]


# A switch's value in a message (param(keyword, False)): each door spells it its way, the Python
# API as scale=False, the command line as --no-scale.
SWITCHED_ON, SWITCHED_OFF = "\x01on", "\x01off"


def param(keyword: str, value: object = None) -> str:
    """``keyword`` (a parameter's name in the Python API, e.g. "valid_len") in a message, spelt
    by the door that shows it; with ``value``, the parameter as given (``dropout=2``; a switch
    True or False: ``scale=False``, which the command line writes ``--no-scale``)."""
    if value is None:
        return f"{_START}{keyword}{_END}"
    if isinstance(value, bool):
        value = SWITCHED_ON if value else SWITCHED_OFF
    return f"{_START}{keyword}{_VALUE}{value}{_END}"


def written_param(field: str) -> str:
    """A parameter as a text writes it, ``seed`` or ``scale=False`` (a card's help, a lesson
    file's ``{@seed}``), as :func:`param` marks it: "True" and "False" are a switch's value."""
    keyword, _, value = field.partition("=")
    given: object = {"True": True, "False": False}.get(value, value) if value else None
    return param(keyword, given)


def params(*given: tuple[str, object]) -> str:
    """Several parameters as given, to set together: "m=1, dk=2" or "--m 1 --dk 2"."""
    return _SEPARATOR.join(param(keyword, value) for keyword, value in given)


def keyword_spelling(keyword: str, value: str | None) -> str:
    """The Python API's: the keyword, ``keyword=value`` with a value (``scale=False``)."""
    if value is None:
        return keyword
    switched = {SWITCHED_ON: "True", SWITCHED_OFF: "False"}
    return f"{keyword}={switched.get(value, value)}"


def spelt(message: str, spelling: Spelling, separator: str) -> str:
    """``message`` with each parameter spelt by ``spelling``, a list of them joined by
    ``separator``."""
    text = _PARAM.sub(lambda found: spelling(found.group(1), found.group(2)), message)
    return text.replace(_SEPARATOR, separator)


@dataclass(frozen=True)
class Door:
    """How a door names parameters in what it shows: each one's spelling, and what separates
    a list of them to set together."""

    spelling: Spelling
    separator: str

    def words(self, text: str) -> str:
        """``text`` (a message, a note, a help) with each parameter spelt by this door."""
        return spelt(text, self.spelling, self.separator)


# The Python API's door: keywords, a list of them as "m=1, dk=2".
PYTHON = Door(keyword_spelling, ", ")


class UserError(Exception):
    """A problem with what the user asked for, with the fix in the message.

    The CLI prints ``attn: error: <message>`` on stderr and exits with code 2; ``str(error)``
    is the message as the Python API says it (keywords), :meth:`spelt` as another door does.
    """

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message  # the parameters unspelt

    def spelt(self, spelling: Spelling, separator: str = " ") -> str:
        return spelt(self.message, spelling, separator)

    def __str__(self) -> str:
        return PYTHON.words(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"
