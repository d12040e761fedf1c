"""attn_cli/cli/typer_internals.py reaches into Typer, and nothing else does. Each internal it
relies on is checked here, on the installed Typer: a Typer it was not written against fails
loudly, naming the internal and the version (the command line itself falls back to Typer's own
help and parsing, which the last tests show)."""

from __future__ import annotations

import inspect
import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import pytest
import typer
import typer.main
from typer.core import TyperArgument, TyperOption
from typer.testing import CliRunner

import attn_cli.cli.typer_internals as internals
from attn_cli.cli.app import AttnCommand

PACKAGE = Path(internals.__file__).resolve().parent.parent
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
WHERE = "attn_cli/cli/typer_internals.py"
TYPER = f"Typer {typer.__version__}"


class Colour(StrEnum):
    red = "red"
    blue = "blue"


def _tiny(
    colour: Annotated[Colour, typer.Option("--colour")] = Colour.red,
    count: Annotated[int, typer.Option("--count", min=0)] = 0,
    names: Annotated[list[str] | None, typer.Argument(metavar="NAME")] = None,
) -> None:
    """A command with a choice, a number with a range and an argument of several values."""
    print(f"{colour.value} {count}")


def _tiny_command(cls: type | None = None) -> typer.Typer:
    app = typer.Typer(rich_markup_mode="rich")
    app.command(cls=cls)(_tiny)
    return app


def _params() -> dict[str, TyperOption | TyperArgument]:
    command = typer.main.get_command(_tiny_command())
    return {param.name: param for param in command.params if param.name}  # type: ignore[misc]


def oldest_typer() -> tuple[int, ...]:
    """The lower bound pyproject.toml sets on typer (typer>=0.29 -> (0, 29, 0)): the oldest Typer
    the module was written against, and the one .ci/run installs to test it."""
    dependencies = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    bounds = [re.fullmatch(r"typer>=([0-9]+(?:\.[0-9]+)*)", dep) for dep in dependencies]
    found = [bound[1] for bound in bounds if bound]
    assert len(found) == 1, f"pyproject.toml: no single typer>=X among {dependencies}"
    numbers = tuple(int(part) for part in found[0].split("."))
    return (*numbers, 0, 0, 0)[:3]


def test_the_installed_typer_is_one_this_module_was_written_against():
    low, high = oldest_typer(), internals.TYPER_UNCHECKED
    shown = f"{'.'.join(map(str, low))} up to {'.'.join(map(str, high))}, not included"
    assert low <= internals.typer_version(), (
        f"{TYPER} is older than pyproject.toml's lower bound on typer ({shown}): "
        f"{WHERE} needs what that release brought"
    )
    assert internals.typer_version() < high, (
        f"{TYPER} is newer than the releases {WHERE} was written against ({shown}): check each "
        "internal its docstring lists against this Typer (the tests below), then raise "
        "TYPER_UNCHECKED"
    )


@pytest.mark.parametrize("name", ["colour", "count", "names"])
def test_each_parameter_has_a_type_descriptor(name):
    param = _params()[name]
    descriptor = internals.descriptor_of(param)
    assert descriptor is not None, f"{TYPER}: {type(param).__name__}.type_descriptor is gone"
    for attribute in ("annotation", "is_choice", "choices", "is_path", "parameter_info"):
        assert hasattr(descriptor, attribute), (
            f"{TYPER}: {type(param).__name__}.type_descriptor.{attribute} is gone ({WHERE})"
        )
    for field in internals.PARAMETER_INFO_FIELDS:
        assert hasattr(descriptor.parameter_info, field), (
            f"{TYPER}: type_descriptor.parameter_info.{field} is gone ({WHERE})"
        )


def test_the_type_descriptor_says_what_is_typed():
    params = _params()
    colour, count = (
        internals.descriptor_of(params["colour"]),
        internals.descriptor_of(params["count"]),
    )
    message = f"{TYPER}: type_descriptor no longer describes the parameter as {WHERE} reads it"
    assert colour is not None and count is not None, message
    assert colour.annotation is Colour and colour.is_choice, message
    assert tuple(colour.choices) == (Colour.red, Colour.blue), message
    assert count.annotation is int and not count.is_choice and not count.is_path, message
    assert (count.parameter_info.min, count.parameter_info.max) == (0, None), message
    assert internals.choices_of(params["colour"]) == (Colour.red, Colour.blue), message


def test_display_type_writes_choices_between_bars():
    command = typer.main.get_command(_tiny_command())
    ctx = typer.Context(command)
    param = _params()["colour"]
    assert hasattr(param, "display_type"), f"{TYPER}: TyperOption.display_type is gone ({WHERE})"
    assert param.display_type(ctx) == "<red|blue>", (
        f"{TYPER}: TyperOption.display_type(ctx) writes {param.display_type(ctx)!r} for a "
        f"choice, not '<red|blue>' ({WHERE} spaces it out)"
    )


def test_the_help_reads_display_type_rich_and_the_range_from_min_and_max():
    """Typer's own help, then ours: its type column is display_type_rich (an argument's ignores
    the metavar), its range is the option's min and max."""
    for attribute in ("display_type_rich", "min", "max"):
        assert all(hasattr(param, attribute) for param in _params().values()), (
            f"{TYPER}: the parameters have no {attribute} ({WHERE})"
        )
    typers = _help(_tiny_command())
    assert "<list[str]>" in typers and "x>=0" in typers, (
        f"{TYPER}: its help no longer shows the type and range {WHERE} replaces:\n{typers}"
    )
    ours = _help(_tiny_command(AttnCommand))
    assert "NAME..." in ours and "<red | blue>" in ours and "--count" in ours, ours
    assert "<list[str]>" not in ours and "x>=0" not in ours and "<int" not in ours, (
        f"{TYPER}: the help no longer takes display_type_rich, metavar, min and max from the "
        f"parameter as {WHERE} sets them:\n{ours}"
    )


