"""Terminal tables never cut a number, and every number they show is the computed one.

Every lesson, with each of its bundled examples and with random inputs of sizes 2, 11 and
40, is rendered at 60, 80 and 120 columns without colour. Each table read back from the text
must hold no shortened cell ("-0.53…"), and each number in it must be the step's value at
the shown precision, in one format per column, at the row and column its labels say.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pytest
from rich.console import Console

import attn_cli as attn
from attn_cli.core.model import InputValue, Step, Walkthrough
from attn_cli.core.numbers import as_matrix, format_column
from attn_cli.course import card
from attn_cli.lessonfiles.loader import load_bundled
from attn_cli.render import RenderOptions
from attn_cli.render.rich_render import (
    HEATMAP_MAX_COLS,
    HEATMAP_MAX_ROWS,
    MAX_RECORDS,
    RECORDS_CORNER,
    SHADE_MARKS,
    MatrixTable,
    histogram,
    records_table,
    row_sum_note,
    step_rule,
    value_renderable,
    walkthrough_renderable,
)
from tests.conftest import render_plain
from tests.lesson_runs import lessons_with_runs, runs_of

LESSONS = lessons_with_runs()

WIDTHS = (60, 80, 120)
SIZES = (2, 11, 40)


def _cases() -> list[tuple[str, str, Any]]:
    cases = []
    for lesson in LESSONS:
        for example in load_bundled(lesson).examples:
            cases.append((lesson, f"example={example.name}", {"example": example.name}))
        for size in SIZES:
            cases.append((lesson, f"size={size}", runs_of(lesson).sized(size)))
    return cases


CASES = _cases()
CASE_IDS = [f"{lesson}-{label}" for lesson, label, _ in CASES]


@cache
def walkthrough(index: int) -> Walkthrough:
    lesson, _, arguments = CASES[index]
    return getattr(attn, lesson)(**arguments)


def test_the_cases_cover_every_lesson_and_example():
    examples = sum(len(load_bundled(lesson).examples) for lesson in LESSONS)
    assert len(CASES) == examples + len(LESSONS) * len(SIZES)


# --- reading tables back from the text ----------------------------------------------------


@dataclass
class ReadTable:
    header: list[list[str]] = field(default_factory=list)  # lines of header cells
    body: list[list[str]] = field(default_factory=list)  # lines of body cells

    def headers(self) -> list[str]:
        """Each column's header, its wrapped lines joined by spaces."""
        columns = zip(*self.header, strict=True)
        return [" ".join(part for part in column if part) for column in columns]


def read_tables(text: str) -> list[ReadTable]:
    """Every box table in the text, side-by-side ones too, top to bottom and left to right.

    A table is the rectangle from a ``╭`` to its ``╮`` down to the ``╰`` below.
    """
    lines = text.splitlines()
    found: list[tuple[int, int, ReadTable]] = []
    for top, line in enumerate(lines):
        for left, char in enumerate(line):
            if char != "╭":
                continue
            right = line.index("╮", left)
            table, in_body = ReadTable(), False
            for below in lines[top + 1 :]:
                row = below[left : right + 1]
                if row.startswith("╰"):
                    break
                if row.startswith("├"):
                    in_body = True
                    continue
                assert row.startswith("│") and row.endswith("│"), (row, text)
                cells = [cell.strip() for cell in row[1:-1].split("│")]
                (table.body if in_body else table.header).append(cells)
            else:
                raise AssertionError(f"a table is not closed:\n{text}")
            found.append((top, left, table))
    return [table for _, _, table in sorted(found, key=lambda item: item[:2])]


def table_cells(text: str) -> list[str]:
    """Every cell of every table line, side-by-side tables included."""
    cells = []
    for line in text.splitlines():
        if "│" in line:
            cells += [cell.strip() for cell in line.split("│")[1:-1]]
    return cells


# --- what a shown number must be ------------------------------------------------------------

_INTEGER = re.compile(r"^-?(\d+|\d{1,3}(,\d{3})+)$")  # 274,877,906,944: digits in threes
_BELOW = re.compile(r"^<0\.(0*1)$")  # below the decimals shown: <0.0001 at four
_FIXED = re.compile(r"^-?\d+\.(\d+)$")
_SCIENTIFIC = re.compile(r"^-?\d\.(\d+)e([+-]\d+)$")


