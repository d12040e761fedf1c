"""attn tour: the lecture's order, straight through off a terminal, a screen at a time on one."""

from __future__ import annotations

import itertools
import re

import pytest

from attn_cli.cli import terminal, tour
from attn_cli.cli.tour import PROMPT, TOUR, Stop
from tests.conftest import assert_user_error

NAMES = [stop.name for stop in TOUR]
# Every wait's prompt: the plain one, or the one that offers the stop just shown in full.
PROMPTS = re.compile(r"── Enter: next · (?:f: \w+ in full · )?q: quit ──")


def prompts(out: str) -> int:
    return len(PROMPTS.findall(out))


def position(name: str) -> int:
    return NAMES.index(name)


def test_the_tour_is_one_order_linked_from_the_stops():
    """The lecture's order is TOUR, linked from each stop's own ``after``: every lesson and
    every tool the tour visits once, each stop right after the one it names (a tool's stop
    before the lesson that follows the same stop), the lectures' first lesson first."""
    from attn_cli.cli.itinerary import TOOL_STOPS
    from attn_cli.course import lesson_names, visit_stops

    assert TOUR[0].name == "scaled" and TOUR[0].after is None
    assert TOUR[0].args == ("--example", "library")
    assert [stop.name for stop in TOUR if stop.lesson] == list(lesson_names())
    tools = (*TOOL_STOPS, *visit_stops())
    assert sorted(NAMES) == sorted([*lesson_names(), *(stop.name for stop in tools)])
    for stop in TOUR[1:]:
        named = NAMES.index(stop.after)  # the stop it names comes before it...
        between = TOUR[named + 1 : position(stop.name)]  # ...with only tools' stops between
        assert named < position(stop.name) and all(not each.lesson for each in between), stop


def test_linking_refuses_stops_that_do_not_make_one_line():
    from attn_cli.cli.itinerary import linked

    first, second = Stop("a", "A"), Stop("b", "B", after="a")
    assert linked([first, second], [Stop("t", "T", after="a", lesson=False)])[1].name == "t"
    with pytest.raises(ValueError, match="follow no stop of the tour: t"):
        linked([first, second], [Stop("t", "T", after="nowhere", lesson=False)])


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


def test_every_stop_but_the_first_has_a_lead_in_from_the_one_before():
    for shown, stop in itertools.pairwise(TOUR):
        assert stop.lead_in and "next" in stop.lead_in, stop.name
        assert tour.leads_in(shown, stop)
        assert not tour.leads_in(None, stop)  # the stop before could not run: no lead-in
    assert not TOUR[0].lead_in and not tour.leads_in(None, TOUR[0])
    assert not tour.leads_in(TOUR[0], TOUR[2])  # a lead-in speaks of the lecture's stop before
    assert "next" not in tour.CLOSING_WORDS


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
    training = ("bench", "translate", "grammar", "induction")
    shown = [stop for stop in TOUR if stop.name not in training]
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
        if number < total:  # a lead-in comes after the stop before it, before its own stop
            after = flat[flat.index(f"Stop {number}/{total}") : flat.index(f"Stop {number + 1}/")]
            following = shown[number]
            said = " ".join(following.lead_in.split())
            assert (said in after) == tour.leads_in(stop, following), following.name
    # cost's lead-in speaks of the bench, left out: not shown
    assert " ".join(TOUR[position("cost")].lead_in.split()) not in flat
    # The lectures' closing words after their last stop, before the first stop beyond them;
    # each section's closing (with what each of its stops was checked against) after its last.
    lectures = [number for number, stop in enumerate(shown, start=1) if stop.section is None]
    beyond = f"Stop {lectures[-1] + 1}/{total}" if lectures[-1] < total else "End of the tour"
    closing = flat[flat.index(f"Stop {lectures[-1]}/{total}") : flat.index(beyond)]
    assert " ".join(tour.CLOSING_WORDS.split()) in closing
    if lectures[-1] < total:
        section = shown[-1].section
        assert section is not None and section.title in closing
        end = flat[flat.index(f"Stop {total}/{total}") :]
        assert " ".join(section.closing.split()) in end
        for stop in shown:
            if stop.section is section:
                assert " ".join(stop.checked.split()) in end, stop.name
    assert f"Stop {lectures[-1]}/{total} · KV caching" in out and "$ attn kvcache" in out
    assert "$ attn flash" in out and "Step 1 · Block 1" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_only_picks_stops_in_lecture_order(invoke):
    result = invoke("tour", "--only", "causal,scaled", "--no-pause")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "The tour in 2 stops" in out
    assert out.index("scaled") < out.index("causal")
    assert "Stop 2/2" in out


def test_an_unknown_stop_is_a_user_error_listing_the_valid_ones(invoke):
    assert_user_error(
        invoke("tour", "--only", "scaled,nope"), "no tour stop 'nope'", ", ".join(NAMES)
    )
    assert_user_error(invoke("tour", "--only", ","), "--only names no stop")


def test_at_a_terminal_it_waits_for_enter_between_screens(invoke, monkeypatch):
    monkeypatch.setattr(terminal, "interactive", lambda: True)
    result = invoke("tour", "--only", "scaled", "--full", input="\n" * 30)
    assert result.exit_code == 0, result.output
    out = result.stdout
    # Intro, header and inputs, 3 steps, notes, the end: in 85 lines, screenfuls of 23 or less.
    assert prompts(out) >= 4 and out.count(PROMPT) == prompts(out)
    assert "End of the tour" in out
    assert out.index("Step 1 ·") < out.index("Step 3 · Output") < out.index("End of the tour")


