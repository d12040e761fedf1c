"""Each lesson declares its texts (``LESSON.texts``): the step texts and notes it records and the
placeholder names it hands each one. A lecturer's lesson file is checked against the declaration
when it is loaded; the bundled ones are checked the same way by these tests and by `attn check
--all` (a run reads them unchecked); the recorder holds the code to it while it runs.
"""

from __future__ import annotations

import functools
import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attn_cli.core.errors import UserError
from attn_cli.core.templates import template_fields
from attn_cli.course import get_lesson, lesson_names
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.lessonfiles import loader as lesson_files
from attn_cli.lessonfiles.loader import check_texts, load_bundled, load_lesson_file
from attn_cli.lessonfiles.texts import BEGIN, END, Texts, markdown
from attn_cli.run.runner import RunRequest, prepare
from tests.conftest import assert_user_error
from tests.lesson_runs import lessons_with_runs, runs_of
from tools import REGENERATE
from tools.generated import declared_texts

LESSONS = sorted(lesson_names())
DOCS = Path(__file__).resolve().parent.parent / "docs" / "lesson-files.md"


def placeholders(template: str | None) -> set[str]:
    """The names a text reads, parsed independently of the checks under test (not the
    parameters it names, {@seed}: each door spells those, test_lesson_text_params)."""
    fields = template_fields(template or "", "test")
    return {name for _, name, _, _ in fields if name and not name.startswith("@")}


# --- the declarations and the bundled files agree -------------------------------------------


@pytest.mark.parametrize("name", LESSONS)
def test_every_declared_key_is_in_the_bundled_file_and_vice_versa(name):
    texts, bundled = get_lesson(name).texts, load_bundled(name)
    assert isinstance(texts, Texts)
    assert list(texts.steps) == list(bundled.steps)  # the same keys, in the file's order
    assert list(texts.notes) == list(bundled.notes)
    for key, words in bundled.steps.items():
        used = placeholders(words.title) | placeholders(words.explanation)
        assert used <= set(texts.steps[key]), (key, used - set(texts.steps[key]))
    for key, template in bundled.notes.items():
        assert placeholders(template) <= set(texts.notes[key]), key


@pytest.mark.parametrize("name", LESSONS)
def test_every_bundled_file_passes_the_load_time_check(name):
    check_texts(load_bundled(name), get_lesson(name).texts)  # raises UserError if not


@pytest.mark.parametrize("name", LESSONS)
def test_declared_names_are_identifiers_listed_once(name):
    texts = get_lesson(name).texts
    for names in (*texts.steps.values(), *texts.notes.values()):
        assert all(n.isidentifier() for n in names)
        assert len(set(names)) == len(names)


# --- a broken file fails when it is loaded (a lecturer's) or checked (a bundled one) --------


