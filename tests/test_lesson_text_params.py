"""A lesson file's texts name parameters as ``{@seed}`` or ``{@scale=False}``, never as flags, and
each door spells them its own way: the Python API the keyword (``seed``, ``scale=False``), the
command line the flag (``--seed``, ``--no-scale``), in a step's words, a note, the intro, an
example's description and the list of examples alike."""

from __future__ import annotations

import inspect
import json
import re
import tomllib

import pytest

import attn_cli as attn
from attn_cli.lessonfiles.loader import bundled_lesson_names, bundled_lessons_dir
from tests.conftest import assert_user_error

# A flag as a command line writes it: "--seed", "--no-scale" (not a dash in prose, "a -- b").
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
NAMED = re.compile(r"(?<!\{)\{@(\w+)(?:=[^}]*)?\}")


def _texts(value: object):
    """Every string of a parsed lesson file (comments are not strings: TOML drops them)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, str):
        yield value


def _bundled(lesson: str) -> list[str]:
    return list(_texts(tomllib.loads((bundled_lessons_dir() / f"{lesson}.toml").read_text())))


@pytest.mark.parametrize("lesson", bundled_lesson_names())
def test_no_bundled_text_writes_a_flag(lesson):
    written = [(FLAG.findall(text), text[:70]) for text in _bundled(lesson) if FLAG.search(text)]
    assert written == []


@pytest.mark.parametrize("lesson", bundled_lesson_names())
def test_every_parameter_a_text_names_is_a_keyword_of_its_lesson(lesson):
    named = {name for text in _bundled(lesson) for name in NAMED.findall(text)}
    keywords = set(inspect.signature(getattr(attn, lesson)).parameters)
    assert named - keywords == set()


def _note(walkthrough, key: str) -> str:
    (found,) = [note for note in walkthrough.notes if note.key == key]
    return found.text()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_note_names_a_switch_as_each_door_does(invoke):
    python = _note(attn.scaled(scale=False, n=2), "no_scale_asked")
    assert python.startswith("Scores are not scaled here (scale=False): the weights")
    doc = json.loads(invoke("scaled", "--no-scale", "--n", "2", "--format", "json").stdout)
    (cli,) = [note["text"] for note in doc["notes"] if note["key"] == "no_scale_asked"]
    assert cli.startswith("Scores are not scaled here (--no-scale): the weights")


def test_a_note_names_a_value_to_try_as_each_door_does(invoke):
    python = _note(attn.bahdanau(), "single_state")
    assert python.endswith("Try example='cat-slept' for several states.")
    cli = _flat(invoke("bahdanau").stdout)
    assert "Try --example cat-slept for several states." in cli
    assert "example=" not in cli


def test_a_steps_explanation_names_the_seed_as_each_door_does(invoke):
    step = attn.scaled(dropout=0.5).find("dropout")
    assert "(set it with seed) by" in _flat(step.explanation)
    doc = json.loads(invoke("scaled", "--dropout", "0.5", "--format", "json").stdout)
    (cli,) = [s["explanation"] for s in doc["steps"] if s["key"] == "dropout"]
    assert "(set it with --seed) by" in _flat(cli)


def test_the_intro_and_an_examples_description_as_each_door_does(invoke):
    python = attn.bahdanau(example="cat-slept")
    assert "all_scores=True puts Luong's dot and general scores beside it." in _flat(python.intro)
    assert "With all_scores=True, the dot score" in _flat(python.example_description)
    cli = _flat(invoke("bahdanau", "--example", "cat-slept").stdout)
    assert "--all-scores puts Luong's dot and general scores beside it." in cli
    assert "With --all-scores, the dot score" in cli


def test_the_list_of_examples_spells_flags(invoke):
    doc = json.loads(invoke("scaled", "--list-examples", "--format", "json").stdout)
    described = " ".join(example["description"] for example in doc["examples"])
    assert "--normalise sparsemax" in described
    assert "{@" not in described


def test_a_lecturers_text_may_name_a_parameter(invoke, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'lesson = "scaled"\n[notes]\nno_scale_asked = "Unscaled ({@scale=False}); reseed with '
        "{@seed}, or try {@example='two-tokens'}.\"\n"
    )
    cli = invoke("scaled", "--no-scale", "--n", "2", "--lesson", str(path))
    assert cli.exit_code == 0, cli.output
    assert "Unscaled (--no-scale); reseed with --seed, or try --example two-tokens." in _flat(
        cli.stdout
    )
    python = _note(attn.scaled(scale=False, n=2, lesson=str(path)), "no_scale_asked")
    assert python == "Unscaled (scale=False); reseed with seed, or try example='two-tokens'."


def test_a_parameter_in_a_form_not_allowed_is_refused(invoke, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('lesson = "scaled"\n[notes]\nno_scale_asked = "Unscaled ({@scale:x})."\n')
    assert_user_error(
        invoke("scaled", "--no-scale", "--n", "2", "--lesson", str(path)),
        f"{path}: [notes] no_scale_asked: {{@scale:x}} names a parameter in a form not allowed; "
        "write {@keyword} or {@keyword=value}",
    )


def test_a_literal_brace_pair_is_not_a_parameter(invoke, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('lesson = "scaled"\n[notes]\nno_scale_asked = "Write {{@seed}} in a file."\n')
    cli = invoke("scaled", "--no-scale", "--n", "2", "--lesson", str(path))
    assert "Write {@seed} in a file." in _flat(cli.stdout)


@pytest.mark.parametrize(
    ("written", "typed"),
    [
        ("'cat-slept'", "--example cat-slept"),  # a text literal: as a shell user types it
        ("'two words'", "--example 'two words'"),  # quoted where the shell needs it
        ('"x"', "--example x"),
        ("3", "--example 3"),  # not a literal text: as written
        ("'unclosed", "--example 'unclosed"),
    ],
)
def test_the_command_lines_door_writes_a_text_as_a_shell_takes_it(written, typed):
    from attn_cli.cli.flags import flag_spelling

    assert flag_spelling("example", written) == typed
