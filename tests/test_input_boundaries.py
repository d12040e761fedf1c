"""Issue 32, the input channels at their boundaries: lesson files checked against their
lesson's schema before any field is used, printed values and quiz answers bounded to what a
float64 holds, JSON and option text with integers beyond it, and the smaller ones (COLUMNS=0,
labels that do not fit, TOML booleans, a byte-order mark, the minus sign U+2212). Each test
reproduces one report of the issue: a traceback, a kill or a silent wrong reading before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attn_cli.cli import terminal
from attn_cli.core.rounding import MAX_DECIMALS
from attn_cli.run.quiz import parse_answer
from tests.conftest import assert_user_error
from tests.waits import HANG_GUARD_SECONDS

ROOT = Path(__file__).resolve().parent.parent
NINES = "9" * 5000  # past Python's 4,300 digits for int() from text

GRAPH = """\
lesson = "graph"
[[examples]]
name = "mine"
options = {{ edges = {edges} }}
[examples.inputs]
H = [[1, 0], [0, 1], [1, 1]]
"""

SCALED = """\
lesson = "scaled"
[[examples]]
name = "mine"
[examples.inputs]
Q = {q}
K = [[1, 0], [0, 1]]
V = [[1, 2], [3, 4]]
[examples.printed]
weights = "{weights}"
{labels}
"""


def write(tmp_path: Path, text: str, name: str = "mine.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def scaled_file(
    tmp_path: Path, q: str = "[[1, 0]]", weights: str = "0.67, 0.33", labels: str = ""
) -> str:
    return write(tmp_path, SCALED.format(q=q, weights=weights, labels=labels))


# --- 1: a lesson file's fields, checked against the lesson's schema --------------------------


@pytest.mark.parametrize(
    ("edges", "found"),
    [
        ("true", "found true (a boolean)"),
        ("0", "found 0 (a whole number)"),
        ("1e300", "found 1e+300 (a number)"),
        ("1979-05-27", "found 1979-05-27 (a date)"),
        ("[[0, 1, 2]]", "found [[0, 1, 2]] (a list)"),
    ],
)
@pytest.mark.parametrize("command", ["graph", "check"])
def test_graph_edges_of_the_wrong_type_are_one_line_naming_field_found_and_expected(
    invoke, tmp_path, command, edges, found
):
    path = write(tmp_path, GRAPH.format(edges=edges))
    args = ("graph", "--lesson", path) if command == "graph" else ("check", path)
    assert_user_error(
        invoke(*args),
        f"{path}: example 'mine', options.edges: {found}; expected node pairs from 0",
    )


def test_graph_edges_as_text_or_pairs_still_run(invoke_json, tmp_path):
    for edges in ('"0-1,1-2"', "[[0, 1], [1, 2]]", '["0-1", "1-2"]'):
        doc = invoke_json("graph", "--lesson", write(tmp_path, GRAPH.format(edges=edges)))
        assert doc["example"] == "mine"


def test_every_option_of_every_lesson_refuses_a_date_in_one_line(invoke, tmp_path):
    """The check is the options' schema, not code per field: no option takes a TOML date."""
    from attn_cli.course import get_lesson, lesson_names

    checked = 0
    for name in lesson_names():
        for option in get_lesson(name).card.options:
            if not option.lesson:
                continue
            text = f'lesson = "{name}"\n[[examples]]\nname = "x"\noptions = {{ {option.name} = 1979-05-27 }}\n'
            result = invoke("check", write(tmp_path, text))
            assert_user_error(result, f"options.{option.name}: found 1979-05-27 (a date)")
            checked += 1
    assert checked > 40


# --- 2 and 13: printed values and quiz answers a float64 cannot hold -------------------------


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("1e400", "'1e400' is beyond the range of a float64"),
        ("-1e400", "'-1e400' is beyond the range of a float64"),
        ("1" * 400, "'11111111111111111111111…' is beyond the range of a float64"),
        (
            "1e-5000000",
            f"'1e-5000000' has 5,000,000 decimals; a number may have at most {MAX_DECIMALS}",
        ),
        ("0e999999999", "'0e999999999' is beyond the range of a float64"),
    ],
)
def test_check_refuses_a_printed_value_no_float64_holds_at_once(invoke, tmp_path, written, message):
    path = scaled_file(tmp_path, weights=f"{written}, 0.33")
    result = invoke("check", path)
    # 1e-5000000 took 20 s and printed 13 MB: refused now from its text alone (the message counts
    # its decimals), in one short line. No clock: a loaded machine is slow, not wrong.
    assert_user_error(result, f"{path}: example 'mine', printed.weights: {message}")
    assert len(result.output) < 500


@pytest.mark.parametrize(
    ("q", "message"),
    [
        ("[[1" + "0" * 400 + ", 0]]", "inputs.Q has a number too large for a float64"),
        ("[[" + NINES + ", 0]]", "an integer of over 4,300 digits"),
    ],
)
def test_check_refuses_an_input_integer_beyond_float64(invoke, tmp_path, q, message):
    assert_user_error(invoke("check", scaled_file(tmp_path, q=q)), message)


