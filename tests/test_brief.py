"""--brief and --pause (issue 57): a lesson at a projector's pace, from the same walkthrough."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import attn_cli
from attn_cli.cli import terminal
from attn_cli.cli.commands import common
from attn_cli.core.brief import first_sentence
from attn_cli.render import RenderOptions
from tests.conftest import assert_user_error

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("One. Two.", "One."),
        ("Only one sentence", "Only one sentence"),
        # an abbreviation, a placeholder and brackets end no sentence
        ("As in e.g. Raschka's book. Then more.", "As in e.g. Raschka's book."),
        ("Divided by {x:.2f}. Then more.", "Divided by {x:.2f}."),
        ("Shown (see the notes. Really) here. Next.", "Shown (see the notes. Really) here."),
        ("Wrapped\nover two. Lines", "Wrapped over two."),
        ("A value 0.5 stays. Next", "A value 0.5 stays."),
    ],
)
def test_first_sentence(text, first):
    assert first_sentence(text) == first


def lines_at_80(invoke, *args: str) -> list[str]:
    result = invoke(*args, "--no-pager")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    return lines


def test_multihead_brief_fits_90_lines_with_every_weight_and_output(invoke):
    full = lines_at_80(invoke, "multihead")
    brief = lines_at_80(invoke, "multihead", "--brief")
    assert len(brief) <= 90 < len(full)
    # README says the two counts: they are claims about this run, held here
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    said = (
        f"`attn multihead --brief` is {len(brief)} lines at 80 columns, against {len(full)} in full"
    )
    assert said in readme
    text = "\n".join(brief)
    walk = attn_cli.multihead()
    for key in ("head1.weights", "head2.weights", "output"):  # the main values, exact
        shown = walk.step(key)
        assert f"{shown[0, 0]:.4f}" in text and f"{shown[-1, -1]:.4f}" in text
    # the inputs without the learned weights, said; no backend line
    assert "W_Q query weights" not in text and "backend numpy" not in text
    assert "Not shown in brief: the learned weights W_Q, W_K, W_V, W_O." in " ".join(text.split())
    # the projections are details: heading and why, no table
    assert "Step 2 · Head 1 · queries" in text
    assert "1.5000" not in text  # Q1's entries, in its table only


def test_show_weights_adds_the_learned_weights_back(invoke):
    text = "\n".join(lines_at_80(invoke, "multihead", "--brief", "--show-weights"))
    assert "W_Q query weights" in text and "Not shown in brief" not in text
    assert_user_error(invoke("multihead", "--show-weights"), "--show-weights", "--brief")


def test_a_table_that_repeats_the_one_before_is_said_in_one_line():
    """selfattn's identity weights: K and V are Q again; the line says so, and it is true."""
    walk = attn_cli.selfattn()
    assert np.array_equal(walk.step("Q"), walk.step("K"))
    assert np.array_equal(walk.step("K"), walk.step("V"))
    brief = walk.brief()
    said = {step.key: step.value for step in brief.steps if step.kind == "text"}
    assert said == {
        "K": "The same 3 × 2 values as step 1 (Queries Q = X W_Q): its table is not repeated.",
        "V": "The same 3 × 2 values as step 1 (Queries Q = X W_Q): its table is not repeated.",
    }
    # a table that differs from the one before it is shown, even when equal to an earlier one
    assert [step.kind for step in brief.steps][3:] == ["matrix", "matrix", "weights", "matrix"]


def test_a_softmax_over_a_single_key_is_said_in_one_line():
    walk = attn_cli.bahdanau(n=1)
    weights = walk.step("weights")
    assert np.all(weights == 1)
    step = walk.brief().find("weights")
    assert step.kind == "text"
    assert (
        step.value == "A single key, so the softmax gives it all the weight: 1 weight, exactly 1."
    )


