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

from attn_cli.core.card import Card, help_words
from attn_cli.core.model import Walkthrough
from attn_cli.core.variants import TIMED_RUNS
from attn_cli.course import card
from attn_cli.run.request import DROPOUT_SEED_HELP, RUN_SETTING_HELP, request_for, run_settings


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


def _brief(walkthrough: Walkthrough, *, weights: bool = False) -> Walkthrough:
    """w.brief(): the brief walkthrough (imported when asked for)."""
    from attn_cli.core.brief import brief

    return brief(walkthrough, weights=weights)


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


# The data model imports no renderer: its hooks (w.to_markdown(), w.plot()...) are handed this,
# and w.brief() the brief walkthrough's maker.
Walkthrough._render = staticmethod(_show)
Walkthrough._brief = staticmethod(_brief)

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
    run_lesson.__doc__ = docstring(call, order)
    return run_lesson


def docstring(call: Card, order: list[str]) -> str:
    """The docstring of lesson ``call``'s function: what it shows, then every keyword with what
    it means and its default, from the card and the run settings the command's help is made
    from (each parameter a help names spelt as a keyword)."""
    import textwrap

    from attn_cli.lessonfiles.loader import load_bundled

    def entry(keyword: str, text: str) -> str:
        return textwrap.fill(
            help_words(text), 88, initial_indent=f"    {keyword}: ", subsequent_indent=" " * 8
        )

    def paragraph(text: str) -> str:
        return textwrap.fill(" ".join(help_words(text).split()), 88)

    lines = [paragraph(call.summary)]
    if call.details:
        lines += ["", paragraph(call.details)]
    lines += [
        "",
        paragraph(
            f"The Python form of `attn {call.name}`: it returns the Walkthrough (w.view() shows "
            "it as the terminal does, print(w) prints its text; see docs/api.md). A mistake in "
            "what is asked raises attn_cli.UserError, naming the keywords given."
        ),
    ]
    specs = {spec.keyword: spec for spec in call.inputs}
    if order:
        by_position = f"; by position: {', '.join(call.positional)}" if call.positional else ""
        lines += [
            "",
            f'Inputs (arrays, nested lists, tensors, or text such as "1,0;0,1"{by_position}):',
            *(entry(key, specs[key].help or specs[key].description) for key in order),
        ]
    options = [option for option in call.options if option.lesson]
    if options:
        lines += ["", "Options:", *(entry(option.name, option.help_text()) for option in options)]
    if call.sizes:
        lines += [
            "",
            "Sizes of random inputs (giving one draws every input not given):",
            *(
                entry(size.name, size.help_text().removeprefix("Random inputs: "))
                for size in call.sizes
            ),
        ]
    settings = run_settings(call)
    helps = {**RUN_SETTING_HELP, "time": help_words(RUN_SETTING_HELP["time"], runs=str(TIMED_RUNS))}
    examples = [example.name for example in load_bundled(call.name).examples]
    if examples:
        helps["example"] += (
            f" One of: {', '.join(examples)}; None: the lesson's default example, or the inputs and sizes given."
        )
    if "seed" in settings and any(option.name == "dropout" for option in options):
        helps["seed"] = DROPOUT_SEED_HELP
    lines += [
        "",
        "Run settings:",
        *(
            entry(
                key,
                helps[key] if "(default:" in helps[key] else f"{helps[key]} (default: {default!r})",
            )
            for key, default in settings.items()
        ),
    ]
    return "\n".join(lines)


def mark(walkthrough: Walkthrough, answers: dict[str, Any]) -> Any:
    """Mark a student's working against ``walkthrough``, as an examiner marks it.

    ``answers`` maps a step's key to the student's matrix for it: text as written on paper
    (``"0.7071, 0; 1.4142, 0.7071"``: each number held to the decimals it is written with),
    nested lists or an array (each number as Python writes it, 0.7071 to four decimals). Each
    wrong row is diagnosed: the mistake its numbers show ("these are the scores before dividing
    by √d_k = √2 = 1.4142"), or right for the student's own wrong answer to the step it is
    computed from (error carried forward). Returns a Marking: ``print(marking)`` reads row by
    row, ``marking.rows`` holds each row's verdict, ``marking.right`` and ``marking.followed``
    count them.

        w = attn.scaled(q="1,0;0,1", k="1,1;2,0", v="0.1,0.2;0.3,0.4")
        print(attn.mark(w, {"scaled": "1, 2; 1, 0"}))
    """
    from attn_cli import course
    from attn_cli.core.errors import UserError
    from attn_cli.course import mistakes

    if not course.is_lesson(walkthrough.lesson):
        raise UserError(f"a {walkthrough.lesson} walkthrough has no steps to mark.")
    keys = [step.key for step in walkthrough.steps]
    written = {}
    for key, answer in answers.items():
        if key not in keys:
            raise UserError(
                f"answers[{key!r}]: the {walkthrough.lesson} walkthrough has no step {key!r}; "
                f"its steps are: {', '.join(keys)}."
            )
        written[key] = _written_rows(key, answer, walkthrough.find(key).value)
    steps = course.mistakes_of(walkthrough.lesson)
    return mistakes.mark(steps, walkthrough, written, card(walkthrough.lesson).precision)


def _written_rows(key: str, answer: Any, exact: Any) -> list[list[Any]]:
    """A student's answer to step ``key`` as rows of written numbers (core.rounding.Rounded),
    the shape of the step's value ``exact``."""
    import numpy as np

    from attn_cli.core.errors import UserError
    from attn_cli.core.slides import written_rows

    where = f"answers[{key!r}]"
    if not isinstance(answer, str):  # each number as Python writes it: 0.7071, four decimals
        array = np.asarray(answer, dtype=object)
        array = array.reshape(1, -1) if array.ndim < 2 else array
        answer = "; ".join(", ".join(repr(float(v)) for v in row) for row in array.tolist())
    rows = written_rows(answer, where, "your numbers")
    shape = np.shape(exact) if np.ndim(exact) >= 2 else (1, int(np.size(exact)))
    if (len(rows), len(rows[0])) != tuple(shape):
        raise UserError(
            f"{where} is {len(rows)} × {len(rows[0])}, where step {key!r} is {shape[0]} × {shape[1]}; give every row."
        )
    return rows
