"""LaTeX: a section per walkthrough, a subsection per step, matrices as ``bmatrix`` equations and
tables as ``tabular`` s, ready to paste into a document.

The first line of the output is a comment that states the preamble it compiles with
(:data:`PREAMBLE`); nothing else is assumed. Every piece of text that comes from a lesson file or
the command line (titles, explanations, labels, notes) goes through :func:`tex_text`, which
escapes LaTeX's special characters and spells the Unicode that lesson texts use (√, ·, ᵀ, α,
...) as LaTeX commands, so the output compiles with a plain ``pdflatex``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attn_cli.core.batch import batch_line
from attn_cli.core.model import Part, Step, Summary, Walkthrough, summary
from attn_cli.core.numbers import NumberStyle, as_matrix, format_column, number_style
from attn_cli.render import RenderOptions
from attn_cli.render.markdown_render import record_columns, shown_indices

# Matrices wider than MAX_COLS show their first CORNER_COLS columns, \cdots and the last one;
# taller than MAX_ROWS, their first CORNER_ROWS rows, \vdots and the last. A bmatrix then has
# at most MAX_COLS columns: well inside the MaxMatrixCols that the preamble sets.
MAX_ROWS = 12
CORNER_ROWS = 10
MAX_COLS = 8
CORNER_COLS = 6
MAX_MATRIX_COLS = 20
# The text width of the article class at 10pt, and the smaller sizes that a display or table
# too wide for it is set in (each with its scale): it stays on the page.
TEXT_WIDTH_PT = 345.0
_COLUMN_SEP = 10.0  # between the columns of a bmatrix (2 \arraycolsep)
_TABLE_SEP = 12.0  # between the columns of a tabular (2 \tabcolsep)
_BRACKETS = 10.0
_SIZES = (
    ("", 1.0),
    ("\\small", 0.9),
    ("\\footnotesize", 0.8),
    ("\\scriptsize", 0.7),
    ("\\tiny", 0.5),
)

PREAMBLE = (
    r"\documentclass{article} \usepackage{amsmath} "
    rf"\setcounter{{MaxMatrixCols}}{{{MAX_MATRIX_COLS}}}"
)
FIRST_LINE = f"% attn LaTeX: compile with {PREAMBLE}"


def to_latex(walkthrough: Walkthrough, options: RenderOptions) -> str:
    walkthrough = walkthrough.at_precision(options.precision)
    title = tex_text(walkthrough.title)
    if walkthrough.example:
        title += f", example \\texttt{{{tex_text(walkthrough.example)}}}"
    lines = [FIRST_LINE, f"\\section*{{{title}}}", ""]
    if walkthrough.intro:
        lines += [tex_paragraph(walkthrough.intro), ""]
    if walkthrough.example_description:
        lines += [f"\\emph{{{tex_text(walkthrough.example_description)}}}", ""]
    backend = f"backend {walkthrough.backend}, {walkthrough.device}, {walkthrough.dtype}"
    lines += [f"\\textit{{{tex_text(backend)}}}", ""]
    if walkthrough.time_legend:
        lines += [f"\\textit{{{tex_text(walkthrough.time_legend)}}}", ""]
    if walkthrough.items:
        lines += [f"\\textbf{{{tex_text(batch_line(walkthrough))}}}", ""]
    if walkthrough.inputs:
        lines += ["\\subsection*{Inputs}", ""]
        for item in walkthrough.inputs:
            intro = f"${tex_symbol(item.name)}$"
            if item.description:
                intro += f", {tex_text(item.description)}"
            intro += f" (${shape_math(np.shape(item.value))}$):"
            lines += [f"\\noindent {intro}", ""]
            lines += equation_lines(
                tex_symbol(item.name), item.value, options, item.row_labels, item.col_labels
            )
            lines.append("")
    for number, step in enumerate(walkthrough.steps, start=1):
        lines += step_lines(step, number, options)
    if walkthrough.notes:
        lines += ["\\subsection*{Notes}", "", "\\begin{itemize}"]
        lines += [f"\\item {tex_text(note.text(options.precision))}" for note in walkthrough.notes]
        lines += ["\\end{itemize}", ""]
    return "\n".join(lines).rstrip() + "\n"


def step_lines(step: Step, number: int, options: RenderOptions) -> list[str]:
    """A step: heading (number, title, shape), explanation, intermediates, value, notes."""
    heading = f"{number}. {tex_text(step.title)}"
    if step.kind not in ("records", "histogram", "text"):
        heading += f" (${shape_math(np.shape(step.value))}$)"
    if step.seconds is not None:
        heading += f" ({step.seconds * 1e3:.3f} ms)"
    lines = [f"\\subsection*{{{heading}}}", ""]
    if step.explanation:
        lines += [tex_paragraph(step.explanation), ""]
    lines += parts_lines(step.parts, options)
    lines += value_lines(step, options)
    for note in step.notes:
        lines += [f"\\emph{{Note:}} {tex_text(note.text(options.precision))}", ""]
    return lines


def value_lines(step: Step, options: RenderOptions) -> list[str]:
    """The step's value: a paragraph, a tabular, or an equation whose left-hand side is the
    lesson's LaTeX (a step without one is a table under its title)."""
    if step.kind == "text":
        return [tex_paragraph(str(step.value)), ""]
    if step.kind == "records":
        return [*records_tabular(step.value, options, step.headings), ""]
    if step.kind == "histogram":
        return [*histogram_tabular(step.value), ""]
    if step.latex is None and np.ndim(step.value) > 0:
        return [
            *matrix_tabular(
                step.value,
                options,
                step.row_labels,
                step.col_labels,
                step.row_sums,
                stats=step.summary,
            ),
            "",
        ]
    left = step.latex if step.latex is not None else f"\\text{{{tex_text(step.title)}}}"
    return [
        *equation_lines(
            left,
            step.value,
            options,
            step.row_labels,
            step.col_labels,
            step.row_sums,
            stats=step.summary,
        ),
        "",
    ]