def test_a_table_equal_to_a_detail_is_shown():
    """block's LayerNorm output with γ = 1, β = 0 equals the normalised rows, a detail whose
    table brief leaves out: so the output's table is shown, not a line pointing at nothing."""
    walk = attn_cli.block()
    assert np.array_equal(walk.step("norm1"), walk.step("norm1.normalised"))
    brief = walk.brief()
    assert brief.find("norm1.normalised").detail and brief.find("norm1.normalised").value == ""
    assert brief.find("norm1").kind == "matrix"
    assert np.array_equal(brief.step("norm1"), walk.step("norm1"))
    details = [step.key for step in brief.steps if step.detail]
    assert details == [
        "self.Q", "self.K", "self.V", "self.concat", "self.output", "add1", "norm1.stats",
        "norm1.normalised", "ffn.pre", "ffn.hidden", "ffn.output", "add2", "norm2.stats",
        "norm2.normalised",
    ]  # fmt: skip


def test_block_brief_fits_90_lines_with_the_weights_and_what_each_sublayer_passes_on(invoke):
    """Post-norm: each sublayer shown by its Add & Norm output (what the next one reads), the
    sublayer's own output a detail beside the residual sum; the attention weights whole."""
    full = lines_at_80(invoke, "block")
    brief = lines_at_80(invoke, "block", "--brief")
    assert len(brief) <= 90 < len(full)  # 90 and 520 when written (107 before the cut)
    text = "\n".join(brief)
    walk = attn_cli.block()
    for key in ("self.head1.weights", "self.head2.weights", "norm1", "norm2"):
        shown = walk.step(key)
        assert f"{shown[0, 0]:.4f}" in text and f"{shown[-1, -1]:.4f}" in text
    assert "Step 9 · multi-head self-attention · output" in text
    assert f"{walk.step('self.output')[0, 0]:.4f}" not in text  # a detail: heading and why


def test_a_pre_norm_layer_shows_its_output_the_last_residual_sum():
    """Pre-norm, the layer's output is its last residual sum, a detail elsewhere: the last step
    of a walkthrough is its result, shown in brief."""
    walk = attn_cli.block(pre_norm=True)
    brief = walk.brief()
    assert walk.steps[-1].key == "add2" and walk.steps[-1].detail
    assert brief.steps[-1].kind == "matrix"
    assert np.array_equal(brief.step("add2"), walk.step("add2"))
    assert brief.find("add1").value == ""  # the residual sum inside the layer stays a detail


def test_every_format_shows_the_brief_walkthrough(invoke):
    markdown = invoke("multihead", "--brief", "-f", "markdown").stdout
    assert "backend" not in markdown and "Head 1 · weights" in markdown
    document = json.loads(invoke("multihead", "--brief", "-f", "json").stdout)
    full = json.loads(invoke("multihead", "-f", "json").stdout)
    assert [s["key"] for s in document["steps"]] == [s["key"] for s in full["steps"]]
    assert list(document["inputs"]) == ["X"]
    latex = invoke("multihead", "--brief", "-f", "latex").stdout
    assert "\\begin{document}" in latex and "0.4154" in latex


def test_the_python_api_gives_the_same_brief_walkthrough(invoke):
    walk = attn_cli.multihead().brief()
    assert walk.is_brief and [i.name for i in walk.inputs] == ["X"]
    typed = invoke("multihead", "--brief", "-f", "markdown").stdout
    assert walk.to_markdown().rstrip("\n") == typed.rstrip("\n")


def test_pause_waits_after_each_section_and_q_stops(monkeypatch):
    walk = attn_cli.scaled()
    keys = iter(["\n", "q"])
    monkeypatch.setattr(terminal, "interactive", lambda: True)
    monkeypatch.setattr(terminal, "read_key", lambda: next(keys))
    console = Console(file=io.StringIO(), width=80, color_system=None)
    common.paused(console, walk, RenderOptions())
    out = console.file.getvalue()
    assert out.count(common.PAUSE_PROMPT) == 2
    assert "Step 1 ·" in out and "Step 2 ·" not in out  # q after step 1


def test_pause_off_a_terminal_writes_everything(invoke):
    paused = invoke("scaled", "--pause")
    plain = invoke("scaled", "--no-pager")
    assert paused.exit_code == 0 and paused.stdout == plain.stdout
