"""attn learn induction: the data, the scores on hand-built patterns, tiny-budget training
(rows sum to 1, determinism, held-out evaluation), the JSON contract, saved weights read back,
the errors; one ``training`` test trains the default budget and asserts the issue's targets."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

from attn_cli.learn import induction_data as data
from attn_cli.render.json_render import schema
from tests.conftest import assert_user_error
from tests.waits import HANG_GUARD_SECONDS

TINY = ("--steps", "20", "--hidden", "8", "--max-len", "6")


# --- data ------------------------------------------------------------------------------------


def test_the_second_half_repeats_the_first_with_distinct_tokens_and_varying_lengths():
    sequences = data.draw(np.random.default_rng(1), 500, max_len=9)
    assert sequences.tokens.shape == (500, 18)
    assert set(sequences.lengths.tolist()) == set(range(data.MIN_LEN, 10))
    for row, n in zip(sequences.tokens, sequences.lengths.tolist(), strict=True):
        assert np.array_equal(row[n : 2 * n], row[:n])
        assert len(set(row[:n].tolist())) == n  # distinct: a token's first occurrence is unique
        assert not row[2 * n :].any()  # padding
        assert row.max() < data.VOCAB


def test_predictable_positions_are_the_second_half_but_its_last_token():
    sequences = data.Sequences(np.array([[3, 5, 7, 9, 3, 5, 7, 9, 0, 0]]), np.array([4]))
    assert sequences.predictable()[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 0, 0, 0]
    assert sequences.real()[0].tolist() == [1] * 8 + [0, 0]
    assert data.text(sequences, 0) == "d f h j | d f h j"


def test_held_out_sequences_are_never_trained_on_and_the_split_is_seeded():
    split = data.split(seed=5, steps=200, batch=64, held_out=256, max_len=5)
    held = set(split.held_out.identities())
    trained = {key for batch in split.batches for key in batch.identities()}
    # Short segments repeat often (24·23·22·21 four-token ones), so clashes were drawn again.
    assert held and trained and not held & trained
    again = data.split(seed=5, steps=200, batch=64, held_out=256, max_len=5)
    assert np.array_equal(again.batches[-1].tokens, split.batches[-1].tokens)
    other = data.split(seed=6, steps=200, batch=64, held_out=256, max_len=5)
    assert not np.array_equal(other.held_out.tokens, split.held_out.tokens)


# --- the scores on hand-built patterns ------------------------------------------------------


def _pattern(lengths: list[int], t: int, where: str) -> np.ndarray:
    """(count, 1, T, T): every row's whole weight on one key: the token after the current
    token's first occurrence ("prefix", in the second half; the previous token elsewhere), the
    previous token ("previous"), or spread over every key ("even")."""
    weights = np.zeros((len(lengths), 1, t, t))
    for i, n in enumerate(lengths):
        for q in range(t):
            if where == "even":
                weights[i, 0, q, :] = 1 / t
            elif where == "prefix" and n <= q < 2 * n:
                weights[i, 0, q, q - n + 1] = 1
            else:
                weights[i, 0, q, max(q - 1, 0)] = 1
    return weights


def test_a_perfect_induction_pattern_scores_1_and_an_even_one_1_over_t():
    lengths = np.array([4, 6, 5])
    induction = _pattern([4, 6, 5], 12, "prefix")
    assert data.prefix_matching(induction, lengths).tolist() == [1.0]
    # Its first-half rows look at the previous token, its second-half rows do not.
    assert data.previous_token(induction, lengths)[0] == pytest.approx((3 + 5 + 4) / (7 + 11 + 9))
    even = _pattern([4, 6, 5], 12, "even")
    assert data.prefix_matching(even, lengths) == pytest.approx([1 / 12])
    assert data.previous_token(even, lengths) == pytest.approx([1 / 12])
    previous = _pattern([4, 6, 5], 12, "previous")
    assert data.previous_token(previous, lengths).tolist() == [1.0]
    assert data.prefix_matching(previous, lengths).tolist() == [0.0]


def test_chance_is_the_mean_of_1_over_t_plus_1_over_the_scored_rows():
    # L = 2: prefix rows t = 2, 3 -> (1/3 + 1/4) / 2; previous rows t = 1, 2, 3.
    assert data.chance(np.array([2]), "prefix") == pytest.approx((1 / 3 + 1 / 4) / 2)
    assert data.chance(np.array([2]), "previous") == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)


def test_accuracy_counts_only_the_predictable_positions():
    sequences = data.Sequences(np.array([[3, 5, 7, 3, 5, 7]]), np.array([3]))
    right = np.array([[0, 0, 0, 5, 7, 0]])  # positions 3 and 4 predict x_4, x_5
    assert data.accuracy(right, sequences) == 1.0
    assert data.accuracy(np.array([[5, 7, 3, 5, 0, 9]]), sequences) == 0.5


# --- tiny-budget training ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(request):
    pytest.importorskip("torch")
    from attn_cli.learn import common, induction

    return induction.run(common.LearnOptions("induction", seed=3, steps=20, hidden=8, max_len=6))


def test_every_attention_row_sums_to_1_before_and_after(tiny):
    from attn_cli.learn.induction_model import HEADS

    heads = [step for step in tiny.steps if step.kind == "weights"]
    assert len(heads) == 2 * (
        2 * HEADS + HEADS
    )  # before and after: two layers and the control's one
    shortest = 2 * data.MIN_LEN  # the shortest held-out sequence: its segment twice
    for step in heads:
        value = np.asarray(step.value)
        assert value.shape == (shortest, shortest)
        assert np.allclose(value.sum(axis=-1), 1, atol=1e-6)
        assert np.all(np.triu(value, 1) == 0)  # causal


def test_tiny_budget_is_reported_not_claimed(tiny):
    # 20 steps teach nothing: the claims that a head does something are withheld.
    shown = {note.key for note in tiny.notes}
    withheld = {note.key for note in tiny.withheld}
    assert "not_formed" in shown and "induction_formed" in withheld
    assert all(note.key != "induction_head" for step in tiny.steps for note in step.notes)


def test_the_ablation_text_names_only_the_rows_it_shows(tiny):
    """20 steps form no induction head, so the table has one row per head and no row of the
    induction heads together; the text said 'then with the last layer's induction heads taken
    out together' above it."""
    from attn_cli.learn.induction_model import HEADS

    step = tiny.find("ablation")
    assert [row["zeroed"] for row in step.value] == [
        f"layer {layer}, head {head}" for layer in (1, 2) for head in range(1, HEADS + 1)
    ]
    assert "taken out together" not in step.explanation
    assert step.explanation.startswith(
        "The two-layer model on the same 256 held-out sequences with one head's output taken out "
        "of the sum (its rows of W_O set to zero, every other weight kept). Intact, it predicts"
    )


