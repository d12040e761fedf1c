"""Rich layout of a walkthrough: a table per matrix, weights shaded, big matrices as corners."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from rich import box
from rich.columns import Columns
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.style import Style
from rich.table import Table
from rich.text import Text

from attn_cli.lesson_files import LessonFile
from attn_cli.model import InputValue, Part, Step, Walkthrough, summary
from attn_cli.render import RenderOptions
from attn_cli.render.numbers import as_matrix, format_number, shape_text

# A matrix larger than this prints as its top-left corner plus summary statistics.
MAX_ROWS = 12
MAX_COLS = 8
CORNER = 6
# A heatmap larger than this is drawn as blocks, one character per cell, sampled to fit.
HEATMAP_MAX_ROWS = 40
HEATMAP_MAX_COLS = 64
_BLOCKS = " ░▒▓█"


def print_walkthrough(walkthrough: Walkthrough, console: Console, options: RenderOptions) -> None:
    console.print(walkthrough_renderable(walkthrough, options))


# Notebook cells are wider than a terminal's 80 columns.
HTML_WIDTH = 100
_HTML_PRE = (
    "<pre style=\"font-family: Menlo, 'DejaVu Sans Mono', Consolas, monospace; "
    'line-height: 1.25; white-space: pre; overflow-x: auto">{code}</pre>'
)


def walkthrough_html(walkthrough: Walkthrough, options: RenderOptions) -> str:
    """The rich tables, colours and shading as an HTML fragment (for Jupyter)."""
    import io

    console = Console(
        record=True,
        file=io.StringIO(),
        width=HTML_WIDTH,
        color_system="truecolor",
        force_terminal=True,
        force_jupyter=False,
    )
    console.print(walkthrough_renderable(walkthrough, options))
    return console.export_html(inline_styles=True, code_format=_HTML_PRE)


def walkthrough_renderable(walkthrough: Walkthrough, options: RenderOptions) -> Group:
    return Group(
        *(part for section in walkthrough_sections(walkthrough, options) for part in section)
    )


def walkthrough_sections(
    walkthrough: Walkthrough, options: RenderOptions
) -> list[list[RenderableType]]:
    """The walkthrough in screens: header and inputs, each step, then the notes (if any)."""
    sections = [[header(walkthrough), *inputs_renderables(walkthrough, options)]]
    for number, step in enumerate(walkthrough.steps, start=1):
        sections.append(step_renderables(step, number, options))
    if walkthrough.notes:
        sections.append(notes_renderables(walkthrough))
    return sections


def inputs_renderables(walkthrough: Walkthrough, options: RenderOptions) -> list[RenderableType]:
    if not walkthrough.inputs:
        return []
    return [
        Text(""),
        Rule("Inputs", align="left", style="dim"),
        Columns([_input_block(item, options) for item in walkthrough.inputs]),
    ]


def notes_renderables(walkthrough: Walkthrough) -> list[RenderableType]:
    return [
        Text(""),
        Rule("Notes", align="left", style="dim"),
        *(Text(f"• {note}", style="yellow") for note in walkthrough.notes),
    ]


def header(walkthrough: Walkthrough) -> RenderableType:
    title = Text(walkthrough.title, style="bold")
    if walkthrough.example:
        title.append(f" · example {walkthrough.example}", style="bold cyan")
    lines: list[RenderableType] = [title]
    if walkthrough.intro:
        lines.append(Text(walkthrough.intro))
    if walkthrough.example_description:
        lines.append(Text(walkthrough.example_description, style="italic"))
    lines.append(
        Text(
            f"backend {walkthrough.backend} · device {walkthrough.device} · {walkthrough.dtype}",
            style="dim",
        )
    )
    return Group(*lines)


def _input_block(item: InputValue, options: RenderOptions) -> RenderableType:
    shape = np.shape(item.value)
    label = Text(f"{item.name}", style="bold")
    if item.description:
        label.append(f" {item.description}")
    label.append(f" · {shape_text(shape)}", style="dim")
    return Group(
        label,
        value_renderable(
            item.value, "matrix", options, row_labels=item.row_labels, col_labels=item.col_labels
        ),
    )


def step_renderables(step: Step, number: int, options: RenderOptions) -> list[RenderableType]:
    """A step: its rule with title and shape, explanation, intermediates, value and notes."""
    out: list[RenderableType] = [Text(""), step_rule(step, number)]
    if step.explanation:
        out.append(Text(step.explanation))
    if step.parts:
        out.append(Columns([_part_block(part, step, options) for part in step.parts]))
    out.append(step_value(step, options))
    out.extend(step_notes(step))
    return out


def step_value(step: Step, options: RenderOptions) -> RenderableType:
    """The step's value as a table (or heatmap, histogram, ...) with its labels and row sums."""
    return value_renderable(
        step.value,
        step.kind,
        options,
        row_labels=step.row_labels,
        col_labels=step.col_labels,
        row_sums=step.row_sums,
    )


