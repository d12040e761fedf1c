"""How `attn flash --kernel` lays out a kernel's source: the parts and the lesson steps they
implement, then the code (syntax-highlighted in a terminal), as rich, Markdown or JSON. The
source is plain data (attn_cli/lessonfiles/kernel_source.py); nothing is computed here."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from attn_cli.lessonfiles.kernel_source import KernelSource
from attn_cli.render.json_render import dumps, envelope
from attn_cli.render.markdown_render import md_text


def _intro(kernel: KernelSource) -> str:
    return (
        f"{kernel.path}: each part is marked '# ── step KEY ──' with the attn {kernel.lesson} "
        "step it implements. One program of the kernel runs one query tile; BLOCK and "
        "QUERY_BLOCK are --block and --query-block."
    )


def kernel_renderable(kernel: KernelSource) -> RenderableType:
    table = Table(box=None, padding=(0, 2, 0, 0), show_edge=False)
    for heading in ("lines", "step", f"attn {kernel.lesson}'s title"):
        table.add_column(heading, style="dim" if heading == "lines" else "")
    for part in kernel.parts:
        table.add_row(f"{part.first}–{part.last}", Text(part.step, style="cyan"), part.title)
    code = Syntax(kernel.source, "python", line_numbers=True, word_wrap=True, theme="ansi_dark")
    title = Text(kernel.title, style="bold")
    return Group(title, Text(_intro(kernel)), Text(""), table, Text(""), code)


def kernel_markdown(kernel: KernelSource) -> str:
    lines = [f"# {md_text(kernel.title)}", "", md_text(_intro(kernel)), ""]
    lines += ["| lines | step | title |", "|---|---|---|"]
    lines += [
        f"| {part.first}–{part.last} | `{part.step}` | {md_text(part.title)} |"
        for part in kernel.parts
    ]
    fence = "```"
    while fence in kernel.source:  # a fence longer than any run of backticks in the code
        fence += "`"
    lines += ["", f"{fence}python", kernel.source.rstrip("\n"), fence, ""]
    return "\n".join(lines)


def kernel_document(kernel: KernelSource) -> dict[str, Any]:
    return {
        **envelope("kernel"),
        "lesson": kernel.lesson,
        "title": kernel.title,
        "path": kernel.path,
        "language": "python",
        "source": kernel.source,
        "parts": [
            {"step": part.step, "title": part.title, "lines": [part.first, part.last]}
            for part in kernel.parts
        ],
    }


def kernel_json(kernel: KernelSource) -> str:
    return dumps(kernel_document(kernel))