def number_style(text: str) -> str:
    if _BELOW.match(text):
        return "fixed"  # a weight below the decimals shown, in a column of fixed decimals
    if _INTEGER.match(text):
        return "integer"
    if _FIXED.match(text):
        return "fixed"
    if _SCIENTIFIC.match(text):
        return "scientific"
    if text in ("nan", "∞", "−∞", "inf", "-inf"):
        return "non-finite"
    raise AssertionError(f"{text!r} is not a number as the tables write them")


def assert_shows(text: str, value: float, precision: int, where: str) -> None:
    """``text`` is ``value`` written at ``precision``: its digits are right to the last one."""
    value = float(value)
    if math.isnan(value):
        assert text == "nan", where
        return
    if math.isinf(value):
        assert text in (("∞", "inf") if value > 0 else ("−∞", "-inf")), where
        return
    below = _BELOW.match(text)
    if below:  # "<0.0001": a positive weight that would round to 0 at these decimals
        assert len(below.group(1)) == precision, (where, text, precision)
        assert 0 < value < 0.5 * 10.0**-precision, (where, text, value)
        return
    style = number_style(text)
    if style == "integer":
        assert value == int(text.replace(",", "")), (where, text, value)  # an integer is exact
        return
    if style == "fixed":
        decimals = len(_FIXED.match(text).group(1))  # type: ignore[union-attr]
        assert decimals == precision, (where, text, precision)
        step = 10.0**-decimals
    else:
        match = _SCIENTIFIC.match(text)
        assert match is not None
        step = 10.0 ** (int(match.group(2)) - len(match.group(1)))
    assert abs(float(text) - value) <= 0.5 * step * (1 + 1e-9) + 1e-15, (where, text, value)


def shown_indices(labels: list[str], count: int, marker: str) -> list[int | None]:
    """The indices that labels stand for: the first ones, the marker, then the last."""
    if marker not in labels:
        assert len(labels) == count, (labels, count)
        return list(range(count))
    at = labels.index(marker)
    assert len(labels) - at - 1 <= 1, labels  # at most the last one after the marker
    return [*range(at), None, *([count - 1] if at < len(labels) - 1 else [])]


def assert_matrix_table(
    table: ReadTable, value: Any, precision: int, where: str, row_sums: Any = None
) -> None:
    rows = as_matrix(value)
    n_rows, n_cols = rows.shape
    (header,) = table.header
    heads = header[1:]
    sums = None
    if row_sums is not None:
        assert heads[-1] == "Σ row", where
        heads = heads[:-1]
        sums = np.atleast_1d(np.asarray(row_sums, dtype=np.float64))
    cols = shown_indices(heads, n_cols, "…")
    row_of = shown_indices([line[0] for line in table.body], n_rows, "⋮")
    styles: dict[int, set[str]] = {}
    for line, row in zip(table.body, row_of, strict=True):
        assert len(line) == len(header), (where, line)
        if row is None:
            assert set(line) <= {"⋮", "⋱"}, (where, line)
            continue
        for position, col in enumerate(cols, start=1):
            cell = line[position].rstrip(SHADE_MARKS)
            if col is None:
                assert cell == "…", (where, line)
                continue
            assert_shows(cell, rows[row, col], precision, f"{where} ({row + 1}, {col + 1})")
            styles.setdefault(col, set()).add(number_style(cell))
        if sums is not None:
            assert_shows(line[-1], sums[row], precision, f"{where} Σ row {row + 1}")
            styles.setdefault(-1, set()).add(number_style(line[-1]))
    for col, found in styles.items():
        assert len(found - {"non-finite"}) <= 1, (where, col, found)  # one format per column


