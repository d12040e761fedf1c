"""attn explore: the lesson's walkthrough recomputed on every edit, driven by Textual's Pilot.

The app is checked against the library: after each edit its steps hold the values that
``attn_cli.<lesson>(...)`` (the Python API) and the copied command line give for the same
inputs; a bad entry is refused with the command line's own message. The snapshots show every
lesson's first screen at 80 × 24 (a projector) and 120 × 40, and each asserts that the numbers
of the step in focus are on screen. Each bug of issue 46 ("the explorer on a projector") has a
test of its own, named after what it checks (the numbers on one screen, the keys on screen, the
lesson list's type-to-jump, undo, the marks, the checkboxes, the controls that do nothing, the
browser's first key and a click on a cell)."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("textual", reason="attn explore needs textual (the explore extra)")

import attn_cli
from attn_cli import course as cards
from attn_cli.cli import flags
from attn_cli.explore import state as st
from attn_cli.explore.serve import external_addresses, offline_template
from tests.conftest import assert_user_error, unwrap
from tests.waits import HANG_GUARD_SECONDS

SIZE = (80, 24)
SIZES = {"80x24": (80, 24), "120x40": (120, 40)}


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def explorer(lesson: str = "scaled", **kwargs: Any) -> Any:
    from attn_cli.explore.app import Explorer

    return Explorer(lesson, door=flags.COMMAND_LINE, **kwargs)


def step_values(walkthrough: Any) -> dict[str, Any]:
    return {step.key: step.value for step in walkthrough.steps}


def assert_same_steps(shown: Any, expected: Any) -> None:
    """Two walkthroughs with the same steps, holding the same values."""
    assert [step.key for step in shown.steps] == [step.key for step in expected.steps]
    for key, value in step_values(expected).items():
        got = step_values(shown)[key]
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(got, value, rtol=0, atol=1e-15, err_msg=key)
        else:
            assert got == value, key


def numbers(value: Any) -> np.ndarray:
    """A JSON array's entries as floats (the JSON writes ±inf and NaN as text)."""
    return np.array(unwrap(value), dtype=np.float64)


def shown_text(app: Any, index: int) -> str:
    """The text of the walkthrough step ``index`` (from 0) as the screen draws it."""
    from attn_cli.explore.widgets import Rendered

    widget = list(app.query(".walkthrough-step").results(Rendered))[index]
    widget.catch_up()
    return "\n".join(line.text for line in widget.draw(widget.content_size.width or 76))


