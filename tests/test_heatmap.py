"""--plot on the lesson commands: the files written, and the figures drawn from the walkthrough."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.core.errors import UserError
from attn_cli.core.numbers import format_number
from tests.conftest import assert_user_error
from tests.lesson_runs import lessons_with_runs, runs_of

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SVG_TEXT = "{http://www.w3.org/2000/svg}text"

# One fast run of every lesson that draws a figure, and labels its figure must show (its test's
# RUNS.figure).
LESSONS = {lesson: figure for lesson in lessons_with_runs() if (figure := runs_of(lesson).figure)}


def figure_of(walkthrough, precision=None):
    """The lesson's figure at ``precision`` (None: the lesson's own default, as --plot draws)."""
    from attn_cli.course import card, figure_of
    from attn_cli.render.heatmap import heatmap_figure

    if precision is None:
        precision = card(walkthrough.lesson).precision
    return heatmap_figure(walkthrough, figure_of(walkthrough.lesson), precision)


def panels(figure):
    """The panels of a figure, not its colour bars."""
    return [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]


def ticks(labels) -> list[str]:
    return [label.get_text() for label in labels]


def cell_texts(ax) -> list[str]:
    return [text.get_text() for text in ax.texts]


def expected_cells(values, precision: int = 4) -> list[str]:
    return [format_number(v, precision) for v in np.atleast_2d(values).ravel()]


def svg_texts(path: Path) -> list[str]:
    root = ET.parse(path).getroot()
    return ["".join(node.itertext()).strip() for node in root.iter(SVG_TEXT)]


# --- the files the CLI writes ----------------------------------------------------------------


@pytest.mark.parametrize("lesson", sorted(LESSONS))
@pytest.mark.parametrize("suffix", ["png", "svg", "pdf"])
def test_plot_writes_a_readable_file(invoke, mpl, tmp_path, lesson, suffix):
    args, _labels = LESSONS[lesson]
    target = tmp_path / f"x.{suffix}"
    result = invoke(*args, "--plot", str(target))
    assert result.exit_code == 0, result.output
    assert result.stdout  # the walkthrough is still printed
    content = target.read_bytes()
    if suffix == "png":
        from PIL import Image

        assert content.startswith(PNG_SIGNATURE)
        with Image.open(target) as image:
            width, height = image.size
        assert 400 <= width <= 3000 and 250 <= height <= 2000, (width, height)
    elif suffix == "svg":
        assert ET.parse(target).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    else:
        assert content.startswith(b"%PDF-")


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_svg_keeps_the_labels_as_text(invoke, mpl, tmp_path, lesson):
    args, labels = LESSONS[lesson]
    target = tmp_path / "x.svg"
    assert invoke(*args, "--plot", str(target)).exit_code == 0
    texts = svg_texts(target)
    for label in labels:
        assert label in texts, (label, texts)


def test_svg_cells_show_the_weights_at_the_chosen_precision(invoke, mpl, tmp_path):
    target = tmp_path / "x.svg"
    result = invoke("scaled", "--example", "library", "--precision", "2", "--plot", str(target))
    assert result.exit_code == 0, result.output
    weights = attn.scaled(example="library").step("weights")
    texts = svg_texts(target)
    for cell in expected_cells(weights, 2):
        assert cell in texts, (cell, texts)


def test_the_same_run_writes_the_same_svg(invoke, mpl, tmp_path):
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    for target in (first, second):
        assert invoke("causal", "--plot", str(target)).exit_code == 0
    assert first.read_bytes() == second.read_bytes()


# --- the figures, read back ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lesson", "example"),
    [("scaled", "cat-slept"), ("scaled", "library"), ("selfattn", "identity"), ("causal", None)],
)
def test_weights_heatmap_labels_and_cells_are_the_walkthroughs(mpl, lesson, example):
    walkthrough = getattr(attn, lesson)(example=example)
    step = walkthrough.find("weights")
    figure = figure_of(walkthrough)
    (ax,) = panels(figure)
    assert ticks(ax.get_xticklabels()) == list(step.col_labels)  # keys across
    assert ticks(ax.get_yticklabels()) == list(step.row_labels)  # queries down
    assert cell_texts(ax) == expected_cells(step.value)
    assert ax.get_title() == step.title
    assert walkthrough.title in figure.get_suptitle().replace("\n", " ")
    assert len(figure.axes) == 2  # the heatmap and its colour bar


def test_title_names_the_example(mpl):
    figure = figure_of(attn.scaled(example="cat-slept"))
    assert "example cat-slept" in figure.get_suptitle().replace("\n", " ")


def test_causal_masked_cells_are_grey_and_exactly_zero(mpl):
    walkthrough = attn.causal(example="three-tokens")
    (ax,) = panels(figure_of(walkthrough))
    shown = ax.images[0].get_array()
    future = np.triu(np.ones((3, 3), dtype=bool), k=1)
    assert np.array_equal(np.ma.getmaskarray(shown), future)  # drawn in the "bad" grey
    assert [cell_texts(ax)[i] for i in np.flatnonzero(future)] == ["0", "0", "0"]
    assert "masked" in ax.get_xlabel()


def test_causal_fill_zero_hatches_the_leaking_future_cells(mpl):
    walkthrough = attn.causal(example="three-tokens", fill="zero")
    (ax,) = panels(figure_of(walkthrough))
    assert len(ax.patches) == 3  # the three future cells of a 3 × 3 mask
    assert not np.ma.getmaskarray(ax.images[0].get_array()).any()  # their weight is shown
    assert cell_texts(ax) == expected_cells(walkthrough.step("weights"))
    assert "fill-0" in ax.get_xlabel()


def test_fill_zero_caption_holds_where_the_future_weight_underflows(mpl):
    """float16, row t1 = [20, (0)]: its future weight is exactly 0. The caption once said the
    hatched future keys "get weight here"."""
    walkthrough = attn.causal(scores=[[20.0, 0.0], [1.0, 1.0]], fill="zero", dtype="float16")
    assert walkthrough.step("weights")[0, 1] == 0.0
    (ax,) = panels(figure_of(walkthrough))
    assert "get weight" not in ax.get_xlabel()
    assert "hatched: future keys, no longer masked (the fill-0 bug)" in ax.get_xlabel()


def test_variance_panel_titles_do_not_claim_what_few_samples_miss(mpl):
    """--dk 1 --samples 2: the measured scaled variance is 0.28 and one width cannot show a
    softmax saturating; the panels were titled "scaled, it stays 1" and "Unscaled, the softmax
    saturates (one weight → 1)"."""
    walkthrough = attn.variance(dk="1", samples=2, keys=2)
    (row,) = walkthrough.step("moments")
    assert abs(row["var_scaled"] - 1) > 0.5
    spread, _scores, peaks = panels(figure_of(walkthrough))
    assert spread.get_title() == "Var(q·k), measured; in theory d_k, scaled 1"
    assert "in theory" in peaks.get_title() and "saturates" not in peaks.get_title()


