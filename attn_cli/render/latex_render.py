"""LaTeX: a section per walkthrough, a subsection per step, matrices as ``bmatrix`` equations and
tables as ``tabular`` s, ready to paste into a document.

The document's blocks (what appears, in what order) come from :func:`document.document`; this
module writes each as LaTeX.

As a whole document (``RenderOptions.whole_document``, what the command line writes) it is the
body between :data:`PREAMBLE`, ``\begin{document}`` and ``\\end{document}``: ``pdflatex`` compiles
it as it is. As a fragment (``--latex-fragment``, and ``w.to_latex()``) its first line is a
comment that states the preamble it compiles with; nothing else is assumed. Every piece of text that comes from a lesson file or
the command line (titles, explanations, labels, notes) goes through :func:`tex_text`, which
escapes LaTeX's special characters and spells the Unicode that lesson texts use (√, ·, ᵀ, α,
...) as LaTeX commands, so the output compiles with a plain ``pdflatex``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, assert_never

import numpy as np

from attn_cli.core.model import Quantities, Walkthrough
from attn_cli.core.numbers import NumberStyle, as_matrix
from attn_cli.render import document as doc
from attn_cli.render.cells import (
    TableStyles,
    bin_labels,
    cell_texts,
    corner_caption,
    record_columns,
    record_rows,
    shown_grid,
    shown_indices,
    table_styles,
)
from attn_cli.render.options import RenderOptions

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
_DOTS = ("\\cdots", "\\vdots", "\\ddots")  # across, down, diagonal
_SIZES = (
    ("", 1.0),
    ("\\small", 0.9),
    ("\\footnotesize", 0.8),
    ("\\scriptsize", 0.7),
    ("\\tiny", 0.5),
)

PREAMBLE_LINES = (
    r"\documentclass{article}",
    r"\usepackage{amsmath}",
    rf"\setcounter{{MaxMatrixCols}}{{{MAX_MATRIX_COLS}}}",
)
PREAMBLE = " ".join(PREAMBLE_LINES)
FIRST_LINE = f"% attn LaTeX: compile with {PREAMBLE}"

# A line of text in each role (document.LineRole), its text escaped.
_LINES: dict[doc.LineRole, str] = {
    "section": "\\subsection*{{{}}}",
    "remark": "\\textit{{{}}}",
    "banner": "\\textbf{{{}}}",
    "note": "\\emph{{Note:}} {}",
}


def to_latex(walkthrough: Walkthrough, options: RenderOptions) -> str:
    body = doc.written(walkthrough, options, latex_chunks)
    if not options.whole_document:
        return f"{FIRST_LINE}\n{body}"
    return (
        "% attn LaTeX: a whole document (pdflatex compiles it; --latex-fragment: the body alone)\n"
        + "\n".join(PREAMBLE_LINES)
        + f"\n\\begin{{document}}\n{body.rstrip(chr(10))}\n\\end{{document}}\n"
    )


def latex_chunks(block: doc.Block, options: RenderOptions) -> list[str]:
    """A block as LaTeX: its paragraphs (blank lines go between them)."""
    match block:
        case doc.Title(text, example):
            title = tex_text(text)
            if example:
                title += f", example \\texttt{{{tex_text(example)}}}"
            return [f"\\section*{{{title}}}"]
        case doc.Line(role, text):
            return [_LINES[role].format(tex_text(text))]
        case doc.Description(text):
            return [f"\\emph{{{tex_text(text)}}}"]
        case doc.InputCaption(name, description, shape):
            intro = f"${tex_symbol(name)}$"
            if description:
                intro += f", {tex_text(description)}"
            return [f"\\noindent {intro} (${shape_math(shape)}$):"]
        case doc.StepHeading():
            heading = block.line(tex_text, lambda shape: f"${shape_math(shape)}$")
            return [f"\\subsection*{{{heading}}}"]
        case doc.Intermediates(parts):
            return intermediates_chunks(parts, options)
        case doc.NoteList(items):
            lines = ["\\begin{itemize}", *(f"\\item {tex_text(item)}" for item in items)]
            return ["\n".join([*lines, "\\end{itemize}"])]
        case doc.Prose() | doc.Records() | doc.Histogram() | doc.Number() | doc.Matrix():
            return [value_text(block, options)]
    assert_never(block)


def value_text(value: doc.Value, options: RenderOptions) -> str:
    """A value: a paragraph, a tabular, or an equation whose left-hand side is the input's
    symbol or the lesson's LaTeX (a matrix without either is a table under its title; a number,
    an equation with its name)."""
    match value:
        case doc.Prose(text):
            return tex_paragraph(text)
        case doc.Records(records, headings, quantities):
            return "\n".join(records_tabular(records, options, headings, quantities))
        case doc.Histogram():
            return "\n".join(histogram_tabular(value))
        case doc.Number():
            left = value.latex if value.latex is not None else f"\\text{{{tex_text(value.name)}}}"
            return f"\\[ {left} = {bmatrix(value.value, options)} \\]"
        case doc.Matrix():
            if value.symbol is not None:
                return "\n".join(equation_lines(tex_symbol(value.symbol), value, options))
            if value.latex is not None:
                return "\n".join(equation_lines(value.latex, value, options))
            return "\n".join(matrix_tabular(value, options))
    assert_never(value)


def intermediates_chunks(parts: Sequence[doc.Labelled], options: RenderOptions) -> list[str]:
    """The labelled intermediates (row max, exp, ...): the numbers in one display, an equation
    per line; then any other value (text, a table) under its label."""
    chunks: list[str] = []
    equations = []
    for part in parts:
        if not isinstance(part.value, doc.Number | doc.Matrix):
            chunks += [f"\\noindent {tex_text(part.label)}:", value_text(part.value, options)]
            continue
        left = f"\\text{{{tex_text(part.label)}}}"
        budget = TEXT_WIDTH_PT - _math_width(left) - _math_width("=") - _BRACKETS
        equations.append(f"{left} = {bmatrix(part.value.value, options, budget)}")
    if equations:
        body = " \\\\\n".join(equations)
        chunks.insert(0, f"\\begin{{gather*}}\n{body}\n\\end{{gather*}}")
    return chunks


def equation_lines(left: str, matrix: doc.Matrix, options: RenderOptions) -> list[str]:
    """``\\[ left = [matrix] \\]``, with the weights' row sums beside it, then the labels and
    (for a corner) the matrix's shape and statistics as a line of text."""
    value = matrix.value
    if np.ndim(value) == 0 or np.size(value) == 0:
        return [f"\\[ {left} = {bmatrix(value, options)} \\]"]
    rows = matrix.rows
    shown_rows = shown_indices(rows.shape[0], MAX_ROWS, CORNER_ROWS)
    budget = TEXT_WIDTH_PT - _math_width(left) - _math_width("=") - _BRACKETS
    extra = ""
    styles = _styles(matrix, shown_rows, options)
    if matrix.row_sums is not None:
        column = _grid(matrix.row_sums, shown_rows, [0], options, styles=styles.of_sums)
        extra = f" \\qquad \\Sigma_{{\\text{{row}}}} = {_bmatrix_text(column)}"
        budget -= 20 + _math_width("\\Sigma_{row}=") + _BRACKETS
        budget -= max(_math_width(cell[0]) for cell in column)
    shown_cols = _fit_columns(rows, shown_rows, options, budget, styles=styles)
    cells = _grid(rows, shown_rows, shown_cols, options, styles=styles)
    lines = [f"\\[ {left} = {_bmatrix_text(cells)}{extra} \\]"]
    described = []
    row_names = _labels(matrix.row_labels, shown_rows)
    col_names = _labels(matrix.col_labels, shown_cols)
    if row_names:
        described.append(f"rows {row_names}")
    if col_names:
        described.append(f"columns {col_names}")
    corner = _corner_text(matrix, shown_rows, shown_cols, options)
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
    styles = table_styles(rows, shown_rows, options.precision)
    shown_cols = _fit_columns(rows, shown_rows, options, budget - _BRACKETS, styles=styles)
    return _bmatrix_text(_grid(rows, shown_rows, shown_cols, options, styles=styles))


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


