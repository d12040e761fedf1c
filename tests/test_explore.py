"""attn explore: the lesson's walkthrough recomputed on every edit, driven by Textual's Pilot.

The app is checked against the library: after each edit its steps hold the values that
``attn_cli.<lesson>(...)`` (the Python API) and the copied command line give for the same
inputs; a bad entry is refused with the command line's own message; the snapshots show the
screen at 80 × 24."""

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
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("textual", reason="attn explore needs textual (the explore extra)")

import attn_cli
from attn_cli import course as cards
from attn_cli.explore import state as st
from attn_cli.explore.serve import external_addresses, offline_template
from tests.conftest import assert_user_error, unwrap

SIZE = (80, 24)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def explorer(lesson: str = "scaled", **kwargs: Any) -> Any:
    from attn_cli.explore.app import Explorer

    return Explorer(lesson, **kwargs)


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
    from attn_cli.explore.app import Rendered

    widget = list(app.query(".walkthrough-step").results(Rendered))[index]
    widget.catch_up()
    return "\n".join(line.text for line in widget.draw(widget.content_size.width or 76))


# The pure parts -------------------------------------------------------------------------------


def test_changed_entries_marks_each_entry_that_moved():
    before = attn_cli.scaled("1,0;0,1", "1,1;2,0", "0.1,0.2;0.3,0.4")
    after = attn_cli.scaled("1,0;0,1", "1,1;2,0", "0.1,0.2;0.3,0.9")  # only V[2,2] moved
    changes = st.changed_entries(before, after)
    # Scores and weights do not read V; the output's second column is the weights times V's.
    assert not changes["scores"].any() and not changes["weights"].any()
    assert changes["output"].tolist() == [[False, True], [False, True]]
    assert st.changed_count(changes["output"]) == 2
    assert st.changed_entries(None, after)["output"] is False  # a first screen: nothing moved


def test_value_changes_of_other_kinds_are_whole():
    nan = np.array([np.nan, 1.0])
    assert not st.value_changes(nan, nan.copy()).any()  # NaN where NaN was: unchanged
    assert st.value_changes(np.zeros(2), np.zeros(3)) is True  # a new shape: all of it
    assert st.value_changes([{"a": 1}], [{"a": 2}]) is True
    assert st.value_changes(0.5, 0.5) is False
    assert st.value_changes(np.array([0.1 + 0.2]), np.array([0.3])).tolist() == [False]


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
    from attn_cli.explore.app import Rendered

    async def scenario() -> Any:
        app = explorer("variance")
        async with app.run_test(size=SIZE) as pilot:
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
    # the scores only (2, 1) moves.
    assert app.changes["scores"].tolist() == [[False, False], [True, False]]
    assert app.cells_changed == {("Q", 1, 1)}


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
            message = str(app.query_one("#message").render())
            editing = app.editing is not None
            return app, before, message, editing

    app, before, message, editing = run(scenario())
    assert app.walkthrough is before and app.state.cells["Q"][0] == ("1", "0")
    assert editing  # the editor stays open on the entry, to be fixed
    bad = st.with_cell(app.state, "Q", 0, 1, "1e999x")
    args = shlex.split(st.command_line(app.start, bad))[1:]
    result = invoke(*args)
    assert_user_error(result, "'1e999x'")
    assert message == result.stderr.strip()


def test_an_option_is_recomputed_and_a_refused_one_is_put_back(invoke):
    async def scenario() -> Any:
        app = explorer("multihead")
        async with app.run_test(size=SIZE) as pilot:
            heads = app.query_one("#option-heads")
            heads.focus()
            heads.value = "3"  # 4 columns cannot be shared by 3 heads
            await pilot.press("enter")
            await pilot.pause()
            refused = (str(app.query_one("#message").render()), heads.value)
            heads.value = "4"
            await pilot.press("enter")
            await pilot.pause()
            return app, refused

    app, (message, put_back) = run(scenario())
    assert "--heads must divide d_model" in message and put_back == "2"
    assert app.state.options["heads"] == 4
    assert st.command_line(app.start, app.state) == "attn multihead --heads 4"
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
    assert command == panel == st.command_line(app.start, app.state)
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
    command = st.command_line(start, state)
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
    args = shlex.split(st.command_line(app.start, app.state))[1:]
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
            await pilot.pause(0.2)
            return app

    app = run(scenario())
    following = cards.lesson_names()[1]
    assert app.start.lesson == following and app.history == []
    assert app.walkthrough.lesson == following and not app.state.own


