"""--quiz: a handout with an answer key off a terminal; marked answers typed on stdin."""

from __future__ import annotations

import numpy as np
import pytest

from attn_cli.api import lesson_function
from attn_cli.cli import terminal
from attn_cli.core.rounding import parse_rounded
from attn_cli.course import lesson_names
from attn_cli.run.quiz import mark, parse_answer, questions
from tests.conftest import assert_user_error

LESSONS = lesson_names()

# The default example two-tokens, computed here: Q = I, K = [[1,1],[2,0]], V = [[.1,.2],[.3,.4]].
Q = np.eye(2)
K = np.array([[1.0, 1.0], [2.0, 0.0]])
V = np.array([[0.1, 0.2], [0.3, 0.4]])
SCORES = Q @ K.T
SCALED = SCORES / np.sqrt(2)
WEIGHTS = np.exp(SCALED) / np.exp(SCALED).sum(axis=1, keepdims=True)
OUTPUT = WEIGHTS @ V
STEPS = (SCORES, SCALED, WEIGHTS, OUTPUT)


def rows_typed(matrix: np.ndarray, decimals: int) -> list[str]:
    return [", ".join(f"{x:.{decimals}f}" for x in row) for row in matrix]


@pytest.fixture
def at_terminal(monkeypatch):
    monkeypatch.setattr(terminal, "interactive", lambda: True)


def test_without_a_terminal_it_prints_blanks_then_an_answer_key(invoke):
    result = invoke("scaled", "--quiz")
    assert result.exit_code == 0, result.output
    out = result.stdout
    blanks, key = out.split("Answer key")
    assert blanks.count("______") == sum(step.size for step in STEPS)
    for title in ("Scores", "Scaled scores", "Weights", "Output"):
        assert title in blanks and title in key
    # The inputs are shown with the blanks; no computed value appears before the key.
    assert "0.1000" in blanks
    for value in (SCALED[0, 0], WEIGHTS[0, 0], OUTPUT[1, 1]):
        assert f"{value:.4f}" not in blanks
        assert f"{value:.4f}" in key
    assert "Score:" not in out


def test_the_answer_key_starts_on_a_page_of_its_own(invoke):
    """A handout printed as it is: the key after a form feed, never on the blanks' page."""
    out = invoke("scaled", "--quiz").stdout
    assert out.count("\f") == 1
    blanks, key = out.split("\f")
    assert "Answer key" not in blanks and key.lstrip("─ ").startswith("Answer key")
    assert "the answer key follows the blanks, on a page of its own." in " ".join(blanks.split())
    assert f"{WEIGHTS[0, 0]:.4f}" in key and f"{WEIGHTS[0, 0]:.4f}" not in blanks


def test_the_answer_key_to_a_file_of_its_own(invoke, tmp_path):
    """--answers FILE: the handout holds the blanks alone; FILE the key, titled as one."""
    path = tmp_path / "key.txt"
    result = invoke("scaled", "--quiz", "--answers", str(path))
    assert result.exit_code == 0, result.output
    handout, key = result.stdout, path.read_text(encoding="utf-8")
    assert "Answer key" not in handout and "\f" not in handout and "\f" not in key
    assert handout.count("______") == sum(step.size for step in STEPS)
    assert handout.rstrip().endswith(f"The answer key is in {path}.")
    assert "the answer key is in a file of its own." in " ".join(handout.split())
    assert key.startswith("Answer key · Scaled dot-product attention · example two-tokens")
    for value in (SCALED[0, 0], WEIGHTS[0, 0], OUTPUT[1, 1]):
        assert f"{value:.4f}" in key and f"{value:.4f}" not in handout
    assert "______" not in key


def test_answers_without_a_quiz_or_unwritable_are_one_line(invoke, tmp_path):
    assert_user_error(
        invoke("scaled", "--answers", str(tmp_path / "k.txt")), "--answers writes a quiz's"
    )
    missing = tmp_path / "no" / "k.txt"
    assert_user_error(invoke("scaled", "--quiz", "--answers", str(missing)), "--answers")
    assert list(tmp_path.iterdir()) == []


def test_the_answer_key_keeps_slide_notes_out_of_the_blanks(invoke):
    out = invoke("scaled", "--quiz", "--example", "cat-slept").stdout
    blanks, key = out.split("Answer key")
    assert "The slide prints" not in blanks
    assert "The slide prints 0.54 for (s_t, cat)" in key


def test_right_answers_rounded_to_two_decimals_score_full_marks(invoke, at_terminal):
    answers = [line for step in STEPS for line in rows_typed(step, 2)]
    result = invoke("scaled", "--quiz", "--precision", "2", input="\n".join(answers) + "\n")
    assert result.exit_code == 0, result.output
    assert "each to 2 decimals (--precision)" in " ".join(result.stdout.split())
    assert result.stdout.count("✓ right") == 8
    assert "Score: 8 of 8 rows right." in result.stdout
    assert "______" not in result.stdout


