"""LaTeX: each step as a display equation with a bmatrix (needs amsmath)."""

from __future__ import annotations

from typing import Any

import numpy as np

from attn_cli.model import Walkthrough
from attn_cli.render import RenderOptions
from attn_cli.render.markdown_render import records_lines
from attn_cli.render.numbers import as_matrix, format_number, shape_text

MAX_ROWS = 12
MAX_COLS = 10


def to_latex(walkthrough: Walkthrough, options: RenderOptions) -> str:
    title = walkthrough.title + (f", example {walkthrough.example}" if walkthrough.example else "")
    lines = [f"% {title} (attn; needs \\usepackage{{amsmath}})"]
    if walkthrough.inputs:
        matrices = ",\\quad ".join(
            f"{_symbol(item.name)} = {bmatrix(item.value, options)}" for item in walkthrough.inputs
        )
        lines += ["% Inputs", f"\\[ {matrices} \\]"]
    for number, step in enumerate(walkthrough.steps, start=1):
        lines.append(f"% {number}. {step.title} ({shape_text(np.shape(step.value))})")
        if step.kind == "records":
            lines += [f"% {line}" for line in records_lines(step.value, options)]
            continue
        if step.kind in ("text", "histogram"):
            lines.append(
                f"% {step.value}" if step.kind == "text" else "% (histogram: see --format json)"
            )
            continue
        left = step.latex or f"\\text{{{_escape(step.key)}}}"
        lines.append(f"\\[ {left} = {bmatrix(step.value, options)} \\]")
        lines += [f"% Note: {note}" for note in step.notes]
    lines += [f"% Note: {note}" for note in walkthrough.notes]
    return "\n".join(lines) + "\n"


def bmatrix(value: Any, options: RenderOptions) -> str:
    if np.ndim(value) == 0:
        return _number(value, options)
    rows = as_matrix(value)
    shown = rows[:MAX_ROWS, :MAX_COLS]
    body_rows = []
    for row in shown:
        cells = [_number(x, options) for x in row]
        if shown.shape[1] < rows.shape[1]:
            cells.append("\\cdots")
        body_rows.append(" & ".join(cells))
    if shown.shape[0] < rows.shape[0]:
        body_rows.append(
            " & ".join(["\\vdots"] * (len(shown[0]) + (shown.shape[1] < rows.shape[1])))
        )
    return "\\begin{bmatrix} " + " \\\\ ".join(body_rows) + " \\end{bmatrix}"


def _number(value: Any, options: RenderOptions) -> str:
    text = format_number(value, options.precision, unicode=False)
    return {"inf": "\\infty", "-inf": "-\\infty", "nan": "\\text{NaN}"}.get(text, text)


def _symbol(name: str) -> str:
    """W1 -> W_{1}, W_Q -> W_{Q}, Q -> Q."""
    base, _, sub = name.partition("_")
    if not sub and len(name) > 1 and name[1:].isdigit():
        base, sub = name[0], name[1:]
    return f"{base}_{{{sub}}}" if sub else _escape(name)


def _escape(text: str) -> str:
    return text.replace("_", "\\_").replace("&", "\\&").replace("%", "\\%")
