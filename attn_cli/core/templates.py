"""Lesson texts with placeholders: ``"Each row sums to 1 over the {n} keys."``

Lesson files are user input (a lecturer's own file, or one downloaded), so a text is not handed
to ``str.format``, which would allow attribute and index access (``{n.__class__}``), conversions
and unbounded widths. One mechanism checks a text when its file is loaded (the forms allowed
here; the names, against what the lesson declares it hands over, in
:func:`attn_cli.lessonfiles.loader.check_texts`) and again when it is filled.

A text names a parameter of the lesson as ``{@seed}``, or as given, ``{@steps=3}``,
``{@scale=False}``: each door spells it its own way (``seed=``/``--seed``, ``steps=3``/``--steps
3``, ``scale=False``/``--no-scale``), when the text enters a walkthrough
(:func:`spell_parameters`, with the door of the run). A text never writes a flag.
"""

from __future__ import annotations

import numbers
import re
import string
from collections.abc import Iterable, Mapping
from typing import Any

from attn_cli.core.errors import PYTHON, Door, UserError, written_param


def fill(
    template: str,
    context: Mapping[str, Any] | None,
    where: str = "lesson text",
    *,
    precision: int | None = None,
) -> str:
    """Fill the ``{name}`` and ``{name:spec}`` placeholders of a lesson text.

    A lesson file is user input, so this is not ``str.format``: a placeholder reads one of the
    values the lesson hands over (``context``) and nothing else (no ``{n.attr}``, ``{n[0]}`` or
    ``{n!r}``), and a spec has a bounded width and precision. Anything else is a UserError that
    names the file and field (``where``) and the placeholder.

    With ``precision`` (a renderer filling a note), a plain ``{name}`` holding a float is
    written as the tables write a number, with ``precision`` decimals; a spec is kept as written.
    """
    context = context or {}
    pieces = []
    for literal, name, spec, _ in template_fields(template, where):
        pieces.append(literal)
        if name is None:
            continue
        if name.startswith("@"):  # a text no door spelt (spell_parameters) reads as Python's
            pieces.append(PYTHON.words(written_param(name[1:])))
            continue
        if name not in context:
            raise unknown_placeholder(name, context, where)
        value = context[name]
        if not spec and isinstance(value, numbers.Integral) and not isinstance(value, bool):
            from attn_cli.core.numbers import whole_text  # grouped as the tables group it

            pieces.append(whole_text(int(value)))
            continue
        if precision is not None and not spec and isinstance(value, float):
            from attn_cli.core.numbers import format_number  # the tables' own rule

            pieces.append(format_number(value, precision))
            continue
        try:
            pieces.append(format(value, spec))
        except (ValueError, TypeError):
            raise UserError(
                f"{where}: placeholder {{{name}:{spec}}}: the format {spec!r} does not apply to "
                f"{context[name]!r}; write {{{name}}}."
            ) from None
    return "".join(pieces)


def unknown_placeholder(name: str, known: Iterable[str], where: str) -> UserError:
    """The error for a placeholder ``{name}`` that is not one of the ``known`` names."""
    listed = ", ".join(f"{{{key}}}" for key in sorted(known)) or "none"
    return UserError(
        f"{where}: unknown placeholder {{{name}}}; the placeholders here are: {listed} "
        "(write {{ and }} for a literal brace)."
    )


# A parameter a lesson text names, {@keyword} or {@keyword=value}: a value of letters, digits and
# . , ' _ - (3, False, 'cat-slept', FILE), no brace or space. Not inside a literal {{ }}.
_PARAMETER_FIELD = r"@[A-Za-z_]\w*(?:=[\w.,'-]+)?"
_PARAMETER = re.compile(r"(?<!\{)\{(" + _PARAMETER_FIELD + r")\}")


def spell_parameters(text: str, door: Door) -> str:
    """``text`` (a step's words, a note, an intro, an example's description) with each
    parameter it names, ``{@seed}`` or ``{@steps=3}``, spelt by ``door``."""
    if "{@" not in text:
        return text
    return _PARAMETER.sub(lambda found: door.words(written_param(found.group(1)[1:])), text)


# A format spec a lesson text may use: align, sign, width and precision of at most two digits
# each, and a number type (e.g. ">6", ".3f", "+.2e").
_SAFE_SPEC = re.compile(r"(?:[^{}]?[<>^=])?[+\- ]?\d{0,2},?(?:\.\d{1,2})?[deEfFgGn%]?")


def template_fields(template: str, where: str) -> list[tuple[str, str | None, str, None]]:
    """Parse a lesson text into (literal, placeholder name, spec, None) pieces, refusing every
    placeholder form but ``{name}`` and ``{name:spec}``."""
    if "{" not in template and "}" not in template:
        return [(template, None, "", None)]
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        raise UserError(
            f"{where}: a brace that is not a placeholder in {template[:60]!r} ({error}); write "
            "{{ and }} for a literal brace."
        ) from None
    fields: list[tuple[str, str | None, str, None]] = []
    for literal, name, spec, conversion in parsed:
        if name is None:
            fields.append((literal, None, "", None))
            continue
        written = "{" + name + (f"!{conversion}" if conversion else "")
        written += (f":{spec}" if spec else "") + "}"
        if name.startswith("@"):
            if spec or conversion or not re.fullmatch(_PARAMETER_FIELD, name):
                raise UserError(
                    f"{where}: {written} names a parameter in a form not allowed; write "
                    "{@keyword} or {@keyword=value} (e.g. {@seed}, {@steps=3}, {@scale=False})."
                )
            fields.append((literal, name, "", None))
            continue
        if not name.isidentifier() or conversion or not _SAFE_SPEC.fullmatch(spec or ""):
            raise UserError(
                f"{where}: placeholder {written} is not allowed; write a plain {{name}} or "
                "{name:spec} with a width and precision of at most two digits (e.g. {dk:.3f})."
            )
        fields.append((literal, name, spec or "", None))
    return fields
