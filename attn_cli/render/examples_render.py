"""How --list-examples lays out a lesson file's examples in each --format: the rich table
(rich_render.examples_table), and here JSON, Markdown, LaTeX, SVG and HTML. The examples are the
lesson file's data; nothing is computed here."""

from __future__ import annotations

from typing import Any

from attn_cli.lessonfiles.loader import LessonFile
from attn_cli.render.json_render import dumps, envelope
from attn_cli.render.latex_render import FIRST_LINE, tex_text
from attn_cli.render.markdown_render import md_text, records_lines
from attn_cli.render.options import Format, RenderOptions
from attn_cli.render.rich_render import example_rows, examples_table, recorded


def examples_document(lesson: LessonFile) -> dict[str, Any]:
    """--list-examples --format json (docs/json.md, kind "examples")."""
    return {
        **envelope("examples"),
        "lesson": lesson.lesson,
        "title": lesson.title,
        "default_example": lesson.default_example,
        "examples": [
            {"name": example.name, "description": example.description, "source": example.source}
            for example in lesson.examples
        ],
    }


def examples_text(lesson: LessonFile, fmt: Format) -> str:
    """The examples as the text of a file format (every --format but rich)."""
    heading = f"{lesson.title}: examples"
    rows: list[dict[str, Any]] = list(example_rows(lesson))
    if fmt is Format.json:
        return dumps(examples_document(lesson))
    if fmt is Format.markdown:
        return "\n".join([f"# {md_text(heading)}", "", *records_lines(rows, RenderOptions()), ""])
    if fmt is Format.latex:  # a list, not a table: the descriptions are sentences
        lines = [FIRST_LINE, f"\\section*{{{tex_text(heading)}}}", "", "\\begin{description}"]
        for row in rows:
            item = f"\\item[{tex_text(row['name'])}] {tex_text(row['description'])}"
            if row["source"]:
                item += f" \\emph{{Source: {tex_text(row['source'].rstrip('.'))}.}}"
            lines.append(item)
        return "\n".join([*lines, "\\end{description}"]) + "\n"
    console = recorded(examples_table(lesson))
    if fmt is Format.svg:
        return console.export_svg(title=f"attn {lesson.lesson} --list-examples")
    if fmt is Format.html:
        return console.export_html(inline_styles=True)
    raise ValueError(f"{fmt} is not a plain-text format")