def _with_scores(walkthrough, model, **changes):
    """The walkthrough with ``model``'s meta scores replaced (the numbers the claims read)."""
    import dataclasses

    models = dict(walkthrough.meta["models"])
    models[model] = {**models[model], **changes}
    return dataclasses.replace(walkthrough, meta={**walkthrough.meta, "models": models})


def _with_step(walkthrough, key, value):
    import dataclasses

    steps = tuple(
        dataclasses.replace(step, value=value) if step.key == key else step
        for step in walkthrough.steps
    )
    return dataclasses.replace(walkthrough, steps=steps)


def test_the_circuit_is_named_only_where_zeroing_its_heads_costs_the_accuracy(tiny):
    """The circuit note reads the ablation table: shown for a layer-1 previous-token head whose
    loss costs at least ABLATION_MIN of the accuracy (more than the other head's) and induction
    heads whose loss does too; withheld for drops too small, another head, or no previous-token
    head."""
    from attn_cli.learn.induction import ABLATION_MIN, INDUCTION_MIN, PREVIOUS_MIN, TEXTS

    claim = TEXTS.claims["circuit"]
    prefix = np.array([[0.1, 0.2], [0.3, INDUCTION_MIN + 0.1]])
    previous = np.array([[PREVIOUS_MIN + 0.2, 0.1], [0.1, 0.1]])
    formed = _with_scores(
        tiny, "two", prefix_matching=prefix, previous_token=previous, accuracy=0.9
    )
    drops = {"layer 1, head 1": 0.5, "layer 1, head 2": 0.01, "layer 2, head 1": 0.02}
    drops["layer 2, head 2"] = ABLATION_MIN + 0.1
    table = [{"zeroed": k, "accuracy": 0.9 - d, "drop": d} for k, d in drops.items()]
    values = {
        "previous_head": 1,
        "induction_heads": "2",
        "accuracy": 0.9,
        "without_previous": 0.9 - drops["layer 1, head 1"],
        "without_other": 0.9 - drops["layer 1, head 2"],
        "other_head": 2,
        "without_induction": 0.9 - drops["layer 2, head 2"],
    }
    ablated = _with_step(formed, "ablation", table)
    assert claim(ablated, values)
    assert not claim(ablated, {**values, "previous_head": 2})
    assert not claim(ablated, {**values, "without_previous": 0.5})  # not the table's figure
    mild = [{**row, "accuracy": 0.9 - ABLATION_MIN / 2} for row in table]  # zeroing costs little
    small = {**values, **{k: 0.9 - ABLATION_MIN / 2 for k in values if k.startswith("without")}}
    assert not claim(_with_step(formed, "ablation", mild), small)
    weak = _with_scores(formed, "two", previous_token=np.full_like(previous, 0.2))
    assert not claim(_with_step(weak, "ablation", table), values)  # no previous-token head


