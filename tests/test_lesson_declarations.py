"""Each lesson is declared once (``LESSON = Lesson(...)``), and the runner's steps read only that:
where the inputs come from, whether they are valid, whether they fit in memory."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from attn_cli import course
from attn_cli import course as cards
from attn_cli import course as registry
from attn_cli.cli import flags
from attn_cli.core.backend_choice import get_backend
from attn_cli.core.errors import UserError
from attn_cli.course import get_lesson
from attn_cli.course import lesson as lesson_module
from attn_cli.course.lesson import Lesson
from attn_cli.lessonfiles.grammar import LABEL_NAMES
from attn_cli.lessonfiles.loader import bundled_lessons_dir, load_bundled, own_lesson_file
from attn_cli.run.runner import (
    Given,
    RunRequest,
    Source,
    draw_inputs,
    guard_memory,
    resolve_inputs,
    validate_inputs,
)

LESSONS = cards.lesson_names()


@pytest.mark.parametrize("name", sorted(LESSONS))
def test_every_lesson_is_declared_completely_and_consistently(name):
    lesson = get_lesson(name)
    assert isinstance(lesson, Lesson) and lesson.name == name
    assert lesson.card is cards.card(name)  # the card the command and the API are made from
    names = [spec.name for spec in lesson.inputs]
    assert len(set(names)) == len(names)
    assert set(lesson.labels) <= set(LABEL_NAMES)
    # Inputs given on top of an example are inputs the example may leave out.
    optional = {spec.name for spec in lesson.inputs if not spec.required}
    assert lesson.example_overrides <= optional
    assert all(key.isidentifier() for key in lesson.options)
    assert lesson.memory_fix
    for spec in lesson.inputs:
        # The command line spells each input as the flag of its card's keyword (cli/flags.py).
        assert flags.message(UserError(lesson.param(spec.name))) == "--" + spec.keyword.replace(
            "_", "-"
        )


@pytest.mark.parametrize("name", sorted(LESSONS))
def test_random_inputs_follow_the_declaration(name):
    """The default random shapes name declared inputs; the draw has those shapes and passes
    the lesson's own validate with the default options; the estimate is a positive size."""
    lesson = get_lesson(name)
    shapes = lesson.random_shapes(lesson.card.with_size_defaults({}))
    assert set(shapes) <= {spec.name for spec in lesson.inputs}
    inputs = draw_inputs(lesson, shapes, 0, dict(lesson.options))
    assert {key: value.shape for key, value in inputs.items()} == shapes
    assert lesson.estimate_bytes(shapes, dict(lesson.options), 8) > 0


@pytest.mark.parametrize("path", sorted(bundled_lessons_dir().glob("*.toml")), ids=lambda p: p.stem)
def test_every_bundled_file_passes_the_checks_a_lecturers_file_gets(path: Path):
    own_lesson_file(path, course, path.stem)  # its inputs, labels and options are the lesson's


def test_an_unknown_lesson_names_the_known_ones():
    known = ", ".join(sorted(LESSONS))
    with pytest.raises(UserError) as error:
        get_lesson("scaeld")
    assert str(error.value) == f"unknown lesson 'scaeld'; choose one of: {known}."


def test_a_module_declaring_another_lesson_is_refused(monkeypatch):
    import sys

    from attn_cli.course.scaled import build as scaled

    monkeypatch.setattr(registry, "is_lesson", lambda name: name in (*LESSONS, "copy"))
    monkeypatch.setitem(sys.modules, "attn_cli.course.copy.build", scaled)
    with pytest.raises(
        TypeError, match=r"LESSON must be Lesson\(CARD, ...\) with the card of 'copy'"
    ):
        get_lesson("copy")


def test_options_with_puts_each_layer_over_the_defaults():
    lesson = get_lesson("scaled")
    merged = lesson.options_with({"scale": False, "dropout": 0.5}, {"dropout": 0.1})
    assert merged == {
        **{"scale": False, "valid_len": None, "dropout": 0.1, "normalise": "softmax"},
        **{"softcap": None, "qk_norm": None},
    }
    assert lesson.options["scale"] is True  # the declaration is not changed