@pytest.mark.parametrize("lesson", cards.lesson_names())
def test_every_lesson_opens_on_its_example(lesson):
    from attn_cli.explore.app import InputTable
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
    inputs = {item.name: np.shape(item.value) for item in expected.inputs}
    assert tables == {name: len(app.state.cells[name]) for name in app.state.cells}
    for name in tables:
        assert np.atleast_2d(np.zeros(inputs[name])).shape[0] == tables[name]


# Snapshots at 80 × 24 (tests/__snapshots__/test_explore/) -------------------------------------


def test_snapshot_opens_scaled(snap_compare):
    assert snap_compare(explorer("scaled"), terminal_size=SIZE)


def test_snapshot_an_edit_is_marked(snap_compare):
    assert snap_compare(explorer("scaled"), press=["down", "+", "pagedown"], terminal_size=SIZE)


def test_snapshot_the_command_panel(snap_compare):
    assert snap_compare(explorer("window"), press=["+", "c"], terminal_size=SIZE)


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


async def browse(page: str, devtools: int, wanted: str, seconds: float) -> tuple[str, list[str]]:
    """Open ``page`` in the browser listening on port ``devtools`` (DevTools protocol) and read
    what the app sends the page's terminal until ``wanted`` shows; the text read and every
    address the page asked for."""
    import base64

    import aiohttp

    async with aiohttp.ClientSession() as session:
        for _ in range(100):  # the browser's DevTools endpoint, once it listens
            try:
                async with session.get(f"http://127.0.0.1:{devtools}/json") as response:
                    targets = await response.json(content_type=None)
                break
            except aiohttp.ClientError:
                await asyncio.sleep(0.1)
        target = next(each for each in targets if each["type"] == "page")
        async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as socket_:
            await socket_.send_json({"id": 1, "method": "Network.enable"})
            await socket_.send_json({"id": 2, "method": "Page.navigate", "params": {"url": page}})
            text, asked = "", []
            deadline = time.monotonic() + seconds
            while wanted not in text and time.monotonic() < deadline:
                try:
                    message = await socket_.receive_json(timeout=deadline - time.monotonic())
                except TimeoutError:
                    break
                params = message.get("params", {})
                if message.get("method") == "Network.requestWillBeSent":
                    asked.append(params["request"]["url"])
                elif message.get("method") == "Network.webSocketFrameReceived":
                    frame = params["response"]
                    data = frame["payloadData"]
                    raw = base64.b64decode(data) if frame.get("opcode") == 2 else data.encode()
                    text += raw.decode("utf-8", errors="ignore")
            return text, asked


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="no Chromium (apt-get install chromium)")
def test_serve_shows_the_lesson_in_a_headless_browser(tmp_path):
    """`attn explore --serve` in a headless Chromium that can reach nothing but this machine:
    the page loads from localhost alone, the app starts behind it, and what it sends the
    browser's terminal holds the lesson's title and example."""
    port, devtools = free_port(), free_port()
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
            f"--remote-debugging-port={devtools}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("localhost", port)) == 0:
                    break
            time.sleep(0.2)
        page = f"http://localhost:{port}/"
        text, asked = run(browse(page, devtools, "Scaled dot-product attention", 30))
    finally:
        for process in (browser, server):
            process.terminate()
            process.wait(timeout=10)
    assert asked and all(url.startswith(f"http://localhost:{port}/") for url in asked), asked
    assert "Scaled dot-product attention" in text
    assert "two-tokens" in text