def parts_lines(parts: Sequence[Part], options: RenderOptions) -> list[str]:
    """The labelled intermediates (row max, exp, ...): one display, an equation per line."""
    lines: list[str] = []
    equations = []
    for part in parts:
        if part.kind in ("records", "histogram", "text"):
            inner = Step(part.label, part.label, "", part.value, kind=part.kind)
            lines += [f"\\noindent {tex_text(part.label)}:", "", *value_lines(inner, options)]
            continue
        left = f"\\text{{{tex_text(part.label)}}}"
        budget = TEXT_WIDTH_PT - _math_width(left) - _math_width("=") - _BRACKETS
        equations.append(f"{left} = {bmatrix(part.value, options, budget)}")
    if equations:
        body = " \\\\\n".join(equations)
        lines = ["\\begin{gather*}", body, "\\end{gather*}", "", *lines]
    return lines


def equation_lines(
    left: str,
    value: Any,
    options: RenderOptions,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    row_sums: Any = None,
    *,
    stats: Summary | None = None,
) -> list[str]:
    """``\\[ left = [matrix] \\]``, with the weights' row sums beside it, then the labels and
    (for a corner) the matrix's shape and statistics as a line of text."""
    if np.ndim(value) == 0 or np.size(value) == 0:
        return [f"\\[ {left} = {bmatrix(value, options)} \\]"]
    rows = as_matrix(value)
    shown_rows = shown_indices(rows.shape[0], MAX_ROWS, CORNER_ROWS)
    budget = TEXT_WIDTH_PT - _math_width(left) - _math_width("=") - _BRACKETS
    extra = ""
    style = _table_style(rows, shown_rows, options)
    if row_sums is not None:
        sums = np.atleast_1d(np.asarray(row_sums)).reshape(-1, 1)
        if sums.shape[0] == rows.shape[0]:
            style = _table_style(rows, shown_rows, options, sums)  # the sums in the same format
            column = _grid(sums, shown_rows, [0], options, style=style)
            extra = f" \\qquad \\Sigma_{{\\text{{row}}}} = {_bmatrix_text(column)}"
            budget -= 20 + _math_width("\\Sigma_{row}=") + _BRACKETS
            budget -= max(_math_width(cell[0]) for cell in column)
    shown_cols = _fit_columns(rows, shown_rows, options, budget, style=style)
    grid = _grid(rows, shown_rows, shown_cols, options, style=style)
    lines = [f"\\[ {left} = {_bmatrix_text(grid)}{extra} \\]"]
    described = []
    row_names = _labels(row_labels, rows.shape[0], shown_rows)
    col_names = _labels(col_labels, rows.shape[1], shown_cols)
    if row_names:
        described.append(f"rows {row_names}")
    if col_names:
        described.append(f"columns {col_names}")
    corner = _corner_text(value, rows, shown_rows, shown_cols, options, stats)
    if described or corner:
        text = "; ".join(described)
        text = text[:1].upper() + text[1:] + "." if text else ""
        lines.append("{\\small " + " ".join(filter(None, (text, corner))) + "\\par}")
    return lines