def test_the_claims_read_the_scores_they_describe(tiny):
    """A note's claim holds only for the scores the walkthrough carries, and only past its
    threshold: given other numbers (an induction head formed, a control that matches it), the
    notes that the tiny budget shows are withheld and those it withholds are shown."""
    from attn_cli.learn.induction import INDUCTION_MIN, PREVIOUS_MIN, TEXTS

    claims = TEXTS.claims
    not_formed = next(note.values for note in tiny.notes if note.key == "not_formed")
    assert claims["not_formed"](tiny, not_formed)
    assert not claims["not_formed"](tiny, {**not_formed, "score": not_formed["score"] + 0.01})
    prefix = np.array([[0.1, 0.2], [0.3, INDUCTION_MIN + 0.1]])
    previous = np.array([[PREVIOUS_MIN + 0.2, 0.1], [0.1, 0.1]])
    formed = _with_scores(tiny, "two", prefix_matching=prefix, previous_token=previous)
    assert not claims["not_formed"](formed, {**not_formed, "score": INDUCTION_MIN + 0.1})
    accuracy = formed.meta["models"]["two"]["accuracy"]
    shown = {"layer": 2, "head": 2, "score": INDUCTION_MIN + 0.1, "accuracy": accuracy}
    assert claims["induction_formed"](formed, {**shown, "chance": 0.1})
    assert not claims["induction_formed"](tiny, {**shown, "chance": 0.1})
    assert claims["induction_head"](formed, {"score": INDUCTION_MIN + 0.1})
    assert not claims["induction_head"](formed, {"score": INDUCTION_MIN + 0.2})  # not a head's
    control = next(note.values for note in [*tiny.notes, *tiny.withheld] if note.key == "control")
    assert claims["control"](tiny, control) == ("control" in {note.key for note in tiny.notes})
    matched = _with_scores(
        tiny, "one", prefix_matching=np.array([[INDUCTION_MIN + 0.1, 0.0]])
    )  # the one-layer model scores past the threshold
    assert not claims["control"](matched, {**control, "score": INDUCTION_MIN + 0.1})


