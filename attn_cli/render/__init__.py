"""Renderers: lay a Walkthrough out as rich tables, JSON, Markdown or LaTeX.

Renderers read the walkthrough and format it; they never compute attention. Only the
Console (or the stream handed in) writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attn_cli.render.options import Format, RenderOptions

if TYPE_CHECKING:
    from rich.console import Console

    from attn_cli.core.model import Walkthrough


def show(
    walkthrough: Walkthrough,
    view: str,
    *,
    precision: int,
    full: bool = False,
    path: str | Path | None = None,
    code_backend: str = "numpy",
    figure: Any = None,
    programs: Any = None,
    document: bool = False,
) -> Any:
    """The one entry point of the Walkthrough's hooks (``w.to_dict()``, ``w.to_markdown()``,
    ``w.plot()``, ``w.to_code()``, ``rich.print(w)``, Jupyter's view): ``view`` is "dict",
    "markdown", "latex", "html", "svg", "plot" (a Figure, or saved to ``path``), "code" (the
    program of ``--code`` for ``code_backend``), "rich", "notebook", "text" (the terminal's
    text without colour, ``str(w)``) or "print" (written to the terminal, ``w.view()``). ``figure`` and
    ``programs`` are the walkthrough's lesson's (its folder's ``figure.draw`` and ``program``,
    handed in by the caller: the renderers know no lesson)."""
    options = RenderOptions(precision=precision, full=full, whole_document=document)
    if view == "dict":
        from attn_cli.render.json_render import to_document

        ensure_output_fits(walkthrough, Format.json, options)
        return to_document(walkthrough, options)
    if view == "code":
        from attn_cli.render.code_render import program_text

        return program_text(walkthrough, programs, code_backend)
    if view in ("markdown", "latex", "beamer", "html", "svg"):
        return render_text(walkthrough, Format(view), options)
    if view == "plot":
        from attn_cli.render.heatmap import PYTHON, check_heatmap_path, heatmap_figure, save_figure

        # Python's w.plot(): its errors name the method, not the command line's --plot.
        if path is None:
            return heatmap_figure(walkthrough, figure, precision, PYTHON)
        check_heatmap_path(Path(path), PYTHON)
        save_figure(heatmap_figure(walkthrough, figure, precision, PYTHON), Path(path), PYTHON)
        return None
    from attn_cli.render.rich_render import (
        walkthrough_html,
        walkthrough_renderable,
        walkthrough_text,
    )

    if view == "rich":
        return walkthrough_renderable(walkthrough, options)
    if view == "text":
        return walkthrough_text(walkthrough, options)
    if view == "print":
        from rich.console import Console

        Console(highlight=False).print(walkthrough_renderable(walkthrough, options))
        return None
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
    if fmt is Format.beamer:
        from attn_cli.render.beamer_render import to_beamer

        return to_beamer(walkthrough, options)
    if fmt is Format.svg:
        from attn_cli.render.rich_render import walkthrough_svg

        return walkthrough_svg(walkthrough, options)
    if fmt is Format.html:
        from attn_cli.render.rich_render import walkthrough_html

        return walkthrough_html(walkthrough, options, page=True)
    raise ValueError(f"{fmt} is not a plain-text format")


# Memory to hold one number of a --full JSON document as Python data (``w.to_dict()``): the
# float tolist makes (24 bytes) and its slot in a list (8), with the lists and dicts around
# them. Measured with tracemalloc (tests/test_output_guards.py): 32.6 to 34.3 bytes a number
# for scaled at n = 100 to 400. The command line writes --full JSON in pieces instead
# (json_render.json_chunks): its memory does not grow with the document.
BYTES_PER_DOCUMENT_NUMBER = 34


# --full JSON as the command line writes it: about 21 bytes a number (a float64's shortest
# repr, ", " and the brackets), written at about JSON_NUMBERS_PER_SECOND of a core's time (attn
# scaled --n 1500 --dk 64 --full: 248 MB for 11.7 million numbers in 25 s of CPU, 4.7e5 a
# second; 46 s of wall-clock time on a loaded 2-core machine, 2026-12). The work guard refuses
# minutes of it up front (n = 3,000: 45 million numbers, about 100 s, still written).
JSON_BYTES_PER_NUMBER = 21
JSON_NUMBERS_PER_SECOND = 4.5e5


def check_document_work(numbers: int) -> None:
    """Refuse a --full JSON document of ``numbers`` numbers that would take minutes to write,
    saying its size."""
    from attn_cli.core import work
    from attn_cli.core.numbers import format_bytes

    work.check_work(
        numbers,
        JSON_NUMBERS_PER_SECOND,
        f"--format json --full writes every number: about {numbers:.2g} at these sizes "
        f"({format_bytes(numbers * JSON_BYTES_PER_NUMBER)} of JSON)",
        "leave out --full (large matrices are then summarised) or choose smaller sizes",
    )


def document_bytes(walkthrough: Walkthrough) -> int:
    """The memory ``to_document`` takes to build the --full document of ``walkthrough``."""
    return walkthrough_entries(walkthrough) * BYTES_PER_DOCUMENT_NUMBER


def ensure_output_fits(walkthrough: Walkthrough, fmt: Format, options: RenderOptions) -> None:
    """Refuse, before building it, a --full document (``w.to_dict(full=True)``) that would not
    fit in memory.

    Only ``--full`` holds every entry; without it large matrices are summarised, and the
    command line's JSON is written in pieces (see render), so neither grows with the matrices.
    """
    if not (options.full and fmt is Format.json):
        return
    from attn_cli.core.backend import available_host_bytes, format_bytes

    needed = document_bytes(walkthrough)
    available = available_host_bytes()
    if available is not None and needed > available:
        from attn_cli.core.errors import UserError

        numbers = walkthrough_entries(walkthrough)
        raise UserError(
            f"the --full document holds all {numbers:,} numbers, which needs about "
            f"{format_bytes(needed)} of memory to build but only {format_bytes(available)} is "
            "free; leave out full=True (large matrices are then summarised), write it with "
            "`attn ... --format json --full` (written in pieces), or choose smaller sizes."
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
    """Write the walkthrough to the console in the chosen format (JSON in pieces: see
    write_chunks)."""
    if fmt is Format.rich:
        from attn_cli.render.rich_render import print_walkthrough

        print_walkthrough(walkthrough, console, options)
    elif fmt is Format.json:
        from attn_cli.render.json_render import json_chunks

        write_chunks(console, json_chunks(walkthrough, options, not unicode_ok(console)))
    else:
        console.out(render_text(walkthrough, fmt, options), highlight=False)


def unicode_ok(console: Console) -> bool:
    """Whether the console's stream takes any character (UTF-8, or a file attn encodes)."""
    return console.encoding.lower().replace("-", "").startswith("utf")


def write_chunks(console: Console, chunks: Iterable[str]) -> None:
    """Write text straight to the console's stream, piece by piece, then a newline: a document
    too large to hold twice (--full JSON) never is, and a reader that went away stops it at
    the next piece (BrokenPipeError, which the command ends quietly)."""
    stream = console.file
    for chunk in chunks:
        stream.write(chunk)
    stream.write("\n")
    stream.flush()