def bmatrix(value: Any, options: RenderOptions, budget: float = TEXT_WIDTH_PT) -> str:
    """A number, or a matrix (a vector as one row) as a bmatrix; a large one as its corner."""
    if np.ndim(value) == 0:
        return _cells(np.asarray(value).reshape(1, 1), options)[0][0]
    if np.size(value) == 0:
        return "\\text{(empty)}"
    rows = as_matrix(value)
    shown_rows = shown_indices(rows.shape[0], MAX_ROWS, CORNER_ROWS)
    style = _table_style(rows, shown_rows, options)
    shown_cols = _fit_columns(rows, shown_rows, options, budget - _BRACKETS, style=style)
    return _bmatrix_text(_grid(rows, shown_rows, shown_cols, options, style=style))


def _bmatrix_text(grid: list[list[str]]) -> str:
    body = " \\\\ ".join(" & ".join(cells) for cells in grid)
    return f"\\begin{{bmatrix}} {body} \\end{{bmatrix}}"


def _sized(lines: list[str], width: float) -> list[str]:
    """The lines in the largest font size at which ``width`` (points at 10pt) fits the text."""
    command = next(
        (command for command, scale in _SIZES if width * scale <= TEXT_WIDTH_PT), _SIZES[-1][0]
    )
    if not command:
        return lines
    return [f"{{{command}", *lines, "}"]


def _table_style(
    rows: np.ndarray, shown_rows: list[int | None], options: RenderOptions, sums: Any = None
) -> NumberStyle | None:
    """One number format for a whole table: its shown rows (every column) and row sums."""
    if rows.dtype == np.bool_:
        return None
    kept = [r for r in shown_rows if r is not None]
    values = [np.ravel(rows[kept])] + ([] if sums is None else [np.ravel(np.asarray(sums)[kept])])
    return number_style(np.concatenate(values), options.precision)


def _fit_columns(
    rows: np.ndarray,
    shown_rows: list[int | None],
    options: RenderOptions,
    budget: float,
    *,
    separation: float = _COLUMN_SEP,
    heads: Sequence[str] | None = None,
    style: NumberStyle | None = None,
) -> list[int | None]:
    """The columns to show: all (up to MAX_COLS), else as many of the first ones as fit the
    ``budget`` (points) beside \\cdots and the last column; at least the first and the last."""
    count = rows.shape[1]
    full = shown_indices(count, MAX_COLS, CORNER_COLS)
    candidates = sorted({c for c in full if c is not None} | set(range(min(count, CORNER_COLS))))
    row_index = [r for r in shown_rows if r is not None]
    cells = _cells(rows[np.ix_(row_index, candidates)], options, style)
    width = {
        column: separation
        + max(
            [_math_width(row[i]) for row in cells]
            + ([_math_width(heads[column])] if heads is not None else [])
        )
        for i, column in enumerate(candidates)
    }
    dots = separation + _math_width("\\cdots")

    def total(columns: list[int | None]) -> float:
        return sum(dots if column is None else width[column] for column in columns)

    if count <= 2 or total(full) <= budget:
        return full
    for first in range(min(CORNER_COLS, count - 2), 0, -1):
        columns: list[int | None] = [*range(first), None, count - 1]
        if total(columns) <= budget:
            return columns
    return [0, None, count - 1]