@pytest.fixture
def bundled_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled lessons that the app reads as its bundled files."""
    copy = tmp_path / "lessons"
    shutil.copytree(lesson_files.bundled_lessons_dir(), copy)
    monkeypatch.setattr(lesson_files, "bundled_lessons_dir", lambda: copy)
    return copy


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_bundled_file_with_an_undeclared_placeholder_fails_naming_file_and_field(
    invoke, bundled_copy
):
    path = bundled_copy / "scaled.toml"
    replace_in(path, 'one column per key."""', 'one column per {nn}."""')
    expected = (
        f"{path}: [steps.scores] explanation: unknown placeholder {{nn}}; the placeholders here "
        "are: {dk}, {dv}, {m}, {n}, {sqrt_dk}"
    )
    assert_user_error(invoke("check", "--all"), expected)
    assert_refused_by_the_tests_check(expected)


def assert_refused_by_the_tests_check(message: str) -> None:
    """What test_every_bundled_file_passes_the_load_time_check says of the bundled copy."""
    with pytest.raises(UserError) as error:
        check_texts(load_bundled("scaled"), get_lesson("scaled").texts)
    assert message in str(error.value)


def test_a_bundled_placeholder_of_a_step_that_does_not_run_still_fails(invoke, bundled_copy):
    """Only --valid-len runs [steps.masked], whose {logits} no other step hands over: the check
    refuses the file all the same (when it is loaded, not when the step runs)."""
    path = bundled_copy / "scaled.toml"
    text = path.read_text(encoding="utf-8")
    weights = text.index("[steps.weights]")
    title = text.index("title = ", weights)
    path.write_text(
        text[:title] + 'title = "Weights of {logits}"\n' + text[title:].split("\n", 1)[1]
    )
    expected = f"{path}: [steps.weights] title: unknown placeholder {{logits}}"
    assert_user_error(invoke("check", "--all"), expected)
    assert_refused_by_the_tests_check(expected)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("[steps.weights]", "[steps.weight]", "[steps.weight]: lesson 'scaled' has no step"),
        ("no_scale =", "no_scaling =", "[notes] no_scaling: lesson 'scaled' has no note"),
        ("[steps.weights]", "[steps.dropped]", "its steps are: scores, scaled, padding"),
    ],
)
def test_a_bundled_file_with_an_undeclared_key_fails_naming_file_and_key(
    invoke, bundled_copy, old, new, message
):
    path = bundled_copy / "scaled.toml"
    replace_in(path, old, new)
    assert_user_error(invoke("check", "--all"), str(path), message)
    assert_refused_by_the_tests_check(message)


def test_a_lecturers_placeholder_is_checked_for_its_own_step_at_load_time(invoke, tmp_path):
    """{logits} is handed to [steps.masked] only; in [steps.weights] it is refused before any
    step runs, with the names that step has."""
    path = tmp_path / "mine.toml"
    path.write_text('lesson = "scaled"\n[steps.weights]\ntitle = "A of {logits}"\n')
    for result in (invoke("scaled", "--lesson", str(path)), invoke("check", str(path))):
        assert_user_error(
            result,
            f"{path}: [steps.weights] title: unknown placeholder {{logits}}; the placeholders "
            "here are: {dk}, {dv}, {m}, {n}, {sqrt_dk}",
        )
    path.write_text('lesson = "scaled"\n[steps.masked]\ntitle = "{logits} + P"\n')
    assert invoke("scaled", "--lesson", str(path)).exit_code == 0


def test_a_lecturers_note_is_checked_even_when_it_does_not_apply(invoke, tmp_path):
    """worst_leak is made only with --fill zero; its placeholders are checked on every run."""
    path = tmp_path / "mine.toml"
    path.write_text('lesson = "causal"\n[notes]\nworst_leak = "{token} leaks {leakd}"\n')
    assert_user_error(
        invoke("causal", "--lesson", str(path)),
        f"{path}: [notes] worst_leak: unknown placeholder {{leakd}}; the placeholders here are: "
        "{leaked}, {masked}, {token}",
    )


def test_the_declaration_not_the_bundled_file_is_the_reference(monkeypatch, tmp_path):
    """A step key the lesson declares is accepted in a lecturer's file, and one it does not is
    refused, whatever the bundled file holds."""
    lesson = get_lesson("scaled")
    path = tmp_path / "mine.toml"
    path.write_text('lesson = "scaled"\n[steps.extra]\ntitle = "{n} and {extra}"\n')
    with pytest.raises(UserError, match=r"\[steps\.extra\]: lesson 'scaled' has no step"):
        check_texts(load_lesson_file(path), lesson.texts)
    declared = Texts(steps={**lesson.texts.steps, "extra": ("n", "extra")}, notes={})
    check_texts(load_lesson_file(path), declared)


# --- the recorder holds the code to the declaration ------------------------------------------


@pytest.fixture
def recorder() -> StepRecorder:
    return StepRecorder(prepare(RunRequest(lesson="scaled")))


def test_the_recorder_refuses_a_text_the_lesson_does_not_declare(recorder):
    with pytest.raises(TypeError, match=r"'scoers'.*do not declare"):
        recorder.add("scoers", np.zeros((1, 1)))
    with pytest.raises(TypeError, match=r"'no_scaling'.*do not declare"):
        recorder.note("no_scaling")


def test_the_recorder_refuses_a_step_missing_a_declared_name(recorder):
    context = {"m": 1, "n": 2, "dk": 2, "dv": 2}  # no sqrt_dk
    with pytest.raises(TypeError, match=r"'scores'.*missing \['sqrt_dk'\]"):
        recorder.add("scores", np.zeros((1, 2)), grid=Grid(context=context))
    recorder.add(
        "scores", np.zeros((1, 2)), grid=Grid(context={**context, "sqrt_dk": 1.4, "more": 1})
    )


def test_the_recorder_refuses_a_note_with_other_values_than_declared(recorder):
    with pytest.raises(TypeError, match=r"undeclared \['low'\]"):
        recorder.note("no_scale", low=1.0)
    with pytest.raises(TypeError, match=r"missing \['high'\]"):
        recorder.note("dropout_sums", low=0.5)


# --- every example and the main options: declarations and code agree ------------------------


def never_made(lesson: str) -> frozenset[str]:
    """The notes no input makes (each lesson's test gives the reason)."""
    return runs_of(lesson).never_made


def runs(lesson: str) -> Iterator[tuple[str, ...]]:
    """Every bundled example of ``lesson``, then the option variants its test declares."""
    for example in load_bundled(lesson).examples:
        yield ("--example", example.name)
    yield from runs_of(lesson).variants


@functools.cache
def recorded(lesson: str) -> dict[tuple[str, str], list[frozenset[str]]]:
    """For ``lesson``: (table, text key) -> the names handed over, once per time it was made,
    over every run; each run succeeds (the recorder's own check passes). Computed for the lesson
    its test asks for (not every lesson in each xdist worker), once per process."""
    from typer.testing import CliRunner

    from attn_cli.cli.app import app

    seen: dict[tuple[str, str], list[frozenset[str]]] = defaultdict(list)
    original = StepRecorder.check_declared

    def spy(self: StepRecorder, table: str, key: str, names: Any) -> None:
        assert self.run.name == lesson, (self.run.name, lesson)
        seen[table, key].append(frozenset(names))
        original(self, table, key, names)

    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(StepRecorder, "check_declared", spy)
        for args in runs(lesson):
            result = runner.invoke(app, [lesson, *args, "--format", "json"])
            assert result.exit_code == 0, (lesson, args, result.output)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("name", lessons_with_runs())
def test_every_declared_text_is_made_by_some_run_with_the_names_declared(name):
    """Every declared step text is made by an example or option above, and its declared names
    are exactly those it is handed every time (nothing always handed is left undeclared)."""
    texts, made = get_lesson(name).texts, recorded(name)
    assert {key for table, key in made if table == "steps"} == set(texts.steps)
    for key, names in texts.steps.items():
        always = frozenset.intersection(*made["steps", key])
        assert always == set(names), (key, sorted(always - set(names)))
    notes = {key for table, key in made if table == "notes"}
    assert notes <= set(texts.notes)
    assert set(texts.notes) - notes == never_made(name)


# --- docs/lesson-files.md lists them --------------------------------------------------------


def test_the_docs_table_is_the_generated_one():
    text = DOCS.read_text(encoding="utf-8")
    section = text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")
    assert section == markdown(declared_texts()), f"docs/lesson-files.md is stale: {REGENERATE}"


def test_the_sentence_audit_is_the_generated_one():
    """docs/sentences.md lists every note of every lesson and what keeps it true (issue 42)."""
    from tools.generated import sentences

    audit = DOCS.parent / "sentences.md"
    assert audit.read_text(encoding="utf-8") == sentences(), (
        f"docs/sentences.md is stale: {REGENERATE}"
    )


def test_every_note_is_one_kind_of_sentence():
    """A note of no kind, or of two, is refused when the lesson is declared."""
    with pytest.raises(TypeError, match="of none: \\['said'\\]"):
        Texts(notes={"said": ()})
    with pytest.raises(TypeError, match="of two: \\['said'\\]"):
        Texts(notes={"said": ()}, measured=("said",), general=("said",))
    assert Texts(notes={"said": ()}, general=("said",)).kind("said") == "general"


def test_the_docs_table_names_every_key_and_placeholder():
    table = markdown(declared_texts())
    for name in LESSONS:
        texts = get_lesson(name).texts
        lesson_part = table.split(f"#### `{name}`", 1)[1].split("####", 1)[0]
        for key, names in texts.steps.items():
            row = next(line for line in lesson_part.splitlines() if f"`[steps.{key}]`" in line)
            assert all(f"`{{{n}}}`" in row for n in names), (name, key)
        for key, names in texts.notes.items():
            row = next(line for line in lesson_part.splitlines() if f"`[notes] {key}`" in line)
            assert all(f"`{{{n}}}`" in row for n in names) if names else "none" in row
