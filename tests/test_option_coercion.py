"""attn_cli.cli.typer_internals.skip_idle_coercion takes plain option values as they are,
without Typer's pydantic coercion: the parsed values and the refusals must be exactly Typer's."""

from __future__ import annotations

import pytest
import typer.main

import attn_cli.cli.app as cli
import attn_cli.cli.typer_internals as internals

COMMAND_LINES = [
    ["scaled"],
    ["scaled", "--precision", "2"],
    ["scaled", "--precision", "0"],
    ["scaled", "--precision", "15"],
    ["scaled", "--q", "1,0;0,1", "--k", "1,1;2,0", "--v", "1,2;3,4"],
    ["scaled", "--dropout", "0.25", "--seed", "3"],
    ["scaled", "--dropout", "0", "--seed", "3"],
    ["scaled", "--dropout", ".5", "--seed", "3"],
    ["scaled", "--dropout", "1e-1", "--seed", "3"],
    ["scaled", "--n", "3", "--dk", "2", "--seed", "-1"],
    ["scaled", "--device", "cpu", "--dtype", "float32"],
    ["causal", "--n", "4", "--dk", "2", "--seed", "+5"],
    ["multihead", "--heads", "2", "--n", "3", "--dmodel", "4"],
    ["window", "--n", "5", "--dk", "2", "--window", "1"],
    ["scaled", "--dropout", "0." + "1" * 40, "--seed", "1"],  # too long for the plain path
]
REFUSED = [
    ["scaled", "--precision", "-1"],
    ["scaled", "--precision", "16"],
    ["scaled", "--precision", "2.5"],
    ["scaled", "--precision", "two"],
    ["scaled", "--format", "JSON"],
    ["scaled", "--format", "xml"],
    ["scaled", "--device", "gpu"],
    ["scaled", "--n", "0"],  # the lesson's own check, after parsing
    ["scaled", "--precision", "1" * 5000],  # past Python's limit on int() of a string
]


def _typer_only(monkeypatch):
    monkeypatch.setattr(internals, "skip_idle_coercion", lambda params: params)


@pytest.mark.parametrize("args", COMMAND_LINES, ids=" ".join)
def test_plain_values_parse_as_typer_parses_them(args, invoke, monkeypatch):
    ours = invoke(*args, "--format", "json")
    _typer_only(monkeypatch)
    typers = invoke(*args, "--format", "json")
    assert (ours.exit_code, ours.output) == (typers.exit_code, typers.output)
    assert ours.exit_code in (0, 2), ours.output


@pytest.mark.parametrize("args", REFUSED, ids=" ".join)
def test_refusals_are_typers_own(args, invoke, monkeypatch):
    ours = invoke(*args)
    _typer_only(monkeypatch)
    typers = invoke(*args)
    assert ours.exit_code == typers.exit_code == 2
    assert ours.output == typers.output
    assert ours.output.startswith("attn: error: ")


def test_the_values_the_command_receives():
    """The values themselves: an int, a float, an enum member, text, None (no context is read:
    none of these is of its option's type already)."""
    from attn_cli.cli.options import DeviceName
    from attn_cli.render import Format

    param = _option("scaled", "precision")
    assert internals._plainly(param, None, "3") == 3
    assert internals._plainly(param, None, "3.0") is internals._TYPER
    assert internals._plainly(param, None, "16") is internals._TYPER  # out of range: Typer says
    assert internals._plainly(_option("scaled", "dropout"), None, "0.5") == 0.5
    assert internals._plainly(_option("scaled", "dropout"), None, None) is None
    assert internals._plainly(_option("scaled", "fmt"), None, "json") is Format.json
    assert internals._plainly(_option("scaled", "device"), None, "cpu") is DeviceName.cpu
    assert internals._plainly(_option("scaled", "q"), None, "1,0;0,1") == "1,0;0,1"


def _option(command: str, name: str):
    """The click parameter of ``attn COMMAND``'s option ``name``."""
    group = typer.main.get_command(cli.make_app((command,)))
    command_params = group.commands[command].params  # type: ignore[attr-defined]
    return next(param for param in command_params if param.name == name)
