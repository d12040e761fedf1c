"""Hostile numbers, round 4 (issue 43): every whole-number option has a largest value, refused
in one line past it; sizes that would run for minutes are refused with how long.

The two properties at the end run every integer option of every command with values up to
10**309, and every file channel with declared shapes up to 2**62, in a subprocess under a
memory limit, each run timed: a one-line refusal within a second.
"""

from __future__ import annotations

import pytest

from attn_cli.core.numbers import format_bytes
from attn_cli.core.whole import LARGEST_WHOLE
from tests.conftest import assert_user_error

HUGE = {
    "--n": 10**154,
    "--d": 10**160,
    "--heads": 10**300,
    "--layers": 10**300,
    "--features": 10**309,
}


@pytest.mark.parametrize("fmt", ["rich", "json", "markdown", "latex"])
@pytest.mark.parametrize(("flag", "value"), HUGE.items())
def test_cost_refuses_numbers_past_the_largest_in_every_format(invoke, flag, value, fmt):
    result = invoke("cost", flag, str(value), "--format", fmt)
    assert_user_error(result, flag, "at most 999,999,999,999,999,999")
    assert len(result.stderr) < 200  # 310 digits are never echoed


@pytest.mark.parametrize("fmt", ["rich", "json", "markdown", "latex"])
def test_cost_takes_the_largest_of_every_size_at_once(invoke, fmt):
    largest = str(LARGEST_WHOLE)
    sizes = ("--n", "--d", "--window", "--features", "--heads", "--layers")
    result = invoke("cost", *(part for flag in sizes for part in (flag, largest)), "-f", fmt)
    assert result.exit_code == 0, result.output[-2000:]
    assert result.stderr == ""


def test_bytes_past_a_million_tib_are_written_in_powers_of_ten():
    assert format_bytes(5 * 1024**4) == "5.0 TiB"
    assert format_bytes(10**300) == "9.1e+287 TiB"
    assert format_bytes(10**5000) == "9.1e+4987 TiB"  # no float() of the int


def test_a_lessons_memory_guard_at_10_to_the_18_says_its_bytes(invoke):
    assert_user_error(invoke("scaled", "--n", str(LARGEST_WHOLE)), "e+", "TiB", "is free")


@pytest.mark.parametrize("task", ["translate", "induction"])
def test_learn_refuses_a_seed_of_2_to_the_64_on_both_tasks(invoke, task):
    assert_user_error(invoke("learn", task, "--seed", str(2**64)), "--seed", "at most")


@pytest.mark.parametrize(
    ("value", "fragment"), [("100000", "at most 256"), (str(2**64), "at most 999,999")]
)
def test_learn_induction_caps_its_width(invoke, value, fragment):
    assert_user_error(invoke("learn", "induction", "--hidden", value), "--hidden", fragment)


def test_learn_induction_refuses_a_budget_of_days_with_its_estimate(invoke):
    result = invoke("learn", "induction", "--steps", "100000000")
    assert_user_error(result, "--steps 100,000,000", "days here", "the default is 400")


def test_block_refuses_a_layer_of_minutes_with_its_estimate(invoke):
    result = invoke("block", "--d-ff", "300000000")
    assert_user_error(result, "d_ff = 300,000,000", "minutes here", "--d-ff")


def test_blocks_memory_estimate_counts_the_ffn_weights_as_measured():
    from attn_cli.course.block.build import estimate_bytes

    measured = 1_530_456 * 1024  # peak resident bytes of attn block --d-ff 4000000 (3 × 4 X)
    estimate = estimate_bytes({"X": (3, 4)}, {"heads": 2, "d_ff": 4_000_000}, 8)
    assert measured * 0.8 <= estimate <= measured * 1.5
