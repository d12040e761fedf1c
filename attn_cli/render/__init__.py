"""Renderers: lay a Walkthrough out as rich tables, JSON, Markdown or LaTeX.

Renderers read the walkthrough and format it; they never compute attention. Only the
Console (or the stream handed in) writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from attn_cli.model import Walkthrough


class Format(StrEnum):
    rich = "rich"
    json = "json"
    markdown = "markdown"
    latex = "latex"
    svg = "svg"  # the rich output, colours kept, as an SVG picture
    html = "html"  # the rich output, colours kept, as an HTML page


@dataclass(frozen=True)
class RenderOptions:
    precision: int = 4
    full: bool = False  # JSON: every entry even of large matrices


def show(
    walkthrough: Walkthrough,
    view: str,
    *,
    precision: int,
    full: bool = False,
    path: str | Path | None = None,
) -> Any:
    """The one entry point of the Walkthrough's hooks (``w.to_dict()``, ``w.to_markdown()``,
    ``w.plot()``, ``rich.print(w)``, Jupyter's view): ``view`` is "dict", "markdown", "latex",
    "html", "svg", "plot" (a Figure, or saved to ``path``), "rich" or "notebook"."""
    options = RenderOptions(precision=precision, full=full)
    if view == "dict":
        from attn_cli.render.json_render import to_document

        ensure_output_fits(walkthrough, Format.json, options)
        return to_document(walkthrough, options)
    if view in ("markdown", "latex", "html", "svg"):
        return render_text(walkthrough, Format(view), options)
    if view == "plot":
        from attn_cli.render.heatmap import check_heatmap_path, heatmap_figure, save_figure

        if path is None:
            return heatmap_figure(walkthrough, precision)
        check_heatmap_path(Path(path))
        save_figure(heatmap_figure(walkthrough, precision), Path(path))
        return None
    from attn_cli.render.rich_render import walkthrough_html, walkthrough_renderable

    if view == "rich":
        return walkthrough_renderable(walkthrough, options)
    if view == "notebook":
        return walkthrough_html(walkthrough, options)
    raise ValueError(f"no view {view!r} of a walkthrough")


def render_text(walkthrough: Walkthrough, fmt: Format, options: RenderOptions) -> str:
    """The walkthrough as the text of a file format (json, markdown, latex, svg, html)."""
    if fmt is Format.json:
        from attn_cli.render.json_render import to_json

        return to_json(walkthrough, options)
    if fmt is Format.markdown:
        from attn_cli.render.markdown_render import to_markdown

        return to_markdown(walkthrough, options)
    if fmt is Format.latex:
        from attn_cli.render.latex_render import to_latex

        return to_latex(walkthrough, options)
    if fmt is Format.svg:
        from attn_cli.render.rich_render import walkthrough_svg

        return walkthrough_svg(walkthrough, options)
    if fmt is Format.html:
        from attn_cli.render.rich_render import walkthrough_html

        return walkthrough_html(walkthrough, options, page=True)
    raise ValueError(f"{fmt} is not a plain-text format")


# Memory to build one number of a --full JSON document: the Python float and its list slot
# (tolist), its text in the encoder's chunks and in the joined string. Measured: n = 3000
# scaled (46 million numbers) grew to 3.1 GB before json.dumps failed under a 4 GB limit.
BYTES_PER_FULL_NUMBER = 100


def ensure_output_fits(walkthrough: Walkthrough, fmt: Format, options: RenderOptions) -> None:
    """Refuse, before writing, an output whose text would not fit in memory.

    Only ``--full`` JSON holds every entry; the other formats show the corners of large
    matrices, so their size does not grow with the matrices.
    """
    if not (options.full and fmt is Format.json):
        return
    from attn_cli.backend import available_host_bytes, format_bytes

    numbers = walkthrough_entries(walkthrough)
    needed = numbers * BYTES_PER_FULL_NUMBER
    available = available_host_bytes()
    if available is not None and needed > available:
        from attn_cli.errors import UserError

        raise UserError(
            f"--format json --full would write all {numbers:,} numbers, which needs about "
            f"{format_bytes(needed)} of memory to build but only {format_bytes(available)} is "
            "free; leave out --full (large matrices are then summarised) or choose smaller sizes."
        )


def walkthrough_entries(walkthrough: Walkthrough) -> int:
    """How many numbers the walkthrough's arrays hold (inputs, steps, their parts, output; of a
    batch, the item shown and every item, as the JSON writes them)."""
    import numpy as np

    values = [item.value for item in walkthrough.inputs] + [walkthrough.output]
    for step in walkthrough.steps:
        values += [step.value, step.row_sums, *(part.value for part in step.parts)]
    shown = sum(value.size for value in values if isinstance(value, np.ndarray))
    return shown + sum(walkthrough_entries(item) for item in walkthrough.items)


def render(walkthrough: Walkthrough, fmt: Format, console: Console, options: RenderOptions) -> None:
    """Write the walkthrough to the console in the chosen format."""
    ensure_output_fits(walkthrough, fmt, options)
    if fmt is Format.rich:
        from attn_cli.render.rich_render import print_walkthrough

        print_walkthrough(walkthrough, console, options)
    else:
        console.out(render_text(walkthrough, fmt, options), highlight=False)
