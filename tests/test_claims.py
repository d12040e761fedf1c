"""Every claim printed is true for the numbers printed, on any input (issue 22).

A note that states a property of the data declares its condition (``Texts.claims``); the
recorder withholds it when the condition is false. This module runs every lesson on its bundled
examples, the option variants of test_lesson_texts, and seeded sweeps of random and degenerate
inputs (n = 1, one key, ties, all-equal scores, negative values, m ≠ n, large and tiny
magnitudes), and checks on every run:

* the run ends in a walkthrough or a one-line UserError, never a traceback;
* every claim's condition returns a bool for every note it governs, and a claim shown is true
  (re-evaluated on the finished walkthrough, with every other withheld note gone);
* over the sweep, every declared note is made and every claim is both evaluated and shown at
  least once (a claim never shown is dead text; the tally of withheld ones is the "caught false"
  count of the issue's closing note: ``ATTN_CLAIMS_REPORT=path`` writes it as JSON).
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from attn_cli.api import lesson_function
from attn_cli.cli.app import app
from attn_cli.cli.flags import COMMAND_LINE
from attn_cli.core.errors import UserError
from attn_cli.core.model import Note, Walkthrough
from attn_cli.core.templates import spell_parameters
from attn_cli.course import card, get_lesson, recorder
from attn_cli.lessonfiles.loader import load_bundled
from attn_cli.lessonfiles.texts import Texts
from tests.lesson_runs import lessons_with_runs, runs_of
from tests.test_lesson_texts import never_made, runs

LESSONS = sorted(lessons_with_runs())

# Degenerate forms of a random input: each maps (array, rng) to another array of its shape.
TRANSFORMS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "random": lambda a: a,
    "negative": lambda a: -np.abs(a),
    "ties": lambda a: np.broadcast_to(a[..., :1, :], a.shape).copy() if a.ndim >= 2 else a,
    "zeros": np.zeros_like,
    "ones": np.ones_like,
    "large": lambda a: a * 1e3,
    "huge": lambda a: a * 1e150,
    "tiny": lambda a: a * 1e-150,
    "integers": lambda a: np.round(a * 2),
}
# Sizes of the random inputs: every size name a lesson takes gets the value (m ≠ n and m = n).
SIZE_SETS: tuple[dict[str, int], ...] = (
    {"n": 1, "m": 1, "dk": 1, "dv": 1, "d": 1, "da": 1, "d_model": 2, "d_in": 2, "d_out": 2},
    {"n": 2, "m": 3, "dk": 2, "dv": 1, "d": 2, "da": 2, "d_model": 4, "d_in": 3, "d_out": 4},
    {"n": 5, "m": 2, "dk": 3, "dv": 2, "d": 3, "da": 3, "d_model": 4, "d_in": 4, "d_out": 2},
    # Square (m = n), the usual case and the only one --causal takes.
    {"n": 5, "m": 5, "dk": 3, "dv": 3, "d": 2, "da": 2, "d_model": 6, "d_in": 2, "d_out": 6},
)


@dataclass
class Tally:
    """What the sweep saw for one lesson."""

    inputs: int = 0
    refused: int = 0
    notes: set[str] = field(default_factory=set)  # every note key made (shown or withheld)
    shown: Counter[str] = field(default_factory=Counter)  # claims shown, by key
    withheld: Counter[str] = field(default_factory=Counter)  # claims caught false, by key


def every_note(walkthrough: Walkthrough) -> Iterator[Note]:
    for step in walkthrough.steps:
        yield from step.notes
    yield from walkthrough.notes


def drawn_inputs(lesson: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(description, keyword arguments of the lesson's Python function), seeded."""
    sweeps = runs_of(lesson).sweeps  # a lesson without matrix inputs: its option sweep
    if sweeps is not None:
        for options in sweeps:
            yield f"{options}", options
        return
    declared = get_lesson(lesson)
    keyword = {spec.name: spec.keyword for spec in declared.inputs}
    takes = [size.name for size in card(lesson).sizes]
    for (number, sizes), seed in itertools.product(enumerate(SIZE_SETS), (100, 200)):
        base = declared.random_shapes({name: sizes[name] for name in takes if name in sizes})
        for (name, transform), options in itertools.product(
            TRANSFORMS.items(), ({}, *runs_of(lesson).options)
        ):
            shapes = declared.option_shapes(base, declared.options_with(options))
            drawn = declared.draw_random(shapes, seed + number)
            given = {keyword[key]: transform(np.asarray(value)) for key, value in drawn.items()}
            if lesson == "graph":  # a random 0/1 graph, isolated nodes included
                n = sizes["n"]
                given["adjacency"] = np.random.default_rng(seed + number).integers(0, 2, (n, n))
            yield f"{name} {dict(shapes)} {options}", {**given, **options}