def assert_records_tables(
    tables: list[ReadTable],
    records: list[dict[str, Any]],
    precision: int,
    where: str,
    headings: Mapping[str, str] | None = None,
) -> None:
    """Numbers never wrap, so a number column holds one non-empty line per record shown, in
    order (a long table: the first RECORDS_CORNER, "⋮", the last). The tables are the record
    table's column groups (one when it fits); a column is headed by the lesson file's heading
    of its key (``headings``), or by the key."""
    assert tables, where
    shown: list[int | None] = list(range(len(records)))
    if len(records) > MAX_RECORDS:
        shown = [*range(RECORDS_CORNER), None, len(records) - 1]
    key_of = {heading: key for key, heading in (headings or {}).items()}
    seen: set[str] = set()
    for table in tables:
        for position, heading in enumerate(table.headers()):
            name = key_of.get(heading, heading)
            assert name in records[0], (where, name)
            seen.add(name)
            values = [record[name] for record in records]
            if not all(v is None or isinstance(v, int | float | np.number) for v in values):
                continue
            if any(isinstance(v, bool | np.bool_) for v in values):
                continue
            cells = [line[position] for line in table.body if line[position]]
            assert len(cells) == len(shown), (where, name, cells)
            styles = set()
            for cell, row in zip(cells, shown, strict=True):
                if row is None:
                    assert cell == "⋮", (where, name)
                    continue
                v = values[row]
                if v is None:
                    assert cell == "—", (where, name)
                    continue
                assert_shows(cell, v, precision, f"{where} {name}")
                styles.add(number_style(cell))
            assert len(styles - {"non-finite"}) <= 1, (where, name, styles)
    assert seen == set(records[0]), (where, seen)  # every column is shown somewhere


def shows_a_table(value: Any, kind: str) -> bool:
    if kind in ("text", "histogram", "scalar"):
        return False
    if kind == "records":
        return bool(value)
    if np.ndim(value) == 0:
        return False
    shape = np.shape(value)
    too_big = shape[0] > HEATMAP_MAX_ROWS or shape[-1] > HEATMAP_MAX_COLS
    return not (kind == "heatmap" and too_big)  # a big heatmap is a picture, no numbers


def assert_nothing_cut(text: str, width: int, where: str) -> None:
    for line in text.splitlines():
        assert len(line) <= width, (where, line)
        assert not re.search(r"… ─", line), (where, line)  # a heading cut short
        if "│" in line:
            for cell in line.split("│")[1:-1]:
                cell = cell.strip()
                assert not cell.endswith("…") or cell == "…", (where, cell)


def sections(text: str) -> list[str]:
    """The text before Step 1 (header and inputs), then each step's text."""
    return re.split(r"\n(?=Step \d+ · )", text)


def assert_sections_show_the_values(walk: Walkthrough, text: str, where: str) -> int:
    """Each section's tables, in reading order, against the values it shows: the inputs;
    a step's intermediates, then its value. Returns the number of tables checked."""
    precision = card(walk.lesson).precision  # the lesson's own default, as the command prints
    parts = sections(text)
    assert len(parts) == len(walk.steps) + 1, where
    checked = 0
    inputs = [item for item in walk.inputs if shows_a_table(item.value, "matrix")]
    tables = read_tables(parts[0])
    assert len(tables) == len(inputs), (where, "inputs")
    for item, table in zip(inputs, tables, strict=True):
        assert_matrix_table(table, item.value, precision, f"{where} input {item.name}")
        checked += 1
    for step, part_text in zip(walk.steps, parts[1:], strict=True):
        tables = read_tables(part_text)
        shown = [part for part in step.parts if shows_a_table(part.value, part.kind)]
        for part in shown:
            label = f"{where} {step.key} / {part.label}"
            assert tables, label
            table = tables.pop(0)
            if part.kind == "records":
                assert_records_tables([table], part.value, precision, label)
            else:
                assert_matrix_table(table, part.value, precision, label)
            checked += 1
        label = f"{where} {step.key}"
        if not shows_a_table(step.value, step.kind):
            assert not tables, label
        elif step.kind == "records":
            assert_records_tables(tables, step.value, precision, label, step.headings)
            checked += 1
        else:
            (table,) = tables
            assert_matrix_table(table, step.value, precision, label, step.row_sums)
            checked += 1
    return checked


@cache
def rendered(case: int, width: int) -> str:
    return render_plain(walkthrough(case), width)


# --- the proofs -------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", range(len(CASES)), ids=CASE_IDS)
def test_no_table_cell_is_cut(case, width):
    assert_nothing_cut(rendered(case, width), width, CASE_IDS[case])


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", range(len(CASES)), ids=CASE_IDS)
def test_every_shown_number_is_the_computed_value(case, width):
    text = rendered(case, width)
    assert assert_sections_show_the_values(walkthrough(case), text, CASE_IDS[case]) > 0