def test_given_drops_what_was_not_given_and_refuses_a_size_below_one():
    request = RunRequest("multihead", inputs={"X": None}, options={"heads": 2, "causal": None})
    given = Given.of(replace(request, sizes={"n": 3, "d_model": None}))
    assert (given.sizes, given.inputs, given.options) == ({"n": 3}, {}, {"heads": 2})
    assert given.any
    with pytest.raises(UserError, match=r"^d_model must be at least 1, not 0\.$"):
        Given.of(replace(request, sizes={"d_model": 0}))


def resolved(request: RunRequest) -> Source:
    lesson = get_lesson(request.lesson)
    return resolve_inputs(lesson, load_bundled(request.lesson), request, Given.of(request))


def test_sizes_resolve_to_random_shapes_drawn_later():
    source = resolved(RunRequest("scaled", sizes={"n": 3, "dk": 2}))
    assert source.inputs is None and source.example is None
    assert source.shapes == {"Q": (3, 2), "K": (3, 2), "V": (3, 2)}


def test_an_override_alone_is_added_to_the_lecture_example():
    """bahdanau --values on top of the default example: the example's inputs plus the values."""
    values = [[1.0], [2.0], [3.0]]
    source = resolved(RunRequest("bahdanau", inputs={"values": values}))
    example = load_bundled("bahdanau").example(None)
    assert source.example == example
    assert set(source.inputs or {}) == set(example.inputs) | {"values"}
    np.testing.assert_array_equal((source.inputs or {})["values"], np.array(values))


def test_options_alone_are_the_users_own_run_of_a_lesson_without_inputs():
    source = resolved(RunRequest("posenc", options={"positions": 4}))
    assert (source.inputs, source.shapes, source.example) == ({}, {}, None)


def test_an_example_with_the_users_own_inputs_is_refused():
    request = RunRequest("scaled", inputs={"Q": "1", "K": "1", "V": "1"}, example="x")
    with pytest.raises(UserError, match=r"^example picks a lecture example"):
        resolved(request)


def test_a_lecture_examples_own_fault_names_its_file_and_example():
    lesson, data = get_lesson("scaled"), load_bundled("scaled")
    example = data.example(None)
    assert example is not None
    bad = {"Q": np.ones((1, 2)), "K": np.ones((2, 3)), "V": np.ones((2, 1))}
    source = Source(bad, {}, example)
    options = [dict(lesson.options)]
    with pytest.raises(UserError) as error:
        validate_inputs(lesson, data, source, [bad], options, "float64", users_own=False)
    assert str(error.value).startswith(f"{data.path}: example {example.name!r}, inputs: Q has 2")
    with pytest.raises(UserError) as error:
        validate_inputs(lesson, data, source, [bad], options, "float64", users_own=True)
    assert str(error.value).startswith("Q has 2 columns but K has 3")


def test_an_input_beyond_the_dtype_is_refused_by_its_flag():
    lesson, data = get_lesson("scaled"), load_bundled("scaled")
    inputs = {"Q": np.full((1, 1), 1e6), "K": np.ones((1, 1)), "V": np.ones((1, 1))}
    with pytest.raises(
        UserError,
        match=r"^q has 1e\+06, beyond the largest float16 \(65504\); use dtype=float32 or float64",
    ):
        validate_inputs(lesson, data, Source(inputs, {}), [inputs], [{}], "float16", users_own=True)


def test_memory_is_the_inputs_and_each_items_walkthrough(monkeypatch):
    """A batch of three needs its inputs (and their float64 copies) and three items' estimates;
    one byte less than that free is refused with the lesson's fix."""
    lesson, backend = get_lesson("scaled"), get_backend("numpy")
    item = {"Q": np.ones((2, 4)), "K": np.ones((5, 4)), "V": np.ones((5, 3))}
    batch = [item] * 3
    shapes = {name: (3, *array.shape) for name, array in item.items()}
    entries = 3 * (2 * 4 + 5 * 4 + 5 * 3)
    item_shapes = {name: array.shape for name, array in item.items()}
    options = dict(lesson.options)
    needed = entries * (8 + 8) + 3 * lesson.estimate_bytes(item_shapes, options, 8)
    monkeypatch.setattr("attn_cli.core.backend.FITS_ANYWHERE", 0)  # asked for a few KB too
    monkeypatch.setattr("attn_cli.core.backend.available_host_bytes", lambda: needed)
    guard_memory(lesson, backend, shapes, batch, options)
    monkeypatch.setattr("attn_cli.core.backend.available_host_bytes", lambda: needed - 1)
    with pytest.raises(UserError, match=r"^this scaled walkthrough needs about .*; choose smaller"):
        guard_memory(lesson, backend, shapes, batch, options)


