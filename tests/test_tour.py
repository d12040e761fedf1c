"""attn tour: the lecture's order, straight through off a terminal, a screen at a time on one."""

from __future__ import annotations

import pytest

from attn_cli import terminal, tour
from attn_cli.tour import PROMPT, TOUR, Stop
from tests.conftest import assert_user_error

LECTURE_ORDER = [
    "scaled",
    "bahdanau",
    "selfattn",
    "causal",
    "multihead",
    "posenc",
    "variance",
    "bench",
    "flash",
    "window",
    "graph",
    "linear",
    "kvcache",
]


def test_the_tour_follows_the_lecture_order():
    assert [stop.name for stop in TOUR] == LECTURE_ORDER
    assert TOUR[0].args == ("--example", "library")  # the retrieval view


def test_every_stop_parses_with_its_command():
    """A stop's arguments must stay valid for its command (checked without running it)."""
    for stop in TOUR:
        assert isinstance(tour.parsed(stop), dict), stop


def test_without_a_terminal_it_runs_straight_through(invoke):
    # Every stop but the bench (timings are not for the test suite).
    only = ",".join(name for name in LECTURE_ORDER if name != "bench")
    result = invoke("tour", "--only", only)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert PROMPT not in out
    assert "A tour of attention" in out
    total = len(LECTURE_ORDER) - 1
    assert f"Stop 1/{total} · Attention as retrieval" in out
    assert "$ attn scaled --example library" in out
    assert "Step 3 · Output" in out
    assert "End of the tour" in out
    for name in LECTURE_ORDER[1:]:  # every lesson is installed: none is skipped
        assert f"skipped {name}" not in out
    assert f"Stop 7/{total} · Why divide by √d_k" in out
    assert f"Stop 8/{total} · Tiled attention" in out
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
        invoke("tour", "--only", "scaled,nope"), "no tour stop 'nope'", ", ".join(LECTURE_ORDER)
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