def step_notes(step: Step) -> list[RenderableType]:
    return [Text(f"Note: {note}", style="yellow") for note in step.notes]


def step_rule(step: Step, number: int) -> Rule:
    """The step's heading: number, title, shape (and time with --time)."""
    heading = f"Step {number} · {step.title}"
    if step.kind not in ("records", "histogram", "text"):
        heading += f" · {shape_text(np.shape(step.value))}"
    if step.seconds is not None:
        heading += f" · {step.seconds * 1e3:.3f} ms"
    return Rule(heading, align="left", style="cyan")


def _part_block(part: Part, step: Step, options: RenderOptions) -> RenderableType:
    value = np.asarray(part.value) if not isinstance(part.value, list | dict) else part.value
    columns = step.col_labels if np.shape(value)[-1:] == np.shape(step.value)[-1:] else None
    # A per-row quantity (row max, row sum) shows as one column: (m, 1), or (1,) for a vector.
    per_row = isinstance(value, np.ndarray) and (
        (value.ndim == 2 and value.shape[-1] == 1)
        or (value.ndim == 1 and value.size == 1 and np.ndim(step.value) == 1)
    )
    if per_row:
        return Group(
            Text(part.label, style="dim"),
            _matrix_table(value.reshape(-1, 1), options, step.row_labels, (part.label,)),
        )
    return Group(
        Text(part.label, style="dim"),
        value_renderable(value, part.kind, options, row_labels=step.row_labels, col_labels=columns),
    )


def value_renderable(
    value: Any,
    kind: str,
    options: RenderOptions,
    *,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    row_sums: np.ndarray | None = None,
) -> RenderableType:
    if kind == "text":
        return Padding(Text(str(value)), (0, 0, 0, 2))
    if kind == "records":
        return records_table(value, options)
    if kind == "histogram":
        return histogram(value)
    if kind == "scalar" or np.ndim(value) == 0:
        return Padding(Text(format_number(value, options.precision), style="bold"), (0, 0, 0, 2))
    array = np.asarray(value)
    if kind == "heatmap" and (
        array.shape[0] > HEATMAP_MAX_ROWS or array.shape[-1] > HEATMAP_MAX_COLS
    ):
        return block_heatmap(array)
    shading = {"weights": "weights", "heatmap": "signed"}.get(kind)
    return _matrix_table(array, options, row_labels, col_labels, row_sums, shading)


def _matrix_table(
    value: np.ndarray,
    options: RenderOptions,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None,
    row_sums: np.ndarray | None = None,
    shading: str | None = None,
) -> RenderableType:
    rows = as_matrix(value)
    n_rows, n_cols = rows.shape
    row_names = list(row_labels) if row_labels and len(row_labels) == n_rows else None
    col_names = list(col_labels) if col_labels and len(col_labels) == n_cols else None
    shown_rows = _shown_indices(n_rows, MAX_ROWS)
    shown_cols = _shown_indices(n_cols, MAX_COLS)
    scale = float(np.nanmax(np.abs(rows[np.isfinite(rows)]))) if np.isfinite(rows).any() else 1.0

    table = Table(box=box.ROUNDED, show_header=True, header_style="bold", pad_edge=True)
    table.add_column("", style="bold", justify="right")
    for col in shown_cols:
        table.add_column(
            "…" if col is None else (col_names[col] if col_names else str(col + 1)), justify="right"
        )
    sums = None if row_sums is None else np.atleast_1d(row_sums)
    if sums is not None:
        table.add_column("Σ row", justify="right", style="dim")
    for row in shown_rows:
        if row is None:
            cells = ["⋮"] + ["⋮" if c is not None else "⋱" for c in shown_cols]
            table.add_row(*cells, *(["⋮"] if sums is not None else []))
            continue
        label = row_names[row] if row_names else str(row + 1)
        cells: list[RenderableType] = [label]
        for col in shown_cols:
            if col is None:
                cells.append("…")
                continue
            number = rows[row, col]
            cells.append(
                Text(format_number(number, options.precision), style=_shade(number, scale, shading))
            )
        if sums is not None:
            cells.append(format_number(sums[row], options.precision))
        table.add_row(*cells)
    if len(shown_rows) == n_rows and len(shown_cols) == n_cols:
        return Padding(table, (0, 0, 0, 2))
    stats = summary(rows)
    described = " · ".join(
        f"{name} {format_number(stats[name], options.precision)}"
        for name in ("min", "max", "mean", "std")
        if name in stats
    )
    caption = Text(f"shape {shape_text(np.shape(value))} · corner shown · {described}", style="dim")
    if "non_finite" in stats:
        caption.append(f" · {stats['non_finite']} non-finite", style="dim")
    return Padding(Group(table, caption), (0, 0, 0, 2))


