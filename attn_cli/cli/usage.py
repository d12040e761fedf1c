"""Usage errors: click's UsageError as Typer's public API gives it, and the range checks that
raise one in attn's words.

Typer re-exports click's BadParameter (``typer.BadParameter``), which click documents as a
UsageError; Typer does not re-export UsageError itself, so it is found here as BadParameter's
base, with no import of the copy of click that Typer runs on (type hints alone name it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from attn_cli.core.whole import whole_digits

if TYPE_CHECKING:
    from typer._click.core import Context as Context
    from typer._click.exceptions import UsageError as UsageError
else:
    UsageError = typer.BadParameter.__base__


def in_range(least: int, most: int | None = None) -> Callable[[Any], Any]:
    """A Typer option callback that refuses a whole number below ``least`` (or above ``most``)
    as a usage error: "Invalid value for '--precision': it must be from 0 to 15, not 16".

    The range is said in the option's help where it matters, not as Typer's ``[x>=0]``; a
    number of more than 24 digits is not echoed, only its length said."""
    wanted = f"at least {least}" if most is None else f"from {least} to {most}"

    def check(value: Any) -> Any:
        if value is None or (least <= value and (most is None or value <= most)):
            return value
        digits = whole_digits(value)
        given = str(value) if digits <= 24 else f"a number of {digits:,} digits"
        raise typer.BadParameter(f"it must be {wanted}, not {given}")

    return check
