"""A lesson is one folder of attn_cli/course (plus its TOML and its test): adding one touches
nothing else. A throwaway lesson, written here into a temporary folder, appears in the command
line, the Python API, the tour and the explorer; and only the course's registry (plugin
discovery) imports a module by its name."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import attn_cli
from attn_cli import course
from attn_cli.cli.flags import COMMAND_LINE
from attn_cli.lessonfiles import loader
from tests.lesson_runs import lessons_with_runs, missing_runs

ROOT = Path(__file__).resolve().parent.parent

CARD = """
from attn_cli.core.card import Card, InputSpec, Size

CARD = Card(
    name="double",
    summary="Doubling, a lesson written by a test: every entry of X times two.",
    inputs=(InputSpec("X", "x", "matrix", "the matrix to double", help="The matrix X."),),
    sizes=(Size("n", "{default} rows", default=3), Size("d", "{default} columns", default=2)),
    positional=("x",),
    examples=("attn double",),
    symbols=(("X", "the matrix"),),
)
"""
BUILD = """
import numpy as np

from attn_cli.course.double.card import CARD
from attn_cli.course.lesson import Lesson
from attn_cli.course.recorder import StepRecorder
from attn_cli.lessonfiles.texts import Texts


def build(run):
    record = StepRecorder(run)
    x = run.backend.asarray(run.inputs["X"])
    doubled = record.compute("doubled", lambda: 2 * x)
    return record.walkthrough(doubled)


LESSON = Lesson(
    card=CARD,
    labels=(),
    validate=lambda inputs, options: None,
    random_shapes=lambda sizes: {"X": (sizes["n"], sizes["d"])},
    estimate_bytes=lambda shapes, options, itemsize: 2 * itemsize * int(np.prod(shapes["X"])),
    build=build,
    texts=Texts(steps={"doubled": ()}),
)
"""
# The added lesson follows the course's last lesson, in that lesson's section of the tour.
STOP = """
from attn_cli.course import stop_of
from attn_cli.core.stop import Stop

STOP = Stop(
    "double",
    "Doubling: a lesson added in a folder of its own",
    topic="doubling",
    lead_in="After the course's last lesson, next, a lesson that a test wrote.",
    after={last!r},
    section=stop_of({last!r}).section,
)
"""
WORDS = """
lesson = "double"
title = "Doubling"
intro = "Each entry of X, times two."
default_example = "small"

[steps.doubled]
title = "Doubled  2X"
explanation = "Every entry of X, twice over."

[[examples]]
name = "small"
description = "A 2 × 2 matrix."
[examples.inputs]
X = [[1, 2], [3, 4]]
"""


@pytest.fixture
def added_lesson(tmp_path, monkeypatch):
    """The lesson "double", written into a folder that the course's path and the lesson files'
    folder are extended with (nothing of the repository is touched)."""
    if "double" in course.lesson_names():
        pytest.skip("the course has a lesson named double; this test adds its own of that name")
    last = course.lesson_names()[-1]
    folder = tmp_path / "course" / "double"
    folder.mkdir(parents=True)
    for name, text in {
        "__init__": "",
        "card": CARD,
        "build": BUILD,
        "stop": STOP.format(last=last),
    }.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    words = tmp_path / "lessons"
    words.mkdir()
    for bundled in loader.bundled_lessons_dir().glob("*.toml"):
        (words / bundled.name).symlink_to(bundled)
    (words / "double.toml").write_text(textwrap.dedent(WORDS), encoding="utf-8")
    monkeypatch.setattr(course, "__path__", [*course.__path__, str(folder.parent)])
    monkeypatch.setattr(loader, "bundled_lessons_dir", lambda: words)
    course.forget()
    yield "double", last
    monkeypatch.undo()
    course.forget()


def test_an_added_lesson_is_in_the_course_the_api_the_cli_the_tour_and_the_explorer(added_lesson):
    added_lesson, last = added_lesson
    from typer.testing import CliRunner

    from attn_cli.cli.app import command_names, make_app
    from attn_cli.cli.itinerary import tour
    from attn_cli.explore import state

    assert course.lesson_names()[-2:] == (last, added_lesson)  # the course, after its last
    walkthrough = attn_cli.double([[1, 2], [3, 4]])  # the Python API
    np.testing.assert_array_equal(walkthrough.output, [[2, 4], [6, 8]])
    assert "double" in command_names()  # the command line: attn --help lists it, and it runs
    result = CliRunner().invoke(make_app(("double",)), ["double", "--x", "1,0;0,1"])
    assert result.exit_code == 0, result.output
    assert "Doubled  2X" in result.stdout
    stops = [stop.name for stop in tour()]  # the tour, last
    assert stops[-1] == added_lesson and stops.index("double") > stops.index(last)
    start = state.opening(added_lesson)  # the explorer, on its example
    shown = state.walkthrough(start, start.state)
    np.testing.assert_array_equal(shown.output, [[2, 4], [6, 8]])
    assert state.command_line(start, start.state, COMMAND_LINE) == "attn double"


@pytest.mark.parametrize("lesson", course.lesson_names())
def test_every_lesson_has_its_test_declaring_its_runs(lesson):
    """What the suite-wide tests run of each lesson is declared in its own test (tests/
    lesson_runs.py): a lesson without one fails here, naming the file, and only here (the others
    go over the lessons that have theirs, so that their collection does not break)."""
    problem = missing_runs(lesson)
    assert problem is None, problem


def test_a_lesson_without_its_test_is_named_and_left_out_of_the_others(added_lesson):
    added_lesson, _last = added_lesson
    assert missing_runs(added_lesson) == (
        "lesson 'double': tests/test_double.py is missing; it declares RUNS = Runs(...) "
        "(tests/lesson_runs.py), what the suite-wide tests run of it; see docs/development.md, "
        "Adding a lesson."
    )
    assert added_lesson in course.lesson_names()
    assert added_lesson not in lessons_with_runs()
    assert lessons_with_runs() == course.lesson_names()[:-1]


def test_only_the_registry_imports_a_module_by_its_name():
    """A string import is an arrow import-linter cannot see: only plugin discovery (the course
    finding its lessons' folders) may use one."""
    by_name = re.compile(r"import_module\(|__import__\(|spec_from_file_location\(")
    sites = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "attn_cli").rglob("*.py")
        if by_name.search(path.read_text(encoding="utf-8"))
    }
    assert sites == {"attn_cli/course/__init__.py"}