def _shown_indices(count: int, limit: int) -> list[int | None]:
    """Indices to show; None marks the ellipsis (first CORNER entries, …, the last)."""
    if count <= limit:
        return list(range(count))
    return [*range(CORNER), None, count - 1]


def _shade(value: float, scale: float, shading: str | None) -> Style | None:
    """Darker = larger. Weights shade blue from 0 to 1; signed values red (+) and blue (−)."""
    if shading is None or not np.isfinite(value):
        return None
    if shading == "weights":
        strength = min(max(float(value), 0.0), 1.0)
        red, green, blue = (
            int(235 - 205 * strength),
            int(240 - 180 * strength),
            int(255 - 95 * strength),
        )
    else:
        strength = min(abs(float(value)) / scale, 1.0) if scale else 0.0
        fade = int(235 - 175 * strength)
        red, green, blue = (235, fade, fade) if value >= 0 else (fade, fade, 235)
    text = "white" if strength > 0.55 else "black"
    return Style.parse(f"{text} on rgb({red},{green},{blue})")


def block_heatmap(array: np.ndarray) -> RenderableType:
    """A matrix too large for numbers: one shaded character per sampled cell."""
    rows = as_matrix(array)
    row_step = max(1, -(-rows.shape[0] // HEATMAP_MAX_ROWS))
    col_step = max(1, -(-rows.shape[1] // HEATMAP_MAX_COLS))
    sampled = rows[::row_step, ::col_step]
    finite = np.isfinite(sampled)
    low = float(sampled[finite].min()) if finite.any() else 0.0
    high = float(sampled[finite].max()) if finite.any() else 1.0
    span = (high - low) or 1.0
    picture = Text()
    for row in sampled:
        for number in row:
            level = (
                0 if not np.isfinite(number) else round((number - low) / span * (len(_BLOCKS) - 1))
            )
            picture.append(
                _BLOCKS[level], style=_shade(2 * (number - low) / span - 1, 1.0, "signed")
            )
        picture.append("\n")
    legend = Text(
        f"shape {shape_text(array.shape)} · every {row_step} row(s), every {col_step} column(s) · "
        f"' ' = {format_number(low, 3)} … '█' = {format_number(high, 3)}",
        style="dim",
    )
    return Padding(Group(picture, legend), (0, 0, 0, 2))


def records_table(records: list[dict[str, Any]], options: RenderOptions) -> RenderableType:
    table = Table(box=box.ROUNDED, header_style="bold")
    if not records:
        return Text("(no rows)", style="dim")
    columns = list(records[0])
    for column in columns:
        table.add_column(column, justify="right")
    for record in records:
        table.add_row(*(_cell(record.get(column), options) for column in columns))
    return Padding(table, (0, 0, 0, 2))


def _cell(value: Any, options: RenderOptions) -> str:
    if value is None:
        return "—"
    if isinstance(value, int | float | np.number) and not isinstance(value, bool):
        return format_number(value, options.precision)
    return str(value)


def histogram(value: dict[str, Any], width: int = 40) -> RenderableType:
    """Bars per bin for each series: {"edges": [e0, ..., eB], "series": {name: [c1..cB]}}."""
    edges = list(value["edges"])
    out: list[RenderableType] = []
    for name, counts in value["series"].items():
        peak = max(max(counts), 1)
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column(justify="right", style="dim")
        table.add_column()
        table.add_column(justify="right", style="dim")
        for index, count in enumerate(counts):
            bar = "█" * round(width * count / peak)
            table.add_row(f"[{edges[index]:+.1f}, {edges[index + 1]:+.1f})", bar, str(count))
        out.append(Group(Text(str(name), style="bold"), table))
    return Padding(Group(*out), (0, 0, 0, 2))


def examples_table(lesson: LessonFile) -> RenderableType:
    """The examples of a lesson file: name, description and where it comes from."""
    table = Table(title=f"{lesson.title}: examples", box=box.ROUNDED, header_style="bold")
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("description")
    table.add_column("source", style="dim")
    for example in lesson.examples:
        name = example.name + (" (default)" if example.name == lesson.default_example else "")
        table.add_row(name, example.description, example.source)
    return table