_CHAR_WIDTHS = {**dict.fromkeys("0123456789", 5.0), **dict.fromkeys(".,:;", 2.8)}
_CHAR_WIDTHS.update({"-": 7.8, "+": 7.8, "=": 7.8, "(": 3.9, ")": 3.9, " ": 3.3, "\x00": 10.0})


def _math_width(tex: str) -> float:
    """About how wide a piece of LaTeX (a number, a symbol, short text) is, in points at 10pt:
    enough to keep a matrix on the page."""
    scientific = re.fullmatch(r"(.*) \\times 10\^\{(-?\d+)\}", tex)
    if scientific:
        return _math_width(scientific.group(1)) + 22.2 + 4.6 * len(scientific.group(2))
    plain = re.sub(r"\\[A-Za-z]+", "\x00", tex)  # a command: one wide symbol
    plain = re.sub(r"[{}$^_]", "", plain)
    return sum(_CHAR_WIDTHS.get(char, 5.5) for char in plain)


def _grid(
    rows: np.ndarray,
    shown_rows: list[int | None],
    shown_cols: list[int | None],
    options: RenderOptions,
    *,
    dots: tuple[str, str, str] = ("\\cdots", "\\vdots", "\\ddots"),
    style: NumberStyle | None = None,
) -> list[list[str]]:
    """The shown cells (math mode), in one number format (``style``, else the cells' own),
    with the ellipses."""
    row_index = [r for r in shown_rows if r is not None]
    col_index = [c for c in shown_cols if c is not None]
    cells = _cells(rows[np.ix_(row_index, col_index)], options, style)
    across, down, diagonal = dots
    grid = []
    r_iter = iter(cells)
    for r in shown_rows:
        if r is None:
            grid.append([diagonal if c is None else down for c in shown_cols])
            continue
        row = iter(next(r_iter))
        grid.append([across if c is None else next(row) for c in shown_cols])
    return grid


def _cells(
    matrix: np.ndarray, options: RenderOptions, style: NumberStyle | None = None
) -> list[list[str]]:
    """Cells in math mode, all in one format (integers, fixed or scientific)."""
    array = np.asarray(matrix)
    if array.dtype == np.bool_:
        return [[f"\\text{{{bool(x)}}}" for x in row] for row in array]
    style = style or number_style(array, options.precision)  # one format for the whole table
    columns = [
        [
            tex_number(cell)
            for cell in format_column(array[:, c], options.precision, unicode=False, style=style)
        ]
        for c in range(array.shape[1])
    ]
    return [[column[r] for column in columns] for r in range(array.shape[0])]