def test_a_matrix_too_wide_shows_fewer_columns_and_says_so():
    walk = attn.multihead(n=6, d_model=16)
    x = walk.inputs[0].value
    text = render_plain(value_renderable(x, "matrix", RenderOptions()), 60)
    (table,) = read_tables(text)
    heads = table.header[0][1:]
    assert heads[-2:] == ["…", "16"] and len(heads) < 8
    said = " ".join(text.split())
    assert "columns 4–15 hidden (--full shows every row and column;" in said
    assert "a terminal 81 columns wide shows every column of the corner (COLUMNS=81)" in said
    (corner,) = read_tables(render_plain(value_renderable(x, "matrix", RenderOptions()), 81))
    assert corner.header[0][1:] == ["1", "2", "3", "4", "5", "6", "…", "16"]
    assert_matrix_table(table, x, 4, "X at 60 columns")


def test_the_same_walkthrough_fits_60_80_and_120_columns_and_a_notebook():
    walk = attn.scaled(n=12, dk=8)
    shown = {width: read_tables(render_plain(walk, width)) for width in (60, 120)}
    narrow = max(len(t.header[0]) for t in shown[60])
    wide = max(len(t.header[0]) for t in shown[120])
    assert narrow < wide  # fewer columns at 60, the full corner at 120
    html = walk._repr_html_()  # a notebook's 100 columns
    assert not re.search(r"\d…", html)  # no number shortened to "0.53…"
    assert f"{walk.step('weights')[11, 11]:.4f}" in html


def test_one_number_format_per_column():
    walk = attn.multihead()
    head = walk.find("head1.weights")
    text = render_plain(
        value_renderable(head.value, "weights", RenderOptions(), row_sums=head.row_sums)
    )
    sums = [line.split("│")[-2].strip() for line in text.splitlines() if line.count("│") > 2]
    assert len(set(map(len, sums[1:]))) == 1, sums  # 1.0000 throughout, or 1 throughout
    similarity = attn.posenc().find("similarity")
    text = render_plain(value_renderable(similarity.value, "heatmap", RenderOptions(precision=3)))
    diagonal = [line.split("│")[2].strip().rstrip(SHADE_MARKS) for line in text.splitlines()[3:11]]
    assert "4" not in diagonal and "4.000" in diagonal
    assert format_column([-0.0, 0.5], 3) == ["0.000", "0.500"]  # no "-0.000" for a zero


@pytest.mark.parametrize("lesson", ["scaled", "bahdanau", "selfattn"])
def test_input_captions_are_whole_and_apart_at_80_columns(lesson):
    walk = getattr(attn, lesson)()
    text = render_plain(walk, 80)
    for item in walk.inputs:
        caption = f"{item.name} {item.description}".strip()
        lines = [line for line in text.splitlines() if caption in line]
        assert lines, (caption, text)
        line = lines[0]
        at = line.index(caption)
        before, after = line[:at], line[at + len(caption) :]
        assert before == "" or before.endswith("   "), line
        assert re.match(r"^ · [\d × ]+(\s{3,}|$)", after), line


def _weights_walkthrough() -> Walkthrough:
    weights = np.array([[0.1, 0.9], [0.5, 0.5]])
    step = Step("weights", "Weights", "Darker cells get more attention.", weights, "weights")
    return Walkthrough("demo", "Demo", "", None, "numpy", "cpu", "float64", (), (step,), weights)


def _render(console: Console, renderable: Any) -> str:
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_without_colour_a_mark_stands_for_the_shade(monkeypatch):
    walk = _weights_walkthrough()
    options = RenderOptions()
    colour = Console(file=io.StringIO(), width=80, force_terminal=True, color_system="truecolor")
    coloured = _render(colour, walkthrough_renderable(walk, options))
    assert "No colour here" not in coloured and "0.9000█" not in coloured
    for console in (
        Console(file=io.StringIO(), width=80, color_system=None),
        Console(file=io.StringIO(), width=80, force_terminal=True, no_color=True),
    ):
        plain = _render(console, walkthrough_renderable(walk, options))
        assert "0.9000█" in plain and "0.1000 " in plain  # 0.1 is light: no mark
        assert "No colour here: the mark after a weight is its shade" in plain
    monkeypatch.setenv("TERM", "dumb")
    dumb = Console(file=io.StringIO(), width=80, force_terminal=True)
    assert "0.9000█" in _render(dumb, walkthrough_renderable(walk, options))


