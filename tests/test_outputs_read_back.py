"""The LaTeX and Markdown outputs, read back by the programs that read them.

Every lesson × every bundled example, plus random inputs of sizes 2, 11 and 40:

* LaTeX: wrapped in exactly the preamble its first line states and compiled with ``pdflatex``
  (one document per lesson, one page per case; on a failure each case is compiled alone to name
  it); ``pdftotext`` must find the values the output prints on that case's pages.
* Markdown: parsed with markdown-it-py (CommonMark plus the table extension): one table per
  matrix with the rows, columns and labels shown, one paragraph per note.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from attn_cli.api import lesson_function
from attn_cli.core.model import Step, Walkthrough
from attn_cli.core.numbers import as_matrix, format_column
from attn_cli.course import card, lesson_names
from attn_cli.lessonfiles.loader import bundled_lesson_names, load_bundled
from attn_cli.render import latex_render
from attn_cli.render import markdown_render as md
from attn_cli.render.cells import record_columns, shown_indices, table_styles
from attn_cli.render.latex_render import tex_text
from tests.conftest import as_typed
from tests.lesson_runs import lessons_with_runs, runs_of
from tests.waits import HANG_GUARD_SECONDS

SIZES = (2, 11, 40)
LESSONS = lessons_with_runs()
needs_tex = pytest.mark.skipif(
    shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
    reason="pdflatex and pdftotext are not installed (Debian: apt-get install "
    "texlive-latex-base poppler-utils); .ci/run installs them",
)


def _has_beamer() -> bool:
    if shutil.which("kpsewhich") is None:
        return False
    found = subprocess.run(["kpsewhich", "beamer.cls", "pgfcore.sty"], capture_output=True)
    return len(found.stdout.split()) == 2


needs_beamer = pytest.mark.skipif(
    not _has_beamer(),
    reason="LaTeX's beamer class (and the pgf it draws with) is not installed (Debian: "
    "apt-get install texlive-latex-recommended texlive-pictures); .ci/run installs it",
)


@dataclass(frozen=True)
class Case:
    lesson: str
    name: str
    options: tuple[tuple[str, Any], ...]

    @property
    def id(self) -> str:
        return f"{self.lesson}:{self.name}"


def lesson_cases(lesson: str) -> list[Case]:
    cases = [
        Case(lesson, f"example {e.name}", (("example", e.name),))
        for e in load_bundled(lesson).examples
    ]
    cases += [
        Case(lesson, f"size {size}", tuple(runs_of(lesson).sized(size).items())) for size in SIZES
    ]
    return cases


ALL_CASES = [case for lesson in LESSONS for case in lesson_cases(lesson)]


@functools.cache
def walkthrough(case: Case) -> Walkthrough:
    return lesson_function(case.lesson)(**dict(case.options))


def test_every_lesson_has_examples_and_sizes():
    assert sorted(bundled_lesson_names()) == sorted(lesson_names())  # every card has its file
    for lesson in LESSONS:
        assert len(lesson_cases(lesson)) == len(load_bundled(lesson).examples) + len(SIZES)


# ------------------------------------------------------------------------------------- LaTeX

_PREAMBLE_LINE = re.compile(r"% attn LaTeX: compile with (\\documentclass.*)")


def latex_document(outputs: list[str], markers: list[str] | None = None) -> str:
    """The outputs in one document with the preamble their first line states."""
    preambles = set()
    bodies = []
    for index, output in enumerate(outputs):
        first, _, body = output.partition("\n")
        match = _PREAMBLE_LINE.fullmatch(first)
        assert match, f"the first line states no preamble: {first!r}"
        preambles.add(match.group(1))
        marker = f"\\noindent {markers[index]}\\par\n" if markers else ""
        bodies.append(marker + body)
    assert len(preambles) == 1, preambles
    return (
        preambles.pop()
        + "\n\\begin{document}\n"
        + "\n\\clearpage\n".join(bodies)
        + "\\end{document}\n"
    )


def compile_latex(source: str, where: Path) -> tuple[bool, str]:
    """pdflatex on the source: (whether it made a PDF, the log's errors or the log)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "doc.tex").write_text(source, encoding="utf-8")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=where,
        capture_output=True,
        timeout=HANG_GUARD_SECONDS,
    )
    log = (where / "doc.log").read_text(encoding="utf-8", errors="replace")
    if run.returncode != 0 or not (where / "doc.pdf").exists():
        errors = [
            line for line in log.splitlines() if line.startswith("!") or line.startswith("l.")
        ]
        return False, "\n".join(errors[:8]) or log[-2000:]
    return True, log


