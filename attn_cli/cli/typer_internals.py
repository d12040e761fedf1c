"""What attn relies on inside Typer, all of it here and nowhere else.

The rest of the command line keeps to public API: it subclasses typer.core.TyperCommand and
TyperGroup (the extension points Typer documents for ``cls=``), overrides click's documented
methods on them (get_params, make_context, invoke), and reads click's documented attributes
(a parameter's name, opts, metavar, nargs, required, callback). What it cannot get that way, the
help shown as a student reads it and a start-up without pydantic, it gets from this module.

Written against the Typers from pyproject.toml's lower bound on typer (0.29.0, the release that
moved coercion to pydantic and gave each parameter its type_descriptor; .ci/run tests it) up to
TYPER_UNCHECKED (not included). tests/test_typer_internals.py fails, naming the internal and the
version, on a Typer outside that range or on one where any internal below is missing or behaves
otherwise. The command line itself never fails for it: where an internal is missing, the
functions here leave the parameter as Typer made it, so the help and the parsing are Typer's own
(slower to start, in Typer's wording), never a traceback.

The internals, and why each is needed:

- ``param.type_descriptor`` on TyperOption and TyperArgument (typer._coercion.TypeDescriptor):
  ``.annotation`` (the parameter's Python type), ``.is_choice``, ``.choices``, ``.is_path``, and
  ``.parameter_info``, what ``typer.Option(...)`` was given (``.parser``, ``.case_sensitive``,
  ``.clamp``, ``.min``, ``.max``). Read to show what is typed (N, X, FILE, the choices) and to
  tell a value that needs no coercion.
- ``param.display_type(ctx)``: Typer's ``<a|b|c>`` for a choice, spaced out here.
- ``param.display_type_rich``: the method Typer's rich help calls for the type column, replaced
  on an argument (whose type column ignores its metavar).
- ``TyperOption.min`` and ``.max``: since 0.29 only shown (``[x>=0]``), the value being checked
  through parameter_info; cleared for the help.
- ``param.process_value(ctx, value)``: click's documented hook, but what it does is Typer 0.29's
  (coerce through a pydantic TypeAdapter built on first use, check a required value, run the
  callback); the wrapper below does the same for the values that need no coercion.
- The copy of click that Typer runs on (``typer._click`` since Typer 0.26, click itself before):
  no import of it at run time. Its UsageError is found as a base of the public
  ``typer.BadParameter`` (click documents BadParameter as a UsageError); a parameter's
  ParameterSource is compared by name. Type hints alone import from it.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperArgument, TyperOption

# The first Typer release this module has not been checked against. The oldest it was written
# against is pyproject.toml's lower bound on typer, in one place there. On a Typer outside the two
# the test fails until each internal above has been checked again.
TYPER_UNCHECKED: tuple[int, int, int] = (0, 30, 0)

# What a parameter's type_descriptor.parameter_info must carry for a value to skip coercion.
PARAMETER_INFO_FIELDS = ("parser", "case_sensitive", "clamp", "min", "max")


def typer_version() -> tuple[int, ...]:
    """The installed Typer's version as numbers (0.29.2 -> (0, 29, 2))."""
    return tuple(int(part) for part in re.findall(r"[0-9]+", typer.__version__)[:3])


class _NoUsageError(Exception):
    """Stands for UsageError on a Typer whose BadParameter has none: caught nowhere, so that
    Typer shows its own usage box."""


def _usage_error() -> type[Exception]:
    """click's UsageError, from the copy Typer runs on, without importing that copy."""
    bases = typer.BadParameter.__mro__
    return next((base for base in bases if base.__name__ == "UsageError"), _NoUsageError)


if TYPE_CHECKING:
    from typer._click.core import Context as Context
    from typer._click.exceptions import UsageError as UsageError
else:
    UsageError = _usage_error()


def descriptor_of(param: Any) -> Any:
    """The parameter's type_descriptor, or None (a Typer without one)."""
    return getattr(param, "type_descriptor", None)


def choices_of(param: Any) -> tuple[Any, ...]:
    """The choices of a parameter, as Typer offers them (none where it has none)."""
    return tuple(getattr(descriptor_of(param), "choices", None) or ())


def for_help(params: list[Any], ctx: Context) -> list[Any]:
    """Parameters as the help should show them (parsing is unaffected):

    - an on/off option as the flag it is: Typer's rich help gives every boolean option a
      `<bool>` type, which reads as if `--full true` were accepted (it is not); an empty
      metavar leaves the type column of a flag blank;
    - the choices of an option with spaces between them, `<float64 | float32 | bfloat16>`, so
      that a narrow terminal wraps the list between choices, never inside one (`bfl` `oat16>`);
    - an argument that takes several values as what is typed, `FILE...`: Typer shows the
      Python annotation, `<list[Path]>`, in the type column; one that takes a single named
      value (`LESSON`) with nothing there, since its name already says what is typed (Typer:
      `<str>`), or its choices if it has them (`TASK  <translate | induction>`);
    - a number as what is typed, `N` (a whole number) or `X`, not `<int range> [x>=0]`: where
      the range matters the option's help says it in words (the parser still checks it);
    - a file as `FILE`, not `<file>`.
    """
    for param in params:
        if isinstance(param, TyperArgument):
            _argument_for_help(param, ctx)
        elif isinstance(param, TyperOption):
            _option_for_help(param, ctx)
    return params


