"""Requests the runner refuses, each as one line and exit 2, and what it notes instead of warning."""

from __future__ import annotations

import json

import pytest

from attn_cli.core.backend import EXACT_INTEGERS, LARGEST
from tests.conftest import assert_user_error


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["scaled", "--n", "0"], "--n must be at least 1, not 0."),
        (["scaled", "--n", "4", "--dk", "-3"], "--dk must be at least 1, not -3."),
        (["multihead", "--d-model", "0"], "--d-model must be at least 1, not 0."),
        (["causal", "--n", "0"], "--n must be at least 1, not 0."),
    ],
)
def test_sizes_below_one(invoke, args, fragment):
    assert_user_error(invoke(*args), fragment)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["selfattn", "--permute", "1,1,2"], "--permute repeats 1"),
        (["multihead", "--heads", "3"], "3 heads cannot share"),
    ],
)
def test_a_bad_option_on_an_example_is_the_users_not_the_lesson_files(invoke, args, fragment):
    result = invoke(*args)
    assert_user_error(result, fragment)
    assert ".toml" not in result.stderr


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_an_input_the_dtype_cannot_hold_is_refused(invoke, dtype):
    too_big = f"{LARGEST[dtype] * 2:g}"
    result = invoke("scaled", "--dtype", dtype, "--q", too_big, "--k", "1", "--v", "1")
    assert_user_error(result, f"--q has {float(too_big):g}, beyond the largest {dtype}")


def test_an_overflow_inside_the_computation_is_noted_not_warned(invoke):
    # 1000 · 1000 = 1e6 is beyond float16's 65504: the scores overflow to inf, the softmax to NaN.
    result = invoke(
        "scaled", "--dtype", "float16", "--q", "1000", "--k", "1000", "--v", "1", "--format", "json"
    )
    assert result.exit_code == 0
    assert result.stderr == ""  # no RuntimeWarning leaks out
    doc = json.loads(result.stdout)
    assert doc["output"] == {"shape": [1, 1], "data": [["nan"]]}
    assert "exceeded the largest float16 (65504)" in doc["notes"][-1]["text"]
    # One key: "every weight is exactly 1" would be false of the NaN weight, so it is withheld.
    assert "one_key" not in [note["key"] for note in doc["notes"]]
    plain = json.loads(
        invoke("scaled", "--q", "1", "--k", "1;2", "--v", "1;2", "--format", "json").stdout
    )
    assert plain["notes"] == []  # always present, empty when there is nothing to note


def test_posenc_refuses_positions_its_dtype_would_round(invoke):
    limit = EXACT_INTEGERS["float16"]
    result = invoke(
        "posenc", "--dtype", "float16", "--positions", str(limit + 10), "--d-model", "4"
    )
    assert_user_error(result, f"float16 holds whole numbers exactly only up to {limit}")
    fits = invoke(
        "posenc", "--dtype", "float16", "--positions", "16", "--d-model", "4", "--format", "json"
    )
    assert fits.exit_code == 0, fits.output


def test_lesson_labels_must_match_the_rows(invoke, tmp_path):
    lesson = tmp_path / "labels.toml"
    lesson.write_text(
        'lesson = "scaled"\n[[examples]]\nname = "x"\nlabels = { keys = ["only-one"] }\n'
        "[examples.inputs]\nQ = [[1, 0]]\nK = [[1, 0], [0, 1]]\nV = [[1], [2]]\n"
    )
    result = invoke("scaled", "--lesson", str(lesson))
    assert_user_error(result, "labels.keys) gives 1 name but there are 2 rows")