def sweep(lesson: str) -> Tally:
    """Run ``lesson`` on every input above, checking each run's claims as it is finished."""
    tally = Tally()
    original = recorder.keep_true_claims

    def checked(walkthrough: Walkthrough, texts: Texts) -> Walkthrough:
        for note in every_note(walkthrough):
            tally.notes.add(note.key)
            claim = texts.claims.get(note.key)
            if claim is not None:
                held = claim(walkthrough, note.values)
                assert isinstance(held, bool | np.bool_), (note.key, type(held))
        finished = original(walkthrough, texts)
        for note in every_note(finished):
            claim = texts.claims.get(note.key)
            if claim is not None:
                assert claim(finished, note.values), (lesson, note.key, note.values)
                tally.shown[note.key] += 1
        for note in finished.withheld:
            tally.withheld[note.key] += 1
        return finished

    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recorder, "keep_true_claims", checked)
        for args in runs(lesson):
            tally.inputs += 1
            result = runner.invoke(app, [lesson, *args, "--format", "json"])
            assert result.exit_code in (0, 2), (lesson, args, result.output)
            tally.refused += result.exit_code == 2
        function = lesson_function(lesson)
        for description, given in drawn_inputs(lesson):
            tally.inputs += 1
            try:
                with np.errstate(all="ignore"):
                    function(**given)
            except UserError:
                tally.refused += 1
            except Exception as error:  # a traceback: name the input
                raise AssertionError(f"{lesson} on {description}: {error!r}") from error
    return tally


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_claim_shown_holds_on_any_input(lesson):
    tally = sweep(lesson)
    texts = get_lesson(lesson).texts
    assert tally.inputs - tally.refused >= 10, "the sweep must run, not be refused"
    expected = set(texts.notes) - never_made(lesson)
    assert expected <= tally.notes, f"notes never made: {sorted(expected - tally.notes)}"
    never_shown = sorted(set(texts.claims) - set(tally.shown))
    assert not never_shown, f"claims never shown true by any input: {never_shown}"
    report = os.environ.get("ATTN_CLAIMS_REPORT")
    if report:
        entry = {
            "inputs": tally.inputs,
            "refused": tally.refused,
            "claims": {
                key: {"shown": tally.shown[key], "withheld": tally.withheld[key]}
                for key in texts.claims
            },
        }
        path = f"{report}.{lesson}.json"
        with open(path, "w", encoding="utf-8") as file:
            json.dump(entry, file, indent=1)


def test_a_false_claim_is_withheld_and_a_true_one_kept():
    """The gate itself, on a walkthrough made by hand: the claim reads the note's values."""
    texts = Texts(
        notes={"big": ("x",), "plain": ()},
        claims={"big": lambda walkthrough, values: values["x"] > 1},
        general=("plain",),
    )
    notes = (Note("big", "x = {x} is big", {"x": 0.5}), Note("plain", "always"))
    kept_notes = (Note("big", "x = {x} is big", {"x": 2.0}),)
    draft = Walkthrough(
        "scaled", "", "", None, "numpy", "cpu", "float64", (), (), None, notes=notes
    )
    gated = recorder.keep_true_claims(draft, texts)
    assert [note.key for note in gated.notes] == ["plain"]
    assert [note.values for note in gated.withheld] == [{"x": 0.5}]
    kept = recorder.keep_true_claims(
        Walkthrough(
            "scaled", "", "", None, "numpy", "cpu", "float64", (), (), None, notes=kept_notes
        ),
        texts,
    )
    assert kept.notes == kept_notes and kept.withheld == ()


def test_a_claim_must_name_a_declared_note():
    with pytest.raises(TypeError, match="name no declared note"):
        Texts(notes={"a": ()}, claims={"b": lambda walkthrough, values: True})


def test_no_renderer_shows_a_withheld_note():
    texts = Texts(notes={"big": ("x",)}, claims={"big": lambda walkthrough, values: False})
    walkthrough = lesson_function("scaled")()
    note = Note("big", "WITHHELD-{x}", {"x": 1.0})
    from dataclasses import replace

    gated = recorder.keep_true_claims(replace(walkthrough, notes=(note,)), texts)
    assert gated.withheld == (note,)
    assert "WITHHELD" not in json.dumps(gated.to_dict())
    assert "WITHHELD" not in gated.to_markdown()
    assert "WITHHELD" not in gated.to_latex()
    assert "WITHHELD" not in gated.to_html()


FORMATS = (
    ("--format", "rich"),
    ("--format", "markdown"),
    ("--format", "latex"),
    ("--format", "json"),
    ("--quiz",),
)


def _words(text: str) -> str:
    """Text with its line breaks and runs of spaces as one space (a terminal wraps lines)."""
    return " ".join(text.replace("\\", " ").split())


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_output_states_a_withheld_note_or_another_settings_description(lesson):
    """Issue 42: every example and option variant of the lesson, in every format and the quiz:
    no note whose claim was false of the numbers is printed, and an example's description is
    printed only where the options are the example's own (``scaled --no-scale`` printed "scaled
    by √2: the slide's four steps" above three steps)."""
    made: list[Walkthrough] = []
    original = recorder.keep_true_claims

    def kept(walkthrough: Walkthrough, texts: Texts) -> Walkthrough:
        made.append(original(walkthrough, texts))
        return made[-1]

    runner = CliRunner()
    examples = {example.name: example for example in load_bundled(lesson).examples}
    as_written: dict[str, Any] = {}  # example -> the options the lesson read for it alone
    precision = card(lesson).precision
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recorder, "keep_true_claims", kept)
        for name in examples:
            made.clear()
            runner.invoke(app, [lesson, "--example", name, "--format", "json"])
            as_written[name] = made[-1].meta.get("options")
        for args, shown in itertools.product(runs(lesson), FORMATS):
            made.clear()
            result = runner.invoke(app, [lesson, *args, *shown], input="\n" * 200)
            if result.exit_code == 2 and "--quiz" in shown:
                continue  # nothing small enough to ask
            assert result.exit_code == 0, (lesson, args, shown, result.output)
            walk = made[-1]
            out = _words(result.stdout)
            for note in walk.withheld:
                assert _words(note.text(precision)) not in out, (args, shown, note.key)
            example = examples.get(walk.example or "")
            if example is None or not example.description:
                continue
            own = walk.meta.get("options") == as_written[example.name]
            written = spell_parameters(example.description, COMMAND_LINE)  # the CLI's words
            assert (walk.example_description == written) == own, (args, shown)
            if shown[-1] in ("rich", "markdown", "--quiz"):
                described = _words(written)[:60] in out
                assert described == own, (args, shown)