def _argument_for_help(param: Any, ctx: Context) -> None:
    if not param.metavar or not hasattr(param, "display_type_rich"):
        return
    if param.nargs != 1:
        shown = f"{param.metavar}..."
    elif getattr(descriptor_of(param), "is_choice", False) and hasattr(param, "display_type"):
        shown = param.display_type(ctx).replace("|", " | ")
    else:
        shown = ""
    param.display_type_rich = _shown_as(shown)


def _option_for_help(param: Any, ctx: Context) -> None:
    descriptor = descriptor_of(param)
    info = _parameter_info(descriptor)
    if info is not None and hasattr(param, "min") and hasattr(param, "max"):
        # The range is checked through parameter_info; the option's own min and max only say
        # it in the help, `[x>=0]`, which is not what a student reads.
        param.min = param.max = None
    if param.metavar is not None:
        return
    if param.is_flag:
        param.metavar = ""
    elif getattr(descriptor, "is_choice", False) and hasattr(param, "display_type"):
        param.metavar = param.display_type(ctx).replace("|", " | ")
    else:
        param.metavar = _typed_as(descriptor)


def _typed_as(descriptor: Any) -> str | None:
    """What to type for a number or a file (None: Typer's own type, which the help test flags)."""
    if getattr(descriptor, "is_path", False):
        return "FILE"
    annotation = getattr(descriptor, "annotation", None)
    if annotation is int:
        return "N"
    if annotation is float:
        return "X"
    return None


def _shown_as(text: str) -> Callable[[Context], str]:
    """A parameter's display_type_rich that shows ``text`` in the help's type column."""

    def display_type_rich(ctx: Context) -> str:
        return text

    return display_type_rich


def skip_idle_coercion(params: list[Any]) -> list[Any]:
    """Parse without the coercions that would change nothing, or that need no machinery.

    Typer 0.29 coerces every option's value at parse time, given or not, through a pydantic
    TypeAdapter that it builds for the option on first use: `attn scaled` built 26 of them (the
    first one importing pydantic, about 50 ms; about 1 ms each after it) to get back each
    option's default unchanged. An absent option (None), a default already of the option's
    type, text typed for a text option (a matrix), a whole number or a decimal within the
    option's range, and a choice typed exactly, are now taken as they are (:func:`_plainly`);
    anything else (a number out of range, a misspelt choice, a file) goes to Typer, which
    coerces it, or refuses it with its own message, as before. A parameter without the
    internals this needs is left to Typer.
    """
    for param in params:
        if "process_value" in vars(param) or not isinstance(param, TyperOption | TyperArgument):
            continue  # wrapped already (a command's parameters are asked for again and again)
        info = _parameter_info(descriptor_of(param))
        if info is not None:
            param.process_value = functools.partial(  # type: ignore[method-assign]
                _process_value, param, info, param.process_value
            )
    return params


def _parameter_info(descriptor: Any) -> Any:
    """The descriptor's parameter_info, or None where it, or a field read here, is missing."""
    info = getattr(descriptor, "parameter_info", None)
    if info is None or not hasattr(descriptor, "annotation"):
        return None
    for field in PARAMETER_INFO_FIELDS:  # a loop, not all(...): every parsed value asks
        if not hasattr(info, field):
            return None
    return info


_TYPER = object()  # _plainly's answer for a value that Typer must coerce
# Short enough that int() never meets Python's limit on digits (Typer refuses more, in its words).
_PLAIN_NUMBER = re.compile(r"-?[0-9]{1,15}(\.[0-9]{0,15})?")


def _process_value(
    param: Any, info: Any, typer_process_value: Callable[..., Any], ctx: Context, value: Any
) -> Any:
    """Typer's process_value (coerce, check required, run the callback), coercing plainly
    where it can (``info``: the parameter's parameter_info, as skip_idle_coercion found it)."""
    coerced = _TYPER if param.required else _plainly(param, ctx, value, info)
    if coerced is _TYPER:
        return typer_process_value(ctx, value)
    return coerced if param.callback is None else param.callback(ctx, param, coerced)


def _plainly(param: Any, ctx: Context | None, value: Any, info: Any = None) -> Any:
    """What Typer's coercion would make of ``value``, where that is plain; else _TYPER.
    ``info``: the parameter's parameter_info, where already found."""
    if value is None:  # an absent option
        return () if param.multiple or param.nargs == -1 else None
    descriptor = descriptor_of(param)
    if info is None:
        info = _parameter_info(descriptor)
    if info is None or info.parser is not None or param.multiple or param.nargs != 1:
        return _TYPER
    annotation = descriptor.annotation
    if not isinstance(annotation, type):
        return _TYPER
    if type(value) is annotation:  # text typed for text, or a default of the option's type
        if annotation is str:
            return value
        return value if _from_default(param, ctx) else _TYPER
    if type(value) is not str:
        return _TYPER
    if issubclass(annotation, enum.Enum) and info.case_sensitive:
        return next((member for member in annotation if member.value == value), _TYPER)
    if annotation in (int, float) and not info.clamp and _PLAIN_NUMBER.fullmatch(value):
        if annotation is int and "." in value:
            return _TYPER
        number = annotation(value)
        below = info.min is not None and number < info.min
        above = info.max is not None and number > info.max
        return _TYPER if below or above else number
    return _TYPER


def _from_default(param: Any, ctx: Context | None) -> bool:
    """Whether the parameter's value is its default (click's ParameterSource.DEFAULT, by name:
    the enum lives in the copy of click that Typer runs on)."""
    if ctx is None or param.name is None:
        return False
    source = ctx.get_parameter_source(param.name)
    return getattr(source, "name", None) == "DEFAULT"