def test_an_answer_to_fewer_decimals_than_asked_is_not_right_and_says_so(invoke, at_terminal):
    """Issue 42: "0.2 0.5 0.2" for the cat-slept weights 0.2361, 0.5254, 0.2385 was marked
    right; asked to 4 decimals it is right only to 1, and the mark says so."""
    typed = "0.1, 0.9, 0.11\n0.2 0.5 0.2\nq\n"
    result = invoke("scaled", "--example", "cat-slept", "--quiz", input=typed)
    out = " ".join(result.stdout.split())
    assert "✗ right to 1 decimal, but 4 decimals were asked: the exact row is 0.2361" in out
    assert out.count("✓ right") == 1  # the scores, exact
    assert "Score: 1 of 2 rows right." in out


def test_wrong_skipped_and_malformed_answers(invoke, at_terminal):
    lines = [
        "1 2",  # scores row 1: right
        "1 1",  # scores row 2: entry 2 wrong
        "",  # scaled row 1: skipped
        "abc",  # not a number: asked again
        "0.5",  # too few numbers: asked again
        rows_typed(SCALED, 4)[1],  # right
        "q",  # stop
    ]
    result = invoke("scaled", "--quiz", input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.count("✓ right") == 2
    assert "✗ not right: the exact row is 1, 0 (entry 2 is off)" in out
    assert f"skipped: the exact row is {SCALED[0, 0]:.4f}, {SCALED[0, 1]:.4f}" in out
    assert "'abc' is not a number" in out
    assert "that is 1 number(s); this row has 2." in out
    assert "Stopped" in out
    # The steps not reached are shown with their values.
    assert f"{OUTPUT[1, 1]:.4f}" in out
    assert "Score: 2 of 4 rows right." in out


def test_the_end_of_the_input_stops_the_quiz(invoke, at_terminal):
    result = invoke("scaled", "--quiz", input="1, 2\n")
    assert result.exit_code == 0, result.output
    assert "Score: 1 of 1 rows right." in result.stdout


@pytest.mark.parametrize(
    ("typed", "exact", "right"),
    [
        ("0.3333", 1 / 3, True),
        ("0.33", 1 / 3, False),  # right only to the 2 decimals typed; 4 are asked
        ("0.3", 1 / 3, False),
        ("0.34", 1 / 3, False),
        ("1", 2**-0.5, False),  # a whole number must be exact to the shown precision
        ("1", 1.0, True),
        ("0", 4e-5, True),  # within the displayed precision (4 decimals)
        ("0.70710", 2**-0.5, True),  # more decimals than exact enough, but within 0.00005
        ("0.7071", 2**-0.5, True),
        ("0.7072", 2**-0.5, False),
        ("-inf", -np.inf, True),
        ("−∞", -np.inf, True),
        ("0", -np.inf, False),
    ],
)
def test_marking_asks_for_the_decimals_of_the_precision(typed, exact, right):
    number = parse_rounded(typed)
    assert mark([number], np.array([exact]), precision=4).right is right


def test_a_mark_says_to_how_many_decimals_a_short_answer_is_right():
    row = np.array([0.23614, 0.52539, 0.23847])
    short = [parse_rounded(text) for text in ("0.2", "0.53", "0.24")]
    assert mark(short, row, precision=4).right_to == 1  # the fewest typed, all within them
    assert mark([parse_rounded(t) for t in ("0.2", "0.6", "0.2")], row, 4).right_to is None


def test_the_setting_comes_before_the_blanks(invoke):
    """Issue 42: "Scores are not scaled here" came only after the answer key."""
    out = invoke("scaled", "--example", "cat-slept", "--quiz").stdout
    blanks = out.split("Answer key")[0]
    assert "plain dot product, no scaling" in " ".join(blanks.split())
    assert "Options: --no-scale" in blanks


def test_parse_answer():
    assert [n.value for n in parse_answer("0.5, -1 2e-1", 3)] == [0.5, -1.0, 0.2]
    assert parse_answer("1;2", 2)[1].value == 2.0
    assert "not a number" in parse_answer("1, x", 2)
    assert "this row has 3" in parse_answer("1, 2", 3)


def test_quiz_is_for_the_terminal_and_small_steps(invoke):
    assert_user_error(invoke("scaled", "--quiz", "--format", "json"), "--quiz", "--format json")
    assert_user_error(invoke("scaled", "--quiz", "--n", "64"), "--quiz needs a step small enough")


class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("stdin", "stdout", "expected"), [(1, 1, True), (1, 0, False), (0, 1, False)]
)
def test_someone_is_there_only_when_stdin_and_stdout_are_terminals(
    monkeypatch, stdin, stdout, expected
):
    """`attn scaled --quiz > handout.txt` at a terminal writes a handout, not hidden prompts."""
    monkeypatch.setattr("sys.stdin", _Stream(bool(stdin)))
    monkeypatch.setattr("sys.stdout", _Stream(bool(stdout)))
    assert terminal.interactive() is expected


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_makes_a_handout_asking_its_steps(invoke, lesson):
    """Off a terminal, `attn LESSON --quiz` is a handout titled by the lesson that asks at least
    one step and heads every step, asked or shown for reading, with its title."""
    result = invoke(lesson, "--quiz")
    assert result.exit_code == 0, result.output
    walkthrough = lesson_function(lesson)()
    assert result.stdout.startswith(f"Quiz · {walkthrough.title}")
    assert any(question.asked for question in questions(walkthrough)), lesson
    text = " ".join(result.stdout.split())
    for step in walkthrough.steps:  # asked, or shown for reading: each under its own title
        assert " ".join(step.title.split()) in text, (lesson, step.title)