def test_a_loaded_model_says_its_examples_are_held_out(torch, invoke_json, tmp_path):
    path = tmp_path / "induction.npz"
    trained = invoke_json("learn", "induction", *TINY, "--save", str(path))
    loaded = invoke_json("learn", "induction", "--weights", str(path))
    task = {step["key"]: step for step in loaded["steps"]}["task"]["explanation"]
    assert "Shown: the first held-out sequences" in task and "training sequences" in task
    assert " 0 training" not in task
    trained_task = {step["key"]: step for step in trained["steps"]}["task"]["explanation"]
    assert "Shown: a few of the " in trained_task


def test_same_seed_same_numbers(torch, invoke_json):
    first = invoke_json("learn", "induction", *TINY, "--seed", "4")
    again = invoke_json("learn", "induction", *TINY, "--seed", "4")
    assert first["meta"]["models"] == again["meta"]["models"]
    assert first["steps"] == again["steps"]
    other = invoke_json("learn", "induction", *TINY, "--seed", "5")
    assert other["meta"]["models"] != first["meta"]["models"]


def test_json_validates_and_carries_scores_curves_and_matrices(torch, invoke_json):
    document = invoke_json("learn", "induction", *TINY)
    jsonschema.Draft202012Validator(schema()).validate(document)
    models = document["meta"]["models"]
    assert set(models) == {"two", "one"}
    assert models["two"]["prefix_matching"]["shape"] == [2, 2]  # layers, heads
    assert models["one"]["prefix_matching"]["shape"] == [1, 2]
    assert models["two"]["curve"]["step"] == [20]
    assert 0 <= models["two"]["accuracy"] <= 1
    keys = [step["key"] for step in document["steps"]]
    assert "two.layer2.head1.after" in keys and "one.layer1.head2.before" in keys


def test_saved_weights_evaluate_to_the_same_scores(torch, invoke, invoke_json, tmp_path):
    path = tmp_path / "induction.npz"
    trained = invoke_json("learn", "induction", *TINY, "--save", str(path))
    with np.load(path, allow_pickle=False) as archive:
        assert {"seed", "steps", "two.layer2.w_q", "one.unembed"} <= set(archive.files)
    loaded = invoke_json("learn", "induction", "--weights", str(path))
    for key in ("two", "one"):
        for score in ("accuracy", "prefix_matching", "previous_token"):
            assert loaded["meta"]["models"][key][score] == trained["meta"]["models"][key][score]
    assert not any(step["key"].endswith(".before") for step in loaded["steps"])


# --- errors -----------------------------------------------------------------------------------


def test_bad_input_is_one_line_and_exit_2(torch, invoke, tmp_path):
    assert_user_error(invoke("learn", "induction", "--steps", "5"), "too small to say anything")
    assert_user_error(invoke("learn", "induction", "--hidden", "7"), "--hidden 7")
    assert_user_error(invoke("learn", "induction", "--max-len", "4"), "--max-len 4")
    assert_user_error(invoke("learn", "induction", "--max-len", "30"), "--max-len 30")
    other = tmp_path / "other.npz"
    np.savez(other, seed=np.array(0), steps=np.array(1), v=np.zeros(3))
    assert_user_error(invoke("learn", "induction", "--weights", str(other)), "--weights")
    assert_user_error(
        invoke("learn", "induction", "--weights", str(other), "--steps", "30"), "--steps"
    )
    wrong = tmp_path / "wrong.npz"
    np.savez(
        wrong,
        seed=np.array(0),
        steps=np.array(1),
        **{"two.embed": np.zeros((data.VOCAB, 8)), "two.position": np.zeros((12, 8))},
    )
    assert_user_error(invoke("learn", "induction", "--weights", str(wrong)), "two.layer1.w_q")


