"""The files generated from the lessons' declarations, rewritten by one command:

* ``python -m attn_cli.cli.generated schema > attn_cli/schema/lesson.schema.json``: the lesson
  files' JSON Schema (:func:`attn_cli.lessonfiles.schema.lesson_schema`);
* ``python -m attn_cli.cli.generated texts docs/lesson-files.md``: the table of each lesson's
  texts and placeholders (:func:`attn_cli.lessonfiles.texts.markdown`);
* ``python -m attn_cli.cli.generated sentences docs/sentences.md``: every note of every lesson
  and what keeps it true (:func:`attn_cli.lessonfiles.texts.sentence_audit`);
* ``python -m attn_cli.cli.generated keys docs/explore.md``: the table of the explorer's keys
  (:func:`attn_cli.explore.keys.markdown`).

This module sits above the lessons: it gathers their declarations from the registry and hands
them to the TOML-world modules, which never ask for them themselves.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

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


def main(argv: list[str]) -> None:
    if argv[:1] == ["schema"]:
        print(json.dumps(lesson_schema(declarations()), indent=2, ensure_ascii=False))
    elif argv[:1] == ["texts"] and len(argv) == 2:
        path = Path(argv[1])
        document = path.read_text(encoding="utf-8")
        path.write_text(with_table(document, markdown(declared_texts())), encoding="utf-8")
    elif argv[:1] == ["sentences"] and len(argv) == 2:
        Path(argv[1]).write_text(sentences(), encoding="utf-8")
    elif argv[:1] == ["keys"] and len(argv) == 2:
        from attn_cli.explore.keys import with_keys_table

        path = Path(argv[1])
        path.write_text(with_keys_table(path.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        sys.exit(
            "usage: python -m attn_cli.cli.generated schema | texts docs/lesson-files.md | "
            "sentences docs/sentences.md | keys docs/explore.md"
        )


def sentences() -> str:
    """docs/sentences.md: every note of every lesson and what keeps it true."""
    words = {name: dict(load_bundled(name).notes) for name in lesson_names()}
    return sentence_audit(declared_texts(), words)


if __name__ == "__main__":
    main(sys.argv[1:])
