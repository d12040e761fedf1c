"""How ``attn kinds`` lays out its overview: a table and the commands per row (rich,
Markdown), or JSON. The overview is plain data (attn_cli/lessonfiles/kinds.py); nothing is computed here."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from attn_cli.lessonfiles.kinds import COLUMNS, Overview
from attn_cli.render.json_render import dumps, envelope
from attn_cli.render.markdown_render import md_paragraph, md_text, records_lines
from attn_cli.render.options import RenderOptions
from attn_cli.render.rich_render import FitColumn, FittedTable

# The table shows the lecture's four columns; the commands follow it, one block per kind.
_TABLE = tuple(name for name in COLUMNS if name != "commands")


def _table_rows(overview: Overview) -> list[dict[str, Any]]:
    return [{name: row[name] for name in _TABLE} for row in overview.rows]


def kinds_renderable(overview: Overview) -> RenderableType:
    parts: list[RenderableType] = [
        Text(overview.title, style="bold"),
        Text(overview.intro),
        Text(""),
        _rich_table(overview),
        Text(""),
        Text(overview.run_heading, style="bold"),
    ]
    for row in overview.rows:
        lines = Text(row["kind"], style="cyan")
        for command in row["commands"]:
            lines.append("\n  $ ").append(command, style="bold")
        parts += [Padding(Group(lines, Padding(Text(row["shows"], style="dim"), (0, 0, 0, 2))),
                          (0, 0, 0, 2))]  # fmt: skip
    parts += [Text(""), Text(f"Source: {overview.source}", style="dim")]
    parts += [Text(""), Text(overview.beyond_heading, style="bold"), Text(overview.beyond_intro)]
    for change in overview.changes:
        lines = Text(f"{change['change']} ({change['used_in']})", style="cyan")
        for command in change["commands"]:
            lines.append("\n  $ ").append(command, style="bold")
        shows = Padding(Text(change["shows"], style="dim"), (0, 0, 0, 2))
        parts.append(Padding(Group(lines, shows), (0, 0, 0, 2)))
    return Group(*parts)


def _rich_table(overview: Overview) -> RenderableType:
    """The lecture's table, its text left-aligned, wrapping at spaces to fit the terminal."""
    columns = [
        FitColumn(
            overview.headings[name],
            tuple(Text(row[name], style="cyan" if name == "kind" else "") for row in overview.rows),
            (False,) * len(overview.rows),
            justify="left",
        )
        for name in _TABLE
    ]
    return Padding(FittedTable(columns), (0, 0, 0, 2))


def kinds_markdown(overview: Overview) -> str:
    lines = [f"# {md_text(overview.title)}", "", md_paragraph(overview.intro), ""]
    lines += records_lines(_table_rows(overview), RenderOptions(), overview.headings)
    lines += ["", f"## {md_text(overview.run_heading)}", ""]
    for row in overview.rows:
        commands = ", ".join(f"`{command}`" for command in row["commands"])
        lines.append(f"- **{md_text(row['kind'])}**: {commands}. {md_text(row['shows'])}")
    lines += ["", f"*Source: {md_text(overview.source)}*", ""]
    lines += [f"## {md_text(overview.beyond_heading)}", "", md_paragraph(overview.beyond_intro), ""]
    for change in overview.changes:
        commands = ", ".join(f"`{command}`" for command in change["commands"])
        lines.append(
            f"- **{md_text(change['change'])}** ({md_text(change['used_in'])}): {commands}. "
            f"{md_text(change['shows'])}"
        )
    lines.append("")
    return "\n".join(lines)


def kinds_document(overview: Overview) -> dict[str, Any]:
    return {
        **envelope("kinds"),
        "title": overview.title,
        "intro": overview.intro,
        "source": overview.source,
        "headings": dict(overview.headings),
        "rows": [{**row, "commands": list(row["commands"])} for row in overview.rows],
        "beyond": {
            "heading": overview.beyond_heading,
            "intro": overview.beyond_intro,
            "changes": [{**c, "commands": list(c["commands"])} for c in overview.changes],
        },
    }


def kinds_json(overview: Overview) -> str:
    return dumps(kinds_document(overview))
