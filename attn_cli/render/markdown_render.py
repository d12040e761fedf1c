"""Markdown: headings, paragraphs and pipe tables that paste into notes unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attn_cli.model import Walkthrough, summary
from attn_cli.render import RenderOptions
from attn_cli.render.numbers import as_matrix, format_number, shape_text

MAX_ROWS = 20
MAX_COLS = 12


def to_markdown(walkthrough: Walkthrough, options: RenderOptions) -> str:
    title = walkthrough.title + (
        f" — example `{walkthrough.example}`" if walkthrough.example else ""
    )
    lines = [f"## {title}", ""]
    for paragraph in (walkthrough.intro, walkthrough.example_description):
        if paragraph:
            lines += [paragraph, ""]
    lines += [f"*backend {walkthrough.backend}, {walkthrough.device}, {walkthrough.dtype}*", ""]
    if walkthrough.inputs:
        lines += ["### Inputs", ""]
        for item in walkthrough.inputs:
            lines += [f"**{item.name}** ({shape_text(np.shape(item.value))})", ""]
            lines += [*table_lines(item.value, options, item.row_labels, item.col_labels), ""]
    for number, step in enumerate(walkthrough.steps, start=1):
        heading = f"### {number}. {step.title}"
        if step.kind not in ("records", "histogram", "text"):
            heading += f" ({shape_text(np.shape(step.value))})"
        lines += [heading, ""]
        if step.explanation:
            lines += [step.explanation, ""]
        lines += value_lines(step.value, step.kind, options, step.row_labels, step.col_labels)
        lines += [""] + [f"> **Note:** {note}" for note in step.notes]
        if step.notes:
            lines.append("")
    if walkthrough.notes:
        lines += ["### Notes", ""] + [f"- {note}" for note in walkthrough.notes] + [""]
    return "\n".join(lines).rstrip() + "\n"


def value_lines(
    value: Any,
    kind: str,
    options: RenderOptions,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
) -> list[str]:
    if kind == "text":
        return [str(value)]
    if kind == "records":
        return records_lines(value, options)
    if kind == "histogram":
        return [
            f"| bin | {' | '.join(value['series'])} |",
            "|---|" + "---:|" * len(value["series"]),
            *(
                f"| [{value['edges'][i]:+.1f}, {value['edges'][i + 1]:+.1f}) | "
                + " | ".join(str(counts[i]) for counts in value["series"].values())
                + " |"
                for i in range(len(value["edges"]) - 1)
            ),
        ]
    if kind == "scalar" or np.ndim(value) == 0:
        return [f"**{format_number(value, options.precision, unicode=False)}**"]
    return table_lines(value, options, row_labels, col_labels)


def table_lines(
    value: Any,
    options: RenderOptions,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
) -> list[str]:
    rows = as_matrix(value)
    n_rows, n_cols = rows.shape
    shown = rows[:MAX_ROWS, :MAX_COLS]
    names = list(col_labels) if col_labels and len(col_labels) == n_cols else None
    header = [names[c] if names else str(c + 1) for c in range(shown.shape[1])]
    row_names = list(row_labels) if row_labels and len(row_labels) == n_rows else None
    lines = ["| | " + " | ".join(header) + " |", "|---|" + "---:|" * len(header)]
    for r, row in enumerate(shown):
        label = row_names[r] if row_names else str(r + 1)
        cells = [format_number(x, options.precision, unicode=False) for x in row]
        lines.append(f"| **{label}** | " + " | ".join(cells) + " |")
    if shown.shape != rows.shape:
        stats = summary(rows)
        lines.append("")
        lines.append(
            f"*Corner of a {shape_text(np.shape(value))} matrix; "
            + ", ".join(
                f"{k} {format_number(stats[k], options.precision, unicode=False)}"
                for k in ("min", "max", "mean", "std")
                if k in stats
            )
            + ".*"
        )
    return lines


def records_lines(records: list[dict[str, Any]], options: RenderOptions) -> list[str]:
    if not records:
        return ["(no rows)"]
    columns = list(records[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---:|" * len(columns)]
    for record in records:
        cells = []
        for column in columns:
            item = record.get(column)
            if item is None:
                cells.append("—")
            elif isinstance(item, int | float | np.number) and not isinstance(item, bool):
                cells.append(format_number(item, options.precision, unicode=False))
            else:
                cells.append(str(item))
        lines.append("| " + " | ".join(cells) + " |")
    return lines
