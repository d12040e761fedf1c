"""The one walk of the text formats (attn_cli/render/document.py): what a Markdown or LaTeX file
shows, in what order, decided once; each format's emitter writes the blocks in its syntax."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import get_args

import numpy as np

from attn_cli.core.model import InputValue, Note, Part, Step, Walkthrough
from attn_cli.render import Format, RenderOptions, render_text
from attn_cli.render.document import (
    Block,
    InputCaption,
    Intermediates,
    Line,
    LineRole,
    Matrix,
    StepHeading,
    Title,
    document,
)
from attn_cli.run.runner import RunRequest, compute

OPTIONS = RenderOptions()


def test_the_scaled_lecture_example_in_order():
    walkthrough = compute(RunRequest(lesson="scaled"))
    blocks = document(walkthrough, OPTIONS)
    assert blocks[0] == Title("Scaled dot-product attention", "two-tokens")
    assert Line("remark", "backend numpy, cpu, float64") in blocks
    inputs = [block for block in blocks if isinstance(block, InputCaption)]
    assert [(i.name, i.description, i.shape) for i in inputs] == [
        ("Q", "queries", (2, 2)),
        ("K", "keys", (2, 2)),
        ("V", "values", (2, 2)),
    ]
    headings = [block for block in blocks if isinstance(block, StepHeading)]
    assert [(h.number, h.title, h.shape) for h in headings] == [
        (1, "Scores  S = Q Kᵀ", (2, 2)),
        (2, "Scaled scores  S / √d_k", (2, 2)),
        (3, "Weights  A = softmax(rows)", (2, 2)),
        (4, "Output  A V", (2, 2)),
    ]
    # The weights: the step's labels, and its row sums as a column beside them.
    weights = blocks[blocks.index(headings[2]) + 3]
    assert isinstance(weights, Matrix)
    assert (weights.row_labels, weights.col_labels) == (("q1", "q2"), ("k1", "k2"))
    first = 1 / (1 + math.exp(1 / math.sqrt(2)))  # softmax(1/√2, 2/√2), by hand
    np.testing.assert_allclose(weights.value[0], [first, 1 - first], rtol=1e-12)
    assert weights.row_sums is not None and weights.row_sums.shape == (2, 1)
    np.testing.assert_allclose(weights.row_sums[:, 0], [1.0, 1.0], rtol=1e-12)
    # Both formats show the steps in the walk's order, under the same titles.
    markdown = render_text(walkthrough, Format.markdown, OPTIONS)
    latex = render_text(walkthrough, Format.latex, OPTIONS)
    for text, heading in ((markdown, "### {}. {}"), (latex, "\\subsection*{{{}. {}")):
        places = [text.index(heading.format(h.number, h.title.split()[0])) for h in headings]
        assert places == sorted(places)


RECORDS = [{"name": "one", "value": 1.5}, {"name": "two", "value": None}]
HISTOGRAM = {"edges": [-1.0, 0.0, 1.0], "series": {"scaled": [3, 1], "raw": [0, 4]}}


def every_block() -> Walkthrough:
    """A walkthrough with every kind of block: each value kind as a step and as an
    intermediate, labels that fit and labels that do not, a batch, timing and notes."""
    scores = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    step = Step(
        "scores",
        "Scores",
        "An explanation.",
        scores,
        row_labels=("q1", "q2"),
        col_labels=("k1", "k2", "k3"),
        row_sums=np.array([6.0, 15.0]),
        seconds=0.00125,
        parts=(
            Part("largest", 6.0, "scalar"),
            Part("row max", np.array([[3.0], [6.0]])),  # a matrix: the step's rows
            Part("first row", np.array([1.0, 2.0, 3.0])),  # the step's width: its columns
            Part("own", np.array([[7.0, 8.0, 9.0]]), rows=("x",)),
            Part("words", "Words | here", "text"),
            Part("table", RECORDS, "records"),
            Part("counts", HISTOGRAM, "histogram"),
        ),
        notes=(Note.fixed("one", "A note under the step."),),
    )
    steps = (
        step,
        Step("odd", "Odd labels", "", scores, row_labels=("only one",), row_sums=np.ones(3)),
        Step("words", "Words", "", "A text value.", kind="text"),
        Step("table", "Table", "", RECORDS, kind="records", headings={"value": "Value"}),
        Step("counts", "Counts", "", HISTOGRAM, kind="histogram"),
        Step("total", "Total", "", 21.0, kind="scalar", latex="t"),
    )
    walkthrough = Walkthrough(
        lesson="demo",
        title="Demo",
        intro="An introduction.",
        example="small",
        backend="numpy",
        device="cpu",
        dtype="float64",
        inputs=(InputValue("X", scores, ("a", "b"), description="the input"),),
        steps=steps,
        output=scores,
        example_description="From the lecture.",
        notes=(Note.fixed("end", "A note at the end."),),
    )
    return replace(walkthrough, items=(walkthrough, walkthrough))


def test_every_block_and_line_role_is_made_and_written():
    walkthrough = every_block()
    blocks = document(walkthrough, OPTIONS)
    assert {type(block) for block in blocks} == set(get_args(Block))
    roles = {block.role for block in blocks if isinstance(block, Line)}
    assert roles == set(get_args(LineRole))
    markdown = render_text(walkthrough, Format.markdown, OPTIONS)
    latex = render_text(walkthrough, Format.latex, OPTIONS)
    assert "### 1. Scores (2 × 3) (1.250 ms)" in markdown
    assert "\\subsection*{1. Scores ($2 \\times 3$) (1.250 ms)}" in latex
    # Built here, not by a door: the batch line names the parameter by its keyword (Python's).
    assert "**batch item 0 shown, of 2 (items 0 to 1); item picks another;" in markdown
    assert "\\textbf{batch item 0 shown, of 2" in latex
    assert "> **Note:** A note under the step." in markdown
    assert "\\emph{Note:} A note under the step." in latex
    assert "- A note at the end." in markdown and "\\item A note at the end." in latex
    # The weights' row sums in the table's one format, beside the rows they sum.
    assert "| | k1 | k2 | k3 | Σ row |" in markdown
    assert "| **q1** | 1 | 2 | 3 | 6 |" in markdown
    assert " & k1 & k2 & k3 & $\\Sigma$ row \\\\" in latex  # a step without LaTeX: a tabular
    assert "q1 & $1$ & $2$ & $3$ & $6$ \\\\" in latex
    assert "\\[ t = 21 \\]" in latex and "**21**" in markdown


def test_labels_and_row_sums_only_where_they_fit():
    blocks = document(every_block(), OPTIONS)
    matrices = [block for block in blocks if isinstance(block, Matrix)]
    given, _, odd = matrices
    assert given.symbol == "X" and given.row_labels == ("a", "b")
    assert odd.row_labels is None and odd.row_sums is None  # one label, three sums: two rows
    (parts,) = [block for block in blocks if isinstance(block, Intermediates)]
    shown = {part.label: part.value for part in parts.parts}
    row_max, first_row, own = shown["row max"], shown["first row"], shown["own"]
    assert isinstance(row_max, Matrix) and isinstance(first_row, Matrix)
    assert isinstance(own, Matrix)
    assert (row_max.row_labels, row_max.col_labels) == (("q1", "q2"), None)
    assert (first_row.row_labels, first_row.col_labels) == (None, ("k1", "k2", "k3"))
    assert (own.row_labels, own.col_labels) == (("x",), ("k1", "k2", "k3"))


def test_text_records_and_histogram_intermediates_in_both_formats():
    """An intermediate that is not numbers sits under its label (Markdown once took a text or
    histogram part for a number)."""
    walkthrough = every_block()
    markdown = render_text(walkthrough, Format.markdown, OPTIONS)
    assert "*largest*: **6**" in markdown
    assert "*words*\n\nWords \\| here" in markdown
    assert "*table*\n\n| name | value |\n|---|---:|\n| one | 1.5000 |\n| two | — |" in markdown
    assert (
        "*counts*\n\n| bin | scaled | raw |\n|---|---:|---:|\n| [-1.0, +0.0) | 3 | 0 |" in markdown
    )
    latex = render_text(walkthrough, Format.latex, OPTIONS)
    # The numbers in one display; then the others, each under its label.
    gather = latex.index("\\begin{gather*}\n\\text{largest} = 6 \\\\")
    assert gather < latex.index("\\noindent words:\n\nWords \\textbar{} here")
    assert "\\noindent table:" in latex and "\\noindent counts:" in latex
    assert "$[-1.0, +0.0)$ & 3 & 0 \\\\" in latex
