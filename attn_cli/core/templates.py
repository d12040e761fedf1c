"""Lesson texts with placeholders: ``"Each row sums to 1 over the {n} keys."``

Lesson files are user input (a lecturer's own file, or one downloaded), so a text is not handed
to ``str.format``, which would allow attribute and index access (``{n.__class__}``), conversions
and unbounded widths. One mechanism checks a text when its file is loaded (the forms allowed
here; the names, against what the lesson declares it hands over, in
:func:`attn_cli.lessonfiles.loader.check_texts`) and again when it is filled.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from typing import Any

from attn_cli.core.errors import UserError


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
        if name not in context:
            raise unknown_placeholder(name, context, where)
        value = context[name]
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
        if not name.isidentifier() or conversion or not _SAFE_SPEC.fullmatch(spec or ""):
            raise UserError(
                f"{where}: placeholder {written} is not allowed; write a plain {{name}} or "
                "{name:spec} with a width and precision of at most two digits (e.g. {dk:.3f})."
            )
        fields.append((literal, name, spec or "", None))
    return fields