def test_bahdanau_is_one_decoder_step_over_the_encoder_states(mpl):
    walkthrough = attn.bahdanau(example="cat-slept", all_scores=False)
    (ax,) = panels(figure_of(walkthrough))
    assert ticks(ax.get_xticklabels()) == ["the", "cat", "slept"]
    assert ticks(ax.get_yticklabels()) == ["s_t"]
    assert ax.get_xlabel() == "encoder state"
    assert cell_texts(ax) == expected_cells(walkthrough.step("weights"))


def test_bahdanau_all_scores_adds_a_row_per_score(mpl):
    walkthrough = attn.bahdanau(example="cat-slept")
    (ax,) = panels(figure_of(walkthrough))
    assert ticks(ax.get_yticklabels()) == ["additive α", "dot α", "general α"]
    rows = [walkthrough.step(key) for key in ("weights", "dot.weights", "general.weights")]
    assert cell_texts(ax) == expected_cells(np.vstack(rows))


def test_multihead_draws_one_panel_per_head_on_one_scale(mpl):
    walkthrough = attn.multihead(heads=2)
    figure = figure_of(walkthrough)
    heads = panels(figure)
    assert [ax.get_title() for ax in heads] == ["head 1", "head 2"]
    for index, ax in enumerate(heads, start=1):
        assert ticks(ax.get_xticklabels()) == ["cats", "sat", "dogs", "ran"]
        assert cell_texts(ax) == expected_cells(walkthrough.step(f"head{index}.weights"))
    limits = {ax.images[0].get_clim() for ax in heads}
    assert len(limits) == 1  # heads compared on the same colours
    assert len(figure.axes) == 3  # one colour bar for both


def test_posenc_is_diverging_and_centred_at_zero(mpl):
    walkthrough = attn.posenc(positions=6, d_model=4)
    (ax,) = panels(figure_of(walkthrough))
    low, high = ax.images[0].get_clim()
    assert low == -high and high > 0
    assert ax.images[0].get_cmap().name.startswith("RdBu")
    assert ticks(ax.get_xticklabels()) == ["sin0", "cos0", "sin1", "cos1"]
    assert ticks(ax.get_yticklabels()) == [str(i) for i in range(6)]
    assert cell_texts(ax) == expected_cells(walkthrough.step("pe"), 3)  # posenc's 3 decimals
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("dimension", "position")


def test_variance_plots_the_measured_variances_against_dk(mpl):
    walkthrough = attn.variance(dk="4,16,64", samples=40)
    spread, scores, peaks = panels(figure_of(walkthrough))
    moments = walkthrough.step("moments")
    raw = next(line for line in spread.lines if line.get_label() == "q·k")
    assert list(raw.get_xdata()) == [4, 16, 64]
    assert list(raw.get_ydata()) == [row["var_raw"] for row in moments]
    assert spread.get_xlabel().startswith("d_k") and spread.get_ylabel() == "variance of the score"
    assert spread.get_yscale() == "log"
    assert "64" in scores.get_title() and scores.get_xlabel() == "score"
    assert peaks.get_ylabel() == "mean largest softmax weight"