def pdf_text(where: Path) -> str:
    run = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", "doc.pdf", "-"], cwd=where, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return unicodedata.normalize("NFC", run.stdout)  # é: an accent over e, read back as é


def squeeze(text: str) -> str:
    """PDF text compared without spaces and with the minus sign as a hyphen."""
    return re.sub(r"\s+", "", text.replace("−", "-"))


def pdf_number(cell: str) -> str:
    """How pdftotext reads a number that the LaTeX renderer typeset (spaces removed)."""
    match = re.fullmatch(r"(-?[\d.]+)e([+-])(\d+)", cell)
    if match:  # the mantissa: in a table pdftotext may read the raised exponent elsewhere
        return f"{match.group(1)}×10"
    return {"inf": "∞", "-inf": "-∞", "nan": "NaN"}.get(cell, cell)


def first_cell(value: Any, precision: int, step: Step | None = None) -> str | None:
    """The top-left entry of a matrix as the LaTeX renderer formats it, in its column's format:
    the table's, chosen from the shown rows by the renderer's rules (cells.table_styles) with
    what the step says of its value (its quantities, its row sums, whether it holds weights)."""
    if isinstance(value, dict) or np.size(value) == 0:
        return None
    if isinstance(value, list):  # records: the first numeric column
        for column in record_columns(value, precision):
            if column.numeric and column.cells[0] is not None:
                return column.cells[0]
        return None
    rows = as_matrix(value)
    if rows.dtype == np.bool_:
        return str(bool(rows[0, 0]))
    shown = shown_indices(rows.shape[0], latex_render.MAX_ROWS, latex_render.CORNER_ROWS)
    kept = [r for r in shown if r is not None]
    sums = None
    if step is not None and step.row_sums is not None:
        sums = np.ravel(step.row_sums)
        sums = sums if sums.size == rows.shape[0] else None
    styles = table_styles(
        rows,
        shown,
        precision,
        sums,
        col_labels=None if step is None else step.col_labels,
        quantities=None if step is None else step.quantities,
        weights=step is not None and step.kind == "weights",
    )
    return format_column(rows[kept, 0], precision, unicode=False, style=styles.columns[0])[0]


def expected_values(case: Case) -> list[str]:
    """Numbers the PDF of this case must show: each input's and the last values' first entry."""
    walk = walkthrough(case)
    precision = card(walk.lesson).precision  # the lesson's own default, as the command prints
    cells = [first_cell(item.value, precision) for item in walk.inputs]
    cells += [
        first_cell(step.value, precision, step)
        for step in walk.steps
        if step.kind not in ("text", "histogram")
    ][-2:]
    return [pdf_number(cell) for cell in cells if cell is not None]


def _culprits(cases: list[Case], outputs: list[str], where: Path) -> str:
    """Compile each case alone: which ones fail, and how."""
    failures = []
    for index, (case, output) in enumerate(zip(cases, outputs, strict=True)):
        ok, log = compile_latex(latex_document([output]), where / f"alone-{index}")
        if not ok:
            failures.append(f"{case.id}:\n{log}")
    return "\n\n".join(failures) or "(each case compiles alone)"