def test_no_color_through_the_command_line():
    from typer.testing import CliRunner

    from attn_cli.cli.app import app

    result = CliRunner().invoke(app, ["scaled"], env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "No colour here: the mark after a weight is its shade" in result.stdout
    weights = attn.scaled().step("weights")
    assert f"{weights[0, 1]:.4f}▓" in result.stdout


def test_a_row_sum_off_by_float16_rounding_is_explained():
    walk = attn.scaled(n=6, dtype="float16")
    step = walk.find("weights")
    off = float(np.max(np.abs(step.row_sums - 1)))
    assert off > 0.5e-4  # shows as 0.9995 or similar at 4 decimals
    text = " ".join(render_plain(walk, 80).split())
    assert "The row sums differ from 1 by up to" in text and "stored as float16" in text
    assert "eps" in text
    assert row_sum_note(step, 2, "float16") is None  # 0.9995 shows as 1.00: nothing to explain
    exact = attn.scaled(n=6).find("weights")
    assert row_sum_note(exact, 4, "float64") is None


def test_bfloat16_row_sums_on_torch_are_explained(torch):
    walk = attn.scaled(n=6, backend="torch", dtype="bfloat16")
    text = " ".join(render_plain(walk, 80).split())
    assert "stored as bfloat16, whose numbers near 1 are 0.0078 apart (eps)" in text


def test_long_headings_wrap_instead_of_losing_their_end():
    step = Step("s", "A title long enough to need more than one line here", "", np.eye(3))
    text = render_plain(step_rule(step, 12, 4), 40)
    assert "3 × 3" in text and "…" not in text


def test_histogram_bars_shrink_to_the_width():
    value = {"edges": [-1.0, 0.0, 1.0], "series": {"raw": [123456, 3]}}
    for width in (30, 60, 120):
        text = render_plain(histogram(value), width)
        assert "…" not in text and "123456" in text
        assert max(len(line) for line in text.splitlines()) <= width


def test_check_all_cuts_no_example_name():
    from attn_cli.render.check_render import check_renderable
    from attn_cli.run.check import check_bundled

    results = check_bundled()
    for width in (60, 80):
        text = render_plain(check_renderable(results), width)
        assert_nothing_cut(text, width, f"check at {width}")
        assert "term-by-term" in text


def test_input_values_with_labels_keep_their_labels():
    item = InputValue("Q", np.arange(6.0).reshape(2, 3), ("a", "b"), ("x", "y", "z"))
    text = render_plain(
        value_renderable(
            item.value,
            "matrix",
            RenderOptions(),
            row_labels=item.row_labels,
            col_labels=item.col_labels,
        )
    )
    (table,) = read_tables(text)
    assert table.header[0] == ["", "x", "y", "z"]
    assert [line[0] for line in table.body] == ["a", "b"]


def test_labels_are_text_not_markup():
    walk = attn.causal(tokens=["[CLS]", "a", "b"])
    (table,) = read_tables(
        render_plain(
            value_renderable(
                walk.step("weights"),
                "weights",
                RenderOptions(),
                row_labels=("[CLS]", "a", "b"),
                col_labels=("[CLS]", "a", "b"),
            )
        )
    )
    assert table.header[0][1] == "[CLS]" and table.body[0][0] == "[CLS]"


_STYLES = {
    "integer": re.compile(r"-?\d+"),
    "fixed": re.compile(r"-?\d+\.\d+"),
    "scientific": re.compile(r"-?\d\.\d+e[+-]\d+"),
}


@pytest.mark.parametrize("index", range(len(CASES)), ids=CASE_IDS)
def test_every_matrix_table_has_one_number_format(index):
    """Issue 31: a column, and a whole table with its Σ row, in one format, in every lesson (no
    0.0000 beside 0, no Σ row of 1 beside weights of 0.2500). Issue 42: a table whose columns
    are different quantities (cost's entries, bytes, MiB and GB) one format per column."""
    for step in walkthrough(index).steps:
        if step.kind != "matrix" or np.asarray(step.value).dtype == np.bool_:
            continue
        table = MatrixTable(
            step.value,
            4,
            col_labels=step.col_labels,
            row_sums=step.row_sums,
            quantities=step.quantities,
        )
        groups = [[cell for column in table.cells.values() for cell in column]]
        groups[0] += table.sums or []
        if step.quantities == ():  # every column a quantity of its own
            groups = [*table.cells.values(), table.sums or []]
        for cells in groups:
            finite = [cell for cell in cells if re.fullmatch(r"-?[\d.]+(e[+-]\d+)?", cell)]
            styles = {n for n, form in _STYLES.items() for cell in finite if form.fullmatch(cell)}
            assert len(styles) <= 1, (step.key, styles, finite[:12])


def test_the_score_matrix_sizes_are_written_each_in_its_own_format():
    """Issue 42: cost's score-matrix table wrote 128 MiB as 1.3e+02 (one format for entries in
    the billions and gigabytes below 1), beside a note saying the exact value is 128."""
    walk = attn.cost()
    step = walk.find("score_matrix")
    text = render_plain(
        value_renderable(
            step.value,
            "matrix",
            RenderOptions(precision=2),
            row_labels=step.row_labels,
            col_labels=step.col_labels,
            quantities=step.quantities,
        )
    )
    first = next(line for line in text.splitlines() if "1 head, 1 layer" in line)
    assert [cell.strip() for cell in first.split("│")[2:6]] == [
        "67,108,864",  # more than 6 digits: in groups of three (issue 57)
        "134,217,728",
        "128",
        "0.13",
    ]
    markdown = walk.to_markdown()
    assert "| **1 head, 1 layer** | 67,108,864 | 134,217,728 | 128 | 0.13 |" in markdown
    latex = walk.to_latex()
    assert "1 head, 1 layer & $67{,}108{,}864$ & $134{,}217{,}728$ & $128$ & $0.13$" in latex
    assert "S = QK" not in latex  # a table of sizes, not the matrix S itself


def test_columns_of_one_quantity_share_one_format():
    """Issue 42: two models' losses side by side in one format (was 1.182 beside 9.64e-01);
    a column of no group keeps its own."""
    records = [
        {"step": 50, "a_loss": 1.182, "b_loss": 0.964},
        {"step": 100, "a_loss": 1.125, "b_loss": 0.00034},
    ]
    alone = render_plain(records_table(records, RenderOptions(precision=3)))
    assert "1.182" in alone and "9.64e-01" in alone  # each column its own format
    grouped = render_plain(
        records_table(records, RenderOptions(precision=3), quantities=(("a_loss", "b_loss"),))
    )
    assert "1.18e+00" in grouped and "9.64e-01" in grouped and "3.40e-04" in grouped
    assert " 50 " in grouped and " 100 " in grouped  # step: whole numbers, alone


def test_whole_tables_show_every_row_and_column_in_groups_that_fit():
    """RenderOptions(whole_tables=True) (attn learn --full): no corner, no "…"; the columns in
    consecutive groups each as wide as the width allows, each group captioned, the row sums
    after the last; one number format across the groups."""
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(12), size=13)  # (13, 12): translate's after map
    options = RenderOptions(precision=3, whole_tables=True)
    sums = weights.sum(axis=1)
    text = render_plain(value_renderable(weights, "weights", options, row_sums=sums), 80)
    assert "…" not in text and "⋮" not in text
    tables = read_tables(text)
    assert len(tables) > 1
    headers = [h for table in tables for h in table.header[0][1:] if h != "Σ row"]
    assert headers == [str(c) for c in range(1, 13)]
    assert "Σ row" in tables[-1].header[0] and all("Σ row" not in t.header[0] for t in tables[:-1])
    assert all(len(table.body) == 13 for table in tables)
    assert f"group {len(tables)} of {len(tables)}" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    wide = render_plain(value_renderable(weights, "weights", options, row_sums=sums), 200)
    assert len(read_tables(wide)) == 1 and "group" not in wide
    cut = render_plain(value_renderable(weights, "weights", RenderOptions(precision=3)), 200)
    assert "…" in cut and "⋮" in cut  # without it: the corner
    from attn_cli.render.rich_render import records_table

    records = [{"step": i + 1, "loss": 1 / (i + 1)} for i in range(MAX_RECORDS + 8)]
    assert "⋮" in render_plain(records_table(records, RenderOptions(precision=3)))
    every = render_plain(records_table(records, options))
    assert "⋮" not in every and f"│ {MAX_RECORDS + 8:>4} │" in every
