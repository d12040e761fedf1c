"""Renderers: the text a reader sees, at 80 columns without colour."""

from __future__ import annotations

import math

import numpy as np

from attn_cli.core.model import InputValue, Step, Walkthrough
from attn_cli.core.numbers import format_number
from attn_cli.render import Format, RenderOptions, render_text
from attn_cli.render.rich_render import block_heatmap, value_renderable, walkthrough_renderable
from attn_cli.run.runner import RunRequest, compute
from tests.conftest import render_plain
from tests.test_rich_tables import read_tables

OPTIONS = RenderOptions()


def test_numbers_are_exact_when_they_can_be():
    assert format_number(1.0) == "1"
    assert format_number(-0.0) == "0"
    assert format_number(0.70710678) == "0.7071"
    assert format_number(4.5e-5) == "4.50e-05"  # would round to 0.0000: shown honestly
    assert format_number(float("-inf")) == "−∞"
    assert format_number(float("-inf"), unicode=False) == "-inf"
    assert format_number(float("nan")) == "nan"
    assert format_number(0.5, 2) == "0.50"


def test_weights_table_has_row_sums():
    weights = np.array([[0.25, 0.75], [0.5, 0.5]])
    text = render_plain(
        value_renderable(
            weights,
            "weights",
            OPTIONS,
            row_labels=("q1", "q2"),
            col_labels=("k1", "k2"),
            row_sums=weights.sum(axis=1),
        )
    )
    # Without colour each weight carries its shade (░ light to █ dark) after the number; the
    # sums in the table's own format (issue 31: never 1 beside 0.2500).
    assert text.splitlines() == [
        "  ╭────┬─────────┬─────────┬────────╮",
        "  │    │      k1 │      k2 │  Σ row │",
        "  ├────┼─────────┼─────────┼────────┤",
        "  │ q1 │ 0.2500░ │ 0.7500▓ │ 1.0000 │",
        "  │ q2 │ 0.5000▒ │ 0.5000▒ │ 1.0000 │",
        "  ╰────┴─────────┴─────────┴────────╯",
        "  No colour here: the mark after a weight is its shade, ░ light to █ darkest.",
    ]


def test_large_matrix_is_a_corner_with_statistics():
    big = np.arange(30 * 20, dtype=np.float64).reshape(30, 20)
    text = render_plain(value_renderable(big, "matrix", OPTIONS))
    lines = text.splitlines()
    assert "  │  1 │   0 │   1 │   2 │   3 │   4 │   5 │ … │  19 │" in lines
    assert "  │  ⋮ │   ⋮ │   ⋮ │   ⋮ │   ⋮ │   ⋮ │   ⋮ │ ⋱ │   ⋮ │" in lines
    assert "  │ 30 │ 580 │ 581 │ 582 │ 583 │ 584 │ 585 │ … │ 599 │" in lines
    said = " ".join(text.split())
    assert (
        "shape 30 × 20 · rows 7–29 and columns 7–19 hidden (--full shows every row and column)"
        in said
    )
    assert "· min 0 · max 599 · mean 299.5000 · std" in said
    assert len(lines) < 20


def test_full_shows_every_row_and_column_that_fits():
    """Issue 42: above 12 rows or columns only a corner showed, even at 200 columns."""
    big = np.arange(30 * 20, dtype=np.float64).reshape(30, 20)
    text = render_plain(value_renderable(big, "matrix", RenderOptions(full=True)), 200)
    (table,) = read_tables(text)
    assert len(table.body) == 30 and table.headers()[1:] == [str(c) for c in range(1, 21)]
    assert "hidden" not in text


def test_non_finite_values_in_every_format():
    masked = np.array([[0.0, -np.inf], [1.5, 0.0]])
    walkthrough = Walkthrough(
        lesson="demo",
        title="Demo",
        intro="",
        example=None,
        backend="numpy",
        device="cpu",
        dtype="float64",
        inputs=(InputValue("S", masked),),
        steps=(Step("masked", "Masked", "", masked, latex="S+M"),),
        output=masked,
    )
    assert '"-inf"' in render_text(walkthrough, Format.json, OPTIONS)
    # One format per column: the exact 0 beside 1.5 is written 0.0000, the -inf as a word.
    assert "| **1** | 0.0000 | -inf |" in render_text(walkthrough, Format.markdown, OPTIONS)
    assert "0.0000 & -\\infty" in render_text(walkthrough, Format.latex, OPTIONS)
    assert "−∞" in render_plain(walkthrough_renderable(walkthrough, OPTIONS))


def test_full_scaled_walkthrough_text_at_80_columns():
    walkthrough = compute(RunRequest(lesson="scaled"))
    text = render_plain(walkthrough_renderable(walkthrough, OPTIONS))
    assert max(len(line) for line in text.splitlines()) <= 80
    for heading in (
        "Step 1 · Scores  S = Q Kᵀ · 2 × 2",
        "Step 2 · Scaled scores  S / √d_k · 2 × 2",
        "Step 3 · Weights  A = softmax(rows) · 2 × 2",
        "Step 4 · Output  A V · 2 × 2",
    ):
        assert heading in text
    # Row q1 of the weights: softmax(1/√2, 2/√2), written out; its output row from V by hand.
    first = 1 / (1 + math.exp(1 / math.sqrt(2)))
    out = (first * 0.1 + (1 - first) * 0.3, first * 0.2 + (1 - first) * 0.4)
    assert f"│ q1 │ {first:.4f}░ │ {1 - first:.4f}▓ │ 1.0000 │" in text
    assert f"│ q1 │ {out[0]:.4f} │ {out[1]:.4f} │" in text
    assert f"√d_k = √2 = {math.sqrt(2):.4f}" in text


def test_block_heatmap_for_big_signed_matrices():
    picture = render_plain(block_heatmap(np.sin(np.arange(100 * 200).reshape(100, 200) / 50)))
    assert "shape 100 × 200 · every 3 row(s), every 4 column(s)" in picture
    assert "█" in picture