def _help(app: typer.Typer) -> str:
    result = CliRunner().invoke(app, ["--help"], terminal_width=100, env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_min_and_max_only_show_the_range_the_parameter_info_checks():
    """Cleared for the help, the range is still refused (parameter_info checks it)."""
    refused = CliRunner().invoke(_tiny_command(AttnCommand), ["--count", "-1"])
    assert refused.exit_code == 2 and "--count" in refused.output, (
        f"{TYPER}: with TyperOption.min and .max cleared ({WHERE}), --count -1 is no longer "
        f"refused:\n{refused.output}"
    )


def test_process_value_is_typers_coercion_hook():
    """The hook the fast path wraps: process_value(ctx, value), coercing through pydantic,
    checking a required value, running the callback."""
    param = _params()["count"]
    signature = inspect.signature(param.process_value)
    assert list(signature.parameters) == ["ctx", "value"], (
        f"{TYPER}: TyperOption.process_value{signature} is not (ctx, value) ({WHERE})"
    )
    ctx = typer.Context(typer.main.get_command(_tiny_command()))
    assert param.process_value(ctx, "3") == 3, f"{TYPER}: process_value no longer coerces"
    assert param.process_value(ctx, None) is None, f"{TYPER}: process_value(None) is not None"
    with pytest.raises(internals.UsageError):
        param.process_value(ctx, "-1")
    param.callback = lambda ctx, param, value: value * 2
    assert param.process_value(ctx, "3") == 6, f"{TYPER}: process_value runs no callback"


def test_the_fast_path_is_installed_on_attns_commands():
    """Not silently left to Typer (which still works, but imports pydantic at start-up)."""
    command = typer.main.get_command(_tiny_command(AttnCommand))
    ctx = typer.Context(command)
    wrapped = [p.name for p in command.get_params(ctx) if "process_value" in vars(p)]
    assert set(wrapped) >= {"colour", "count", "names"}, (
        f"{TYPER}: {WHERE} left these to Typer's coercion: "
        f"{sorted({'colour', 'count', 'names'} - set(wrapped))}"
    )
    result = CliRunner().invoke(_tiny_command(AttnCommand), ["--colour", "blue", "--count", "2"])
    assert (result.exit_code, result.stdout) == (0, "blue 2\n"), result.output


def test_usage_error_is_the_base_of_typers_bad_parameter_and_what_its_parser_raises():
    assert internals.UsageError is not internals._NoUsageError, (
        f"{TYPER}: typer.BadParameter has no UsageError among its bases "
        f"({[base.__name__ for base in typer.BadParameter.__mro__]}); {WHERE} catches none"
    )
    command = typer.main.get_command(_tiny_command())
    for args in (["--bogus"], ["--colour", "green"], ["--count"]):
        with pytest.raises(internals.UsageError):
            command.make_context("tiny", args)


def test_a_parameter_source_is_named_default_or_commandline():
    command = typer.main.get_command(_tiny_command())
    ctx = command.make_context("tiny", ["--count", "2"])
    sources = {name: ctx.get_parameter_source(name) for name in ("colour", "count")}
    names = {name: getattr(source, "name", None) for name, source in sources.items()}
    assert names == {"colour": "DEFAULT", "count": "COMMANDLINE"}, (
        f"{TYPER}: ctx.get_parameter_source(name) gives {sources}, not ParameterSource.DEFAULT "
        f"and .COMMANDLINE ({WHERE} compares the name)"
    )


# Where the rest of the package would be reaching into Typer: its copy of click, click itself,
# an internal this module reads, or typer.core beyond the two classes Typer documents for `cls=`.
REACHING_IN = re.compile(
    r"typer\._[a-z]|typer\.models|^\s*(from|import) click\b|type_descriptor|parameter_info|"
    r"display_type|process_value|TyperOption|TyperArgument",
    re.MULTILINE,
)
FROM_TYPER_CORE = re.compile(r"^\s*from typer\.core import (.+)$", re.MULTILINE)
PUBLIC_IN_TYPER_CORE = {"TyperCommand", "TyperGroup"}


def test_no_other_module_reaches_into_typer():
    reaching = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "typer_internals.py":
            continue
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(PACKAGE.parent)
        reaching += [f"{where}: {match.group(0)}" for match in REACHING_IN.finditer(text)]
        for names in FROM_TYPER_CORE.findall(text):
            beyond = {name.strip() for name in names.split(",")} - PUBLIC_IN_TYPER_CORE
            reaching += [f"{where}: typer.core.{name}" for name in sorted(beyond)]
    assert reaching == [], f"only {WHERE} may reach into Typer: {reaching}"


def test_a_typer_without_the_internals_gets_typers_own_behaviour(monkeypatch):
    """Each internal gone: the parameters are left as Typer made them, and the command line
    still parses (Typer's coercion) and still shows its help (Typer's types)."""
    params = _params()
    for param in params.values():
        monkeypatch.delattr(param, "type_descriptor", raising=False)
    internals.skip_idle_coercion(list(params.values()))
    assert not any("process_value" in vars(param) for param in params.values())
    assert internals._plainly(params["count"], None, "3") is internals._TYPER
    internals.for_help(list(params.values()), None)  # type: ignore[arg-type]
    assert getattr(params["count"], "min", 0) == 0 and params["count"].metavar is None


def test_a_typer_whose_bad_parameter_is_no_usage_error_shows_its_own_box(monkeypatch):
    class BadParameter(Exception):
        pass

    monkeypatch.setattr(typer, "BadParameter", BadParameter)
    assert internals._usage_error() is internals._NoUsageError