def matrix_tabular(
    value: Any,
    options: RenderOptions,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None,
    row_sums: Any = None,
    *,
    stats: Summary | None = None,
) -> list[str]:
    """A matrix as a table with its row and column headings (and the weights' row sums);
    ``stats``: its recorded statistics, for the caption of a corner."""
    rows = as_matrix(value)
    n_rows, n_cols = rows.shape
    shown_rows = shown_indices(n_rows, MAX_ROWS, CORNER_ROWS)
    row_names = list(row_labels) if row_labels and len(row_labels) == n_rows else None
    col_names = list(col_labels) if col_labels and len(col_labels) == n_cols else None
    all_heads = [tex_text(name) for name in col_names] if col_names else None
    labels = [
        "$\\vdots$" if r is None else tex_text(row_names[r]) if row_names else str(r + 1)
        for r in shown_rows
    ]
    budget = TEXT_WIDTH_PT - _TABLE_SEP - max(_math_width(label) for label in labels)
    sums = None
    style = _table_style(rows, shown_rows, options)
    if row_sums is not None:
        sums_array = np.atleast_1d(np.asarray(row_sums)).reshape(-1, 1)
        if sums_array.shape[0] == n_rows:
            style = _table_style(rows, shown_rows, options, sums_array)  # one format with them
            sums = _grid(sums_array, shown_rows, [0], options, style=style)
            budget -= _TABLE_SEP + max(
                _math_width("$\\Sigma$ row"), *(_math_width(s[0]) for s in sums)
            )
    shown_cols = _fit_columns(
        rows,
        shown_rows,
        options,
        budget,
        separation=_TABLE_SEP,
        heads=all_heads or [str(c + 1) for c in range(n_cols)],
        style=style,
    )
    grid = _grid(rows, shown_rows, shown_cols, options, style=style)
    heads = [
        "$\\cdots$" if c is None else all_heads[c] if all_heads else str(c + 1) for c in shown_cols
    ]
    if sums is not None:
        heads.append("$\\Sigma$ row")
    table = [[label, *row] for label, row in zip(labels, grid, strict=True)]
    if sums is not None:
        table = [[*row, total[0]] for row, total in zip(table, sums, strict=True)]
    spec = "l" + "r" * len(heads)
    lines = [
        "\\begin{center}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\hline",
        " & ".join(["", *heads]) + " \\\\",
        "\\hline",
    ]
    for label, *cells in table:
        lines.append(" & ".join([label, *(f"${cell}$" for cell in cells)]) + " \\\\")
    lines += ["\\hline", "\\end{tabular}", "\\end{center}"]
    corner = _corner_text(value, rows, shown_rows, shown_cols, options, stats)
    if corner:
        lines.append("{\\small " + corner + "\\par}")
    return lines


def records_tabular(
    records: list[dict[str, Any]],
    options: RenderOptions,
    headings: Mapping[str, str] | None = None,
) -> list[str]:
    """A list of records as a table: a heading per key (``headings[key]``, else the key), one
    row per record."""
    if not records:
        return ["(no rows)"]
    columns = record_columns(records, options.precision, unicode=False, headings=headings)
    spec = "".join("r" if column.numeric else "l" for column in columns)
    lines = [
        "\\begin{center}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\hline",
        " & ".join(tex_text(column.name) for column in columns) + " \\\\",
        "\\hline",
    ]
    table = [[tex_text(column.name) for column in columns]]
    for index in range(len(records)):
        cells = []
        for column in columns:
            cell = column.cells[index]
            if cell is None:
                cells.append("---")
            elif column.is_number[index]:
                cells.append(f"${tex_number(cell)}$")
            else:
                cells.append(tex_text(cell))
        lines.append(" & ".join(cells) + " \\\\")
        table.append(cells)
    lines += ["\\hline", "\\end{tabular}", "\\end{center}"]
    widths = [max(_math_width(cell) for cell in column) for column in zip(*table, strict=True)]
    return _sized(lines, sum(widths) + _TABLE_SEP * len(widths))


def histogram_tabular(value: dict[str, Any]) -> list[str]:
    """A histogram as a table of counts: one row per bin, one column per series."""
    edges = list(value["edges"])
    series = dict(value["series"])
    lines = [
        "\\begin{center}",
        f"\\begin{{tabular}}{{l{'r' * len(series)}}}",
        "\\hline",
        " & ".join(["bin", *(tex_text(str(name)) for name in series)]) + " \\\\",
        "\\hline",
    ]
    for i in range(len(edges) - 1):
        low, high = f"{edges[i]:+.1f}", f"{edges[i + 1]:+.1f}"
        cells = [f"$[{low}, {high})$", *(str(counts[i]) for counts in series.values())]
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\hline", "\\end{tabular}", "\\end{center}"]
    return lines