def _fit_columns(
    rows: np.ndarray,
    shown_rows: list[int | None],
    options: RenderOptions,
    budget: float,
    *,
    separation: float = _COLUMN_SEP,
    heads: Sequence[str] | None = None,
    styles: TableStyles | None = None,
) -> list[int | None]:
    """The columns to show: all (up to MAX_COLS), else as many of the first ones as fit the
    ``budget`` (points) beside \\cdots and the last column; at least the first and the last."""
    count = rows.shape[1]
    full = shown_indices(count, MAX_COLS, CORNER_COLS)
    candidates = sorted({c for c in full if c is not None} | set(range(min(count, CORNER_COLS))))
    row_index = [r for r in shown_rows if r is not None]
    chosen = None if styles is None else tuple(styles.columns[c] for c in candidates)
    cells = _cells(rows[np.ix_(row_index, candidates)], options, chosen)
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
    styles: TableStyles | None = None,
) -> list[list[str]]:
    """The shown cells (math mode), each column in its format of ``styles`` (else one for
    them all, from the cells), with the ellipses."""
    return shown_grid(
        rows, shown_rows, shown_cols, options.precision, _DOTS, styles=styles, cell=tex_number
    )


def _cells(
    matrix: np.ndarray,
    options: RenderOptions,
    styles: tuple[NumberStyle | None, ...] | None = None,
) -> list[list[str]]:
    """Cells in math mode, each column in its format (integers, fixed or scientific)."""
    return [
        [tex_number(cell) for cell in row] for row in cell_texts(matrix, options.precision, styles)
    ]


