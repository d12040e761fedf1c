"""A lesson is declared once, on its card: the command's flags, help and parsing come from it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import typer.main

from attn_cli import course as cards
from attn_cli.cli.app import app
from attn_cli.cli.flags import flag_for, flag_spelling
from attn_cli.cli.options import INPUT_PANEL, SIZE_PANEL, help_text, lesson_request
from attn_cli.core.card import shown
from attn_cli.course import get_lesson

GROUP = typer.main.get_command(app)
LESSONS = cards.lesson_names()


def command_options(lesson: str) -> dict[str, object]:
    """The command's options by parameter name, as Typer parsed them."""
    return {param.name: param for param in GROUP.commands[lesson].params}  # type: ignore[attr-defined]


def test_the_course_is_scanned_once(monkeypatch):
    """is_lesson is asked for every command line (and eight times by `attn scaled`): the
    package's folders are listed once, until forget() (a folder added to its path)."""
    import pkgutil

    scans = []
    real = pkgutil.iter_modules
    monkeypatch.setattr(pkgutil, "iter_modules", lambda path: scans.append(path) or real(path))
    cards.forget()
    try:
        asked = [cards.is_lesson(name) for name in ("scaled", "causal", "nosuch", "scaled")]
        assert asked == [True, True, False, True]
        assert cards.lesson_names() == LESSONS
        assert len(scans) == 1
    finally:
        cards.forget()


def test_the_lessons_are_the_folders_of_the_course_in_their_order():
    """Found by listing the package's folders (no list of names to keep in step), ordered by the
    cards; the modules beside the folders (the recorder, the lesson type) are not lessons."""
    from pathlib import Path

    folder = Path(cards.__file__).parent
    folders = {path.parent.name for path in folder.glob("*/card.py")}
    assert set(LESSONS) == folders
    assert not cards.is_lesson("recorder") and not cards.is_lesson("lesson")
    assert LESSONS[0] == "scaled"  # the lectures start with scaled dot-product attention
    assert cards.is_lesson("scaled") and not cards.is_lesson("shared")
    assert not cards.is_lesson("check") and not cards.is_lesson("../scaled")


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_input_is_an_option_with_its_help(lesson):
    options = command_options(lesson)
    for spec in cards.card(lesson).inputs:
        option = options[spec.keyword]
        assert option.opts == [flag_for(spec.keyword)], spec  # type: ignore[attr-defined]
        assert option.help == help_text(spec.help_text(flag_spelling)), spec  # type: ignore[attr-defined]
        assert option.rich_help_panel == INPUT_PANEL  # type: ignore[attr-defined]


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_option_and_size_is_a_flag_with_its_default_in_its_help(lesson):
    """The default a help names is the one the lesson reads: the help is filled from the card."""
    card = cards.card(lesson)
    options = command_options(lesson)
    for option in card.options:
        if not option.command_line:
            assert option.name not in options
            continue
        parsed = options[option.name]
        assert parsed.opts == [flag_for(option.name)], option  # type: ignore[attr-defined]
        assert parsed.help == help_text(option.help_text(flag_spelling)) and "{" not in parsed.help  # type: ignore[attr-defined]
        if "{default}" in option.help:
            assert shown(option.default) in parsed.help
    for size in card.sizes:
        parsed = options[size.name]
        assert parsed.rich_help_panel == SIZE_PANEL  # type: ignore[attr-defined]
        assert parsed.help.startswith("Random inputs: ")  # type: ignore[attr-defined]
        if size.default is not None:  # written as Typer writes a default
            assert re.search(rf"\\\[default: {size.default}\b", parsed.help), parsed.help  # type: ignore[attr-defined]


@pytest.mark.parametrize("lesson", [name for name in LESSONS if cards.card(name).sizes])
def test_a_run_of_random_inputs_reads_the_cards_defaults(lesson):
    """No example, no option given: every option with a default is the card's in the run."""
    import attn_cli

    card = cards.card(lesson)
    sizes = {size.name: 4 for size in card.sizes if size.default is not None}
    walkthrough = getattr(attn_cli, lesson)(**sizes)
    used = walkthrough.meta["options"]
    assert walkthrough.example is None
    assert {key: used[key] for key, value in card.defaults.items() if value is not None} == {
        key: value for key, value in card.defaults.items() if value is not None
    }


@pytest.mark.parametrize(
    ("lesson", "name"),
    [(lesson, option.name) for lesson in LESSONS for option in cards.card(lesson).options
     if option.choices],
)  # fmt: skip
def test_a_choice_outside_the_cards_list_is_refused_naming_each(invoke, lesson, name):
    (option,) = [each for each in cards.card(lesson).options if each.name == name]
    result = invoke(lesson, flag_for(option.name), "nosuch")
    assert result.exit_code == 2 and result.stdout == ""
    assert all(f"'{choice}'" in result.stderr for choice in option.choices), result.stderr
    assert invoke(lesson, flag_for(option.name), option.choices[-1]).exit_code == 0


def test_the_help_says_the_default_the_lesson_uses():
    """posenc's --base: the card's 10000.0, shown as 10000, read by the lesson."""
    card = cards.card("posenc")
    (base,) = [option for option in card.options if option.name == "base"]
    assert base.help_text() == "Base of the wavelengths (default: 10000)."
    import attn_cli

    assert attn_cli.posenc().meta["options"]["base"] == 10000.0  # what the run read


def test_sizes_take_their_defaults_from_the_card():
    card = cards.card("scaled")
    assert card.with_size_defaults({}) == {"n": 8, "dk": 64}
    assert card.with_size_defaults({"n": 3, "dv": 2}) == {"n": 3, "dk": 64, "dv": 2}
    shapes = get_lesson("scaled").random_shapes(card.with_size_defaults({"m": 3}))
    assert shapes == {"Q": (3, 64), "K": (8, 64), "V": (8, 64)}


def test_sizes_and_options_reach_the_request():
    """The request maps each flag to its input, option or size by the card."""
    from attn_cli.cli import tour

    argv = ["--q", "1,0;0,1", "--k", "1,1;0,1", "--fill", "zero", "--conventions"]
    argv += ["--n", "3", "--tokens", "a,b", "--seed", "4", "--precision", "2"]
    params = tour.parsed(tour.Stop("causal", "", tuple(argv)))  # the command's own parser
    request, shared = lesson_request(cards.card("causal"), params)
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


def test_a_command_option_not_for_the_lesson_stays_out_of_the_request():
    """flash --kernel is the command's (it prints the kernel): the lesson never sees it."""
    from attn_cli.cli import tour

    params = tour.parsed(tour.Stop("flash", "", ("--block", "3")))
    request, _ = lesson_request(cards.card("flash"), params)
    assert "kernel" not in request.options and request.options["block"] == 3


def test_cards_import_no_numpy():
    """The cards are plain data: reading every one imports neither numpy nor a lesson."""
    code = (
        "import sys; from attn_cli import course as cards; names = cards.lesson_names(); "
        "print(len(names), 'numpy' in sys.modules, "
        "any(m.endswith('.build') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(len(LESSONS)), "False", "False"]


def test_an_unknown_card_names_the_lessons():
    with pytest.raises(
        cards.UserError, match="unknown lesson 'scaeld'; choose one of: alibi, backward, bahdanau"
    ):
        cards.card("scaeld")