def assert_cases_shown(cases: list[Case], where: Path) -> None:
    """The PDF compiled in ``where`` shows each case's numbers after its marker."""
    pages = re.split(r"CASEMARK(\d+)X", pdf_text(where))
    found = {int(pages[i]): squeeze(pages[i + 1]) for i in range(1, len(pages) - 1, 2)}
    assert sorted(found) == list(range(len(cases)))
    for index, case in enumerate(cases):
        expected = expected_values(case)
        assert expected, case.id
        missing = [value for value in expected if value not in found[index]]
        assert not missing, f"{case.id}: the PDF lacks {missing}"


@pytest.mark.slow
@needs_tex
@pytest.mark.parametrize("lesson", LESSONS)
def test_latex_compiles_and_shows_the_values(lesson, tmp_path):
    cases = lesson_cases(lesson)
    outputs = [walkthrough(case).to_latex() for case in cases]
    markers = [f"CASEMARK{index}X" for index in range(len(cases))]
    ok, log = compile_latex(latex_document(outputs, markers), tmp_path)
    assert ok, f"pdflatex failed on the {lesson} outputs:\n{_culprits(cases, outputs, tmp_path)}"
    # Every character drawn: a Unicode character without a glyph would vanish with a warning.
    assert "Missing character" not in log
    assert_cases_shown(cases, tmp_path)
    for case, output in zip(cases, outputs, strict=True):
        for step in walkthrough(case).steps:
            # Words for a reader, never a step's internal key (compare.contexts, spiky).
            leak = f"\\text{{{tex_text(step.key)}}}"
            assert leak not in output or leak in (step.latex or ""), (case.id, step.key)


def beamer_slides(outputs: list[str], markers: list[str]) -> str:
    """The frames of several beamer documents in one, a frame with its marker before each's."""
    preamble, _, _ = outputs[0].partition("\\begin{document}")
    frames = []
    for marker, output in zip(markers, outputs, strict=True):
        assert output.partition("\\begin{document}")[0] == preamble  # one preamble for all
        body = output.partition("\\begin{document}")[2].rpartition("\\end{document}")[0]
        frames.append(f"\\begin{{frame}}{marker}\\end{{frame}}\n{body}")
    return preamble + "\\begin{document}\n" + "\n".join(frames) + "\\end{document}\n"


@pytest.mark.slow
@needs_tex
@needs_beamer
@pytest.mark.parametrize("lesson", LESSONS)
def test_beamer_slides_compile_a_frame_per_step_and_show_the_values(lesson, tmp_path):
    """--format beamer (issue 57): pdflatex compiles the slides as written, one frame for the
    title and inputs, one per step (and one for the notes); each case's numbers on them."""
    cases = lesson_cases(lesson)
    walks = [walkthrough(case) for case in cases]
    outputs = [walk.to_beamer() for walk in walks]
    for walk, output in zip(walks, outputs, strict=True):
        frames = output.count("\\begin{frame}")
        assert frames == 1 + len(walk.steps) + bool(walk.notes), walk.lesson
    markers = [f"CASEMARK{index}X" for index in range(len(cases))]
    ok, log = compile_latex(beamer_slides(outputs, markers), tmp_path)
    assert ok, f"pdflatex failed on the {lesson} slides:\n{log}"
    assert "Missing character" not in log
    assert_cases_shown(cases, tmp_path)


