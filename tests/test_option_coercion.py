"""The values a lesson's command receives from Typer's coercion, and the refusals of values it
cannot take: one line each, the ranges in attn's words (attn_cli.cli.parsing.in_range)."""

from __future__ import annotations

from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from attn_cli import course as cards
from attn_cli.cli.options import lesson_command

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
    ["scaled", "--device", "cpu", "--dtype", "float32"],
    ["causal", "--n", "4", "--dk", "2", "--seed", "+5"],
    ["multihead", "--heads", "2", "--n", "3", "--d-model", "4"],
    ["window", "--n", "5", "--dk", "2", "--window", "1"],
    ["scaled", "--dropout", "0." + "1" * 40, "--seed", "1"],
]
REFUSED = [
    (["scaled", "--precision", "-1"], "'--precision': it must be from 0 to 15, not -1"),
    (["scaled", "--precision", "16"], "'--precision': it must be from 0 to 15, not 16"),
    (["scaled", "--precision", "2.5"], "'--precision'"),
    (["scaled", "--precision", "two"], "'--precision'"),
    (["scaled", "--seed", "-1"], "'--seed': it must be at least 0, not -1"),
    (["scaled", "--format", "JSON"], "'--format'"),
    (["scaled", "--format", "xml"], "'--format'"),
    (["scaled", "--device", "gpu"], "'--device'"),
    (["scaled", "--n", "0"], "--n must be at least 1, not 0."),  # the lesson's own check
    (["scaled", "--precision", "1" * 5000], "'--precision'"),  # past Python's int() of text
    (["scaled", "--precision", "1" * 300], "not a number of 300 digits"),
    (["bench", "--block", "0"], "'--block': it must be at least 1, not 0"),
    (["explore", "--port", "65536"], "'--port': it must be from 1 to 65535, not 65536"),
    (["learn", "translate", "--steps", "0"], "'--steps': it must be at least 1, not 0"),
]


@pytest.mark.parametrize("args", COMMAND_LINES, ids=" ".join)
def test_plain_values_parse(args, invoke):
    result = invoke(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


@pytest.mark.parametrize(("args", "words"), REFUSED, ids=lambda arg: " ".join(arg)[:40])
def test_refusals_are_one_line(args, words, invoke):
    result = invoke(*args)
    assert (result.exit_code, result.stdout) == (2, "")
    [line] = result.stderr.splitlines()
    assert line.startswith("attn: error: ") and words in line, line
    assert len(line) < 600  # a number is never echoed whole


def given(*args: str) -> dict[str, Any]:
    """What ``attn scaled ARGS`` hands its lesson: the values Typer made of the text."""
    handed: dict[str, Any] = {}
    parser = typer.Typer()
    parser.command("scaled")(
        lesson_command(cards.card("scaled"), lambda _, got: handed.update(got))
    )
    result = CliRunner().invoke(parser, list(args))
    assert result.exit_code == 0, result.output
    return handed


def test_the_values_the_command_receives():
    """The values themselves: an int, a float, an enum member, text, None."""
    from attn_cli.cli.options import DeviceName
    from attn_cli.render import Format

    values = given("--precision", "3", "--dropout", "0.5", "-f", "json", "--q", "1,0;0,1")
    assert values["precision"] == 3 and type(values["precision"]) is int
    assert values["dropout"] == 0.5 and type(values["dropout"]) is float
    assert values["fmt"] is Format.json
    assert values["device"] is DeviceName.cpu  # the default
    assert values["q"] == "1,0;0,1"
    assert values["k"] is None and values["n"] is None


def test_plain_values_are_taken_as_typer_would_make_them_and_the_rest_left_to_typer():
    """attn_cli.cli.parsing: what it takes without Typer's coercion is exactly what the
    coercion gives; anything it is not sure of goes to Typer."""
    from enum import Enum
    from pathlib import Path

    from attn_cli.cli import parsing as plain_values

    class Kind(Enum):
        A = "a"

    coerce = plain_values._COERCE  # the one answer that hands over to Typer
    never = lambda: False  # noqa: E731 - not the default
    assert plain_values.plain(int, "-3", never) == -3
    assert type(plain_values.plain(float, "2", never)) is float
    assert plain_values.plain(float, "0.25", never) == 0.25
    assert plain_values.plain(Kind, "a", never) is Kind.A
    assert plain_values.plain(str, "1,0;0,1", never) == "1,0;0,1"
    assert plain_values.plain(int, None, never) is None
    assert plain_values.plain(int, 7, lambda: True) == 7  # the declared default
    for declared, value in [
        (int, "1.5"),
        (int, "1e3"),
        (float, "1e-3"),
        (int, "9" * 16),  # past 15 digits: Typer refuses it in its words
        (Kind, "A"),
        (int, 7),  # an int that is not the default (an environment's, say)
        (Path, "out.txt"),
    ]:
        assert plain_values.plain(declared, value, never) is coerce, (declared, value)