def screen_lines(app: Any) -> list[str]:
    """The screen as plain text, row by row (what the terminal shows; Textual 8.2.8's
    compositor, pinned with the snapshots)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def unfinished(app: Any) -> list[str]:
    """What the app has yet to do: messages queued or being handled (by the app or any widget
    of any screen), callbacks waiting for the next message or the next refresh, workers
    running, and the explorer's own check of its controls (a timer: Explorer.schedule_checks).

    Textual's Pilot waits by a heuristic (textual._wait.wait_for_idle: the process used little
    CPU for a moment), which a loaded machine fools: a key's message chain (the table posts an
    Edit, the app opens the editor) was still under way when press() returned. Textual has no
    public test of "nothing left to do", so this reads its message pumps' own state beside the
    public message_queue_size (Textual is pinned for the snapshots: pyproject.toml)."""
    nodes = [
        app,
        *(node for screen in app.screen_stack for node in screen.walk_children(with_self=True)),
    ]
    waiting = [
        repr(node)
        for node in nodes
        if node.message_queue_size or node._pending_message is not None or node._next_callbacks
    ]
    waiting += [f"{screen!r} (after a refresh)" for screen in app.screen_stack if screen._callbacks]
    waiting += [repr(worker) for worker in app.workers if not worker.is_finished]
    if getattr(app, "checks_pending", False):
        waiting.append("the check of the controls")
    return waiting


async def quiet(pilot: Any) -> None:
    """Wait until the app has nothing left to do (unfinished), three looks in a row."""
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    calm = 0
    while calm < 3:
        waiting = unfinished(pilot.app)
        calm = 0 if waiting else calm + 1
        if time.monotonic() > deadline:
            raise AssertionError(f"the app never finished: {waiting}")
        pilot.app.screen._on_timer_update()  # the refresh that callbacks after one wait for
        await asyncio.sleep(0.001)  # the app's turn (a poll of the state, not a guess at time)


@pytest.fixture(autouse=True)
def pilot_waits_for_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key, click and pause of a test returns only once the app has handled it (quiet),
    and the app is ready when a test starts driving it."""
    import contextlib

    from textual.app import App
    from textual.pilot import Pilot

    press, click, pause, run_test = Pilot.press, Pilot.click, Pilot.pause, App.run_test

    async def pressed(self: Any, *keys: str) -> None:
        await press(self, *keys)
        await quiet(self)

    async def clicked(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = await click(self, *args, **kwargs)
        await quiet(self)
        return result

    async def paused(self: Any, delay: float | None = None) -> None:
        await pause(self, delay)
        await quiet(self)

    @contextlib.asynccontextmanager
    async def ready(self: Any, *args: Any, **kwargs: Any) -> Any:
        async with run_test(self, *args, **kwargs) as pilot:
            await quiet(pilot)
            yield pilot

    monkeypatch.setattr(Pilot, "press", pressed)
    monkeypatch.setattr(Pilot, "click", clicked)
    monkeypatch.setattr(Pilot, "pause", paused)
    monkeypatch.setattr(App, "run_test", ready)


async def settled(pilot: Any) -> None:
    """Wait until the app has drawn every step shown (the steps out of sight are drawn right
    after the frame, a few at a time) and checked which controls change a number (a moment
    after the frame: Explorer.schedule_checks)."""
    from attn_cli.explore.widgets import Rendered

    app = pilot.app
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while True:
        await quiet(pilot)
        if not any(widget.stale for widget in app.query(Rendered) if widget.display):
            return
        if time.monotonic() > deadline:
            raise AssertionError("the app never drew every step")


def message(app: Any) -> str:
    return str(app.query_one("#message").render())


def title(app: Any) -> str:
    return str(app.query_one("#title").render())


# The pure parts -------------------------------------------------------------------------------


def test_changed_entries_marks_each_entry_that_moved_and_which_way():
    before = attn_cli.scaled("1,0;0,1", "1,1;2,0", "0.1,0.2;0.3,0.4")
    after = attn_cli.scaled("1,0;0,1", "1,1;2,0", "0.1,0.2;0.3,0.9")  # only V[2,2] moved, up
    changes = st.changed_entries(before, after)
    # Scores and weights do not read V; the output's second column is the weights times V's.
    assert changes["scores"].count == 0 and changes["weights"].count == 0
    assert changes["output"].value.tolist() == [[0, st.ROSE], [0, st.ROSE]]
    assert changes["output"].count == 2
    first = st.changed_entries(None, after)["output"]  # a first screen: nothing moved
    assert first.value is False and first.count == 0


def test_the_softmax_intermediates_have_changes_of_their_own():
    """The side tables of a softmax step (e^s and Σ e^s by hand, row max, shifted, exp, row
    sum) are compared too."""
    before = attn_cli.scaled("1,0;0,1", "1,1;2,0", "0.1,0.2;0.3,0.4")
    after = attn_cli.scaled("1.5,0;0,1", "1,1;2,0", "0.1,0.2;0.3,0.4")  # query 1 moved
    change = st.changed_entries(before, after)["weights"]
    labels = [part.label for part in after.steps[2].parts]
    assert len(change.parts) == len(labels) == 6
    by_label = dict(zip(labels, change.parts, strict=True))
    assert by_label["row max"].tolist() == [[st.ROSE], [0]]  # row 1's max rose, row 2's stayed
    assert change.count == st.changed_count(change.value) + sum(map(st.changed_count, change.parts))


def test_value_changes_of_other_kinds_are_whole():
    nan = np.array([np.nan, 1.0])
    assert not st.value_changes(nan, nan.copy()).any()  # NaN where NaN was: unchanged
    assert st.value_changes(nan, np.array([2.0, 1.0])).tolist() == [st.MOVED, 0]
    assert st.value_changes(np.array([-np.inf]), np.array([0.0])).tolist() == [st.ROSE]
    assert st.value_changes(np.zeros(2), np.zeros(3)) is True  # a new shape: all of it
    assert st.value_changes([{"a": 1}], [{"a": 2}]) is True
    assert st.value_changes(0.5, 0.5) is False
    assert st.value_changes(np.array([0.1 + 0.2]), np.array([0.3])).tolist() == [0]


def test_same_compares_what_a_step_is_drawn_from():
    step = attn_cli.scaled("1,0;0,1", "1,1;2,0", "0.1,0.2;0.3,0.4").steps[2]
    again = attn_cli.scaled("1,0;0,1", "1,1;2,0", "0.1,0.2;0.3,0.4").steps[2]
    other = attn_cli.scaled("1,0;0,1.5", "1,1;2,0", "0.1,0.2;0.3,0.4").steps[2]
    assert step is not again and st.same(step, again) and not st.same(step, other)
    nan = np.array([np.nan, 1.0])
    assert st.same(nan, nan.copy()) and not st.same(nan, np.array([np.nan, 2.0]))
    assert not st.same(np.zeros(2), np.zeros(2, dtype=np.float32))  # drawn with other digits
    assert not st.same(np.zeros(2), np.zeros((1, 2))) and not st.same(np.zeros(2), [0.0, 0.0])
    records = [{"d_k": 4, "var": 1.0}]
    assert st.same(records, [{"d_k": 4, "var": 1.0}])
    assert not st.same(records, [{"d_k": 4, "var": 1.5}]) and not st.same(records, [])
    assert st.same({"x": float("nan")}, {"x": float("nan")}) and not st.same(1, 1.0)


def test_a_step_is_drawn_again_only_if_it_or_its_marks_changed():
    """variance: --keys changes the measured steps (the first four), not the lecture's worked
    numerics (the last two); a smaller largest d_k changes the temperature step's words; a step
    marked at one edit is drawn again, unmarked, at the next."""
    from attn_cli.explore.widgets import Rendered

    async def scenario() -> Any:
        app = explorer("variance")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f")  # the prose unfolded: the temperature step's words show
            # Off the lecture's example first: the slides' notes on its numerics go (they are
            # said of the example as it is), and stay gone.
            app.apply(st.with_option(app.state, "keys", 9))
            await pilot.pause()
            widgets = list(app.query(".walkthrough-step").results(Rendered))
            seen = [([w.renderable for w in widgets], [w.has_class("changed") for w in widgets])]
            for state in (
                st.with_option(app.state, "keys", 10),
                st.with_option(st.with_option(app.state, "keys", 10), "dk", "1,4,16,64,256"),
                None,  # the same state again: nothing moves
            ):
                app.apply(state or app.state)
                await pilot.pause()
                seen.append(
                    ([w.renderable for w in widgets], [w.has_class("changed") for w in widgets])
                )
            return seen, shown_text(app, 5)

    seen, temperature = run(scenario())
    kept = [
        [a is b for a, b in zip(before[0], after[0], strict=True)]
        for before, after in itertools.pairwise(seen)
    ]
    assert [marks for _, marks in seen[1:]] == [[True] * 4 + [False] * 2] * 2 + [[False] * 6]
    assert kept == [
        [False] * 4 + [True, True],  # --keys 10
        [False] * 4 + [True, False],  # --dk: the temperature step says d_k = 256 now
        [False] * 4 + [True, True],  # nothing moved: the four marked drawn again, unmarked
    ]
    assert "unscaled at d_k = 256" in " ".join(temperature.split())


def test_nudges_read_as_typed_and_numbers_are_written_short():
    start = st.opening("scaled")
    state = st.nudged(start.state, "V", 0, 0, 0.2)  # 0.1 + 0.2
    assert state.cells["V"][0][0] == "0.3" and state.own
    assert st.number_text(2.0) == "2" and st.number_text(-0.25) == "-0.25"
    with pytest.raises(attn_cli.UserError, match="not a number"):
        st.nudged(st.with_cell(state, "V", 0, 0, "abc"), "V", 0, 0, 0.1)


@pytest.mark.parametrize("lesson", cards.lesson_names())
def test_the_example_given_in_full_is_the_example(lesson):
    """Once an input is edited the inputs are given in full: unchanged, they compute what the
    lecture example computes (nothing of the example is lost on the way)."""
    if lesson == "variance":
        pytest.skip("variance takes no inputs (its options are covered by the command test)")
    start = st.opening(lesson)
    example = st.walkthrough(start, start.state)
    own = st.State(lesson, start.state.cells, start.state.options, own=True)
    assert_same_steps(st.walkthrough(start, own), example)


# The app, driven by the Pilot ----------------------------------------------------------------


def test_typing_an_entry_recomputes_every_step_as_the_library_does():
    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("down", "right", "enter")  # Q[2,2]
            editor = app.query_one("#cell-editor")
            editor.value = ""
            await pilot.press(*"-2.5", "enter")
            await pilot.pause()
            return app, shown_text(app, 2)

    app, weights_text = run(scenario())
    assert app.state.cells["Q"] == (("1", "0"), ("0", "-2.5"))
    expected = attn_cli.scaled([[1, 0], [0, -2.5]], "1,1;2,0", "0.1,0.2;0.3,0.4")
    assert_same_steps(app.walkthrough, expected)
    # The screen draws the new weights (row 2: softmax of (−2.5, 0) / √2).
    row = np.exp([-2.5 / np.sqrt(2), 0.0])
    row /= row.sum()
    assert f"{row[0]:.4f}" in weights_text and f"{row[1]:.4f}" in weights_text
    # What changed is marked: Q[2,2] meets K's second column, which is 0 in key 2 (2, 0): of
    # the scores only (2, 1) moves, and falls (1 to -2.5).
    assert app.changes["scores"].value.tolist() == [[0, 0], [st.FELL, 0]]
    assert app.cells_changed == {("Q", 1, 1): st.FELL}


def test_plus_and_minus_nudge_the_entry_and_undo_and_reset_go_back():
    async def scenario() -> Any:
        app = explorer("window")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("+", "+", "right", "-")
            await pilot.pause()
            nudged = (app.state, app.walkthrough)
            await pilot.press("u")
            await pilot.pause()
            undone = app.state
            await pilot.press("r")
            await pilot.pause()
            return app, nudged, undone

    app, (nudged, walkthrough), undone = run(scenario())
    q = np.array([[1.2, -0.1], [0, 1], [1, 1], [1, 0], [0, 1]])
    assert nudged.cells["Q"] == tuple(tuple(st.number_text(x) for x in row) for row in q)
    start = st.opening("window")
    expected = attn_cli.window(
        q,
        st.matrix_text(start.state.cells["K"]),
        st.matrix_text(start.state.cells["V"]),
        window=1,
    )
    assert_same_steps(walkthrough, expected)
    assert undone.cells["Q"][0] == ("1.2", "0")  # the last nudge undone
    assert app.state == start.state and app.state.own is False  # reset: the lecture's example
    assert app.walkthrough.example == "five-tokens"


def test_a_bad_entry_is_refused_in_place_with_the_command_lines_message(invoke):
    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            before = app.walkthrough
            await pilot.press("right", "enter")
            app.query_one("#cell-editor").value = "1e999x"
            await pilot.press("enter")
            await pilot.pause()
            return app, before, message(app), app.editing is not None

    app, before, said, editing = run(scenario())
    assert app.walkthrough is before and app.state.cells["Q"][0] == ("1", "0")
    assert editing  # the editor stays open on the entry, to be fixed
    bad = st.with_cell(app.state, "Q", 0, 1, "1e999x")
    args = shlex.split(st.command_line(app.start, bad, flags.COMMAND_LINE))[1:]
    result = invoke(*args)
    assert_user_error(result, "'1e999x'")
    assert said == result.stderr.strip()


def test_an_option_is_recomputed_and_a_refused_one_is_put_back(invoke):
    async def scenario() -> Any:
        app = explorer("multihead")
        async with app.run_test(size=SIZE) as pilot:
            heads = app.query_one("#option-heads")
            heads.focus()
            heads.value = "3"  # 4 columns cannot be shared by 3 heads
            await pilot.press("enter")
            await pilot.pause()
            refused = (message(app), heads.value)
            heads.value = "4"
            await pilot.press("enter")
            await pilot.pause()
            return app, refused

    app, (said, put_back) = run(scenario())
    assert "--heads must divide d_model" in said and put_back == "2"
    assert app.state.options["heads"] == 4
    assert st.command_line(app.start, app.state, flags.COMMAND_LINE) == "attn multihead --heads 4"
    assert_same_steps(app.walkthrough, attn_cli.multihead(heads=4))


def test_the_copied_command_line_reproduces_the_screen(invoke_json):
    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("+", "down", "-", "-")
            app.query_one("#option-scale").value = False
            await pilot.pause()
            await pilot.press("c")
            await pilot.pause()
            panel = str(app.screen.query_one("#command").render())
            return app, panel

    app, panel = run(scenario())
    command = app.clipboard
    assert command == panel == st.command_line(app.start, app.state, flags.COMMAND_LINE)
    assert (
        command == "attn scaled --q '1.1,0;-0.2,1' --k '1,1;2,0' --v '0.1,0.2;0.3,0.4' --no-scale"
    )
    document = invoke_json(*shlex.split(command)[1:])
    shown = step_values(app.walkthrough)
    for step in document["steps"]:
        np.testing.assert_allclose(numbers(step["value"]), shown[step["key"]], rtol=0, atol=0)


@pytest.mark.parametrize("lesson", ["flash", "graph", "posenc"])
def test_commands_of_options_over_the_example_reproduce_it(lesson, invoke_json):
    """Options changed on the example, or on a lesson whose options are its inputs."""
    start = st.opening(lesson)
    option = next(each for each in st.controls(start.card) if each.type in (bool, int))
    value = not start.state.options[option.name] if option.type is bool else 6
    state = st.with_option(start.state, option.name, value)
    command = st.command_line(start, state, flags.COMMAND_LINE)
    document = invoke_json(*shlex.split(command)[1:])
    shown = step_values(st.walkthrough(start, state))
    assert [step["key"] for step in document["steps"]] == list(shown)
    for step in document["steps"]:
        if isinstance(shown[step["key"]], np.ndarray):
            np.testing.assert_allclose(numbers(step["value"]), shown[step["key"]], atol=0)


def test_export_writes_every_text_format_as_the_command_line_prints_it(tmp_path, invoke):
    async def scenario() -> Any:
        app = explorer("causal", export_dir=tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("+", "x")
            await pilot.pause()
            return app

    app = run(scenario())
    args = shlex.split(st.command_line(app.start, app.state, flags.COMMAND_LINE))[1:]
    assert args[:2] == ["causal", "--scores"]
    for fmt, suffix in st.EXPORTS.items():
        written = (tmp_path / f"causal.{suffix}").read_text(encoding="utf-8")
        result = invoke(*args, "--format", fmt.value)
        assert result.exit_code == 0 and written == result.stdout, fmt


def test_the_lesson_key_switches_lesson():
    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("+", "l")
            await pilot.pause()
            await pilot.press("down", "enter")  # the next lesson in the list
            await pilot.pause()
            return app

    app = run(scenario())
    following = cards.lesson_names()[1]
    assert app.start.lesson == following and app.history == []
    assert app.walkthrough.lesson == following and not app.state.own


@pytest.mark.parametrize("lesson", cards.lesson_names())
def test_every_lesson_opens_on_its_example(lesson):
    from attn_cli.explore.widgets import InputTable
    from attn_cli.run.runner import RunRequest, compute

    async def scenario() -> Any:
        app = explorer(lesson)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            tables = {table.input_name: table.row_count for table in app.query(InputTable)}
            steps = len(app.query(".walkthrough-step"))
            return app, tables, steps

    app, tables, steps = run(scenario())
    expected = compute(RunRequest(lesson=lesson))
    assert_same_steps(app.walkthrough, expected)
    assert steps == len(expected.steps) + (1 if expected.notes else 0)
    inputs = {item.name: item.value for item in expected.inputs}
    assert tables == {name: len(app.state.cells[name]) for name in app.state.cells}
    # Every input of the card that the example's run holds is a table: those the example
    # gives and those the lesson fills in itself (selfattn's identity weights), each as it is.
    card_inputs = {spec.name for spec in cards.card(lesson).inputs}
    assert set(tables) == card_inputs & set(inputs)
    for name in tables:
        np.testing.assert_array_equal(
            np.atleast_2d(inputs[name]), np.array(app.state.cells[name], dtype=np.float64)
        )


# Snapshots (tests/__snapshots__/test_explore/): every lesson's first screen at 80 × 24 and at
# 120 × 40, each with the numbers of the step in focus on screen ------------------------------


def focused_numbers(app: Any) -> list[str]:
    """The texts that must show for the step in focus to be on screen: its heading, and for a
    matrix the entries of its first and last columns as the renderer formats them (the table
    whole, top to bottom); for a table of records, its lines down to the table's end."""
    from attn_cli.explore.widgets import Rendered
    from attn_cli.render.rich_render import MatrixTable

    index = app.focused_step - 1
    step = app.walkthrough.steps[index]
    widget = list(app.query(".walkthrough-step").results(Rendered))[index]
    lines = widget.text().splitlines()
    wanted = [lines[0].split("─")[0].strip()]  # the heading, without its rule
    if isinstance(step.value, np.ndarray):
        table = MatrixTable(step.value, app.precision, step.row_labels, step.col_labels)
        shown = [col for col in table.candidates if col in (0, table.n_cols - 1)]
        wanted += [cell for col in shown for cell in table.cells[col]]
    else:
        end = next(i for i, line in enumerate(lines) if "╰" in line)
        wanted += [line.strip() for line in lines[1 : end + 1]]
    return wanted


def assert_focused_numbers_visible(app: Any) -> None:
    steps = app.query_one("#steps")
    region = steps.region
    rows = screen_lines(app)[region.y : region.bottom]
    seen = "\n".join(rows)
    missing = [text for text in focused_numbers(app) if text not in seen]
    assert not missing, f"not on screen: {missing}\n{seen}"
    assert steps.scroll_offset.y == 0  # nothing to scroll to see them


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("lesson", cards.lesson_names())
def test_snapshot_every_lesson_opens_with_the_focused_steps_numbers(lesson, size, snap_compare):
    """Every lesson's first screen shows numbers: the step in focus (the attention weights where
    the lesson has them), its table whole, with nothing to scroll; the footer keeps Export and
    Quit."""
    checked = []

    async def check(pilot: Any) -> None:
        await settled(pilot)
        assert_focused_numbers_visible(pilot.app)
        footer = screen_lines(pilot.app)[-1]
        assert "x Export" in footer and "q Quit" in footer, footer
        checked.append(lesson)

    assert snap_compare(explorer(lesson), terminal_size=SIZES[size], run_before=check)
    assert checked == [lesson]


def test_shown_cells_round_at_the_renderings_precision_only_what_it_would_round():
    typed = (("0.5", "-0.2"), ("1", "0"))
    assert st.shown_cells(typed, 4) == typed  # exact at 4 decimals: as typed
    drawn = (("0.7218454773490628", "-0.4479729881928707"), ("1", "nan"))
    assert st.shown_cells(drawn, 4) == (("0.7218", "-0.4480"), ("1.0000", "nan"))
    assert st.shown_cells(drawn, 2) == (("0.72", "-0.45"), ("1.00", "nan"))
    assert st.shown_cells((("0.5", "1e-9"),), 4) == (("0.5", "1e-9"),)  # exact as typed
    assert st.shown_cells((("0.123456", "2e-9x"),), 4) == (("0.123456", "2e-9x"),)  # mid-typing


def test_blocks_drawn_weights_show_the_renderings_digits_and_edit_exactly():
    """Issue 46's note: block's drawn weights took about 45 columns per table. The table shows
    them as the rich renderer does (to --precision), the editor opens the exact number, and a
    run of one's own gives the exact numbers."""
    from textual.coordinate import Coordinate

    async def scenario() -> Any:
        app = explorer("block")
        async with app.run_test(size=SIZE) as pilot:
            table = app.query_one("#input-W_Q")
            shown = [str(table.get_cell_at(Coordinate(0, col))).strip() for col in range(4)]
            table.focus()
            await pilot.press("enter")
            opened = app.query_one("#cell-editor").value
            await pilot.press("escape", "+")  # W_Q[1,1] + 0.1: W_Q given, exact
            await pilot.pause()
            return app, shown, opened

    app, shown, opened = run(scenario())
    drawn = attn_cli.block()
    w_q = next(item.value for item in drawn.inputs if item.name == "W_Q")
    assert shown == [f"{value:.4f}" for value in w_q[0]]  # 0.7218, -0.4480, 0.3680, 0.0029
    assert opened == repr(float(w_q[0, 0]))
    given = next(item.value for item in app.walkthrough.inputs if item.name == "W_Q")
    assert given[0, 0] == pytest.approx(w_q[0, 0] + 0.1, abs=1e-12)
    assert np.array_equal(given.ravel()[1:], w_q.ravel()[1:])


def test_snapshot_an_edit_is_marked(snap_compare):
    assert snap_compare(explorer("scaled"), press=["down", "+"], terminal_size=SIZE)


def test_snapshot_the_command_panel(snap_compare):
    assert snap_compare(explorer("window"), press=["+", "c"], terminal_size=SIZE)


def test_snapshot_every_key_on_one_screen(snap_compare):
    assert snap_compare(explorer("scaled"), press=["question_mark"], terminal_size=SIZE)


# Issue 46: the explorer on a projector, one test per bug --------------------------------------


def test_a_changed_weight_shows_its_glyph_in_sight_at_80_by_24():
    """The numbers on one screen: an edit's effect on the weights is in sight at once, the
    weights table's header and values together, with nothing scrolled."""

    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("+")
            await pilot.pause()
            assert_focused_numbers_visible(app)
            return app, "\n".join(screen_lines(app))

    app, screen = run(scenario())
    weights = app.walkthrough.steps[2].value
    assert f"{weights[0, 0]:.4f}↓" in screen and f"{weights[0, 1]:.4f}↑" in screen
    assert "k1" in screen and "Σ row" in screen  # the header, on the same screen


# The edit made in a lesson without inputs: an option typed in, as a lecturer would.
OPTION_EDITS = {"variance": ("keys", "9"), "posenc": ("base", "1000"), "cost": ("n", "4096")}


@pytest.mark.parametrize("lesson", cards.lesson_names())
def test_every_lesson_shows_an_edits_effect_on_the_step_in_focus_without_scrolling(lesson):
    """Done when: at 80 × 24 a lecturer opens any lesson, changes a number (+ on the first
    entry; where a lesson has no inputs, an option typed in) and sees the step in focus change,
    its numbers whole and marked, with nothing scrolled, and the editing keys above. (kvcache's first step is query 1 over
    one cached key: its weight is 1 whatever the query, and its scores below it change.)"""

    async def scenario() -> Any:
        app = explorer(lesson)
        async with app.run_test(size=SIZE) as pilot:
            await settled(pilot)
            if app.state.cells:
                await pilot.press("+")
            else:
                name, text = OPTION_EDITS[lesson]
                field = app.query_one(f"#option-{name}")
                field.focus()
                field.value = text
                await pilot.press("enter")
            await settled(pilot)
            assert_focused_numbers_visible(app)
            screen = screen_lines(app)
            steps = app.query_one("#steps").region
            return app, "\n".join(screen[: steps.y]), "\n".join(screen[steps.y : steps.bottom])

    app, above, shown = run(scenario())
    assert len(app.history) == 1
    if app.state.cells:  # the editing keys in sight, however many inputs (block's weights)
        assert "enter/digit: type · + -: nudge · tab: next · i: hide" in above, above
    key = app.walkthrough.steps[app.focused_step - 1].key
    assert key == app.walkthrough.steps[st.focus_step(app.walkthrough)].key  # still in focus
    change = app.changes[key]
    assert change.count > 0
    # The step is marked by a bar at its left (a blank where nothing changed), in characters;
    # where its matrix changed, each changed entry carries its glyph, in sight.
    heading = next(line for line in shown.splitlines() if line.strip())
    assert heading.startswith("█"), shown
    if isinstance(change.value, np.ndarray) and st.changed_count(change.value):
        assert any(mark in shown for mark in "↑↓•"), shown


def test_multihead_names_every_input_and_tab_brings_each_into_sight():
    """Multihead's five inputs overflow 80 columns: the hint above them names all five, and
    tab scrolls each (W_O last) fully into sight."""

    async def scenario() -> Any:
        app = explorer("multihead")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            hint = str(app.query_one("#inputs-hint").render())
            seen = {}
            for _ in range(5):
                table = app.focused
                await pilot.pause()
                region = table.region
                seen[table.input_name] = region.x >= 0 and region.right <= SIZE[0]
                await pilot.press("tab")
            return hint, seen

    hint, seen = run(scenario())
    assert all(name in hint for name in ("X", "W_Q", "W_K", "W_V", "W_O"))
    assert seen == dict.fromkeys(("X", "W_Q", "W_K", "W_V", "W_O"), True)


@pytest.mark.parametrize("lesson", ["multihead", "block"])
def test_the_intro_no_longer_fills_the_first_screen(lesson):
    """The lesson's introduction is a page of its own ([ from the first step, or g 0), not
    the first screen; its explanations fold away until f."""

    async def scenario() -> Any:
        app = explorer(lesson)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            first = "\n".join(screen_lines(app))
            app.go_to(0)
            await pilot.pause()
            intro = "\n".join(screen_lines(app))
            return app, first, intro

    app, first, intro = run(scenario())
    opening = " ".join(app.walkthrough.intro.split()[:4])
    assert opening not in " ".join(first.split())
    assert opening in " ".join(intro.split())


def test_the_prose_unfolds_and_the_inputs_hide():
    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            folded = shown_text(app, 2)
            await pilot.press("f")
            await pilot.pause()
            unfolded = shown_text(app, 2)
            before = app.query_one("#steps").region.height
            await pilot.press("i")
            await pilot.pause()
            hidden = not app.query_one("#tables").display
            after = app.query_one("#steps").region.height
            await pilot.press("i")
            await pilot.pause()
            return folded, unfolded, hidden, before, after, app.focused

    folded, unfolded, hidden, before, after, focused = run(scenario())
    explanation = st.opening("scaled").walkthrough.steps[2].explanation_at(4).split()[:5]
    assert " ".join(explanation) not in " ".join(folded.split())
    assert " ".join(explanation) in " ".join(unfolded.split())
    assert hidden and after > before
    assert focused.id == "input-Q"  # shown again: the keys go to the first table


def test_steps_are_reached_by_brackets_and_by_number():
    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            seen = [app.focused_step]
            await pilot.press("right_square_bracket")
            seen.append(app.focused_step)
            await pilot.press("left_square_bracket", "left_square_bracket")
            seen.append(app.focused_step)
            await pilot.press("g", "4", "enter")
            await pilot.pause()
            seen.append(app.focused_step)
            await pilot.pause()
            where = str(app.query_one("#where").render())
            return seen, where, [widget.display for widget in app.query(".walkthrough-step")]

    seen, where, displayed = run(scenario())
    assert seen == [3, 4, 2, 4]  # the weights (3 of 4), then ], [ [, and g 4
    assert where.startswith("Step 4 of 4")
    assert displayed == [False, False, False, True]  # the steps before the one in focus: hidden


def test_the_step_in_focus_stays_when_an_option_adds_steps_before_it():
    """attn block --decoder adds steps before self-attention's weights: they stay in focus."""

    async def scenario() -> Any:
        app = explorer("block")
        async with app.run_test(size=SIZE) as pilot:
            await settled(pilot)
            before = app.walkthrough.steps[app.focused_step - 1].key, app.focused_step
            app.query_one("#option-decoder").value = True
            await settled(pilot)
            return before, (app.walkthrough.steps[app.focused_step - 1].key, app.focused_step)

    (key, number), (key_after, number_after) = run(scenario())
    assert key == key_after == "self.head1.weights"
    assert number_after > number  # the decoder's steps came before it


def test_every_key_is_on_screen_and_enter_edits():
    """The editing keys on screen: the hint above the inputs names them, ? lists every key
    (the one list, attn_cli.explore.keys), and enter is described as editing, not "Select"."""
    from attn_cli.explore.keys import KEYS

    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            hint = str(app.query_one("#inputs-hint").render())
            enter = app.focused._bindings.key_to_bindings["enter"]
            await pilot.press("question_mark")
            await pilot.pause()
            overlay = "\n".join(screen_lines(app))
            await pilot.press("escape")
            await pilot.pause()
            return hint, enter, overlay, app.screen

    hint, enter, overlay, screen = run(scenario())
    assert "enter/digit: type" in hint and "+ -: nudge" in hint
    assert [binding.description for binding in enter] == ["type the entry under the cursor"]
    for key in KEYS:
        assert key.shown in overlay and key.description.replace("`", "") in overlay, key
    assert type(screen).__name__ == "Screen"  # escape closed it


def test_typing_in_the_lesson_list_jumps_to_the_lesson():
    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("l")
            await pilot.pause()
            listing = app.screen.query_one("JumpList")
            highlighted = []
            for key in ("c", "o", "b", "q"):  # co: cost; b alone: backward; q: no lesson
                await pilot.press(key)
                highlighted.append(listing.get_option_at_index(listing.highlighted).id)
            await pilot.press("l", "enter")  # bl: block
            await pilot.pause()
            return app, highlighted

    app, highlighted = run(scenario())
    assert highlighted == ["causal", "cost", "backward", "backward"]  # and q did not quit
    assert app.start.lesson == "block" and app.walkthrough.lesson == "block"


def test_undo_and_the_title_agree():
    """After two edits and two u the title counts no edit, as the history holds none; a third
    u says there is nothing to undo, and the title still agrees."""

    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            seen = []
            for key in ("+", "+", "u", "u", "u"):
                await pilot.press(key)
                await pilot.pause()
                seen.append((len(app.history), title(app), message(app)))
            return app, seen

    app, seen = run(scenario())
    assert [count for count, _, _ in seen] == [1, 2, 1, 0, 0]
    assert [words.split(" · ")[-1] for _, words, _ in seen] == [
        "1 edit",
        "2 edits",
        "1 edit",
        "the lecture's example",
        "the lecture's example",
    ]
    assert seen[3][2] == "" and seen[4][2].startswith("Nothing to undo")
    assert app.state == st.opening("scaled").state


def test_the_softmax_side_tables_are_marked_when_they_change():
    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("+")  # Q[1,1] 1 -> 1.1: query 1's scores, max, exp and sum move
            await pilot.pause()
            return app, shown_text(app, 2)

    app, text = run(scenario())
    parts = {part.label: part.value for part in app.walkthrough.steps[2].parts}
    row_max = parts["row max"].ravel()
    assert f"{row_max[0]:.4f}↑" in text  # rose, and marked
    assert f"{row_max[1]:.4f} " in text  # row 2's stayed: a blank in the glyph's place
    assert app.changes["weights"].parts and all(
        st.changed_count(p) for p in app.changes["weights"].parts
    )


def test_a_change_is_a_glyph_never_a_reversed_cell():
    """The weights' shading is the only colour of a cell: a change is a glyph after the number
    (no cell of the screen is drawn reversed), unchanged entries carry a blank in its place."""

    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            # Q[2,1] 0 -> 0.1: query 2's scores rise, by 0.1 for k1 and 0.2 for k2 (K = 1,1;2,0),
            # so its weight of k2 rises and of k1 falls; query 1's do not move.
            await pilot.press("down", "+")
            await pilot.pause()
            strips = app.screen._compositor.render_strips()
            reversed_cells = [  # a number drawn reversed (the cursor of a table is not one)
                segment.text
                for strip in strips
                for segment in strip
                if segment.style is not None
                and segment.style.reverse
                and any(c.isdigit() for c in segment.text)
            ]
            return app, shown_text(app, 2), reversed_cells

    app, text, reversed_cells = run(scenario())
    weights = app.walkthrough.steps[2].value
    assert reversed_cells == []
    assert f"{weights[1, 0]:.4f}↓" in text and f"{weights[1, 1]:.4f}↑" in text
    assert f"{weights[0, 0]:.4f}│" not in text and f"{weights[0, 0]:.4f} " in text


def test_checkboxes_say_on_and_off_in_characters():
    from attn_cli.explore.widgets import Flag

    async def scenario() -> Any:
        app = explorer("multihead")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            causal = app.query_one("#option-causal", Flag)
            off = causal.render().plain
            causal.value = True
            await pilot.pause()
            return off, causal.render().plain, app.state.options["causal"]

    off, on, value = run(scenario())
    assert off.startswith("[ ]") and on.startswith("[x]") and value is True


def test_a_control_that_changes_no_number_is_hidden_with_a_note():
    """causal's example gives its scores, which are never scaled: --scale changes nothing
    there, so it is not shown, and a line says so. The claim is checked: turned off, every
    number is the same. In scaled, where it matters, it shows."""

    async def scenario(lesson: str) -> Any:
        app = explorer(lesson)
        async with app.run_test(size=SIZE) as pilot:
            await settled(pilot)
            note = app.query_one("#inert")
            return (
                app.query_one("#control-scale").display,
                note.display and str(note.render()),
            )

    assert run(scenario("causal")) == (False, "no effect: --scale")
    start = st.opening("causal")
    off = st.walkthrough(start, st.with_option(start.state, "scale", False))
    assert st.same_numbers(start.walkthrough, off)
    assert run(scenario("scaled")) == (True, False)


def test_block_has_a_seed_control_and_its_command_reproduces_the_screen(invoke_json):
    async def scenario() -> Any:
        app = explorer("block")
        async with app.run_test(size=SIZE) as pilot:
            await settled(pilot)
            shown = app.query_one("#control-seed").display
            seed = app.query_one("#option-seed")
            seed.focus()
            seed.value = "3"
            await pilot.press("enter")
            await pilot.pause()
            return app, shown

    app, shown = run(scenario())
    assert shown and app.state.seed == 3
    command = st.command_line(app.start, app.state, flags.COMMAND_LINE)
    assert command == "attn block --seed 3"
    assert_same_steps(app.walkthrough, attn_cli.block(seed=3))
    document = invoke_json(*shlex.split(command)[1:])
    values = step_values(app.walkthrough)
    for step in document["steps"]:
        np.testing.assert_allclose(numbers(step["value"]), values[step["key"]], rtol=0, atol=0)


def test_a_check_of_the_controls_during_a_lesson_switch_waits_for_its_controls():
    """The controls are checked a moment after a frame: a check that comes while a lesson
    switch is mounting the new lesson's controls (the old ones still there) is kept, and shown
    once they are mounted (it stopped the app: no control of the new lesson to hide)."""

    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await settled(pilot)
            app.open("block")
            app.check_controls()  # before block's controls are mounted
            await app.build_lesson()
            await settled(pilot)
            return app.inert, app.query_one("#control-seed").display

    inert, seed_shown = run(scenario())
    assert st.SEED not in inert and seed_shown  # block's weights are drawn from the seed


def test_the_seed_shows_only_where_something_is_drawn():
    """scaled draws nothing at random until a dropout is set: no seed control, then one."""

    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await settled(pilot)
            before = app.query_one("#control-seed").display
            dropout = app.query_one("#option-dropout")
            dropout.focus()
            dropout.value = "0.5"
            await pilot.press("enter")
            await settled(pilot)
            return before, app.query_one("#control-seed").display

    assert run(scenario()) == (False, True)


# A lesson written by a test, that fills in an input of its card itself (W, drawn from the
# seed), as attn block does its weights: the explorer shows it as a table with no change of its
# own, follows the seed until it is edited itself, then gives it as typed.
DRAWN_CARD = """
from attn_cli.core.card import Card, InputSpec, optional

CARD = Card(
    name="drawn",
    summary="A lesson written by a test: X times W, W drawn from --seed unless given.",
    inputs=(
        InputSpec("X", "x", "matrix", "tokens", help="Tokens X."),
        optional("W", "w", "matrix", "weights", "Weights W (default: drawn from {seed})."),
    ),
    examples=("attn drawn",),
    symbols=(("X", "the tokens"), ("W", "the weights")),
)
"""
DRAWN_BUILD = """
import numpy as np

from attn_cli.core.model import InputValue
from attn_cli.course.drawn.card import CARD
from attn_cli.course.lesson import Lesson
from attn_cli.course.recorder import StepRecorder
from attn_cli.lessonfiles.texts import Texts


def build(run):
    record = StepRecorder(run)
    x = run.inputs["X"]
    w = run.inputs.get("W")
    if w is None:
        w = np.round(np.random.default_rng(run.seed).standard_normal((x.shape[1], 2)), 2)
    product = record.compute("product", lambda: run.backend.asarray(x) @ run.backend.asarray(w))
    inputs = (InputValue("X", x), InputValue("W", w))
    return record.walkthrough(product, inputs=inputs)


LESSON = Lesson(
    card=CARD,
    labels=(),
    validate=lambda inputs, options: None,
    random_shapes=lambda sizes: {},
    estimate_bytes=lambda shapes, options, itemsize: 0,
    build=build,
    texts=Texts(steps={"product": ()}),
)
"""
DRAWN_WORDS = """
lesson = "drawn"
title = "Drawn weights"
intro = "X times weights drawn from the seed."
default_example = "small"

[steps.product]
title = "Product  X W"
explanation = "Each row of X times W."

[[examples]]
name = "small"
description = "Two tokens."
[examples.inputs]
X = [[1, 0], [0, 1]]
"""


@pytest.fixture
def drawn_lesson(tmp_path, monkeypatch):
    """The lesson "drawn", in a folder the course's path and the lesson files' folder are
    extended with (nothing of the repository is touched)."""
    import textwrap

    from attn_cli.lessonfiles import loader

    folder = tmp_path / "course" / "drawn"
    folder.mkdir(parents=True)
    for name, text in {"__init__": "", "card": DRAWN_CARD, "build": DRAWN_BUILD}.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    words = tmp_path / "lessons"
    words.mkdir()
    for bundled in loader.bundled_lessons_dir().glob("*.toml"):
        (words / bundled.name).symlink_to(bundled)
    (words / "drawn.toml").write_text(textwrap.dedent(DRAWN_WORDS), encoding="utf-8")
    monkeypatch.setattr(cards, "__path__", [*cards.__path__, str(folder.parent)])
    monkeypatch.setattr(loader, "bundled_lessons_dir", lambda: words)
    cards.forget()
    yield "drawn"
    monkeypatch.undo()
    cards.forget()


def test_an_input_the_lesson_fills_in_is_a_table_that_follows_the_seed(drawn_lesson):
    def drawn(seed: int) -> st.Cells:
        weights = np.round(np.random.default_rng(seed).standard_normal((2, 2)), 2)
        return st.cells_of(weights)

    async def scenario() -> Any:
        app = explorer(drawn_lesson)
        async with app.run_test(size=SIZE) as pilot:
            await settled(pilot)
            tables = [table.input_name for table in app.query("InputTable")]
            seen = [(app.state.cells["W"], app.query_one("#control-seed").display)]
            app.apply(st.with_seed(app.state, 5))  # the seed control's edit
            await settled(pilot)
            seen.append((app.state.cells["W"], app.query_one("#control-seed").display))
            await pilot.press("+")  # X[1,1]: X is the user's; W, not edited, stays drawn
            await settled(pilot)
            seen.append((app.state.cells["W"], app.query_one("#control-seed").display))
            commands = [st.command_line(app.start, app.state, flags.COMMAND_LINE)]
            app.apply(st.with_seed(app.state, 6))
            await settled(pilot)
            seen.append((app.state.cells["W"], app.query_one("#control-seed").display))
            await pilot.press("tab", "+")  # W[1,1]: W is given now, as typed
            await settled(pilot)
            seen.append((app.state.cells["W"], app.query_one("#control-seed").display))
            commands.append(st.command_line(app.start, app.state, flags.COMMAND_LINE))
            return app, tables, seen, commands

    app, tables, seen, commands = run(scenario())
    assert tables == ["X", "W"]
    nudged = st.nudged(st.State("drawn", {"W": drawn(6)}), "W", 0, 0, st.NUDGE).cells["W"]
    assert seen == [
        (drawn(0), True),  # the seed draws W: its control shows
        (drawn(5), True),
        (drawn(5), True),  # X edited: W still drawn, and the seed still changes it
        (drawn(6), True),
        (nudged, False),  # W given: the seed draws nothing now, and is hidden
    ]
    assert commands == [
        "attn drawn --x '1.1,0;0,1' --seed 5",
        f"attn drawn --x '1.1,0;0,1' --w '{st.matrix_text(nudged)}' --seed 6",
    ]
    assert_same_steps(app.walkthrough, st.walkthrough(app.start, app.state))


def test_a_click_on_a_cell_moves_the_cursor_and_the_next_plus_nudges():
    """In a browser a click on a cell opened its editor and the next + was typed into it: a
    click (even a second one, on the cell under the cursor) only moves the cursor."""

    async def scenario() -> Any:
        app = explorer("scaled")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            table = app.query_one("#input-K")
            for _ in range(2):
                await pilot.click("#input-K", offset=(8, 2))  # K[2,2]
                await pilot.pause()
            cursor = table.cursor_coordinate
            await pilot.press("+")
            await pilot.pause()
            return app, cursor

    app, cursor = run(scenario())
    assert (cursor.row, cursor.column) == (1, 1)
    assert app.editing is None and app.state.cells["K"] == (("1", "1"), ("2", "0.1"))


# Without textual, start-up, and the browser ---------------------------------------------------


def test_without_textual_one_line_says_what_to_install(invoke, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name.startswith("textual") else real(name, *args),
    )
    result = invoke("explore", "scaled")
    assert_user_error(result, "attn explore needs textual", "pip install 'attn-cli[explore]'")


def test_without_a_terminal_one_line_says_so(invoke):
    # CliRunner's input and output are not terminals, as a pipe or a script's capture is not:
    # the app would wait for keys forever, so the command refuses before starting it.
    result = invoke("explore", "scaled")
    assert_user_error(result, "attn explore needs a terminal", "add --serve")


def test_under_textual_serve_the_app_starts(invoke, monkeypatch):
    # A browser tab of --serve runs the command under textual-serve's driver, with pipes.
    from attn_cli.explore import app as explore_app

    started = []
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    monkeypatch.setattr(explore_app.Explorer, "run", lambda self: started.append(self))
    result = invoke("explore", "window")
    assert result.exit_code == 0, result.output
    assert len(started) == 1


def test_an_unknown_lesson_is_one_line(invoke):
    assert_user_error(invoke("explore", "nosuch"), "unknown lesson 'nosuch'")


@pytest.mark.slow
def test_other_commands_import_no_textual():
    probe = (
        "import sys\nfrom attn_cli.cli.app import main\nsys.argv = ['attn', 'scaled']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.split('.')[0].startswith('textual')))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_the_state_and_the_keys_import_no_textual():
    """What the screen shows, as data, and the list of keys are plain Python: the tests, the
    benchmark and the docs' generator read them without Textual."""
    probe = (
        "import sys\nimport attn_cli.explore.state, attn_cli.explore.keys\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('textual')))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip().splitlines()[-1] == "[]"


def test_the_docs_keys_table_is_the_generated_one():
    from attn_cli.explore.keys import with_keys_table

    docs = Path(__file__).resolve().parent.parent / "docs" / "explore.md"
    document = docs.read_text(encoding="utf-8")
    assert document == with_keys_table(document), (
        "docs/explore.md is stale: python tools/regenerate.py"
    )


def test_the_served_page_needs_nothing_from_outside():
    import textual_serve

    template = Path(textual_serve.__file__).parent / "templates" / "app_index.html"
    original = template.read_text(encoding="utf-8")
    assert external_addresses(original)  # textual-serve's own page asks Google for a font
    served = offline_template(original)
    assert external_addresses(served) == []
    assert "fonts/RobotoMono-VariableFont_wght.ttf" in served


def chromium() -> str | None:
    return next(
        (found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))),
        None,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return int(sock.getsockname()[1])


def devtools_address(browser: subprocess.Popen[str], seconds: float) -> str:
    """The WebSocket address of ``browser``'s DevTools protocol, from the line the browser
    writes on stderr once it listens (read in a thread: a wait with a deadline)."""
    import queue
    import threading

    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert browser.stderr is not None
        for line in browser.stderr:
            lines.put(line)
        lines.put("")  # the browser closed its stderr

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if not line:
            break
        if line.startswith("DevTools listening on "):
            return line.removeprefix("DevTools listening on ").strip()
    raise AssertionError(f"the browser never said where its DevTools listen ({seconds} s)")


def wait_for_connections(server: subprocess.Popen[bytes], port: int, seconds: float) -> None:
    """Wait until ``server`` accepts connections on ``port`` (it binds the port after saying
    it serves, so its output is no signal); fail at once if it exits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert server.poll() is None, f"attn explore --serve exited ({server.returncode})"
        with socket.socket() as sock:
            if sock.connect_ex(("localhost", port)) == 0:
                return
        time.sleep(0.05)  # the next try: a poll of the condition, not a wait for a guess
    raise AssertionError(f"attn explore --serve accepted no connection in {seconds} s")


# The browser's window in the served-page test: a laptop's, as a projector shows it.
WINDOW = (1280, 800)


@dataclass
class Browsed:
    """What the served page did: the text the app sent the page's terminal (before the keys,
    and after), every address the page asked for, and the terminal's size in cells."""

    before: str = ""
    after: str = ""
    asked: list[str] = field(default_factory=list)
    cells: tuple[int, int] | None = None


async def browse(
    page: str, devtools: str, wanted: str, keys: str, then: str, seconds: float
) -> Browsed:
    """Open ``page`` in a new tab of the browser whose DevTools protocol listens at
    ``devtools`` (its browser's WebSocket address), in a window of WINDOW, read what the app
    sends the page's terminal until ``wanted`` shows, then type ``keys`` as a keyboard would
    (no click first: whatever the page focused gets them) and read on until ``then`` shows.
    Every wait is for something to happen, up to ``seconds`` in all."""
    import base64
    from urllib.parse import parse_qs, urlparse

    import aiohttp

    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(devtools) as browser:
            await browser.send_json(
                {"id": 1, "method": "Target.createTarget", "params": {"url": "about:blank"}}
            )
            while True:  # the answer to the request, among the browser's events
                reply = await browser.receive_json(timeout=deadline - time.monotonic())
                if reply.get("id") == 1:
                    break
        target = reply["result"]["targetId"]
        origin = devtools.split("/devtools/")[0]
        address = f"{origin}/devtools/page/{target}"
        async with session.ws_connect(address, max_msg_size=0) as socket_:
            width, height = WINDOW
            metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
            await socket_.send_json({"id": 1, "method": "Network.enable"})
            await socket_.send_json(
                {"id": 2, "method": "Emulation.setDeviceMetricsOverride", "params": metrics}
            )
            await socket_.send_json({"id": 3, "method": "Page.navigate", "params": {"url": page}})
            seen = Browsed()
            typed = False
            while then not in seen.after and time.monotonic() < deadline:
                try:
                    message = await socket_.receive_json(timeout=deadline - time.monotonic())
                except TimeoutError:
                    break
                params = message.get("params", {})
                method = message.get("method")
                if method == "Network.requestWillBeSent":
                    seen.asked.append(params["request"]["url"])
                elif method == "Network.webSocketCreated":
                    query = parse_qs(urlparse(params["url"]).query)
                    if "width" in query:
                        seen.cells = (int(query["width"][0]), int(query["height"][0]))
                elif method == "Network.webSocketFrameReceived":
                    frame = params["response"]
                    data = frame["payloadData"]
                    raw = base64.b64decode(data) if frame.get("opcode") == 2 else data.encode()
                    text = raw.decode("utf-8", errors="ignore")
                    if typed:
                        seen.after += text
                    else:
                        seen.before += text
                if wanted in seen.before and not typed:
                    typed = True
                    for number, key in enumerate(keys, 10):
                        for kind in ("keyDown", "keyUp"):
                            event = {
                                "type": kind,
                                "key": key,
                                "text": key if kind == "keyDown" else "",
                            }
                            await socket_.send_json(
                                {"id": number, "method": "Input.dispatchKeyEvent", "params": event}
                            )
            return seen


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="no Chromium (apt-get install chromium)")
def test_serve_works_on_the_first_key_in_a_headless_browser_sized_to_the_window(tmp_path):
    """`attn explore --serve` in a headless Chromium that can reach nothing but this machine:
    the page loads from localhost alone, the app starts behind it and shows the lesson's
    weights; a key typed with no click first reaches the app (+ nudges the first entry); and
    the terminal's font is sized to the window (a 1280 × 800 window: about serve.COLUMNS
    columns, not textual-serve's 16-pixel font's 128 × 42)."""
    from attn_cli.explore.serve import COLUMNS, ROWS

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "attn_cli", "explore", "scaled", "--serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    browser = subprocess.Popen(
        [
            chromium() or "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost",  # no other machine
            f"--user-data-dir={tmp_path / 'profile'}",
            "--remote-debugging-port=0",  # a free port, which the browser says on stderr
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        devtools = devtools_address(browser, seconds=HANG_GUARD_SECONDS)
        wait_for_connections(server, port, seconds=HANG_GUARD_SECONDS)
        page = f"http://localhost:{port}/"
        seen = run(browse(page, devtools, "Weights", "+", "1 edit", HANG_GUARD_SECONDS))
    finally:
        for process in (browser, server):
            process.terminate()
            process.wait(timeout=HANG_GUARD_SECONDS)
    asked = seen.asked
    assert asked and all(url.startswith(f"http://localhost:{port}/") for url in asked), asked
    assert "attn explore scaled" in seen.before and "0.3302" in seen.before
    assert "1 edit" in seen.after and "1.1" in seen.after  # the first key reached the app
    assert seen.cells is not None
    columns, rows = seen.cells
    assert COLUMNS * 0.85 <= columns <= COLUMNS * 1.3 and rows >= ROWS * 0.9, seen.cells