def _special_lesson_file(tmp_path: Path) -> Path:
    path = tmp_path / "specials.toml"
    path.write_text(
        r"""
lesson = "scaled"
title = 'Costs & "odds": 50% of #1 {set} $x$ a_b ^ ~ \ | < > [a] *b* -- `q` """
        + "’é×√ᵀ→猫'"
        + r"""
intro = 'Intro: a\b & c_d % e # f { g } $ h ^ i ~ j | k < l > m -- n. Kᵀ/√d_k, e⁻¹, wᵢ, ≈ α Σ …'
default_example = "specials"

[steps.scores]
title = 'Scores & more_things {{x}}'
explanation = 'Explained with 100% & #hash and a\backslash; ~tilde ^caret. New paragraph follows.'
latex = "S_{\\text{sp}} = QK^\\top"

[steps.weights]
title = "Weights | with a pipe"
explanation = '| not a table | * not a list'

[[examples]]
name = "specials"
description = 'Labels with specials: & % $ # _ { } ~ ^ \ | < >'
labels = { queries = ["q&1", "q_2"], keys = ["k%1", "k|2", "k$3"] }

[examples.inputs]
Q = [[1, 0], [0, 1]]
K = [[1, 1], [2, 0], [0, 3]]
V = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
""",
        encoding="utf-8",
    )
    return path


# Two sets of names with LaTeX's and Markdown's special characters (few enough to all show).
TOKENS = "a&b,c_d,e%f,x|y,$5,#1,^up,~t"
MORE_TOKENS = "{b},<l>,[s],*s*,back\\slash,café,q·k,--x"


@pytest.mark.slow
@needs_tex
def test_latex_escapes_labels_and_lesson_texts(invoke, tmp_path):
    lesson = _special_lesson_file(tmp_path)
    outputs = []
    for args in (
        ("scaled", "--lesson", str(lesson)),
        ("selfattn", "--n", "8", "--d", "3", "--tokens", TOKENS),
        ("causal", "--n", "8", "--dk", "2", "--tokens", MORE_TOKENS),
    ):
        result = invoke(*args, "--format", "latex", "--latex-fragment")  # pasted into one
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
    ok, log = compile_latex(latex_document(outputs), tmp_path / "tex")
    assert ok, log
    assert "Missing character" not in log
    text = pdf_text(tmp_path / "tex")
    for label in ("q&1", "q_2", "k%1", "k|2", "k$3", "a&b", "c_d", "e%f", "x|y", "$5", "#1"):
        assert label in text, label
    for label in ("^up", "~t", "{b}", "<l>", "[s]", "*s*", "back\\slash", "café", "--x"):
        assert label in text, label
    # (pdftotext reads the raised √ of the title out of line: two pieces.)
    assert "Costs & ”odds”: 50% of #1 {set} $x$ a_b ^ ~ \\" in text
    assert "| < > [a] *b* -- ‘q‘ ’é×" in text
    assert "[U+732B]" in text  # no glyph in the font: named, not dropped


@pytest.mark.slow
@needs_tex
def test_every_character_that_text_is_spelled_with_compiles(tmp_path):
    """Each character the escaping knows, alone and beside its neighbours, compiles."""
    known = [*latex_render._SPECIAL, *latex_render._TEXT, *latex_render._MATH]
    text = "".join(known) + " " + " ".join(known) + " àéîõüçñ ﬁ Ω"
    source = latex_document(
        [f"{latex_render.FIRST_LINE}\n{tex_text(text)}\n\n\\section*{{{tex_text(text)}}}\n"]
    )
    ok, log = compile_latex(source, tmp_path)
    assert ok, log
    assert "Missing character" not in log


def test_latex_states_its_preamble_and_writes_numbers_as_math():
    walk = walkthrough(Case("variance", "example lecture", (("example", "lecture"),)))
    latex = walk.to_latex()
    assert latex.splitlines()[0] == (
        "% attn LaTeX: compile with \\documentclass{article} \\usepackage{amsmath} "
        "\\setcounter{MaxMatrixCols}{20}"
    )
    # The gradients w(1 − w) in powers of ten; the weights in fixed decimals, one below them
    # written as such (issue 57: 1.889e-14 before).
    assert "e-06" not in latex.split("Note")[0] and "1.851 \\times 10^{-6}" in latex
    assert "$<0.0001$" in latex and "10^{-14}" not in latex
    assert "\\text{spiky}" not in latex and "\\text{temperature}" not in latex
    assert "d\\texttt{\\char95}k & mean q$\\cdot$k" in latex  # the d_k table, with headings


