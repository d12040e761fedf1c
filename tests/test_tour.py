"""attn tour: the lecture's order, straight through off a terminal, a screen at a time on one."""

from __future__ import annotations

import itertools

import pytest

from attn_cli.cli import terminal, tour
from attn_cli.cli.tour import PROMPT, TOUR, Stop
from tests.conftest import assert_user_error

NAMES = [stop.name for stop in TOUR]


def position(name: str) -> int:
    return NAMES.index(name)


def test_the_tour_follows_the_lecture_order():
    # The lectures' order: retrieval, then √d_k right after scaled dot-product (issue 22, 14:
    # √d_k was used from stop 3 and explained at stop 7), Bahdanau, self-attention, the causal
    # mask, heads, positions, the O(n²) wall (measured, then its formulas evaluated), then the ways
    # past it.
    assert TOUR[0].name == "scaled" and TOUR[0].args == ("--example", "library")
    assert position("variance") == position("scaled") + 1
    assert position("variance") < position("bahdanau") < position("selfattn")
    assert position("selfattn") < position("causal") < position("multihead") < position("posenc")
    assert position("posenc") == position("block") - 1  # the layer attention sits in
    assert position("block") < position("bench") < position("flash")
    assert position("induction") == position("block") + 1  # attention learned, after the layer
    assert position("cost") == position("bench") + 1  # the wall measured, then evaluated
    assert position("flash") < position("window") < position("linear") < position("kvcache")
    assert len(set(NAMES)) == len(NAMES)  # each command once


def test_the_bahdanau_stop_scores_several_encoder_states():
    # Issue 22 (14): the default has one encoder state, whose softmax weight is trivially 1.
    from attn_cli.cli.options import lesson_request
    from attn_cli.course import card
    from attn_cli.run.runner import compute

    stop = TOUR[position("bahdanau")]
    request, _ = lesson_request(card("bahdanau"), tour.parsed(stop))
    walkthrough = compute(request)
    weights = walkthrough.step("weights")
    assert weights.shape[-1] == 3
    assert weights.min() > 0 and weights.max() < 0.99
    assert walkthrough.example == "cat-slept"


def test_every_stop_has_a_bridge_to_the_next():
    for stop, following in itertools.pairwise(TOUR):
        assert stop.bridge and "next" in stop.bridge, stop.name
        assert tour.bridges_to(stop, following)
        assert not tour.bridges_to(stop, None)  # --only may end the tour early: no bridge
    assert tour.bridges_to(TOUR[-1], None) and "next" not in TOUR[-1].bridge
    assert not tour.bridges_to(TOUR[0], TOUR[2])  # a bridge speaks of the lecture's next stop


def test_the_help_lists_every_stop_from_the_tour(invoke):
    # Issue 22 (14): `attn --help` listed 9 of the 13 stops, written out by hand.
    for args in (("--help",), ("tour", "--help")):
        shown = " ".join(invoke(*args).stdout.replace("│", " ").split())
        listed = shown[shown.index(f"{len(TOUR)} stops:") :]
        at = 0
        for stop in TOUR:  # every stop's topic, in the tour's order
            at = listed.index(stop.topic, at) + len(stop.topic)


def test_every_stop_parses_with_its_command():
    """A stop's arguments must stay valid for its command (checked without running it)."""
    for stop in TOUR:
        assert isinstance(tour.parsed(stop), dict), stop


def test_without_a_terminal_it_runs_straight_through(invoke):
    # Every stop but the bench (timings are not for the test suite) and the training ones (their
    # own tests below).
    shown = [stop for stop in TOUR if stop.name not in ("bench", "translate", "induction")]
    result = invoke("tour", "--only", ",".join(stop.name for stop in shown))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert PROMPT not in out
    assert "A tour of attention" in out
    total = len(shown)
    assert f"Stop 1/{total} · Attention as retrieval" in out
    assert "$ attn scaled --example library" in out
    assert "Step 3 · Output" in out
    assert "End of the tour" in out
    for stop in shown[1:]:  # every lesson is installed: none is skipped
        assert f"skipped {stop.name}" not in out
    assert f"Stop 2/{total} · Why divide by √d_k" in out
    flat = " ".join(out.split())
    for number, stop in enumerate(shown, start=1):
        assert f"Stop {number}/{total} · {stop.title}" in out
        assert f"$ {stop.command_line}" in out
        if number < total:  # the bridge comes after its stop, before the next one
            after = flat[flat.index(f"Stop {number}/{total}") : flat.index(f"Stop {number + 1}/")]
            following = shown[number]
            assert (stop.bridge in after) == tour.bridges_to(stop, following), stop.name
    assert TOUR[position("block")].bridge not in flat  # its next stop, induction, is left out
    assert TOUR[-1].bridge in flat[flat.index(f"Stop {total}/{total}") :]
    assert f"Stop {total}/{total} · KV caching" in out and "$ attn kvcache" in out
    assert "$ attn flash" in out and "Step 1 · Block 1" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_only_picks_stops_in_lecture_order(invoke):
    result = invoke("tour", "--only", "causal,scaled", "--no-pause")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "The lecture in 2 stops" in out
    assert out.index("scaled") < out.index("causal")
    assert "Stop 2/2" in out


def test_an_unknown_stop_is_a_user_error_listing_the_valid_ones(invoke):
    assert_user_error(
        invoke("tour", "--only", "scaled,nope"), "no tour stop 'nope'", ", ".join(NAMES)
    )
    assert_user_error(invoke("tour", "--only", ","), "--only names no stop")


