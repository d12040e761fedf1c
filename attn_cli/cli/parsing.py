"""How the command line takes its values: plainly where Typer's coercion would change nothing,
the ranges in attn's words, and click's UsageError as Typer's public API gives it.

What Typer lacks: Typer 0.29 coerces every option's value at parse time, given or not, through a
pydantic TypeAdapter that it builds for the option on first use (its
``_TyperParameter.get_runtime_param``, called before it looks at the value). `attn scaled`
builds 30 of them to get back each option's default unchanged: the first imports pydantic
(about 120 ms), each after it costs 1 to 3 ms, and start-up was 1.29x the minimal Typer app
(benchmarks/startup.py; the target is 1.2x). There is no public way to skip it.

So each parameter's value is taken as it is where coercing it could change nothing: an absent
option (None), a default already of the option's declared type, text for a text option, a
plain whole number or decimal for a number option, and a choice typed exactly. Anything else (a
misspelt choice, a number in another notation, a file) goes to Typer, which coerces it or
refuses it in its own words, as before. This is done in click's documented hook,
``Parameter.process_value`` (coerce, check a required value, run the callback), and the type is
read from the command's own signature (attn_cli.cli.options declares it; inspect follows
Typer's wrapper to it): no internal of Typer's is read. The ranges are the options' callbacks
(in_range, below), which run here as they do in Typer.

Usage errors: Typer re-exports click's BadParameter (``typer.BadParameter``), which click
documents as a UsageError; Typer does not re-export UsageError itself, so it is found here as
BadParameter's base, with no import of the copy of click that Typer runs on.
"""

from __future__ import annotations

import enum
import functools
import inspect
import re
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from attn_cli.core.whole import whole_digits

# click's Context, of the copy of click Typer runs on: Typer gives it no public name (typer.Context
# is a subclass, which an override of click's own methods may not narrow to), so it is typed
# loosely here and in the command classes that take one.
Context = Any

if TYPE_CHECKING:
    # A type checker needs only what every UsageError has (format_message), which its public
    # subclass has too; at run time the class caught is click's UsageError itself.
    from typer import BadParameter as UsageError
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


_COERCE = object()  # plain()'s answer for a value that Typer must coerce
# Short enough that int() never meets Python's limit on digits (Typer refuses more, in its words).
_PLAIN_NUMBER = re.compile(r"-?[0-9]{1,15}(\.[0-9]{0,15})?")


def plain_parsing(callback: Callable[..., Any] | None, params: list[Any]) -> list[Any]:
    """``params`` (a command's, as click's get_params returns them), each parsing its plain
    values without Typer's coercion. A parameter whose type the signature of ``callback`` does
    not give as one plain type is left to Typer."""
    types_of = declared_types(callback)
    for param in params:
        if "process_value" in vars(param):
            continue  # wrapped already: a command's parameters are asked for again and again
        declared = types_of.get(param.name or "")
        if declared is None and getattr(param, "is_flag", False):
            declared = bool  # a flag Typer adds itself (--help, --install-completion)
        if declared is None or param.nargs != 1:
            continue
        if getattr(param, "multiple", False):
            continue
        param.process_value = functools.partial(  # click's documented hook, per parameter
            _process_value, param, declared, param.process_value
        )
    return params


@functools.cache
def _signature_types(callback: Callable[..., Any]) -> dict[str, type]:
    try:
        signature = inspect.signature(callback, eval_str=True)
    except (NameError, TypeError, ValueError):  # an annotation that cannot be read: Typer's
        return {}
    found = {}
    for name, parameter in signature.parameters.items():
        declared = _plain_type(parameter.annotation)
        if declared is not None:
            found[name] = declared
    return found


def declared_types(callback: Callable[..., Any] | None) -> dict[str, type]:
    """Each parameter's declared type, where it is one plain type (``int``, ``Annotated[int,
    typer.Option(...)]``, ``int | None``, an Enum, a Path: taken plainly only when absent);
    none for the others."""
    return {} if callback is None else _signature_types(callback)


def _plain_type(annotation: Any) -> type | None:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        others = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        annotation = others[0] if len(others) == 1 else None
    if isinstance(annotation, type) and (
        annotation in (str, int, float, bool, Path) or issubclass(annotation, enum.Enum)
    ):
        return annotation
    return None


def _process_value(
    param: Any, declared: type, typer_process_value: Callable[..., Any], ctx: Context, value: Any
) -> Any:
    """What Typer's process_value does (coerce, check a required value, run the callback),
    coercing plainly where nothing can change."""
    taken = _COERCE if param.required else plain(declared, value, lambda: _from_default(param, ctx))
    if taken is _COERCE:
        return typer_process_value(ctx, value)
    return taken if param.callback is None else param.callback(ctx, param, taken)


def plain(declared: type, value: Any, is_default: Callable[[], bool]) -> Any:
    """What Typer's coercion to ``declared`` would make of ``value``, where that is plain; else
    _COERCE. ``is_default``: whether the value is the option's default (declared by attn, of
    its type), asked only where it matters."""
    if value is None:  # an absent option
        return None
    if type(value) is declared:  # text typed for text, or a default of the option's type
        return value if declared is str or is_default() else _COERCE
    if type(value) is not str:
        return _COERCE
    if issubclass(declared, enum.Enum):
        return next((member for member in declared if member.value == value), _COERCE)
    if declared in (int, float) and _PLAIN_NUMBER.fullmatch(value):
        if declared is int and "." in value:
            return _COERCE
        return declared(value)
    return _COERCE


def _from_default(param: Any, ctx: Context | None) -> bool:
    """Whether the parameter's value is its default (click's ParameterSource.DEFAULT, by name:
    the enum lives in the copy of click that Typer runs on)."""
    if ctx is None or param.name is None:
        return False
    source = ctx.get_parameter_source(param.name)
    return getattr(source, "name", None) == "DEFAULT"
