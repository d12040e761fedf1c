"""attn learn grammar: the generated language (numpy only: its heads, its endings, that no word
says its own ending, the parser and its errors), the scores on hand-built maps, tiny training
budgets (rows sum to 1, the control's map is even, the same numbers on a re-run, the claims,
--save then --weights, --sentence, --code, --plot, --full, JSON), and one ``training`` test
that trains the default budget and asserts the issue's targets."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from attn_cli.learn import grammar_data as data
from attn_cli.learn.common import LearnOptions
from tests.conftest import assert_user_error
from tests.waits import HANG_GUARD_SECONDS

TINY = ("--steps", "60", "--hidden", "16", "--max-len", "8", "--seed", "1")
TINY_OPTIONS = LearnOptions("grammar", seed=1, steps=60, hidden=16, max_len=8)


# --- the language ----------------------------------------------------------------------------


def test_the_lectures_sentence_has_the_heads_the_lectures_describe():
    sentence = data.lecture_sentence()
    words = sentence.words
    assert " ".join(words) == "the cat sat on the soft red mat"
    heads = {words[i]: words[h] for i, h in enumerate(sentence.heads) if h != data.NONE and i > 3}
    assert heads == {"the": "mat", "soft": "mat", "red": "mat", "mat": "on"}
    assert [words[h] for h in sentence.heads[:3]] == ["cat", "sat", "cat"]  # the→cat, cat↔sat
    assert sentence.heads[3] == data.NONE  # a preposition has no head
    assert sentence.rendering() == "the·II cat sat·II on the·I soft·I red·I mat·LOC"


def _sample(seed: int = 0) -> list[data.Sentence]:
    rng = np.random.default_rng(seed)
    return [s for length in range(3, 15) for s in data.draw(rng, length, 60)]


def test_every_ending_is_the_one_its_head_decides():
    for sentence in _sample():
        words = sentence.words
        for i, (head, ending) in enumerate(zip(sentence.heads, sentence.endings, strict=True)):
            if head == data.NONE:
                assert ending == data.NONE
                continue
            decider = words[head]
            decided = {**data.NOUNS, **data.VERBS, **data.PREPOSITIONS}[decider]
            assert data.ENDINGS[ending] == decided, (words, i)
            assert data.relation(sentence, i) in data.RELATIONS.values()


def test_no_word_says_its_own_ending():
    """The objective cannot be met without reading another word: every word that takes an
    ending is seen with more than one."""
    seen: dict[str, set[int]] = {}
    for sentence in _sample(1):
        for word, ending in zip(sentence.words, sentence.endings, strict=True):
            if ending != data.NONE:
                seen.setdefault(word, set()).add(ending)
    assert set(seen) == set(data.VOCABULARY) - set(data.PREPOSITIONS)
    assert all(len(endings) > 1 for endings in seen.values()), seen


def test_a_verb_agrees_with_its_subject_not_the_nearer_noun():
    sentence = data.parse("the cat on the mat sat")
    assert sentence.words[sentence.heads[5]] == "cat"
    assert data.ENDINGS[sentence.endings[5]] == "II"  # cat's class, not mat's (I)
    assert data.competing(sentence)[5]  # mat would give it another ending


def test_competing_marks_the_words_another_word_would_decide_otherwise():
    lone = data.parse("the cat sat")  # one noun, no preposition: nothing competes
    assert not any(data.competing(lone))
    same = data.parse("the cat sat on the rug")  # cat and rug are both of class II
    competing = dict(zip(range(len(same)), data.competing(same), strict=True))
    assert not competing[0] and not competing[2]  # the→cat, sat→cat: rug gives II too
    assert competing[1]  # cat's case: on (LOC) would give another
    assert competing[5]  # rug's case: sat (ABS) would give another


def test_the_parser_names_what_does_not_fit():
    with pytest.raises(data.GrammarError, match="'zebra' is not a word"):
        data.parse("the zebra sat")
    with pytest.raises(data.GrammarError, match="'cat' cannot start"):
        data.parse("cat sat")
    with pytest.raises(data.GrammarError, match="'sat' cannot come after 'the'"):
        data.parse("the sat")
    with pytest.raises(data.GrammarError, match="stops before the sentence is complete"):
        data.parse("the cat sat on")
    with pytest.raises(data.GrammarError, match="'the' cannot come after 'the cat sat'"):
        data.parse("the cat sat the dog")  # sat takes no object


def test_the_lectures_sentence_is_held_out_and_never_trained_on():
    corpus = data.corpus(0, 12, 50)
    lecture = data.lecture_sentence().tokens
    assert lecture in corpus.held_out_tokens()
    batches = corpus.batches(64)
    trained = {s.tokens for _ in range(200) for s in next(batches)}
    assert not trained & corpus.held_out_tokens()
    assert {len(tokens) for tokens in trained} == set(range(3, 13))


def test_the_same_seed_gives_the_same_data():
    first, second = data.corpus(3, 10, 20), data.corpus(3, 10, 20)
    assert first.held_out == second.held_out
    a, b = first.batches(8), second.batches(8)
    assert [next(a) for _ in range(5)] == [next(b) for _ in range(5)]
    assert data.corpus(4, 10, 20).held_out != first.held_out


def test_head_scores_on_hand_built_maps():
    sentence = data.lecture_sentence()
    n = len(sentence)
    perfect = np.full((1, n, n), 0.1 / (n - 1))
    for i, head in enumerate(sentence.heads):
        if head != data.NONE:
            perfect[0, i] = 0.1 / (n - 1)
            perfect[0, i, head] = 0.9
    even = np.full((1, n, n), 1 / n)
    share, weight = data.head_scores([[perfect, even]], [sentence])
    assert share.shape == (2, 1) and weight.shape == (2, 1)
    assert share[0, 0] == 1.0 and weight[0, 0] == pytest.approx(0.9)
    assert share[1, 0] == 0.0 and weight[1, 0] == pytest.approx(1 / n)  # a tie is no hit


# --- tiny training budgets -------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("torch")
    from attn_cli.learn import grammar

    return grammar.run(TINY_OPTIONS)


def test_the_maps_rows_sum_to_one_and_the_controls_is_even(tiny):
    for key in ("before", "after", "control_map"):
        weights = np.asarray(tiny.step(key))
        assert weights.shape == (8, 8)
        assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-6), key
    assert np.allclose(np.asarray(tiny.step("control_map")), 1 / 8, atol=1e-7)
    assert tiny.find("after").row_labels == tuple(data.LECTURE.split())


def test_the_heads_step_is_the_grammars(tiny):
    heads = np.asarray(tiny.step("heads"))
    sentence = data.lecture_sentence()
    for i, head in enumerate(sentence.heads):
        assert heads[i].sum() == (0 if head == data.NONE else 1)
        if head != data.NONE:
            assert heads[i, head] == 1


def test_the_scores_are_the_held_out_share_per_layer_and_head(tiny):
    rows = tiny.step("scores")
    assert {(row["model"], row["when"]) for row in rows} == {
        ("attention", "before training"),
        ("attention", "after training"),
        ("control", "after training"),
    }
    control = next(row for row in rows if row["model"] == "control")
    assert control["share"] == 0.0  # an even map has no largest weight
    for row in rows:
        assert 0 <= row["share"] <= 1 and 0 <= row["weight"] <= 1
        assert (row["layer"], row["head"]) == (1, 1)


def test_the_same_seed_prints_the_same_numbers(tiny):
    from attn_cli.learn import grammar

    again = grammar.run(TINY_OPTIONS)
    assert np.array_equal(np.asarray(again.step("after")), np.asarray(tiny.step("after")))
    assert again.step("scores") == tiny.step("scores")
    assert again.step("curve") == tiny.step("curve")


def test_every_claim_shown_is_true_of_the_numbers(tiny):
    from attn_cli.learn.grammar import TEXTS

    shown = [note for step in tiny.steps for note in step.notes] + list(tiny.notes)
    assert {"control_even", "control_fails", "reproducibility"} <= {note.key for note in shown}
    for note in shown:
        claim = TEXTS.claims.get(note.key)
        assert claim is None or claim(tiny, note.values), note.key


def test_the_control_note_needs_the_control_to_fail_where_words_compete(tiny):
    import dataclasses

    from attn_cli.learn.grammar import COMPETING, TEXTS

    note = next(note for note in tiny.notes if note.key == "control_fails")
    assert TEXTS.claims["control_fails"](tiny, note.values)
    rows = [
        {**row, "control": row["attention"]} if row["case"] == COMPETING else row
        for row in tiny.step("competition")
    ]  # a control as good as the model where words compete
    steps = tuple(
        dataclasses.replace(step, value=rows) if step.key == "competition" else step
        for step in tiny.steps
    )
    matched = dataclasses.replace(tiny, steps=steps)
    values = {**note.values, "competing": rows[1]["control"]}
    assert not TEXTS.claims["control_fails"](matched, values)


def test_the_lecture_note_reads_the_after_map(tiny):
    import dataclasses

    from attn_cli.learn.grammar import TEXTS

    words = data.LECTURE.split()
    after = np.full((8, 8), 0.01)
    for word, head in (("red", "mat"), ("soft", "mat"), ("cat", "sat"), ("sat", "cat")):
        after[words.index(word), words.index(head)] = 0.9
    steps = tuple(
        dataclasses.replace(step, value=after) if step.key == "after" else step
        for step in tiny.steps
    )
    learned = dataclasses.replace(tiny, steps=steps)
    values = {"red": 0.9, "soft": 0.9, "cat": 0.9, "sat": 0.9}
    assert TEXTS.claims["lecture_map"](learned, values)
    assert not TEXTS.claims["lecture_map"](learned, {**values, "red": 0.8})
    after[words.index("red"), 0] = 0.95  # red now looks hardest at "the"
    assert not TEXTS.claims["lecture_map"](learned, values)


def test_saved_weights_evaluate_to_the_same_scores(invoke, torch, tmp_path):
    import jsonschema

    from attn_cli.render.json_render import schema

    path = tmp_path / "grammar.npz"
    trained = invoke("learn", "grammar", *TINY, "--save", str(path), "--format", "json")
    assert trained.exit_code == 0, trained.output
    document = json.loads(trained.stdout)
    jsonschema.Draft202012Validator(schema()).validate(document)
    assert document["lesson"] == "learn-grammar"
    loaded = invoke("learn", "grammar", "--weights", str(path), "--seed", "1", "--format", "json")
    assert loaded.exit_code == 0, loaded.output
    again = json.loads(loaded.stdout)
    jsonschema.Draft202012Validator(schema()).validate(again)

    def after(doc):
        rows = next(step for step in doc["steps"] if step["key"] == "scores")["value"]
        return [row for row in rows if row["when"] == "after training"]

    assert after(again) == after(document)
    assert again["meta"]["accuracy"] == document["meta"]["accuracy"]
    keys = {step["key"] for step in again["steps"]}
    assert "loaded" in keys and "before" not in keys  # a file holds no weights before training


def test_a_sentence_of_ones_own_is_shown_with_its_heads(invoke, torch):
    result = invoke(
        "learn", "grammar", *TINY, "--sentence", "the dog on the rug sat", "--format", "json"
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    after = next(step for step in document["steps"] if step["key"] == "after")
    assert after["row_labels"] == ["the", "dog", "on", "the", "rug", "sat"]
    assert document["meta"]["heads"] == [1, 5, -1, 4, 2, 1]
    sentence = next(step for step in document["steps"] if step["key"] == "sentence")
    assert [row["ending"] for row in sentence["value"]] == ["I", "ABS", "—", "II", "LOC", "I"]


@pytest.mark.parametrize(
    ("sentence", "fragments"),
    [
        ("the zebra sat", ("'zebra' is not a word", "nouns cat, dog")),
        ("cat sat", ("'cat' cannot start",)),
        ("the cat on the old mat sat on the soft red rug", ("12 words", "--max-len 12")),
    ],
)
def test_a_sentence_that_does_not_fit_is_one_line(invoke, torch, sentence, fragments):
    result = invoke("learn", "grammar", *TINY, "--sentence", sentence)
    assert_user_error(result, "--sentence", *fragments)


def test_induction_has_no_sentence_to_show(invoke, torch):
    assert_user_error(invoke("learn", "induction", "--sentence", "a b"), "--sentence")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--steps", "5"), "too small to say anything"),
        (("--max-len", "7"), "--max-len 7"),
        (("--hidden", "1"), "--hidden 1"),
    ],
)
def test_sizes_that_do_not_fit_are_refused(invoke, torch, args, fragment):
    assert_user_error(invoke("learn", "grammar", *args), fragment)


def test_full_shows_every_column_of_the_maps(tiny):
    import io

    from rich.console import Console

    from attn_cli.render import Format, RenderOptions, render

    def shown(whole: bool) -> str:
        console = Console(file=io.StringIO(), width=80, color_system=None)
        options = RenderOptions(precision=3, whole_tables=whole)
        render(tiny, Format.rich, console, options)
        return console.file.getvalue()

    cut, whole = shown(False), shown(True)
    assert "columns 1–" not in cut or "…" in cut
    assert "(group 1 of" in whole and "…" not in whole.split("Step 10")[1].split("Step 11")[0]


def _shown_at(walkthrough, width: int) -> str:
    import io

    from rich.console import Console

    from attn_cli.render import Format, RenderOptions, render

    console = Console(file=io.StringIO(), width=width, color_system=None)
    render(walkthrough, Format.rich, console, RenderOptions(precision=3))
    return console.file.getvalue()


def _section(text: str, step: int) -> str:
    return text.split(f"Step {step} ·")[1].split(f"Step {step + 1} ·")[0]


def test_the_learned_maps_show_every_column_at_80_columns(tiny):
    """Issue 57: a projector's 80 columns show every word of the maps, "soft" and "red"
    included: two decimals, and no Σ row column where every row reads 1.00 (softmax rows)."""
    text = _shown_at(tiny, 80)
    assert max(map(len, text.splitlines())) <= 80
    words = data.LECTURE.split()
    for step, key in ((9, "before"), (10, "after"), (11, "control_map")):
        section = _section(text, step)
        header = next(line for line in section.splitlines() if "soft" in line and "red" in line)
        assert header.split("│")[2:-1] and [c.strip() for c in header.split("│")[2:-1]] == words
        assert "hidden" not in section and "…" not in section, key
        sums = np.asarray(tiny.step(key), dtype=np.float64).sum(axis=1)
        assert np.all(np.abs(sums - 1) < 0.005)  # what the line below says, true
        assert "Σ row left out: every row sums to 1.00." in section
        weights = np.asarray(tiny.step(key))
        shown = weights[words.index("red"), words.index("mat")]
        assert f"{shown:.2f}" in section and "Σ row │" not in section
    # the grammar's 0/1 map already fits: as before, whole numbers
    assert "0 │  1█ │" in _section(text, 8)


def test_a_sharp_map_drops_its_borders_before_a_column():
    """A trained map is sharp: a weight below 0.01 in every column ("<0.01" and its mark's
    place) makes the boxed table 82 columns wide at 2 decimals; without its borders (its marks
    of shade kept) every column shows at 80."""
    import io

    from rich.console import Console

    from attn_cli.render import RenderOptions
    from attn_cli.render.rich_render import value_renderable

    words = data.LECTURE.split()
    weights = np.full((8, 8), 0.001)
    weights[np.arange(8), (np.arange(8) + 1) % 8] = 0.993  # each row: one word, the rest tiny
    console = Console(file=io.StringIO(), width=80, color_system=None)
    shown = value_renderable(
        weights,
        "weights",
        RenderOptions(precision=3),
        row_labels=words,
        col_labels=words,
        row_sums=weights.sum(axis=1),
        fit=True,
    )
    console.print(shown)
    text = console.file.getvalue()
    header = text.splitlines()[0].split()
    assert header == words and "…" not in text and "╭" not in text
    assert "<0.01" in text and "0.99█" in text  # two decimals, the marks of shade kept
    assert "Σ row left out: every row sums to 1.00." in text
    assert max(map(len, text.splitlines())) <= 80


def test_a_wide_screen_shows_the_maps_as_before(tiny):
    """Where the map fits at the decimals asked, nothing changes: 3 decimals and the Σ row."""
    section = _section(_shown_at(tiny, 120), 10)
    assert "Σ row" in section and "Σ row left out" not in section
    weights = np.asarray(tiny.step("after"))
    assert f"{weights[6, 7]:.3f}" in section


def test_plot_titles_carry_the_scores(tiny):
    pytest.importorskip("matplotlib")
    from attn_cli.learn import grammar
    from attn_cli.learn.common import PRECISION
    from attn_cli.render.heatmap import heatmap_figure

    figure = heatmap_figure(tiny, grammar.TASK.figure, PRECISION)
    panels = [axis for axis in figure.axes if axis.get_label() != "<colorbar>"]
    titles = [axis.get_title().replace("\n", " ") for axis in panels]
    rows = {(row["model"], row["when"]): row for row in tiny.step("scores")}
    assert titles[0].startswith("before training")
    assert f"{rows[('attention', 'before training')]['share']:.1%}" in titles[0]
    assert f"{rows[('attention', 'after training')]['share']:.1%}" in titles[1]
    assert titles[2].startswith("the grammar's heads") and titles[3].startswith("the control")
    assert [label.get_text() for label in panels[1].get_xticklabels()] == data.LECTURE.split()
    assert all(axis.get_xlabel() and axis.get_ylabel() for axis in panels)
    assert sum(axis.get_label() == "<colorbar>" for axis in figure.axes) == 4


def test_code_prints_a_program_with_the_options_written_in(invoke):
    result = invoke("learn", "grammar", "--code", "--steps", "30", "--seed", "7")
    assert result.exit_code == 0, result.output
    compile(result.stdout, "program.py", "exec")
    assert "SEED, STEPS, D_MODEL, MAX_LEN = 7, 30, 32, 12" in result.stdout
    assert "import attn_cli" not in result.stdout and "from attn_cli" not in result.stdout


@pytest.mark.parametrize("task", ["grammar", "induction", "translate"])
def test_code_prints_a_short_run_that_training_would_refuse(invoke, task):
    """--steps 3 is too few to say anything about what a model learns, so training is refused
    (tested with each task); its program is printed by every task alike (grammar's used to
    refuse it), with or without PyTorch here."""
    result = invoke("learn", task, "--code", "--steps", "3")
    assert result.exit_code == 0, result.output
    compile(result.stdout, "program.py", "exec")


@pytest.mark.slow
def test_the_program_prints_the_commands_scores(invoke, tiny, tmp_path):
    result = invoke("learn", "grammar", "--code", *TINY)
    program = tmp_path / "program.py"
    program.write_text(result.stdout, encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        check=True,
        timeout=HANG_GUARD_SECONDS,
    )
    rows = {(row["model"], row["when"]): row for row in tiny.step("scores")}
    after = rows[("attention", "after training")]
    assert f"attention: held-out accuracy {tiny.meta['accuracy']['attention']:.3f}" in (
        completed.stdout
    )
    assert f"share on the head {after['share']:.3f}, mean weight {after['weight']:.3f}" in (
        completed.stdout
    )


# --- the default budget and the targets ----------------------------------------------


@pytest.mark.training
def test_the_default_learns_the_lectures_heatmap(torch):
    """Held-out: the map's largest weight on the head for at least 0.9 of the words, every
    ending right for at least 0.95; the lectures' sentence's map as the lectures describe it;
    the control, trained on the same batches, failing where another word would decide the
    ending otherwise."""
    from attn_cli.learn import grammar

    walkthrough = grammar.run(LearnOptions("grammar"))
    rows = {(row["model"], row["when"]): row for row in walkthrough.step("scores")}
    assert rows[("attention", "after training")]["share"] >= 0.9
    assert walkthrough.meta["accuracy"]["attention"] >= 0.95
    shown = {note.key for step in walkthrough.steps for note in step.notes}
    shown |= {note.key for note in walkthrough.notes}
    assert {"lecture_map", "on_heads", "learned", "control_fails"} <= shown