def test_flash_shows_its_score_blocks_side_by_side(mpl):
    walkthrough = attn.flash(example="causal-three")
    (ax,) = panels(figure_of(walkthrough))
    blocks = [walkthrough.step(key) for key in ("block1.scores", "block2.scores")]
    assert ticks(ax.get_xticklabels()) == ["k1", "k2", "k3"]
    assert cell_texts(ax) == expected_cells(np.hstack(blocks))
    assert cell_texts(ax)[1] == "−∞"  # q1 may not see k2
    assert [line.get_xdata()[0] for line in ax.lines] == [1.5]  # between the two blocks


def test_large_matrices_show_colour_and_some_labels_only(mpl):
    walkthrough = attn.scaled(n=60, dk=4)
    (ax,) = panels(figure_of(walkthrough))
    assert len(ax.texts) == 0
    shown = ticks(ax.get_xticklabels())
    assert 10 <= len(shown) <= 30 and shown[0] == "k1"
    assert set(shown) <= set(walkthrough.find("weights").col_labels)


def test_a_missing_step_is_a_one_line_user_error(mpl):
    walkthrough = attn.scaled()
    without = dataclasses.replace(walkthrough, steps=walkthrough.steps[:2])
    with pytest.raises(UserError, match=r"^--plot: this scaled run has no 'weights' step"):
        figure_of(without)


# --- Walkthrough.plot -----------------------------------------------------------------------


def test_walkthrough_plot_returns_a_figure_or_writes_the_file(mpl, tmp_path):
    from matplotlib.figure import Figure

    walkthrough = attn.selfattn()
    assert isinstance(walkthrough.plot(), Figure)
    target = tmp_path / "w.png"
    assert walkthrough.plot(target) is None
    assert target.read_bytes().startswith(PNG_SIGNATURE)
    with pytest.raises(UserError, match=r"must end in \.png, \.svg or \.pdf"):
        walkthrough.plot(tmp_path / "w.gif")
    assert not (tmp_path / "w.gif").exists()


# --- errors: one line, exit 2, nothing written ------------------------------------------------


@pytest.fixture
def without_matplotlib(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )


@pytest.fixture
def no_compute(monkeypatch):
    """Checks come first: the walkthrough must not be computed."""
    from attn_cli.run import runner

    def refuse(*args, **kwargs):
        raise AssertionError("the walkthrough was computed")

    monkeypatch.setattr(runner, "compute", refuse)


def test_plot_without_matplotlib_says_how_to_install(
    invoke, without_matplotlib, no_compute, tmp_path
):
    target = tmp_path / "x.png"
    result = invoke("scaled", "--plot", str(target))
    assert_user_error(result, "--plot needs matplotlib", "pip install 'attn-cli[plot]'.")
    assert result.stderr.strip() == (
        "attn: error: --plot needs matplotlib; install it with: pip install 'attn-cli[plot]'."
    )
    assert not target.exists()


def test_walkthrough_plot_without_matplotlib_is_a_user_error(without_matplotlib):
    """In Python the error names the method called, not the command line's --plot."""
    with pytest.raises(UserError, match=r"^plot\(\) needs matplotlib; install it with: pip"):
        attn.scaled().plot()


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("x.gif", ("must end in .png, .svg or .pdf", "e.g. --plot weights.png")),
        ("x", ("must end in .png, .svg or .pdf",)),
        ("missing/x.png", ("the folder", "does not exist")),
    ],
)
def test_bad_plot_paths_are_refused_before_computing(invoke, no_compute, tmp_path, name, fragments):
    result = invoke("causal", "--plot", str(tmp_path / name))
    assert_user_error(result, *fragments)
    assert list(tmp_path.iterdir()) == []


def test_unwritable_plot_folder_is_refused(invoke, no_compute, tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as for a read-only folder
    result = invoke("multihead", "--plot", str(tmp_path / "x.png"))
    assert_user_error(result, "cannot write there")
    assert list(tmp_path.iterdir()) == []


def test_an_input_error_writes_no_plot(invoke, mpl, tmp_path):
    target = tmp_path / "x.png"
    result = invoke("scaled", "--q", "1,0", "--k", "1,1,1", "--v", "1", "--plot", str(target))
    assert_user_error(result, "Q has 2 columns but K has 3")
    assert not target.exists()


@pytest.mark.slow
def test_the_heatmap_module_does_not_import_matplotlib():
    probe = "import sys, attn_cli.render.heatmap; print('matplotlib' in sys.modules)"
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "False"


@pytest.mark.parametrize("lesson", sorted(set(lessons_with_runs()) - set(LESSONS)))
def test_a_lesson_without_a_figure_says_so_in_one_line(invoke, mpl, tmp_path, lesson):
    """Its command has no --plot (its help offers none); in Python, plot() says there is none."""
    target = tmp_path / "x.png"
    result = invoke(lesson, "--plot", str(target))
    assert_user_error(result, "No such option: --plot", f"attn {lesson} --help")
    assert not target.exists()
    with pytest.raises(UserError, match=f"the {lesson} lesson has no figure to draw"):
        getattr(attn, lesson)().plot(target)
    assert not target.exists()