@pytest.mark.parametrize(
    ("args", "widest"),
    [
        (("posenc", "--example", "binary-counter"), 8),
        (("posenc", "--example", "paper"), 8),
        (("scaled", "--n", "11", "--dk", "4"), 8),
        (("causal", "--n", "12"), 8),
        (("selfattn", "--n", "12"), 8),
    ],
)
def test_wide_matrices_fit_the_stated_matrix_columns(invoke, args, widest):
    latex = invoke(*args, "--format", "latex").stdout
    for matrix in re.findall(r"\\begin\{bmatrix\}(.*?)\\end\{bmatrix\}", latex):
        for row in matrix.split("\\\\"):
            assert row.count("&") + 1 <= widest <= latex_render.MAX_MATRIX_COLS, row


# ----------------------------------------------------------------------------------- Markdown

PARSER = MarkdownIt("commonmark").enable("table")


def inline_text(token: Token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


def parse(markdown: str) -> tuple[list[Table], list[list[str]], list[str]]:
    """The tables, the paragraphs of each block quote, and the list items of a document."""
    tokens = PARSER.parse(markdown)
    tables: list[Table] = []
    quotes: list[list[str]] = []
    items: list[str] = []
    depth_quote = 0
    in_item = 0
    row: list[str] | None = None
    section = ""
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            tables.append(Table([], []))
        elif token.type in ("thead_open", "tbody_open"):
            section = token.type
        elif token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            assert row is not None
            row.append(inline_text(tokens[index + 1]))
        elif token.type == "tr_close":
            assert row is not None
            if section == "thead_open":
                tables[-1].header = row
            else:
                tables[-1].rows.append(row)
        elif token.type == "blockquote_open":
            depth_quote += 1
            quotes.append([])
        elif token.type == "blockquote_close":
            depth_quote -= 1
        elif token.type == "list_item_open":
            in_item += 1
        elif token.type == "list_item_close":
            in_item -= 1
        elif token.type == "inline" and tokens[index - 1].type == "paragraph_open":
            if depth_quote:
                quotes[-1].append(inline_text(token))
            elif in_item:
                items.append(inline_text(token))
    return tables, quotes, items


def _names(labels: Any, count: int, shown: list[int | None], ellipsis: str) -> list[str]:
    named = labels is not None and len(labels) == count
    return [
        ellipsis if i is None else (" ".join(str(labels[i]).split()) if named else str(i + 1))
        for i in shown
    ]


def expected_matrix(
    value: Any, row_labels: Any = None, col_labels: Any = None, row_sums: Any = None
) -> Table:
    rows = as_matrix(value)
    shown_rows = shown_indices(rows.shape[0], md.MAX_ROWS, md.CORNER_ROWS)
    shown_cols = shown_indices(rows.shape[1], md.MAX_COLS, md.CORNER_COLS)
    header = ["", *_names(col_labels, rows.shape[1], shown_cols, "…")]
    with_sums = row_sums is not None and np.size(row_sums) == rows.shape[0]
    if with_sums:
        header.append("Σ row")
    labels = _names(row_labels, rows.shape[0], shown_rows, "⋮")
    # Only the labels are compared cell by cell; the numbers by count.
    return Table(header, [[label] for label in labels])


def expected_tables(walk: Walkthrough) -> list[Table]:
    tables = [
        expected_matrix(item.value, item.row_labels, item.col_labels)
        for item in walk.inputs
        if np.size(item.value)
    ]
    for step in walk.steps:
        for part in step.parts:
            if part.kind == "scalar" or np.ndim(part.value) == 0 or part.kind == "text":
                continue
            same_width = np.shape(part.value)[-1:] == np.shape(step.value)[-1:]
            rows = step.row_labels if np.ndim(part.value) == 2 else None
            cols = step.col_labels if same_width else None
            tables.append(  # a part's own labels, where it has them, win
                expected_matrix(
                    part.value,
                    rows if part.rows is None else part.rows,
                    cols if part.cols is None else part.cols,
                )
            )
        tables += _value_tables(step)
    return tables


def _value_tables(step: Step) -> list[Table]:
    if (
        step.kind == "text"
        or step.kind == "scalar"
        or (step.kind not in ("records", "histogram") and np.ndim(step.value) == 0)
    ):
        return []
    if step.kind == "records":
        if not step.value:
            return []
        # Each column is headed by the lesson file's heading of its key.
        keys = [" ".join(str(step.headings.get(k, k)).split()) for k in step.value[0]]
        return [Table(keys, [[""] for _ in step.value])]
    if step.kind == "histogram":
        bins = len(step.value["edges"]) - 1
        names = list(map(str, step.value["series"]))
        # A series on bins of its own has a bin column of its own before it.
        own = step.value.get("edges_of")
        header = [part for n in names for part in (f"{n} bin", n)] if own else ["bin", *names]
        return [Table(header, [[""] for _ in range(bins)])]
    return [expected_matrix(step.value, step.row_labels, step.col_labels, step.row_sums)]


def check_markdown(walk: Walkthrough, markdown: str, where: str) -> None:
    tables, quotes, items = parse(markdown)
    expected = expected_tables(walk)
    assert len(tables) == len(expected), f"{where}: {len(tables)} tables, {len(expected)} values"
    for number, (table, want) in enumerate(zip(tables, expected, strict=True), start=1):
        label = f"{where}, table {number}"
        assert table.header == want.header, label
        assert len(table.rows) == len(want.rows), label
        for row, want_row in zip(table.rows, want.rows, strict=True):
            assert len(row) == len(want.header), label  # no cell lost or split off
            if want_row[0]:
                assert row[0] == want_row[0], label
    precision = card(walk.lesson).precision  # the lesson's own default, as the command prints
    notes = [" ".join(note.text(precision).split()) for step in walk.steps for note in step.notes]
    assert quotes == [[f"Note: {note}"] for note in notes], where  # one paragraph per note
    assert items == [" ".join(note.text(precision).split()) for note in walk.notes], where


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda case: case.id)
def test_markdown_parses_to_one_table_per_matrix_and_a_paragraph_per_note(case):
    walk = walkthrough(case)
    check_markdown(walk, walk.to_markdown(), case.id)


