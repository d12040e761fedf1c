"""What every renderer is told: the output format and the rendering options.

Apart from the dispatch in attn_cli.render (which imports the renderers, and re-exports both
names), so that the renderers import these without importing the dispatch that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Format(StrEnum):
    rich = "rich"
    json = "json"
    markdown = "markdown"
    latex = "latex"
    beamer = "beamer"  # LaTeX slides, a frame per step
    svg = "svg"  # the rich output, colours kept, as an SVG picture
    html = "html"  # the rich output, colours kept, as an HTML page


@dataclass(frozen=True)
class RenderOptions:
    precision: int = 4
    full: bool = False  # JSON: every entry even of large matrices
    # LaTeX: a whole document that compiles as it is (the command line's, unless
    # --latex-fragment), or the body alone, to paste into a document of one's own
    whole_document: bool = False
    # rich: every row and column of every table, a matrix's in column groups that fit the width
    # (attn learn --full).
    whole_tables: bool = False
    # rich: tables without their outer border, two lines shorter each, and narrow steps side by
    # side (a brief walkthrough, --brief).
    compact: bool = False
