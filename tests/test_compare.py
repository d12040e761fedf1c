"""--compare "FLAGS" (issue 57): the lesson as given and again with FLAGS, what differs shown."""

from __future__ import annotations

import json

import jsonschema
import numpy as np

import attn_cli
from attn_cli.core.compare import compared
from attn_cli.core.model import COMPARED
from attn_cli.render.json_render import schema
from tests.conftest import assert_user_error


def test_the_changed_steps_in_pairs_and_a_true_count():
    given, unscaled = attn_cli.scaled(), attn_cli.scaled(scale=False)
    both = compared(given, unscaled, "--no-scale")
    keys = [step.key for step in both.steps]
    # the scaled scores only as given; weights and output differ; the raw scores do not
    assert keys == ["scaled", "weights", "weights" + COMPARED, "output", "output" + COMPARED]
    assert np.array_equal(both.step("weights"), given.step("weights"))
    assert np.array_equal(both.step("weights" + COMPARED), unscaled.step("weights"))
    assert np.array_equal(given.step("scores"), unscaled.step("scores"))
    assert both.intro == (
        "The lesson as given, and again with --no-scale: 3 of its 4 steps differ, each shown as "
        "given and then with --no-scale; the other one is the same in both runs."
    )
    assert both.find("weights" + COMPARED).title.endswith("· with --no-scale")


def test_a_run_that_changes_nothing_says_so():
    walk = attn_cli.causal()
    assert compared(walk, attn_cli.causal(), "--seed 1").intro.endswith("all 4 steps are the same.")


def test_the_command_shows_both_runs_side_by_side(invoke):
    result = invoke("scaled", "--compare", "--no-scale", "--no-pager")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert max(map(len, out.splitlines())) <= 80
    lines = [line for line in out.splitlines() if "0.3302" in line]  # a weight as given ...
    assert lines and "0.2689" in lines[0]  # ... beside the same weight with --no-scale
    markdown = invoke("scaled", "--compare", "--no-scale", "-f", "markdown").stdout
    assert "· as given" in markdown and "· with --no-scale" in markdown


def test_json_holds_both_runs_whole(invoke):
    result = invoke("scaled", "--compare", "--no-scale", "-f", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema())
    assert document["kind"] == "comparison" and document["flags"] == "--no-scale"
    first = json.loads(invoke("scaled", "-f", "json").stdout)
    second = json.loads(invoke("scaled", "--no-scale", "-f", "json").stdout)
    assert document["runs"] == [first, second]


def test_flags_that_do_not_change_the_run_are_refused(invoke):
    assert_user_error(invoke("scaled", "--compare", "--bogus"), "--compare '--bogus'")
    assert_user_error(invoke("scaled", "--compare", "-f json"), "say how to show the run")
    assert_user_error(invoke("scaled", "--compare", ""), "change nothing")
    assert_user_error(invoke("scaled", "--compare", "--dk '3"), "write FLAGS as on the command")
    assert_user_error(invoke("scaled", "--compare", "--no-scale", "--brief"), "--brief")


def test_a_pair_shares_its_step_number_in_every_format(invoke):
    """The two runs' steps of one key are one step: numbered once (3 steps differ, numbered 1 to
    3), never counted as two (the pairs once made steps 2 and 3 of one step)."""
    both = compared(attn_cli.scaled(), attn_cli.scaled(scale=False), "--no-scale")
    assert [number for number, _ in both.numbered()] == [1, 2, 2, 3, 3]
    rich = invoke("scaled", "--compare", "--no-scale", "--no-pager").stdout
    assert "Step 2 · Weights" in rich and "Step 3 · Output" in rich and "Step 4" not in rich
    markdown = invoke("scaled", "--compare", "--no-scale", "--format", "markdown").stdout
    headings = [line for line in markdown.splitlines() if line.startswith("### ")][1:]
    assert [line.split(".")[0] for line in headings] == [
        "### 1",
        "### 2",
        "### 2",
        "### 3",
        "### 3",
    ]


def _heatmaps(figure):
    """The figure's panels that hold a heatmap, and their colour limits."""
    drawn = [ax for ax in figure.axes if ax.get_images() and ax.get_label() != "<colorbar>"]
    return drawn, [ax.get_images()[0].get_clim() for ax in drawn]


def test_plot_draws_both_runs_weights_on_one_colour_scale(mpl):
    from attn_cli.render.heatmap import compared_figure

    first, second = attn_cli.scaled(), attn_cli.scaled(scale=False)
    figure = compared_figure(first, second, "--no-scale", precision=4)
    drawn, limits = _heatmaps(figure)
    assert len(drawn) == 2 and limits[0] == limits[1]
    top = max(np.max(first.step("weights")), np.max(second.step("weights")))
    assert limits[0] == (0.0, top)  # 0 to the largest weight of either run
    titles = [ax.get_title() for ax in drawn]
    assert titles[0].endswith("· as given") and titles[1].endswith("· with --no-scale")
    cells = [text.get_text() for text in drawn[1].texts]
    assert f"{second.step('weights')[0, 0]:.4f}" in cells


def test_plot_pairs_each_head_and_says_which_run_lacks_one(mpl):
    from attn_cli.render.heatmap import compared_figure

    figure = compared_figure(attn_cli.multihead(), attn_cli.multihead(heads=1), "--heads 1", 4)
    drawn, limits = _heatmaps(figure)
    assert len(drawn) == 3 and len(set(limits)) == 1  # head 1 twice, head 2 as given
    assert "with --heads 1: not in this run" in [ax.get_title() for ax in figure.axes]


def test_the_command_writes_the_compared_figure(invoke, mpl, tmp_path):
    target = tmp_path / "both.png"
    result = invoke("scaled", "--compare", "--no-scale", "--plot", str(target))
    assert result.exit_code == 0, result.output
    assert target.read_bytes().startswith(b"\x89PNG") and "with --no-scale" in result.stdout
    json_run = invoke("scaled", "--compare", "--no-scale", "--plot", str(target), "-f", "json")
    assert json_run.exit_code == 0 and json.loads(json_run.stdout)["runs"]
    refused = invoke("posenc", "--compare", "--d-model 6", "--plot", str(tmp_path / "p.png"))
    assert_user_error(refused, "--plot with --compare draws the two runs' attention weights")
    assert not (tmp_path / "p.png").exists()