def python_options(args: tuple[str, ...]) -> dict[str, Any]:
    """The library call of ``attn LESSON --flag value ...`` (flags as keywords)."""
    pairs = zip(args[1::2], args[2::2], strict=True)
    options: dict[str, Any] = {flag.lstrip("-").replace("-", "_"): value for flag, value in pairs}
    for size in ("n", "d", "dk"):
        if size in options:
            options[size] = int(options[size])
    return options


def test_markdown_keeps_labels_and_lesson_texts_intact(invoke, tmp_path):
    lesson = _special_lesson_file(tmp_path)
    for args in (
        ("scaled", "--lesson", str(lesson)),
        ("selfattn", "--n", "8", "--d", "3", "--tokens", TOKENS),
        ("causal", "--n", "8", "--dk", "2", "--tokens", MORE_TOKENS),
        ("bahdanau", "--example", "cat-slept"),
    ):
        result = invoke(*args, "--format", "markdown")
        assert result.exit_code == 0, result.output
        walk = as_typed(args[0], **python_options(args))
        assert result.stdout.rstrip("\n") == walk.to_markdown().rstrip("\n")
        check_markdown(walk, result.stdout, " ".join(args))
    tokens = PARSER.parse(invoke("scaled", "--lesson", str(lesson), "-f", "markdown").stdout)
    headings = [
        inline_text(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open"
    ]
    assert headings[0].startswith(
        'Costs & "odds": 50% of #1 {set} $x$ a_b ^ ~ \\ | < > [a] *b* -- `q`'
    )
    assert any("Weights | with a pipe" in heading for heading in headings)