def test_a_quiz_answer_beyond_float64_is_asked_again(invoke, monkeypatch):
    assert "'1e400' is beyond the range of a float64" in parse_answer("1e400, 1", 2)
    assert "decimals" in parse_answer("1e-5000000", 1)
    monkeypatch.setattr(terminal, "interactive", lambda: True)
    result = invoke("scaled", "--quiz", input="1e400, 1\nq\n")
    assert result.exit_code == 0, result.output
    assert "'1e400' is beyond the range of a float64 (±1.8e308); type the numbers" in result.stdout


# --- 3: JSON inputs and integer options with 5,000-digit integers -----------------------------


def test_a_json_file_with_a_5000_digit_integer_is_one_line(invoke, tmp_path):
    big = tmp_path / "big.json"
    big.write_text(f"[[{NINES}, 1]]", encoding="utf-8")
    result = invoke("scaled", "--q", f"@{big}", "--k", "1,0", "--v", "1,2")
    assert_user_error(result, f"--q (file '{big}'): '9999", "too large for a float64")
    assert len(result.stderr) < 300  # the number is not echoed whole


@pytest.mark.parametrize(
    "args",
    [
        ("multihead", "--valid-len", NINES),
        ("scaled", "--valid-len", f"1,{NINES}"),
        ("selfattn", "--permute", NINES),
        ("window", "--global", NINES),
        ("graph", "--edges", f"0-{NINES}"),
        ("bench", "--sizes", NINES),
    ],
)
def test_an_integer_option_of_5000_digits_is_one_line(invoke, args):
    result = invoke(*args)
    assert_user_error(result, f"{args[1]}: a whole number of 5,000 digits is beyond any count")


# --- 14: the smaller ones --------------------------------------------------------------------


def test_columns_zero_still_prints(tmp_path):
    env = {**os.environ, "COLUMNS": "0", "PYTHONPATH": str(ROOT)}
    run = [sys.executable, "-m", "attn_cli", "scaled"]
    result = subprocess.run(
        run, capture_output=True, text=True, env=env, timeout=HANG_GUARD_SECONDS
    )
    assert result.returncode == 0 and "Scores" in result.stdout, result.stderr
    result = subprocess.run(
        [*run, "--q", "x"], capture_output=True, text=True, env=env, timeout=HANG_GUARD_SECONDS
    )
    assert result.returncode == 2 and "attn: error: --k, --v missing" in result.stderr


def test_check_refuses_labels_that_do_not_fit_the_matrices(invoke, tmp_path):
    labels = '[examples.labels]\nkeys = ["a", "b", "c"]'
    path = scaled_file(tmp_path, labels=labels)
    message = "gives 3 names but there are 2 rows"
    assert_user_error(invoke("scaled", "--lesson", path), message)
    assert_user_error(invoke("check", path), f"{path}: example 'mine'", message)


@pytest.mark.parametrize("q", ["[[true, 0]]", "[[1, false]]", "true"])
def test_a_toml_boolean_in_a_matrix_is_refused_like_json(invoke, tmp_path, q):
    path = scaled_file(tmp_path, q=q)
    assert_user_error(invoke("check", path), "example 'mine', inputs.Q", "(a boolean)")
    assert_user_error(invoke("scaled", "--q", "[[true, 0]]", "--k", "1,0;0,1", "--v", "1;2"))


@pytest.mark.parametrize(("suffix", "text"), [(".csv", "1,0\n0,1\n"), (".json", "[[1,0],[0,1]]")])
def test_a_byte_order_mark_starts_a_csv_or_json_file(invoke_json, tmp_path, suffix, text):
    with_bom = tmp_path / f"k{suffix}"
    with_bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    doc = invoke_json("scaled", "--q", "1,0", "--k", f"@{with_bom}", "--v", "1,2;3,4")
    assert doc["inputs"]["K"]["data"] == [[1, 0], [0, 1]]


def test_a_byte_order_mark_starts_a_lesson_file(invoke, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_bytes(
        b"\xef\xbb\xbf" + SCALED.format(q="[[1, 0]]", weights="0.67, 0.33", labels="").encode()
    )
    result = invoke("check", str(path))
    assert result.exit_code == 0, result.output


def test_the_minus_sign_reads_as_minus_in_matrices_printed_values_and_answers(
    invoke_json, invoke, tmp_path
):
    typed = invoke_json("scaled", "--q", "−1,0", "--k", "1,0;0,−1", "--v", "1,2;3,4")
    plain = invoke_json("scaled", "--q", "-1,0", "--k", "1,0;0,-1", "--v", "1,2;3,4")
    assert typed["inputs"] == plain["inputs"] and typed["output"] == plain["output"]
    assert typed["inputs"]["Q"]["data"] == [[-1, 0]]
    # Printed values: the weights of q = (-1, 0) against k = (1, 0), (0, -1) are 0.33, 0.67.
    path = scaled_file(tmp_path, q='"−1, 0"', weights="0.33, 0.67")
    path_text = Path(path).read_text(encoding="utf-8").replace("[[0, 1]]", "[[0, −1]]")
    Path(path).write_text(path_text.replace("K = [[1, 0], [0, 1]]", 'K = "1, 0; 0, −1"'))
    result = invoke("check", path)
    assert result.exit_code == 0, result.output
    assert [n.value for n in parse_answer("−0.5, –1", 2)] == [-0.5, -1.0]
    assert np.isclose(typed["output"]["data"][0][0], plain["output"]["data"][0][0])
