"""Every mistake of every lesson's library, made on random inputs (not the lectures'), is named
by the marking (attn.mark, attn check, the quiz's diagnosis), and a right working never is.

For each lesson and seed: each declared mistake's own result, written to four decimals as a
student would write it, is marked; every row of it that is not the right row (to those
decimals) must be diagnosed as that mistake, in its words. The right working, written to four
decimals, must be right in every row, with no diagnosis."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.core.rounding import parse_rounded
from attn_cli.course import mistakes_of
from attn_cli.course.mistakes import Given, before_key, declared_for

SEEDS = range(6)
# Random inputs of each lesson at shapes where every mistake can be told apart (square scores:
# K not transposed needs d_k = n, the scores transposed m = n; a square W_O, two heads or more).
RUNS = {
    "scaled": {"m": 4, "n": 4, "dk": 4, "dv": 3},
    "selfattn": {"n": 4, "d": 4, "dk": 4, "dv": 4},
    "causal": {"n": 4},
    "causal-padded": {"n": 4, "valid_len": "3"},
    "multihead": {"n": 4, "d_model": 6, "heads": 3},
    "bahdanau": {"n": 4, "d": 3},
    "window": {"n": 6, "dk": 6, "window": 1},
    "graph": {"n": 5, "d": 3, "dk": 3, "self_loops": True},
    "block": {"n": 4},
    "posenc": {"positions": 6, "d_model": 6},
    # dV's A not transposed needs m = n, dA's V not transposed d_v = n
    "backward": {"m": 4, "n": 4, "dk": 4, "dv": 4},
    "backward-causal": {"n": 4, "dk": 4, "dv": 4, "causal": True},
    "backward-unscaled": {"n": 4, "dk": 4, "dv": 4, "scale": False},
}


def _options(run: str, seed: int) -> dict:
    """The keywords of ``run`` at ``seed``."""
    options = dict(RUNS[run])
    if run.split("-")[0] != "posenc":
        options["seed"] = seed
    else:
        options["positions"] += seed  # posenc draws nothing: other sizes instead
    return options


def _walkthrough(run: str, seed: int):
    return getattr(attn, run.split("-")[0])(**_options(run, seed))


def _written(value: np.ndarray) -> list[list[str]]:
    """A matrix as a student writes it, four decimals ("-inf" for a mask's −∞)."""
    rows = np.reshape(np.asarray(value, dtype=np.float64), (-1, np.shape(value)[-1]))
    return [["-inf" if np.isneginf(v) else f"{v:.4f}" for v in row] for row in rows]


def _text(rows: list[list[str]]) -> str:
    return "; ".join(", ".join(row) for row in rows)


def _cases(run: str, seed: int):
    """(step key, mistake, its result, its words) for every mistake at every step it applies."""
    walkthrough = _walkthrough(run, seed)
    steps = mistakes_of(walkthrough.lesson)
    for step in walkthrough.steps:
        declared = declared_for(steps, step.key)
        if declared is None:
            continue
        after = before_key(steps, walkthrough, step.key)
        before = None if after is None else np.asarray(walkthrough.find(after).value, dtype=float)
        given = Given(walkthrough, before, step.key)
        for mistake in declared.mistakes:
            try:
                with np.errstate(all="ignore"):
                    result = mistake.made(given)
            except KeyError:
                continue
            if result is None:
                continue
            yield walkthrough, step.key, np.asarray(result, dtype=float), mistake.words(given)


def _differs(result_row: list[str], exact_row: list[str]) -> bool:
    return result_row != exact_row and "nan" not in result_row


@pytest.mark.parametrize("run", RUNS)
def test_every_mistake_is_named_where_its_numbers_differ(run):
    named = 0
    for seed in SEEDS:
        for walkthrough, key, result, words in _cases(run, seed):
            written = _written(result)
            exact = _written(walkthrough.find(key).value)
            wrong = [i for i, row in enumerate(written) if _differs(row, exact[i])]
            if not wrong or any("nan" in row for row in written):
                continue
            marking = attn.mark(walkthrough, {key: _text(written)})
            for index in wrong:
                row = marking.rows[index]
                assert row.verdict == "mistake", (run, seed, key, words, str(row))
                assert words in row.words, (run, seed, key, words, row.words)
                named += 1
    assert named > 0  # the lesson's mistakes were made somewhere


@pytest.mark.parametrize("run", RUNS)
def test_a_right_working_is_never_diagnosed(run):
    for seed in SEEDS:
        walkthrough = _walkthrough(run, seed)
        steps = mistakes_of(walkthrough.lesson)
        answers = {
            step.key: _text(_written(step.value))
            for step in walkthrough.steps
            if declared_for(steps, step.key) is not None
            and not np.any(np.isnan(np.asarray(step.value, dtype=float)))
        }
        marking = attn.mark(walkthrough, answers)
        assert marking.right == len(marking.rows) > 0, str(marking)


@pytest.mark.parametrize("run", ["scaled", "selfattn", "window", "causal", "multihead"])
def test_a_step_right_for_the_students_own_wrong_step_follows_from_it(run):
    """Error carried forward: a wrong step, then the next step computed right from it."""
    followed = 0
    for seed in SEEDS:
        walkthrough = _walkthrough(run, seed)
        steps = mistakes_of(walkthrough.lesson)
        for step in walkthrough.steps:
            declared = declared_for(steps, step.key)
            after = before_key(steps, walkthrough, step.key)
            if declared is None or declared.follows is None or after is None:
                continue
            exact_before = np.asarray(walkthrough.find(after).value, dtype=float)
            own = exact_before * 1.5  # the student's own wrong step before
            own = np.where(np.isneginf(exact_before), -np.inf, own)
            # As the student wrote it, four decimals: the next step is computed from that.
            own = np.array([[float(v) for v in row] for row in _written(own)]).reshape(own.shape)
            with np.errstate(all="ignore"):
                theirs = declared.follows(Given(walkthrough, own, step.key), own)
            if np.any(np.isnan(theirs)):
                continue
            written = _written(theirs)
            exact = _written(step.value)
            if written == exact:
                continue
            answers = {after: _text(_written(own)), step.key: _text(written)}
            marking = attn.mark(walkthrough, answers)
            mine = [row for row in marking.rows if row.step == step.key]
            for row, (given, right) in zip(mine, zip(written, exact, strict=True), strict=True):
                if given != right:
                    assert row.verdict == "follows", (run, seed, step.key, str(row))
                    assert row.words == f"right for your {after} step"
                    followed += 1
    assert followed > 0


def test_the_worked_example_of_the_issue():
    """The scores left unscaled, then the softmax of those: the scale named, the softmax
    credited as following from the student's own scores."""
    w = attn.scaled(q="1,0;0,1", k="1,1;2,0", v="0.1,0.2;0.3,0.4")
    marking = attn.mark(w, {"scaled": "1, 2; 1, 0", "weights": "0.2689, 0.7311; 0.7311, 0.2689"})
    assert [(r.step, r.row, r.verdict) for r in marking.rows] == [
        ("scaled", 1, "mistake"),
        ("scaled", 2, "mistake"),
        ("weights", 1, "follows"),
        ("weights", 2, "follows"),
    ]
    assert marking.rows[0].words == "these are the scores before dividing by √d_k = √2 = 1.4142"
    assert marking.summary() == "0 of 4 rows right; 2 more right for your own earlier answers"


def test_a_working_of_lists_holds_each_number_to_its_own_decimals():
    w = attn.scaled(q="1,0;0,1", k="1,1;2,0", v="0.1,0.2;0.3,0.4")
    exact = w.step("scaled")
    assert attn.mark(w, {"scaled": np.round(exact, 3).tolist()}).right == 2
    marking = attn.mark(w, {"scaled": [[1, 1.4142], [0.7071, 0]]})
    assert [row.verdict for row in marking.rows] == ["wrong", "right"]  # a whole 1 is not 0.7071


@pytest.mark.parametrize(
    ("answers", "says"),
    [
        ({"scores": "1, 2"}, "answers['scores'] is 1 × 2, where step 'scores' is 2 × 2"),
        ({"nope": "1"}, "answers['nope']: the scaled walkthrough has no step 'nope'; its steps"),
        ({"scores": "1, x; 1, 0"}, "answers['scores']: 'x' is not a number"),
    ],
)
def test_a_working_that_cannot_be_marked_says_why(answers, says):
    w = attn.scaled(q="1,0;0,1", k="1,1;2,0", v="0.1,0.2;0.3,0.4")
    with pytest.raises(attn.UserError, match=re.escape(says)):
        attn.mark(w, answers)


def test_attn_check_names_the_mistakes_of_a_homework_file(invoke, tmp_path):
    path = tmp_path / "homework.toml"
    path.write_text(
        'lesson = "causal"\n[[examples]]\nname = "mine"\n[examples.inputs]\n'
        "S = [[0.5, 1.0, 2.0], [1.5, 0.2, 0.1], [0.3, 0.9, 1.1]]\n[examples.printed]\n"
        'mask = "0, 0, 0; -inf, 0, 0; -inf, -inf, 0"\n'
    )
    result = invoke("check", str(path))
    assert result.exit_code == 1
    text = " ".join(result.stdout.split())
    wrong = "the mask is on the wrong triangle: −∞ below the diagonal blocks the keys before"
    assert f"mask row 2: {wrong}" in text and f"mask row 3: {wrong}" in text
    doc = invoke("check", str(path), "--format", "json")
    (example,) = json.loads(doc.stdout)["files"][0]["examples"]
    assert [(d["step"], d["row"], d["kind"]) for d in example["diagnoses"]] == [
        ("mask", 1, "mistake"),
        ("mask", 2, "mistake"),
        ("mask", 3, "mistake"),
    ]


def test_attn_check_names_the_mistake_of_a_row_printed_alone(invoke, tmp_path):
    """A homework file that prints single rows (``mask[2]``, as slides do): each row printed is
    marked and diagnosed; a single cell is compared but not diagnosed."""
    path = tmp_path / "homework.toml"
    path.write_text(
        'lesson = "causal"\n[[examples]]\nname = "mine"\n[examples.inputs]\n'
        "S = [[0.5, 1.0, 2.0], [1.5, 0.2, 0.1], [0.3, 0.9, 1.1]]\n[examples.printed]\n"
        '"mask[2]" = "-inf, 0, 0"\n"mask[3]" = "-inf, -inf, 0"\n"weights[1,2]" = "0.5"\n'
    )
    doc = invoke("check", str(path), "--format", "json")
    assert doc.exit_code == 1, doc.output
    (example,) = json.loads(doc.stdout)["files"][0]["examples"]
    wrong = "the mask is on the wrong triangle: −∞ below the diagonal blocks the keys before"
    assert [(d["step"], d["row"], d["kind"]) for d in example["diagnoses"]] == [
        ("mask", 2, "mistake"),
        ("mask", 3, "mistake"),
    ]
    assert all(d["words"].startswith(wrong) for d in example["diagnoses"])


def test_parse_rounded_is_the_rule_for_a_written_number():
    """The marking reads a typed number as attn check and the quiz do (core.rounding)."""
    number = parse_rounded("0.7071")
    assert number is not None and number.decimals == 4


@pytest.fixture
def at_terminal(monkeypatch):
    from attn_cli.cli import terminal

    monkeypatch.setattr(terminal, "interactive", lambda: True)


def test_the_quiz_names_a_mask_on_the_wrong_triangle_and_credits_what_follows(invoke, at_terminal):
    """attn causal's quiz, a mask typed with −∞ below the diagonal, then S + that mask: the
    mask's mistake named, the masked scores right for the student's own mask."""
    w = attn.causal()
    scores, mask = w.step("scores"), w.step("mask")
    theirs = scores + mask.T
    lines = [_text([row]) for row in _written(scores)]
    lines += [_text([row]) for row in _written(mask.T)]
    lines += [_text([row]) for row in _written(theirs)]
    out = " ".join(invoke("causal", "--quiz", input="\n".join([*lines, "q"]) + "\n").stdout.split())
    assert out.count("the mask is on the wrong triangle: −∞ below the diagonal") == 3
    assert out.count("↳ right for your mask step") == 3
    assert "Score: 3 of 9 rows right; 3 more right for your own earlier answers" in out


def _flags(run: str, seed: int) -> list[str]:
    """The command line of :func:`_walkthrough`'s run."""
    from attn_cli.cli.flags import flag_for

    words: list[str] = []
    for keyword, value in _options(run, seed).items():
        if value is False:  # a switch turned off: --no-scale
            words.append("--no-" + flag_for(keyword).removeprefix("--"))
        else:
            words += [flag_for(keyword)] if value is True else [flag_for(keyword), str(value)]
    return words


@pytest.mark.parametrize("run", RUNS)
def test_the_quiz_names_each_mistake_of_every_lesson(invoke, at_terminal, run):
    """Each lesson's quiz, on random inputs: the steps before typed right, then one step typed
    as a mistake makes it. Every declared step's first mistake that changes a row is named in
    the quiz's words, as attn.mark names it."""
    from attn_cli.run.quiz import questions

    seed = 1
    walkthrough = _walkthrough(run, seed)
    asked = [question for question in questions(walkthrough) if question.asked]
    named = 0
    for key in dict.fromkeys(case[1] for case in _cases(run, seed)):
        index = next((i for i, q in enumerate(asked) if q.step.key == key), None)
        if index is None:
            continue  # a step too large to type in the quiz
        made = [
            (result, words)
            for _, step, result, words in _cases(run, seed)
            if step == key and not np.any(np.isnan(result))
        ]
        exact = _written(walkthrough.find(key).value)
        differs = (
            (r, w)
            for r, w in made
            if any(_differs(a, b) for a, b in zip(_written(r), exact, strict=True))
        )
        chosen = next(differs, None)
        if chosen is None:
            continue
        result, words = chosen
        lines = [_text([row]) for question in asked[:index] for row in _written(question.rows)]
        lines += [_text([row]) for row in _written(result)]
        typed = "\n".join([*lines, "q"]) + "\n"
        shown = invoke(walkthrough.lesson, *_flags(run, seed), "--quiz", input=typed)
        assert shown.exit_code == 0, shown.output
        out = " ".join(shown.stdout.split())
        assert " ".join(words.split()) in out, (run, key, words, out[-800:])
        named += 1
    assert named > 0