def test_code_prints_the_training_program_with_the_options(invoke):
    result = invoke("learn", "induction", "--code", "--steps", "123", "--seed", "7")
    assert result.exit_code == 0, result.output
    assert "STEPS = 123" in result.stdout and "SEED = 7" in result.stdout
    compile(result.stdout, "induction.py", "exec")


# --- the default budget -----------------------------------------------------------------------


@pytest.mark.training
def test_the_default_budget_forms_an_induction_head_and_the_control_does_not(torch, invoke):
    """The issue's target (prefix-matching at least 0.8) and the accuracies, which hold with a
    margin over seeds 0 to 5 (prefix-matching 0.84 to 0.93; accuracy 0.987 to 0.997 against the
    control's 0.437 to 0.571), so on another CPU's last digits too. The control's best
    prefix-matching (0.287 to 0.495 over those seeds) and layer 1's previous-token head (0.384 to
    0.553) sit near their claims' thresholds: for them, each claim is shown exactly when its
    number meets it, whichever side of it this machine's training lands."""
    from attn_cli.learn import induction

    result = invoke("learn", "induction", "--format", "json")
    assert result.exit_code == 0, result.output
    output = json.loads(result.stdout)
    two, one = output["meta"]["models"]["two"], output["meta"]["models"]["one"]
    assert max(two["prefix_matching"]["data"][1]) >= 0.8
    assert two["accuracy"] >= 0.9 > one["accuracy"]
    shown = {note["key"] for step in output["steps"] for note in step.get("notes", ())}
    shown |= {note["key"] for note in output["notes"]}
    previous = max(two["previous_token"]["data"][0])
    assert ("circuit" in shown) <= (previous >= induction.PREVIOUS_MIN)
    assert ("previous_token" in shown) == (previous >= induction.PREVIOUS_MIN), shown


@pytest.mark.slow
def test_the_code_program_prints_the_commands_scores(torch, invoke, invoke_json, tmp_path):
    import subprocess
    import sys

    result = invoke("learn", "induction", "--code", *TINY)
    program = tmp_path / "induction.py"
    program.write_text(result.stdout, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        check=True,
        timeout=HANG_GUARD_SECONDS,
    )
    models = invoke_json("learn", "induction", *TINY)["meta"]["models"]
    two = models["two"]
    expected = [
        f"{1 + (key == 'two')} layer(s): held-out accuracy on the predictable tokens "
        f"{models[key]['accuracy']:.3f}"
        for key in ("two", "one")
    ]
    for line in expected:
        assert line in ran.stdout, (line, ran.stdout)
    previous, prefix = two["previous_token"]["data"][1], two["prefix_matching"]["data"][1]
    assert (
        f"layer 2 head 1: previous-token {previous[0]:.3f}, prefix-matching {prefix[0]:.3f}"
        in ran.stdout
    )


def test_the_tour_stop_trains_and_shows_the_walkthrough(torch, invoke, monkeypatch):
    from attn_cli.cli import tour
    from attn_cli.cli.itinerary import TOUR

    stop = next(stop for stop in TOUR if stop.name == "induction")
    assert stop.command_line.startswith("attn learn induction --steps")
    tiny = tour.Stop("induction", stop.title, ("induction", *TINY), command="learn")
    monkeypatch.setattr(tour, "tour", lambda: (tiny,))
    result = invoke("tour")
    assert result.exit_code == 0, result.output
    assert "Skipped" not in result.stdout
    assert "$ attn learn induction --steps 20" in result.stdout
    assert "two layers · layer 2 · head 1 · after training" in result.stdout


def test_the_tour_stop_is_skipped_without_torch(invoke, without_torch, monkeypatch):
    from attn_cli.cli import tour

    tiny = tour.Stop("induction", "Induction", ("induction", *TINY), command="learn")
    monkeypatch.setattr(tour, "tour", lambda: (tiny,))
    result = invoke("tour")
    assert result.exit_code == 0, result.output
    assert "Skipped induction:" in result.stdout and "PyTorch" in result.stdout