def _styles(
    matrix: doc.Matrix, shown_rows: list[int | None], options: RenderOptions
) -> TableStyles:
    """One number format for the matrix and its row sums, or one per quantity of its columns."""
    return table_styles(
        matrix.rows,
        shown_rows,
        options.precision,
        matrix.row_sums,
        col_labels=matrix.col_labels,
        quantities=matrix.quantities,
        weights=matrix.weights,
    )


def matrix_tabular(matrix: doc.Matrix, options: RenderOptions) -> list[str]:
    """A matrix as a table with its row and column headings (and the weights' row sums); a
    corner with the recorded statistics as its caption."""
    rows = matrix.rows
    n_rows, n_cols = rows.shape
    shown_rows = shown_indices(n_rows, MAX_ROWS, CORNER_ROWS)
    row_names, col_names = matrix.row_labels, matrix.col_labels
    all_heads = [tex_text(name) for name in col_names] if col_names else None
    labels = [
        "$\\vdots$" if r is None else tex_text(row_names[r]) if row_names else str(r + 1)
        for r in shown_rows
    ]
    budget = TEXT_WIDTH_PT - _TABLE_SEP - max(_math_width(label) for label in labels)
    sums = None
    styles = _styles(matrix, shown_rows, options)
    if matrix.row_sums is not None:
        sums = _grid(matrix.row_sums, shown_rows, [0], options, styles=styles.of_sums)
        budget -= _TABLE_SEP + max(_math_width("$\\Sigma$ row"), *(_math_width(s[0]) for s in sums))
    shown_cols = _fit_columns(
        rows,
        shown_rows,
        options,
        budget,
        separation=_TABLE_SEP,
        heads=all_heads or [str(c + 1) for c in range(n_cols)],
        styles=styles,
    )
    cells = _grid(rows, shown_rows, shown_cols, options, styles=styles)
    heads = [
        "$\\cdots$" if c is None else all_heads[c] if all_heads else str(c + 1) for c in shown_cols
    ]
    if sums is not None:
        heads.append("$\\Sigma$ row")
    table = [[label, *row] for label, row in zip(labels, cells, strict=True)]
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
    for label, *row in table:
        lines.append(" & ".join([label, *(f"${cell}$" for cell in row)]) + " \\\\")
    lines += ["\\hline", "\\end{tabular}", "\\end{center}"]
    corner = _corner_text(matrix, shown_rows, shown_cols, options)
    if corner:
        lines.append("{\\small " + corner + "\\par}")
    return lines


