"""``attn check``: compute every example of a lesson file and compare what its slides print.

Results are plain data (attn_cli.core.slides.FileCheck); :mod:`attn_cli.render.check_render`
lays them out.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from attn_cli import course
from attn_cli.core import slides
from attn_cli.core.errors import UserError
from attn_cli.core.model import Walkthrough
from attn_cli.core.slides import ExampleCheck, FileCheck
from attn_cli.course import get_lesson, lesson_names
from attn_cli.lessonfiles.loader import (
    LessonFile,
    bundled_lesson_names,
    bundled_lessons_dir,
    is_bundled_file,
    load_bundled,
    own_lesson_file,
    with_checked_texts,
)
from attn_cli.run.runner import RunRequest, built, prepare


def check_file(path: Path) -> FileCheck:
    """Check a lecturer's file; a malformed one raises UserError naming the file and field."""
    lesson = own_lesson_file(path, course)
    request = RunRequest(lesson=lesson.lesson, lesson_file=path)
    return _check(lesson, request, bundled=is_bundled_file(path))


def check_bundled() -> list[FileCheck]:
    """Check every bundled lesson file (those of lessons not installed are skipped)."""
    results = []
    for name in bundled_lesson_names():
        if name not in lesson_names():
            path = bundled_lessons_dir() / f"{name}.toml"
            skipped = f"lesson {name!r} is not installed"
            results.append(FileCheck(path, name, skipped=skipped, bundled=True))
            continue
        # Checked as a lecturer's file is (a run reads it unchecked: the tests check it).
        bundled = with_checked_texts(load_bundled(name, checked=True), get_lesson(name).texts)
        results.append(_check(bundled, RunRequest(lesson=name), bundled=True))
    return results


def _check(lesson: LessonFile, request: RunRequest, bundled: bool = False) -> FileCheck:
    results = []
    for example in lesson.examples:
        run = prepare(replace(request, example=example.name))  # checks inputs and options
        where = f"{lesson.path}: example {example.name!r}"
        try:  # built even without printed values: what only the build checks (labels that do
            walkthrough = built(run)  # not fit the matrices) must fail here, not on the run
        except UserError as error:
            raise UserError(f"{where}: {error}") from None
        if not example.printed:
            results.append(ExampleCheck(example.name, 0))
            continue
        decimals = course.card(lesson.lesson).precision  # what the lesson shows
        comparison = slides.compare(walkthrough, example.printed, where, decimals, own=not bundled)
        diagnoses = _diagnoses(walkthrough, example.printed, where, decimals)
        checked = comparison.checked
        results.append(ExampleCheck(example.name, checked, comparison.errata, diagnoses))
    path = lesson.path or Path(f"{lesson.lesson}.toml")
    return FileCheck(path, lesson.lesson, tuple(results), bundled=bundled)


def _diagnoses(
    walkthrough: Walkthrough, printed: dict[str, str], where: str, decimals: int
) -> tuple[tuple[str, int, str, str], ...]:
    """What the wrong rows of the steps printed whole or row by row show, as a student's working
    is marked
    (attn_cli.course.mistakes.mark): a named mistake, or right for the file's own wrong step
    before it (error carried forward)."""
    from attn_cli.course.mistakes import mark

    working = slides.working_rows(walkthrough, printed, where)
    if not working:
        return ()
    marking = mark(course.mistakes_of(walkthrough.lesson), walkthrough, working, decimals)
    return tuple(
        (row.step, row.row, row.verdict, row.words)
        for row in marking.rows
        if row.verdict in ("mistake", "follows")
    )
