"""A lesson is declared once: its command's flags agree with its LESSON's inputs and options."""

from __future__ import annotations

import pytest
import typer.main

from attn_cli import lesson_specs
from attn_cli.cli import app
from attn_cli.lesson_specs import LESSONS
from attn_cli.options import INPUT_PANEL
from attn_cli.walkthroughs.base import get_lesson

GROUP = typer.main.get_command(app)
# Options of the Inputs panel that are not the lesson's own: where its data comes from.
SOURCES = {"example", "list_examples", "lesson", "tokens"}


def command_options(lesson: str) -> dict[str, object]:
    """The command's options by parameter name, as Typer parsed them."""
    return {param.name: param for param in GROUP.commands[lesson].params}  # type: ignore[attr-defined]


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_walkthrough_reads_the_declared_inputs(lesson):
    assert get_lesson(lesson).inputs is lesson_specs.INPUTS[lesson]


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_input_is_an_option_with_its_help(lesson):
    options = command_options(lesson)
    for spec in lesson_specs.INPUTS[lesson]:
        option = options[spec.keyword]
        assert option.opts == [spec.option], spec  # type: ignore[attr-defined]
        assert option.help == spec.help and spec.help, spec  # type: ignore[attr-defined]
        assert option.rich_help_panel == INPUT_PANEL  # type: ignore[attr-defined]


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_lesson_options_are_the_walkthroughs(lesson):
    """Every other Inputs option is one of the walkthrough's OPTIONS (variance also has lecture
    settings that only lesson files set); every OPTIONS entry but those has its flag."""
    inputs = {spec.keyword for spec in lesson_specs.INPUTS[lesson]}
    own = {
        name
        for name, option in command_options(lesson).items()
        if option.rich_help_panel == INPUT_PANEL and name not in inputs | SOURCES  # type: ignore[attr-defined]
    }
    declared = set(get_lesson(lesson).options)
    assert own <= declared
    if lesson != "variance":
        assert own == declared


def test_sizes_and_options_reach_the_request():
    """The request maps each flag to its input, option or size by the same declarations."""
    from attn_cli import tour
    from attn_cli.options import LESSON_REQUESTS

    argv = ["--q", "1,0;0,1", "--k", "1,1;0,1", "--fill", "zero", "--conventions"]
    argv += ["--n", "3", "--tokens", "a,b", "--seed", "4", "--precision", "2"]
    params = tour.parsed(tour.Stop("causal", "", tuple(argv)))  # the command's own parser
    request, shared = LESSON_REQUESTS["causal"](**params)
    assert request.inputs["Q"] == "1,0;0,1" and request.inputs["K"] == "1,1;0,1"
    assert request.inputs["S"] is None
    assert request.options == {
        "scale": None,
        "fill": "zero",
        "conventions": True,
        "valid_len": None,
        "dropout": None,
    }
    assert request.sizes == {"n": 3, "dk": None}
    assert request.labels == {"tokens": ("a", "b")}
    assert (request.seed, shared.precision) == (4, 2)
