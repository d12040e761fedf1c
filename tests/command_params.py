"""What a command's parameters are declared as, read the public way: the Python type of its
function's parameter (``Annotated[int | None, typer.Option(...)]`` -> int)."""

from __future__ import annotations

import types
import typing
from typing import Any


def declared_type(command: Any, name: str) -> Any:
    """The Python type of command ``command``'s parameter ``name`` (its click command's
    callback, as Typer was given it), Annotated and "| None" taken off."""
    hints = typing.get_type_hints(command.callback)
    kind = hints[name]
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        kinds = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        if len(kinds) == 1:
            return kinds[0]
    return kind
