"""Beamer slides (``--format beamer``): the walkthrough as frames, for a lecturer to take away.

The same document as the LaTeX article (:func:`document.document`), each block written by the
article's emitter (:func:`latex_render.latex_chunks`); this module only cuts it into frames: the
title frame with the lesson's first sentence, the example and the inputs; then one frame per
step, its heading as the frame's title, its why in one line (as ``--brief`` says it), then its
intermediates, value and notes; the walkthrough's notes last. A frame fuller than the slide is
shrunk to fit (beamer's ``shrink``), so nothing runs off the bottom.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attn_cli.core.brief import with_brief_whys
from attn_cli.core.model import Walkthrough
from attn_cli.render import document as doc
from attn_cli.render.latex_render import MAX_MATRIX_COLS, latex_chunks, shape_math, tex_text
from attn_cli.render.options import RenderOptions

PREAMBLE_LINES = (
    r"\documentclass[aspectratio=169]{beamer}",
    r"\usepackage{amsmath}",
    rf"\setcounter{{MaxMatrixCols}}{{{MAX_MATRIX_COLS}}}",
    r"\setbeamertemplate{navigation symbols}{}",
)
FIRST_LINE = "% attn beamer: slides, a frame per step (pdflatex compiles it as it is)"


@dataclass
class Frame:
    """One slide: its title and its paragraphs of LaTeX."""

    title: str
    body: list[str] = field(default_factory=list)

    def text(self) -> str:
        # shrink: a frame fuller than the slide is scaled down to fit it.
        body = "\n\n".join(self.body)
        return f"\\begin{{frame}}[shrink]{{{self.title}}}\n{body}\n\\end{{frame}}"


def frames(walkthrough: Walkthrough, options: RenderOptions) -> list[Frame]:
    """The walkthrough's frames: the title frame (with the inputs), a frame per step, and the
    notes' frame when there are notes."""
    shown: list[Frame] = []
    for block in doc.document(with_brief_whys(walkthrough), options):
        match block:
            case doc.Title(text, example):
                title = tex_text(text)
                shown.append(Frame(title))
                if example:
                    shown[-1].body.append(f"Example \\texttt{{{tex_text(example)}}}")
            case doc.StepHeading():
                shown.append(Frame(block.line(tex_text, lambda s: f"${shape_math(s)}$")))
            case doc.Line("section", "Notes"):
                shown.append(Frame("Notes"))
            case doc.Line("section", text):  # the inputs, on the title frame
                shown[-1].body.append(f"\\textbf{{{tex_text(text)}}}")
            case _:
                shown[-1].body.extend(latex_chunks(block, options))
    return shown


def to_beamer(walkthrough: Walkthrough, options: RenderOptions) -> str:
    """A whole beamer document: pdflatex compiles it as it is."""
    body = "\n\n".join(frame.text() for frame in frames(walkthrough, options))
    preamble = "\n".join(PREAMBLE_LINES)
    return f"{FIRST_LINE}\n{preamble}\n\\begin{{document}}\n{body}\n\\end{{document}}\n"