def records_tabular(
    records: list[dict[str, Any]],
    options: RenderOptions,
    headings: Mapping[str, str] | None = None,
    quantities: Quantities | None = None,
) -> list[str]:
    """A list of records as a table: a heading per key (``headings[key]``, else the key), one
    row per record."""
    if not records:
        return ["(no rows)"]
    columns = record_columns(
        records, options.precision, unicode=False, headings=headings, quantities=quantities
    )
    spec = "".join("r" if column.numeric else "l" for column in columns)
    lines = [
        "\\begin{center}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\hline",
        " & ".join(tex_text(column.name) for column in columns) + " \\\\",
        "\\hline",
    ]
    rows = record_rows(
        columns,
        len(records),
        missing="---",
        number=lambda cell: f"${tex_number(cell)}$",
        text=tex_text,
    )
    lines += [" & ".join(row) + " \\\\" for row in rows]
    lines += ["\\hline", "\\end{tabular}", "\\end{center}"]
    table = [[tex_text(column.name) for column in columns], *rows]
    widths = [max(_math_width(cell) for cell in column) for column in zip(*table, strict=True)]
    return _sized(lines, sum(widths) + _TABLE_SEP * len(widths))


def histogram_tabular(histogram: doc.Histogram) -> list[str]:
    """A histogram as a table of counts: one row per bin, one column per series."""
    edges, series = histogram.edges, histogram.series
    if histogram.edges_of:  # a series on bins of its own: a bin column before each series
        names = [tex_text(str(name)) for name in series]
        labels = [bin_labels(histogram.bins_of(name)) for name in series]
        head = [part for name in names for part in (f"{name} bin", name)]
        spec = "lr" * len(series)
        rows = [
            [
                part
                for s, counts in enumerate(series.values())
                for part in (f"${labels[s][i]}$", str(counts[i]))
            ]
            for i in range(len(edges) - 1)
        ]
    else:
        head = ["bin", *(tex_text(str(name)) for name in series)]
        spec = "l" + "r" * len(series)
        rows = [
            [f"${label}$", *(str(counts[i]) for counts in series.values())]
            for i, label in enumerate(bin_labels(edges))
        ]
    lines = [
        "\\begin{center}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\hline",
        " & ".join(head) + " \\\\",
        "\\hline",
    ]
    for row in rows:
        lines.append(" & ".join(row) + " \\\\")
    lines += ["\\hline", "\\end{tabular}", "\\end{center}"]
    return lines


def _labels(labels: Sequence[str] | None, shown: list[int | None]) -> str:
    if not labels:
        return ""
    return ", ".join("\\ldots" if i is None else tex_text(labels[i]) for i in shown)


def _corner_text(
    matrix: doc.Matrix,
    shown_rows: list[int | None],
    shown_cols: list[int | None],
    options: RenderOptions,
) -> str:
    """For a cut-off matrix: its shape and statistics (as the terminal's caption)."""
    caption = corner_caption(matrix.rows, shown_rows, shown_cols, options.precision, matrix.stats)
    if caption is None:
        return ""
    described = ", ".join(f"{name} ${tex_number(number)}$" for name, number in caption.stats)
    text = f"A corner of the ${shape_math(matrix.shape)}$ matrix"
    if described:
        text += f"; {described}"
    if caption.non_finite:
        text += f"; {caption.non_finite} non-finite"
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
    return cell.replace(",", "{,}")  # a thousands comma, without math's space after a comma


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
    return "\n\n".join(tex_text(paragraph) for paragraph in doc.paragraphs(text))


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
