"""attn: worked examples of the attention mechanism, every intermediate matrix shown.

As a library, one function per lesson, arrays in and a walkthrough out::

    import attn_cli as attn
    w = attn.scaled([[1, 0], [0, 1]], [[1, 0], [1, 1]], [[1, 2], [3, 4]])
    w.step("weights")  # the numpy array; w.output, w.steps, w.to_dict(), w.to_latex()

Importing the package stays light: a lesson's modules load when its function is first used,
and torch and matplotlib only when a call asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attn_cli.errors import UserError
from attn_cli.lesson_specs import LESSONS as _LESSONS
from attn_cli.version import __version__

if TYPE_CHECKING:
    from attn_cli.model import Note, Step, Walkthrough


# The lesson functions (see attn_cli.api, one per name in _LESSONS) are resolved on first use.

__all__ = ["Note", "Step", "UserError", "Walkthrough", "__version__", *_LESSONS]


def __getattr__(name: str) -> Any:
    if name in _LESSONS:
        from attn_cli.api import lesson_function

        function = lesson_function(name)
        globals()[name] = function  # later look-ups find it directly
        return function
    if name in ("Walkthrough", "Step", "Note"):
        from attn_cli import api, model  # api hands the walkthrough's hooks their renderer

        del api
        return getattr(model, name)
    raise AttributeError(f"module 'attn_cli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