def test_q_or_the_end_of_the_input_stops_the_tour(invoke):
    result = invoke("tour", "--only", "scaled", "--pause", "--full", input="\nq\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.count(PROMPT) == 2
    assert "Tour stopped." in result.stdout
    assert "Step 3" not in result.stdout
    # Ctrl-D (the end of the input) quits too: it used to print every remaining stop.
    result = invoke("tour", "--pause", input="\n")
    assert result.exit_code == 0, result.output
    assert prompts(result.stdout) == 2
    assert "Tour stopped." in result.stdout
    assert "End of the tour" not in result.stdout
    assert "Stop 2/" not in result.stdout


def test_the_bench_stop_shows_its_table_then_flash_follows(invoke, monkeypatch):
    small = ("--device", "cpu", "--impl", "numpy", "--sizes", "16,32", "--d", "4", "--heads", "1")
    stops = (Stop("bench", "The wall, measured", small), Stop("flash", "Tiled attention"))
    monkeypatch.setattr(tour, "tour", lambda: stops)
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
    monkeypatch.setattr(tour, "tour", lambda: (Stop("scaled", "Broken", args),))
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
    return PROMPTS.split(out)


@pytest.mark.parametrize("height", [18, 24, 40])
def test_a_page_fits_the_terminal_and_never_splits_a_table(invoke, monkeypatch, height):
    """Issue 31: the pause came at the screen's height, wherever that fell, splitting a table
    across the prompt. Each page now fits the terminal (its height less the prompt's line) and
    ends between two parts of a screen; here no table is taller than a page."""
    monkeypatch.setattr(terminal, "interactive", lambda: True)
    args = ("tour", "--only", "scaled,causal", "--full")
    result = invoke_at_height(invoke, monkeypatch, height, *args)
    pages = _pages_of(result.stdout)
    used = [len(page.strip("\n").splitlines()) for page in pages]
    # A screenful at a time (issue 57): the pages hold more than half a screen on average
    # (before, one step a page: 39% at 24 lines for scaled's stop).
    assert sum(used) > len(pages) * (height - 2) / 2, used
    for page in pages:
        lines = page.strip("\n").splitlines()
        assert len(lines) <= height - 2, (height, page)
        opened = sum(line.count("╭") for line in lines)
        closed = sum(line.count("╰") for line in lines)
        assert opened == closed, page  # every table on the page it starts on
    assert "End of the tour" in pages[-1]


def test_a_press_of_enter_shows_a_screenful():
    """Screens are put one under another until the next would not fit: parts of 3, 3, 3, 10
    and 10 lines at a page of 12 give pages of 9, 10 and 10 lines, two presses."""
    import io

    from rich.console import Console
    from rich.text import Text

    from attn_cli.cli.tour import Pager

    console = Console(file=io.StringIO(), width=40, height=14, color_system=None)
    pager = Pager(console, True, lambda: "")
    for lines in (3, 3, 3, 10, 10):
        pager.screen([Text("\n".join(f"{lines}-line screen" for _ in range(lines)))])
    pages = _pages_of(console.file.getvalue())
    assert [len(page.strip("\n").splitlines()) for page in pages] == [9, 10, 10]


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
    assert "$ attn learn translate --steps 300" in out and "Skipped" not in out
    assert "Alignment score" in out and "End of the tour" in out
    flat = " ".join(out.split())
    # The lesson's point, shown: every target word of the sentence on its true source word, and
    # the fixed vector falling with length beside attention holding.
    assert "put their largest weight on their true source word" in flat
    assert "the shape of the Bahdanau paper" in flat


def test_the_opening_heatmap_stop_follows_self_attention(invoke, torch):
    assert position("grammar") == position("selfattn") + 1
    assert position("causal") == position("grammar") + 1
    result = invoke("tour", "--only", "grammar")
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "$ attn learn grammar" in flat and "Skipped" not in flat
    assert "As in the lectures' heatmap, and learned: red puts" in flat
    assert "The control gets" in flat


def test_the_learn_stop_without_torch_is_skipped_with_what_to_install(invoke, without_torch):
    result = invoke("tour", "--only", "translate")
    assert result.exit_code == 0, result.output
    assert "Skipped translate:" in result.stdout and "PyTorch" in result.stdout


def test_the_tour_shows_each_stop_in_brief_and_f_shows_it_in_full(invoke, monkeypatch):
    """Issue 57: the tour's stops as --brief shows them (multihead's in 89 lines of 80
    columns, against 309 in full), and f at the wait after a stop shows that stop in full."""
    monkeypatch.setattr(terminal, "interactive", lambda: True)
    monkeypatch.setenv("LINES", "24")
    brief = invoke("tour", "--only", "multihead", input="\n" * 40)
    full = invoke("tour", "--only", "multihead", "--full", input="\n" * 40)
    assert brief.exit_code == 0 and full.exit_code == 0, brief.output + full.output
    assert "Head 1 · weights" in brief.stdout and "0.4154" in brief.stdout
    assert "backend numpy" not in brief.stdout and "backend numpy" in full.stdout
    assert prompts(brief.stdout) < prompts(full.stdout)
    assert "f: multihead in full" in brief.stdout
    assert "f: multihead in full" not in full.stdout
    # f at the wait after the stop: the same stop again, in full, before the tour goes on.
    offered = PROMPTS.findall(brief.stdout).index(
        "── Enter: next · f: multihead in full · q: quit ──"
    )
    keys = "\n" * offered + "f\n" + "\n" * 60  # f at the wait that offers it
    shown = invoke("tour", "--only", "multihead", input=keys)
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert "$ attn multihead (in full)" in out
    tail = out[out.index("(in full)") :]
    assert "backend numpy" in tail and "End of the tour" in tail