def _labels(labels: Sequence[str] | None, count: int, shown: list[int | None]) -> str:
    if not labels or len(labels) != count:
        return ""
    return ", ".join("\\ldots" if i is None else tex_text(labels[i]) for i in shown)


def _corner_text(
    value: Any,
    rows: np.ndarray,
    shown_rows: list[int | None],
    shown_cols: list[int | None],
    options: RenderOptions,
    recorded: Summary | None = None,
) -> str:
    """For a cut-off matrix: its shape and statistics (as the terminal's caption): those
    ``recorded`` with it, else computed from it."""
    if None not in shown_rows and None not in shown_cols:
        return ""
    stats = (recorded or summary(rows)).as_dict()
    names = [name for name in ("min", "max", "mean", "std") if name in stats]
    numbers = format_column([stats[name] for name in names], options.precision, unicode=False)
    described = ", ".join(
        f"{name} ${tex_number(number)}$" for name, number in zip(names, numbers, strict=True)
    )
    text = f"A corner of the ${shape_math(np.shape(value))}$ matrix"
    if described:
        text += f"; {described}"
    if "non_finite" in stats:
        text += f"; {stats['non_finite']} non-finite"
    return text + "."


_SCIENTIFIC = re.compile(r"(-?\d+(?:\.\d+)?)e([+-])(\d+)")


def tex_number(cell: str) -> str:
    """A formatted number in math mode: ``1.890e-14`` as ``1.890 \\times 10^{-14}``, ``inf`` as
    ``\\infty``, ``nan`` as NaN; anything else unchanged."""
    special = {"inf": "\\infty", "-inf": "-\\infty", "nan": "\\text{NaN}"}
    if cell in special:
        return special[cell]
    match = _SCIENTIFIC.fullmatch(cell)
    if match:
        mantissa, sign, exponent = match.groups()
        power = ("-" if sign == "-" else "") + str(int(exponent))
        return f"{mantissa} \\times 10^{{{power}}}"
    if cell in ("True", "False"):
        return f"\\text{{{cell}}}"
    return cell


def shape_math(shape: tuple[int, ...]) -> str:
    """A shape in math mode: ``3 \\times 4``; a scalar as words."""
    return " \\times ".join(str(size) for size in shape) if shape else "\\text{scalar}"


def tex_symbol(name: str) -> str:
    """An input's name in math mode: W1 -> W_{1}, W_Q -> W_{Q}, s_t -> s_{t}, Q -> Q."""
    match = re.fullmatch(r"([A-Za-z])_?([A-Za-z0-9]+)", name) if len(name) > 1 else None
    if match and ("_" in name or match.group(2).isdigit()):
        return f"{match.group(1)}_{{{match.group(2)}}}"
    if re.fullmatch(r"[A-Za-z]", name):
        return name
    return f"\\text{{{tex_text(name)}}}"


# ---------------------------------------------------------------------------------------------
# Text: LaTeX's special characters escaped, the Unicode of lesson texts spelled in LaTeX.

_SPECIAL = {
    "\\": "\\textbackslash{}",
    "{": "\\{",
    "}": "\\}",
    "$": "\\$",
    "&": "\\&",
    "#": "\\#",
    # The typewriter font has the real characters (the text font draws accents or a rule).
    "^": "\\texttt{\\char94}",
    "_": "\\texttt{\\char95}",
    "%": "\\%",
    "~": "\\texttt{\\char126}",
    "<": "\\textless{}",
    ">": "\\textgreater{}",
    "|": "\\textbar{}",
    # Braced so that a row or an \item never reads them as its optional argument.
    "[": "{[}",
    "]": "{]}",
    "*": "{*}",
}