def test_a_lessons_own_memory_fix_is_named(monkeypatch):
    lesson, backend = get_lesson("posenc"), get_backend("numpy")
    monkeypatch.setattr("attn_cli.core.backend.FITS_ANYWHERE", 0)
    monkeypatch.setattr("attn_cli.core.backend.available_host_bytes", lambda: 1)
    with pytest.raises(UserError, match=r"lower positions or d_model\.$") as raised:
        guard_memory(lesson, backend, {}, None, dict(lesson.options))
    assert flags.message(raised.value).endswith("lower --positions or --d-model.")


def test_a_small_run_does_not_ask_the_machine_for_its_memory(monkeypatch):
    """A 2 × 2 example needs a few kilobytes: no /proc/meminfo read for it (FITS_ANYWHERE)."""
    lesson, backend = get_lesson("scaled"), get_backend("numpy")
    shapes = {"Q": (2, 2), "K": (2, 2), "V": (2, 2)}

    def asked() -> int:
        raise AssertionError("asked the machine for its free memory")

    monkeypatch.setattr("attn_cli.core.backend.available_host_bytes", asked)
    options = dict(lesson.options)
    guard_memory(lesson, backend, shapes, None, options)
    large = {"Q": (500, 64), "K": (500, 64), "V": (500, 64)}  # 1.5 MB of inputs and copies
    with pytest.raises(AssertionError, match="asked the machine"):
        guard_memory(lesson, backend, large, None, options)


def test_random_inputs_are_standard_normal_from_the_seed_unless_the_lesson_draws_its_own():
    shapes = {"Q": (2, 3), "K": (4, 3), "V": (4, 2)}
    drawn = draw_inputs(get_lesson("scaled"), shapes, 7, {})
    rng = np.random.default_rng(7)
    for name, shape in shapes.items():  # drawn in the order of the shapes
        np.testing.assert_array_equal(drawn[name], rng.standard_normal(shape))
    multihead = get_lesson("multihead")
    assert multihead.draw_random is not lesson_module.draw_standard_normal
    shapes = multihead.random_shapes({"n": 3, "d_model": 4})
    mine = draw_inputs(multihead, shapes, 7, dict(multihead.options))
    np.testing.assert_array_equal(mine["X"], np.random.default_rng(7).standard_normal((3, 4)))
    assert not np.array_equal(mine["W_Q"], np.random.default_rng(7).standard_normal((4, 4)))


def test_a_drawn_input_the_lesson_refuses_is_a_user_error():
    """Random inputs are checked with the options too: 3 heads do not divide d_model = 4."""
    multihead = get_lesson("multihead")
    shapes = multihead.random_shapes({"n": 3, "d_model": 4})
    with pytest.raises(UserError, match="heads"):
        draw_inputs(multihead, shapes, 0, multihead.options_with({"heads": 3}))


def test_one_list_of_lessons():
    """The package's lesson functions are the cards, in the cards' order."""
    import attn_cli

    assert [name for name in attn_cli.__all__ if name in LESSONS] == list(LESSONS)


def test_the_bundled_lesson_files_texts_are_printable_as_they_are():
    """A bundled file's texts are read as they are (no printable() on each run): they must
    already be what printable() makes of them, as a user's file is made."""
    from attn_cli.core.usertext import printable
    from attn_cli.lessonfiles.loader import bundled_lesson_names, load_bundled

    for name in bundled_lesson_names():
        lesson = load_bundled(name)
        texts = [lesson.title, lesson.intro, *lesson.notes.values(), *lesson.headings.values()]
        for step in lesson.steps.values():
            texts += [text for text in (step.title, step.explanation, step.latex) if text]
        for example in lesson.examples:
            texts += [example.name, example.description, example.source]
            texts += [label for names in example.labels.values() for label in names]
        assert [text for text in texts if printable(text) != text] == [], name
