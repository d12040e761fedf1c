"""attn: worked examples of the attention mechanism, every intermediate matrix shown.

As a library, one function per lesson, arrays in and a walkthrough out::

    import attn_cli as attn
    w = attn.scaled([[1, 0], [0, 1]], [[1, 0], [1, 1]], [[1, 2], [3, 4]])
    w.step("weights")  # the numpy array; w.output, w.steps, w.to_dict(), w.to_latex()
    print(attn.mark(w, {"weights": "0.67, 0.33; 0.5, 0.5"}))  # a student's working, marked

Importing the package stays light: a lesson's modules load when its function is first used,
and torch and matplotlib only when a call asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attn_cli import course as _cards
from attn_cli.core.errors import UserError as UserError
from attn_cli.version import __version__ as __version__

if TYPE_CHECKING:
    from attn_cli.core.model import Note as Note
    from attn_cli.core.model import Step as Step
    from attn_cli.core.model import Walkthrough as Walkthrough


# The lesson functions (see attn_cli.api, one per card) are resolved on first use; so is
# __all__, which reads every card.
_EXPORTS = ("Note", "Step", "UserError", "Walkthrough", "__version__", "lessons", "mark")


def lessons() -> list[str]:
    """The lessons' names, in the lectures' order: each is a function of this module."""
    return list(_cards.lesson_names())


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return [*_EXPORTS, *_cards.lesson_names()]
    if _cards.is_lesson(name):
        from attn_cli.api import lesson_function

        function = lesson_function(name)
        globals()[name] = function  # later look-ups find it directly
        return function
    if name == "mark":  # a student's working, marked (attn_cli.api.mark)
        from attn_cli.api import mark

        return mark
    if name in ("Walkthrough", "Step", "Note"):
        from attn_cli import api  # api hands the walkthrough's hooks their renderer
        from attn_cli.core import model

        del api
        return getattr(model, name)
    raise AttributeError(f"module 'attn_cli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_cards.lesson_names()})
