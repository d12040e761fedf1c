"""The files generated from the lessons' declarations (``python tools/regenerate.py`` rewrites
each):

* attn_cli/schema/lesson.schema.json: the lesson files' JSON Schema
  (:func:`attn_cli.lessonfiles.schema.lesson_schema`);
* docs/lesson-files.md: the table of each lesson's texts and placeholders
  (:func:`attn_cli.lessonfiles.texts.markdown`);
* docs/sentences.md: every note of every lesson and what keeps it true
  (:func:`attn_cli.lessonfiles.texts.sentence_audit`);
* docs/explore.md: the table of the explorer's keys (:func:`attn_cli.explore.keys.markdown`).

This module sits above the lessons: it gathers their declarations from the registry and hands
them to the TOML-world modules, which never ask for them themselves.
"""

from __future__ import annotations

import json

from attn_cli.course import get_lesson, lesson_names
from attn_cli.course.lesson import Lesson
from attn_cli.lessonfiles.loader import load_bundled
from attn_cli.lessonfiles.schema import lesson_schema
from attn_cli.lessonfiles.texts import Texts, markdown, sentence_audit, with_table


def declarations() -> dict[str, Lesson]:
    """Every lesson's declaration, in the order the lessons are registered."""
    return {name: get_lesson(name) for name in lesson_names()}


def declared_texts() -> dict[str, Texts]:
    """Every lesson's declared texts, in the order the lessons are registered."""
    return {name: lesson.texts for name, lesson in declarations().items()}


def schema_json() -> str:
    """attn_cli/schema/lesson.schema.json."""
    return json.dumps(lesson_schema(declarations()), indent=2, ensure_ascii=False) + "\n"


def with_texts_table(document: str) -> str:
    """docs/lesson-files.md, its table of texts and placeholders made afresh."""
    return with_table(document, markdown(declared_texts()))


def sentences() -> str:
    """docs/sentences.md: every note of every lesson and what keeps it true."""
    from attn_cli.cli.flags import COMMAND_LINE
    from attn_cli.core.templates import spell_parameters

    # A parameter a note names ({@scale=False}) as the command line writes it (--no-scale).
    words = {
        name: {
            key: spell_parameters(text, COMMAND_LINE)
            for key, text in load_bundled(name).notes.items()
        }
        for name in lesson_names()
    }
    return sentence_audit(declared_texts(), words)


def with_keys_table(document: str) -> str:
    """docs/explore.md, its table of the explorer's keys made afresh."""
    from attn_cli.explore.keys import with_keys_table as made

    return made(document)