def test_a_whole_number_is_not_right_to_no_decimals_where_the_value_has_them():
    """Typed "1, 1" for 0.7071, 1.4142: wrong, and not "right to 0 decimals" (a whole number
    says the value is whole); "0.7, 1.4" is right to 1 decimal; "1, 0" for exactly 1, 0 is right."""
    scaled = np.array([1 / np.sqrt(2), np.sqrt(2)])
    whole = mark([parse_rounded("1"), parse_rounded("1")], scaled, 4)
    assert not whole.right and whole.right_to is None
    tenths = mark([parse_rounded("0.7"), parse_rounded("1.4")], scaled, 4)
    assert not tenths.right and tenths.right_to == 1
    assert mark([parse_rounded("1"), parse_rounded("0")], np.array([1.0, 0.0]), 4).right


# --- what a wrong answer shows: the mistake, or the error carried forward (issue 56) ----------


def softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_unscaled_scores_are_named_and_what_follows_from_them_is_credited(invoke, at_terminal):
    """The issue's student: step 2 typed as the unscaled scores, step 3 as their softmax, step 4
    as those weights times V. Step 2 is named ("before dividing by √d_k = √2 = 1.4142"); steps 3
    and 4 are right for the student's own answers, and the score says so."""
    their_weights = softmax(SCORES)  # the softmax of the scores not divided by √2
    their_output = their_weights @ V
    typed = [
        *rows_typed(SCORES, 4),  # step 1, right
        *rows_typed(SCORES, 4),  # step 2: the scores again, not divided by √2
        *rows_typed(their_weights, 4),
        *rows_typed(their_output, 4),
    ]
    result = invoke("scaled", "--quiz", input="\n".join(typed) + "\n")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert out.count("these are the scores before dividing by √d_k = √2 = 1.4142.") == 2
    assert out.count("↳ right for your scaled step: this row follows from your own answer") == 2
    assert out.count("↳ right for your weights step: this row follows from your own answer") == 2
    assert "Score: 2 of 8 rows right; 4 more right for your own earlier answers" in out


@pytest.mark.parametrize(
    ("step", "typed", "named"),
    [
        ("weights", softmax(SCALED.T).T, "this is the softmax down each column"),
        ("weights", SCALED / SCALED.sum(axis=1, keepdims=True), "divided by their row's sum"),
        ("weights", np.exp(SCALED), "these are e^s, not yet divided by the row's sum"),
        ("scaled", SCORES / 2, "divided by d_k = 2, where the scale is √d_k = √2 = 1.4142"),
        ("output", SCALED @ V, "these are the scaled scores times V"),
        ("scores", Q @ K, "these are Q K, with K not transposed"),
        ("scores", K @ Q.T, "these are the scores transposed"),
    ],
)
def test_each_mistake_is_named_in_plain_words(invoke, at_terminal, step, typed, named):
    index = ("scores", "scaled", "weights", "output").index(step)
    before = [line for right in STEPS[:index] for line in rows_typed(right, 4)]
    lines = [*before, *rows_typed(typed, 4), "q"]
    out = " ".join(invoke("scaled", "--quiz", input="\n".join(lines) + "\n").stdout.split())
    assert named in out, out[-600:]


def test_a_right_answer_is_never_given_a_diagnosis(invoke, at_terminal):
    answers = [line for step in STEPS for line in rows_typed(step, 4)]
    out = invoke("scaled", "--quiz", input="\n".join(answers) + "\n").stdout
    assert "these are" not in out and "this is the" not in out and "↳" not in out


def test_numbers_that_match_no_mistake_are_only_marked(invoke, at_terminal):
    lines = [*rows_typed(SCORES, 4), "9, 9", "9, 9", "q"]
    out = " ".join(invoke("scaled", "--quiz", input="\n".join(lines) + "\n").stdout.split())
    assert out.count("✗ not right") == 2 and "these are" not in out