# Characters written in text mode.
_TEXT = {
    "\u00a0": "~",
    "…": "\\ldots{}",
    "–": "--",
    "—": "---",
    "‘": "`",
    "’": "'",
    "“": "``",
    "”": "''",
    "«": "<<",
    "»": ">>",
    "─": "-",
    "━": "-",
    "•": "\\textbullet{}",
    "ß": "\\ss{}",
    "æ": "\\ae{}",
    "Æ": "\\AE{}",
    "ø": "\\o{}",
    "Ø": "\\O{}",
    "œ": "\\oe{}",
    "Œ": "\\OE{}",
    "å": "\\aa{}",
    "Å": "\\AA{}",
    "ł": "\\l{}",
    "Ł": "\\L{}",
    "§": "\\S{}",
    "¶": "\\P{}",
    "†": "\\dag{}",
    "‡": "\\ddag{}",
    "©": "\\copyright{}",
    "✓": "(yes)",
    "✗": "(no)",
}

_GREEK = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "o",
    "pi",
    "rho",
    "varsigma",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
]

# Characters written in math mode (joined with their neighbours into one $...$).
_MATH = {
    "−": "-",
    "·": "\\cdot",
    "⋅": "\\cdot",
    "×": "\\times",
    "÷": "\\div",
    "√": "\\surd",
    "∞": "\\infty",
    "ℓ": "\\ell",
    "±": "\\pm",
    "∓": "\\mp",
    "∂": "\\partial",
    "∇": "\\nabla",
    "∑": "\\sum",
    "∏": "\\prod",
    "∫": "\\int",
    "≈": "\\approx",
    "≠": "\\neq",
    "≤": "\\leq",
    "≥": "\\geq",
    "≡": "\\equiv",
    "∼": "\\sim",
    "∝": "\\propto",
    "→": "\\to",
    "←": "\\leftarrow",
    "↔": "\\leftrightarrow",
    "⇒": "\\Rightarrow",
    "⇐": "\\Leftarrow",
    "⇔": "\\Leftrightarrow",
    "↦": "\\mapsto",
    "∈": "\\in",
    "∉": "\\notin",
    "⊂": "\\subset",
    "⊆": "\\subseteq",
    "∪": "\\cup",
    "∩": "\\cap",
    "∅": "\\emptyset",
    "∀": "\\forall",
    "∃": "\\exists",
    "¬": "\\neg",
    "∧": "\\wedge",
    "∨": "\\vee",
    "⊤": "\\top",
    "⊥": "\\bot",
    "∘": "\\circ",
    "⊙": "\\odot",
    "⊗": "\\otimes",
    "⊕": "\\oplus",
    "∥": "\\|",
    "⟨": "\\langle",
    "⟩": "\\rangle",
    "⌈": "\\lceil",
    "⌉": "\\rceil",
    "⌊": "\\lfloor",
    "⌋": "\\rfloor",
    "°": "^{\\circ}",
    "′": "^{\\prime}",
    "″": "^{\\prime\\prime}",
    "⋮": "\\vdots",
    "⋯": "\\cdots",
    "⋱": "\\ddots",
    "ℝ": "\\mathbf{R}",
    "ℕ": "\\mathbf{N}",
    "ℤ": "\\mathbf{Z}",
    "ᵀ": "^{\\top}",
    "ϵ": "\\epsilon",
    "ε": "\\varepsilon",
    "ϑ": "\\vartheta",
    "φ": "\\varphi",
    "ϕ": "\\phi",
    **{chr(0x03B1 + i): f"\\{name}" for i, name in enumerate(_GREEK) if name != "o"},
    "ο": "o",
    **{
        chr(0x0391 + i): f"\\{name.capitalize()}"
        for i, name in enumerate(_GREEK)
        if name.capitalize() in ("Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma")
        or name.capitalize() in ("Upsilon", "Phi", "Psi", "Omega")
    },
    **{s: f"_{{{c}}}" for s, c in zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎", "0123456789+-=()", strict=True)},
    **{s: f"_{{{c}}}" for s, c in zip("ₐₑₒₓₔₕₖₗₘₙₚₛₜᵢⱼᵣᵤᵥ", "aeoxehklmnpstijruv", strict=True)},
    **{s: f"^{{{c}}}" for s, c in zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ", "0123456789+-=()ni", strict=True)},
}
# The Greek capitals that look like Latin letters (Α, Β, ...) are plain letters in LaTeX.
for _capital, _latin in zip("ΑΒΕΖΗΙΚΜΝΟΡΤΧ", "ABEZHIKMNOPTX", strict=True):
    _MATH[_capital] = _latin

_ACCENTS = {
    "\u0300": "\\`",
    "\u0301": "\\'",
    "\u0302": "\\^",
    "\u0303": "\\~",
    "\u0304": "\\=",
    "\u0306": "\\u",
    "\u0307": "\\.",
    "\u0308": '\\"',
    "\u030a": "\\r",
    "\u030b": "\\H",
    "\u030c": "\\v",
    "\u0327": "\\c",
    "\u0328": "\\k",
}


def tex_text(text: str) -> str:
    """Text for a LaTeX document (one line: whitespace runs become single spaces)."""
    pieces: list[tuple[bool, str]] = []  # (math?, LaTeX)
    flat = " ".join(str(text).split())
    for index, char in enumerate(flat):
        is_math, latex = _char(char)
        if char in "-`'" and flat[index + 1 : index + 2] == char:
            latex += "{}"  # -- ``: the characters typed, not a dash or a quote
        pieces.append((is_math, latex))
    out: list[str] = []
    index = 0
    while index < len(pieces):
        is_math, latex = pieces[index]
        if not is_math:
            out.append(latex)
            index += 1
            continue
        run: list[str] = []
        while index < len(pieces) and pieces[index][0]:
            latex = pieces[index][1]
            # x⁻¹ is x^{-1}: neighbouring superscripts (subscripts) join, never ^{-}^{1}.
            script = latex[:2] if latex[:2] in ("^{", "_{") else ""
            if script and run and run[-1][:2] == script:
                run[-1] = run[-1][:-1] + latex[2:]
            elif script and len(run) > 1 and run[-2][:2] == script and run[-1][:2] in "^{_{":
                run.append("{}" + latex)  # x_{i}^{2}{}_{j}, never a double subscript
            else:
                run.append(latex)
            index += 1
        # One $...$ per run, so two symbols side by side never make a $$.
        out.append("$" + " ".join(run) + "$")
    return "".join(out)


def tex_paragraph(text: str) -> str:
    """Text that may hold several paragraphs (blank lines), each escaped."""
    paragraphs = [p for p in re.split(r"\n\s*\n", str(text)) if p.strip()]
    return "\n\n".join(tex_text(paragraph) for paragraph in paragraphs)


def _char(char: str) -> tuple[bool, str]:
    if char in _SPECIAL:
        return False, _SPECIAL[char]
    if char.isascii():
        return False, char
    if char in _TEXT:
        return False, _TEXT[char]
    if char in _MATH:
        return True, _MATH[char]
    decomposed = unicodedata.normalize("NFKD", char)
    base, marks = decomposed[:1], decomposed[1:]
    if base.isascii() and base.isalpha() and marks and all(m in _ACCENTS for m in marks):
        latex = base if base not in "ij" else f"\\{base}"
        for mark in marks:
            latex = f"{_ACCENTS[mark]}{{{latex}}}"
        return False, latex
    compatible = unicodedata.normalize("NFKC", char)
    if compatible != char and compatible.isascii() and compatible.isprintable():
        return False, "".join(_char(c)[1] for c in compatible)
    # A character this font cannot draw: named by its code point rather than dropped.
    return False, f"[U+{ord(char):04X}]".replace("[", "{[}").replace("]", "{]}")
