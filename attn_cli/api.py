"""The lessons as Python functions: arrays in, a walkthrough out.

``import attn_cli as attn; w = attn.scaled(Q, K, V)`` runs the same lesson as ``attn scaled
--q ... --k ... --v ...``: one function per lesson command, with the command's options as
keyword arguments (``--d-model`` is ``d_model``; ``--lesson`` takes a path; ``tokens`` takes
a list of names or ``"a,b,c"``). Inputs may be numpy arrays, nested lists, torch tensors or the
command line's text (``"1,0;0,1"``, JSON, ``"@file.npy"``). Without inputs a function runs the
lesson's lecture example (``example="cat-slept"`` picks one); sizes such as ``n=`` draw random
inputs. A leading batch dimension (3-D arrays or tensors, lists nested one level deeper) runs
every item; the walkthrough returned is item ``item=`` 's (default 0), and its ``items`` hold
every item's. A problem with what was asked raises :class:`attn_cli.UserError` with the one-line
message the command line prints, each parameter named by its keyword (``dropout=2``) where the
command line names its flag (``--dropout 2``).

The functions are built from each lesson's card (attn_cli.cards), as its command is, so the
keyword names cannot drift from the command line's flags.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from attn_cli.core.model import Walkthrough
from attn_cli.course import card
from attn_cli.run.request import request_for, run_settings


def _show(
    walkthrough: Walkthrough, view: str, *, precision: int | None = None, **options: Any
) -> Any:
    """A walkthrough's hooks render through attn_cli.render.show, loaded on first use, handed
    the decimals to write (``precision``; None: the lesson's default, as its command prints)
    and the lesson's figure or programs where the view needs them."""
    from attn_cli import course
    from attn_cli.render import show

    if view == "plot":
        options["figure"] = _figure(walkthrough.lesson)
    if view == "code":
        options["programs"] = course.programs_of(walkthrough.lesson)
    if precision is None:
        precision = _default_precision(walkthrough.lesson)
    return show(walkthrough, view, precision=precision, **options)


def _figure(lesson: str) -> Any:
    """The figure of a lesson's walkthrough, or of an `attn learn` task's (lesson "learn-TASK")."""
    from attn_cli import course

    if course.is_lesson(lesson):
        return course.figure_of(lesson)
    if lesson.startswith("learn-"):
        from attn_cli.learn.tasks import get_task

        return get_task(lesson.removeprefix("learn-")).figure
    return None


def _default_precision(lesson: str) -> int:
    """The decimals a walkthrough's command prints unless --precision says otherwise: its
    lesson's card's, an `attn learn` task's (lesson "learn-TASK"), else the renderers' own."""
    from attn_cli import course

    if course.is_lesson(lesson):
        return course.card(lesson).precision
    if lesson.startswith("learn-"):
        from attn_cli.learn.common import PRECISION

        return PRECISION
    from attn_cli.render import RenderOptions

    return RenderOptions().precision


# The data model imports no renderer: its hooks (w.to_markdown(), w.plot()...) are handed this.
Walkthrough._render = staticmethod(_show)

_BUILT: dict[str, Callable[..., Walkthrough]] = {}


def lesson_function(name: str) -> Callable[..., Walkthrough]:
    """The Python function of lesson ``name`` (built once, from the lesson's declarations)."""
    if name not in _BUILT:
        _BUILT[name] = _build(name)
    return _BUILT[name]


def _build(name: str) -> Callable[..., Walkthrough]:
    call = card(name)
    specs = {spec.keyword: spec for spec in call.inputs}
    options = [option.name for option in call.options if option.lesson]
    sizes = [size.name for size in call.sizes]
    order = [*call.positional, *(key for key in specs if key not in call.positional)]
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    keyword_only = inspect.Parameter.KEYWORD_ONLY
    parameters = [
        inspect.Parameter(key, positional if key in call.positional else keyword_only, default=None)
        for key in order
    ]
    common: list[tuple[str, Any]] = [
        *((option, None) for option in options),
        *((size, None) for size in sizes),
        *run_settings(call).items(),
    ]
    parameters += [inspect.Parameter(key, keyword_only, default=value) for key, value in common]
    signature = inspect.Signature(parameters, return_annotation=Walkthrough)

    def run_lesson(*args: Any, **kwargs: Any) -> Walkthrough:
        from attn_cli.run.runner import compute

        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"attn_cli.{name}(): {error}") from None
        bound.apply_defaults()
        return compute(request_for(call, bound.arguments, python=True))

    run_lesson.__name__ = run_lesson.__qualname__ = name
    run_lesson.__module__ = "attn_cli"
    run_lesson.__signature__ = signature  # type: ignore[attr-defined]
    run_lesson.__doc__ = (
        f"{call.summary}\n\nThe Python form of `attn {name}`: inputs "
        f"({', '.join(order) or 'none'}) as arrays, lists, tensors or text; options and sizes "
        "as keyword arguments; returns the Walkthrough. See docs/api.md."
    )
    return run_lesson