def test_at_a_terminal_it_waits_for_enter_between_screens(invoke, monkeypatch):
    monkeypatch.setattr(terminal, "interactive", lambda: True)
    result = invoke("tour", "--only", "scaled", input="\n" * 30)
    assert result.exit_code == 0, result.output
    out = result.stdout
    # Intro, header and inputs, 3 steps (one taller than a screen: two pages), notes, the end.
    assert out.count(PROMPT) >= 6
    assert out.index(PROMPT) < out.index("Stop 1/1")
    assert "End of the tour" in out
    assert "Step 3 · Output" in out.split(PROMPT)[-3] + out.split(PROMPT)[-2]


def test_q_or_the_end_of_the_input_stops_the_tour(invoke):
    result = invoke("tour", "--only", "scaled", "--pause", input="\nq\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.count(PROMPT) == 2
    assert "Tour stopped." in result.stdout
    assert "Step 3" not in result.stdout
    # Ctrl-D (the end of the input) quits too: it used to print every remaining stop.
    result = invoke("tour", "--pause", input="\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.count(PROMPT) == 2
    assert "Tour stopped." in result.stdout
    assert "End of the tour" not in result.stdout
    assert "Stop 2/" not in result.stdout


def test_the_bench_stop_shows_its_table_then_flash_follows(invoke, monkeypatch):
    small = ("--device", "cpu", "--impl", "numpy", "--sizes", "16,32", "--d", "4", "--heads", "1")
    monkeypatch.setattr(
        tour,
        "TOUR",
        (Stop("bench", "The wall, measured", small), Stop("flash", "Tiled attention")),
    )
    result = invoke("tour")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Stop 1/2 · The wall, measured" in out and "$ attn bench --device cpu" in out
    assert "Skipped" not in out
    bench = out[out.index("Stop 1/2") : out.index("Stop 2/2")]
    assert "numpy" in bench and "32" in bench
    assert "Step 1 · Block 1" in out[out.index("Stop 2/2") :]
    assert "attn bench --device cpu --impl numpy" in out[out.index("End of the tour") :]


@pytest.mark.parametrize("args", [("--example", "nope"), ("--bogus",)])
def test_a_stop_that_fails_is_skipped_with_its_reason(invoke, monkeypatch, args):
    monkeypatch.setattr(tour, "TOUR", (Stop("scaled", "Broken", args),))
    result = invoke("tour")
    assert result.exit_code == 0, result.output
    assert "Skipped scaled:" in result.stdout
    assert "End of the tour" in result.stdout


def test_every_lesson_is_a_stop_and_every_stop_a_command():
    """The tour reads the one list of cards: a lesson added without a stop fails here."""
    from attn_cli.cli.app import is_command
    from attn_cli.course import lesson_names

    assert set(lesson_names()) <= set(NAMES)
    assert all(is_command(stop.command_name) for stop in TOUR)


def _pages_of(out: str) -> list[str]:
    return out.split(PROMPT)


@pytest.mark.parametrize("height", [18, 24, 40])
def test_a_page_fits_the_terminal_and_never_splits_a_table(invoke, monkeypatch, height):
    """Issue 31: the pause came at the screen's height, wherever that fell, splitting a table
    across the prompt. Each page now fits the terminal (its height less the prompt's line) and
    ends between two parts of a screen; here no table is taller than a page."""
    monkeypatch.setattr(terminal, "interactive", lambda: True)
    result = invoke_at_height(invoke, monkeypatch, height, "tour", "--only", "scaled,causal")
    pages = _pages_of(result.stdout)
    assert len(pages) >= 10  # intro, each stop's heading and steps, notes, bridges, the end
    for page in pages:
        lines = page.strip("\n").splitlines()
        assert len(lines) <= height - 2, (height, page)
        opened = sum(line.count("╭") for line in lines)
        closed = sum(line.count("╰") for line in lines)
        assert opened == closed, page  # every table on the page it starts on
    assert "End of the tour" in pages[-1]


def invoke_at_height(invoke, monkeypatch, height, *args):
    monkeypatch.setenv("LINES", str(height))
    result = invoke(*args, input="\n" * 200)
    assert result.exit_code == 0, result.output
    return result


def test_pages_end_between_parts_and_cut_only_what_is_taller_than_a_page():
    import io

    from rich.console import Console
    from rich.rule import Rule
    from rich.text import Text

    console = Console(file=io.StringIO(), width=40, height=12)
    five, seven = Text("\n".join("abcde")), Text("\n".join("abcdefg"))
    heading = Rule("Step 2")
    pages = tour.pages(console, [five, Text(""), heading, seven, five], 10)
    # 5 lines, then the heading (2 lines) kept with its 7-line part: 9 on the next page, the
    # last 5 on a third.
    assert [len(page) for page in pages] == [5, 9, 5]
    tall = Text("\n".join(str(i) for i in range(23)))
    assert [len(page) for page in tour.pages(console, [five, tall, five], 10)] == [
        5,
        10,
        10,
        8,
    ]  # the tail of the cut shares a page
    # The lines come out in order, none lost.
    text = ["".join(segment.text for segment in line).strip() for page in pages for line in page]
    assert text == [*"abcde", "", text[6], *"abcdefg", *"abcde"]


def test_the_learn_stop_trains_a_small_budget_after_bahdanau(invoke, torch):
    assert position("translate") == position("bahdanau") + 1
    result = invoke("tour", "--only", "translate")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "$ attn learn translate --steps 150" in out and "Skipped" not in out
    assert "Alignment score" in out and "End of the tour" in out


def test_the_learn_stop_without_torch_is_skipped_with_what_to_install(invoke, without_torch):
    result = invoke("tour", "--only", "translate")
    assert result.exit_code == 0, result.output
    assert "Skipped translate:" in result.stdout and "PyTorch" in result.stdout
