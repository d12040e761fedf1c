"""Renderers: lay a Walkthrough out as rich tables, JSON, Markdown or LaTeX.

Renderers read the walkthrough and format it; they never compute attention. Only the
Console (or the stream handed in) writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from attn_cli.model import Walkthrough


class Format(StrEnum):
    rich = "rich"
    json = "json"
    markdown = "markdown"
    latex = "latex"


@dataclass(frozen=True)
class RenderOptions:
    precision: int = 4
    full: bool = False  # JSON: every entry even of large matrices


def render_text(walkthrough: Walkthrough, fmt: Format, options: RenderOptions) -> str:
    """The walkthrough as text in a plain format (json, markdown, latex)."""
    if fmt is Format.json:
        from attn_cli.render.json_render import to_json

        return to_json(walkthrough, options)
    if fmt is Format.markdown:
        from attn_cli.render.markdown_render import to_markdown

        return to_markdown(walkthrough, options)
    if fmt is Format.latex:
        from attn_cli.render.latex_render import to_latex

        return to_latex(walkthrough, options)
    raise ValueError(f"{fmt} is not a plain-text format")


def render(walkthrough: Walkthrough, fmt: Format, console: Console, options: RenderOptions) -> None:
    """Write the walkthrough to the console in the chosen format."""
    if fmt is Format.rich:
        from attn_cli.render.rich_render import print_walkthrough

        print_walkthrough(walkthrough, console, options)
    else:
        console.out(render_text(walkthrough, fmt, options), highlight=False)
