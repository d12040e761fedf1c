"""The explorer: a lesson's inputs as editable tables, its options as controls, its steps below.

Nothing is computed here: every edit makes a new :class:`~attn_cli.explore.state.State`, whose
walkthrough the runner computes as `attn LESSON ...` would, and each step is drawn by the rich
renderer the command line uses (attn_cli.render.rich_render), one widget per step.

Made for 80 × 24 (a projector with a large font): the step in focus is the first the steps
pane shows, with its numbers first (its explanation folded away until ``f``; its intermediates
after its value), and it stays there while the inputs are edited; ``[`` and ``]`` move to the
previous and next step, ``g`` lists them all. The opening step is the lesson's attention
weights (state.focus_step). What changed at the last edit carries a glyph (widgets.GLYPHS) and a
bar beside its step; every key is on screen (the footer, the hint lines, ``?``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, HorizontalScroll, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.events import Key, Resize
from textual.widget import Widget
from textual.widgets import Footer, Input, Label, Select, Static

from attn_cli.core.card import Option
from attn_cli.core.errors import Door, UserError, param
from attn_cli.explore import state as st
from attn_cli.explore.screens import CommandLine, Keys, Pick, lessons
from attn_cli.explore.widgets import (
    GLYPHS,
    Flag,
    InputTable,
    Rendered,
    bindings,
    estimated_height,
    glyph,
    step_blocks,
)
from attn_cli.render import RenderOptions
from attn_cli.render.rich_render import header, notes_renderables

# How long the steps out of sight are drawn for before the keys get a turn: a key waits at most
# about this long (one step's drawing takes 1 to 6 ms).
CATCH_UP_SECONDS = 0.012
# How long after a frame the controls are checked (each check a run of the lesson).
CHECK_DELAY = 0.05
# The width of one control in the options' grid (a grid of as many as fit across).
CONTROL_WIDTH = 26
# The fewest rows the inputs and controls keep when the step in focus needs the rest of the
# screen: the keys' line, a table's name, header and first row, and its scroll bar.
EDITOR_ROWS = 5
# The rows the steps never have: the title, the strip above the steps, the footer.
CHROME_ROWS = 3
# The hints above the inputs and the steps: the keys each part of the screen takes.
INPUTS_HINT = "enter/digit: type · + -: nudge · tab: next · i: hide"
STEPS_HINT = "[ ]: step · g: list · f: prose"


@dataclass
class Editing:
    """The entry the cell editor is typing into."""

    name: str
    row: int
    col: int


class Explorer(App[None]):
    """attn explore: a lesson's inputs and options, edited live, and its walkthrough."""

    TITLE = "attn explore"
    CSS = """
    Screen { layout: vertical; }
    #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    #editor { height: auto; max-height: 60%; }
    #inputs-hint { height: 1; color: $text-muted; padding: 0 1; }
    #tables { height: auto; }
    .input-box { width: auto; height: auto; margin-right: 2; }
    .input-label { text-style: bold; }
    .input-table { width: auto; height: auto; max-height: 30vh; }
    #options { layout: grid; grid-size: 3; grid-rows: 1; height: auto; }
    .option { height: 1; }
    .option Label { width: auto; margin-right: 1; }
    .option Input { width: 1fr; }
    .option Select { width: 1fr; }
    #inert { height: 1; color: $text-muted; }
    #cell-row { height: 1; display: none; }
    #cell-row.editing { display: block; }
    #cell-label { width: auto; margin-right: 1; text-style: bold; }
    #cell-editor { width: 24; }
    #message { height: auto; color: $error; text-style: bold; display: none; }
    #strip { height: 1; background: $panel; }
    #where { width: 1fr; padding: 0 1; text-style: bold; }
    #steps-hint { width: auto; padding: 0 1; color: $text-muted; }
    #steps { height: 1fr; overflow-y: scroll; }
    .step { border-left: blank; padding: 0 1 0 0; margin-top: 1; }
    .step.top { margin-top: 0; }
    .step.changed { border-left: thick $warning; }
    Pick, CommandLine, Keys { align: center middle; }
    #dialog { width: 90%; height: auto; max-height: 100%; border: thick $primary; padding: 0 1; background: $surface; }
    #keys-dialog { width: 100%; max-width: 90; height: auto; max-height: 100%; border: thick $primary; padding: 0 1; background: $surface; }
    .dialog-title { text-style: bold; }
    #command { height: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings("app")

    def __init__(self, lesson: str, export_dir: Path = Path("."), *, door: Door) -> None:
        """``door``: how the controls and messages name a parameter (the command line's flags,
        handed down by `attn explore`: the explorer's command panel is a command line)."""
        super().__init__()
        self.export_dir = export_dir
        self.door = door
        self.prose = False  # the steps' explanations shown (f)
        self.checked: dict[Any, frozenset[str]] = {}  # inert_controls, by lesson and state
        self.checks_pending = False  # a check of the controls is scheduled (schedule_checks)
        self.open(lesson)
        self.editing: Editing | None = None
        self.syncing = False  # controls set from the state: their events change nothing
        # Seconds from each edit to the screen showing it (``latencies``: the steps in sight),
        # and to every step drawn (``settled``), for benchmarks/explore.py.
        self.latencies: list[float] = []
        self.settled: list[float] = []
        self.edit_started: float | None = None
        self.generation = 0  # of the steps' drawing: one per edit
        self.focus_measured: tuple[Any, int] = (None, 0)  # focus_rows's last, by what it drew

    def spelt(self, error: UserError) -> str:
        """A user error in the explorer's words: each parameter named as its control is
        labelled (the door's spelling)."""
        return self.door.words(error.message)

    def label(self, keyword: str) -> str:
        """The control of parameter ``keyword`` as it is labelled (``--heads``)."""
        return self.door.words(param(keyword))

    def open(self, lesson: str) -> None:
        """Lesson ``lesson`` on its lecture example, with a fresh history and nothing marked."""
        self.start = st.opening(lesson, self.door)
        self.state = self.start.state
        self.walkthrough = self.start.walkthrough
        self.history: list[st.State] = []
        self.changes: dict[str, st.StepChange] = {}
        self.cells_changed: dict[tuple[str, int, int], int] = {}
        self.focused_step = st.focus_step(self.walkthrough) + 1  # 0: the introduction
        # The controls that change no number (state.inert_controls), each check a run of the
        # lesson: done right after the first frame (the screen does not wait for them), and
        # kept for the session. Until then every option shows, and the seed does not.
        self.inert = frozenset({st.SEED} if self.start.card.seed else ())

    # Layout ----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        with VerticalScroll(id="editor"):
            yield Static(id="inputs-hint")
            yield HorizontalScroll(id="tables")
            yield Vertical(id="options")
            with Horizontal(id="cell-row"):
                yield Label(id="cell-label")
                yield Input(id="cell-editor", compact=True)
            yield Static(id="message")
        with Horizontal(id="strip"):
            yield Static(id="where")
            yield Static(STEPS_HINT, id="steps-hint")
        yield VerticalScroll(id="steps")
        yield Footer(show_command_palette=False)

    async def on_mount(self) -> None:
        await self.build_lesson()

    async def build_lesson(self) -> None:
        """Mount the tables, controls and steps of the lesson in ``self.start``."""
        self.title = f"attn explore {self.start.lesson}"
        options = self.query_one("#options", Vertical)
        steps = self.query_one("#steps", VerticalScroll)
        await options.remove_children()
        await steps.remove_children()
        await self.build_tables()
        await options.mount_all(
            [self.control(option) for option in st.controls(self.start.card)]
            + ([self.seed_control()] if self.start.card.seed else [])
            + [Static(id="inert")]
        )
        self.show_inert()
        await steps.mount(Rendered(id="header", classes="step"))
        self.show_steps()
        self.show_title()
        table = self.query(InputTable)
        if table:
            table.first().focus(scroll_visible=False)  # at the top already: the hint stays in sight
        else:  # a lesson without inputs: the keys go to the app (and the arrows scroll)
            steps.focus()
        self.schedule_checks()

    async def build_tables(self) -> None:
        tables = self.query_one("#tables", HorizontalScroll)
        await tables.remove_children()
        boxes = []
        for name, cells in self.state.cells.items():
            spec = next(spec for spec in self.start.card.inputs if spec.name == name)
            label = Label(f"{name} {spec.description}", classes="input-label")
            boxes.append(Vertical(label, InputTable(name, cells), classes="input-box"))
        await tables.mount_all(boxes)
        for table in self.query(InputTable):
            table.add_columns(*(str(col + 1) for col in range(table.shape[1])))
            for row, entries in enumerate(self.table_cells(table.input_name)):
                table.add_row(*entries, label=str(row + 1))
        tables.display = bool(self.state.cells)
        self.query_one("#inputs-hint", Static).display = bool(self.state.cells)
        self.show_inputs_hint()

    def control(self, option: Option) -> Horizontal:
        """An option's control: a checkbox, a list of its choices, or a field to type in."""
        value = self.state.options[option.name]
        widget_id = f"option-{option.name}"
        widget: Flag | Select[str] | Input
        if option.type is bool:
            widget = Flag(self.label(option.name), bool(value), id=widget_id, compact=True)
            return Horizontal(widget, classes="option", id=f"control-{option.name}")
        if option.choices:
            # An option with no default (--qk-norm) may be left out: its blank is "none".
            widget = Select(
                [(choice, choice) for choice in option.choices],
                value=Select.NULL if value is None else value,
                allow_blank=option.default is None,
                prompt="none",
                id=widget_id,
                compact=True,
            )
        else:
            kind = {int: "integer", float: "number"}.get(option.type, "text")
            widget = Input(
                self.option_text(value),
                placeholder="auto",
                type=kind,  # type: ignore[arg-type]
                id=widget_id,
                compact=True,
            )
        return Horizontal(
            Label(self.label(option.name)), widget, classes="option", id=f"control-{option.name}"
        )

    def seed_control(self) -> Horizontal:
        """The seed of what the lesson draws at random, shown where it changes the numbers."""
        field = Input(str(self.state.seed), type="integer", id="option-seed", compact=True)
        return Horizontal(Label(self.label("seed")), field, classes="option", id="control-seed")

    @staticmethod
    def option_text(value: Any) -> str:
        if value is None:
            return ""
        return st.number_text(value) if isinstance(value, float) else str(value)

    def table_cells(self, name: str) -> list[list[Text]]:
        """Input ``name``'s entries at the rendering's precision (:func:`st.shown_cells`),
        each then its change glyph or a blank, padded to its column's widest entry
        (right-aligned by padding: a blank mark stays)."""
        cells = st.shown_cells(self.state.cells[name], self.precision)
        widths = [max(len(entries[col]) for entries in cells) for col in range(len(cells[0]))]
        return [
            [
                Text(
                    text.rjust(widths[col]) + glyph(self.cells_changed.get((name, row, col), 0)),
                    justify="left",
                )
                for col, text in enumerate(entries)
            ]
            for row, entries in enumerate(cells)
        ]

    def on_resize(self, event: Resize) -> None:
        columns = max(2, event.size.width // CONTROL_WIDTH)
        self.query_one("#options").styles.grid_size_columns = columns
        self.fit_editor()
        if self.query("#inert"):
            self.show_inert()

    # Showing the state -----------------------------------------------------------------------

    def show_title(self) -> None:
        where = "your inputs" if st.runs_own(self.start, self.state) else "the lecture's example"
        count = len(self.history)
        edits = f" · {count} edit{'s' * (count != 1)}" if count else ""
        self.query_one("#title", Static).update(
            Text(f"attn explore {self.start.lesson} · {where}{edits}", style="bold")
        )

    def show_inputs_hint(self) -> None:
        names = " ".join(self.state.cells)
        self.query_one("#inputs-hint", Static).update(
            # the keys first: a lesson with many inputs (attn block's weights) cuts the names
            Text(f"{INPUTS_HINT} · {names}", no_wrap=True, overflow="ellipsis")
        )

    def show_where(self) -> None:
        """The strip above the steps: the step in focus, of how many, and which steps changed
        at the last edit (those before the one in focus are out of sight)."""
        steps = self.walkthrough.steps
        if self.focused_step == 0:
            where = f"Introduction, then {len(steps)} steps"
        else:
            where = f"Step {self.focused_step} of {len(steps)}"
        changed = [
            str(number)
            for number, step in enumerate(steps, 1)
            if (change := self.changes.get(step.key)) is not None and change.count
        ]
        if changed:
            where += f" · changed: {' '.join(changed)}"
        self.query_one("#where", Static).update(Text(where, no_wrap=True, overflow="ellipsis"))

    def show_inert(self) -> None:
        """Hide the controls that change no number here, and say which options are hidden."""
        hidden = [
            self.label(option.name)
            for option in st.controls(self.start.card)
            if option.name in self.inert
        ]
        notes = self.query("#inert").results(Static)
        note = next(notes, None)
        if note is None:  # the lesson's controls not mounted yet: build_lesson calls again
            return
        shown = 0
        # The controls mounted (a check may run while a lesson switch mounts its controls).
        for control in self.query_one("#options").query(".option"):
            control.display = (control.id or "").removeprefix("control-") not in self.inert
            shown += control.display
        note.display = bool(hidden)
        note.update(Text(f"no effect: {', '.join(hidden)}", no_wrap=True, overflow="ellipsis"))
        columns = self.query_one("#options").styles.grid_size_columns or 3
        note.styles.column_span = columns - shown % columns if shown % columns else columns
        self.query_one("#options").display = shown > 0 or bool(hidden)

    @property
    def precision(self) -> int:
        """The decimals shown and exported: the lesson's default, as its command prints."""
        return self.start.card.precision

    def step_widgets(self) -> list[Rendered]:
        return list(self.query_one("#steps").query(".walkthrough-step").results(Rendered))

    def show_steps(self, redraw: bool = False) -> None:
        """Every step of the walkthrough from the one in focus on, as the command line prints
        it, its changes marked: those in sight drawn for the next frame, the others right after
        it (catch_up). The steps before the one in focus are not shown (``[`` goes back)."""
        walkthrough = self.walkthrough
        options = RenderOptions(precision=self.precision)
        steps = self.query_one("#steps", VerticalScroll)
        shown = self.step_widgets()
        wanted = len(walkthrough.steps) + (1 if walkthrough.notes else 0)
        if len(shown) != wanted:
            for widget in shown:
                widget.remove()
            shown = [Rendered(classes="step walkthrough-step") for _ in range(wanted)]
            steps.mount_all(shown)
        self.focused_step = min(self.focused_step, len(walkthrough.steps))
        top, height = steps.scroll_offset.y, steps.size.height
        header_widget = self.query_one("#header", Rendered)
        header_widget.display = self.focused_step == 0
        header_widget.set_class(True, "top")
        if self.focused_step == 0:  # the introduction, shown: drawn again (one short block)
            header_widget.show(header(walkthrough))
        below = 0  # the lines, by estimate, of the steps shown before this one
        for number, (widget, step) in enumerate(zip(shown, walkthrough.steps, strict=False), 1):
            widget.display = number >= self.focused_step
            widget.set_class(number == self.focused_step, "top")
            change = self.changes.get(step.key)
            marked = change is not None and change.count > 0
            source = (number, walkthrough.dtype, step, self.prose)
            unchanged = not marked and not widget.has_class("changed")
            if unchanged and not redraw and st.same(widget.source, source):
                continue  # the same step, unmarked before and now: its lines stand
            blocks = step_blocks(step, number, options, walkthrough.dtype, change, self.prose)
            if widget.lines or not widget.display:
                in_sight = widget.display and self.in_sight(widget, top, height)
            else:  # not drawn yet (a lesson opening): those the screen can show, by estimate
                in_sight = below < self.size.height
            estimate = estimated_height(step, self.prose)
            below += estimate if widget.display else 0
            widget.show(Group(*blocks), later=not in_sight, height=estimate)
            widget.source = source
            widget.set_class(marked, "changed")
        if walkthrough.notes:
            notes = Group(*notes_renderables(walkthrough, options.precision))
            shown[-1].show(notes, later=not self.in_sight(shown[-1], top, height))
            shown[-1].source = None
        self.show_where()
        self.fit_editor()
        self.generation += 1
        self.call_after_refresh(self.catch_up, self.generation)

    def fit_editor(self) -> None:
        """Leave the step in focus the rows its numbers take (its heading, its explanation when
        unfolded, its value's table): the inputs and controls above get the rest (at least
        EDITOR_ROWS; they scroll), and never more than 60% of the screen."""
        editor = self.query_one("#editor")
        height = self.size.height or 24
        need = self.focus_rows()
        room = max(EDITOR_ROWS, height - CHROME_ROWS - need) if need else height
        editor.styles.max_height = min(room, height * 3 // 5)

    def focus_rows(self) -> int:
        """The lines from the top of the step in focus to the end of its value's table, as the
        steps' pane draws them (0 for the introduction)."""
        if self.focused_step == 0:
            return 0
        step = self.walkthrough.steps[self.focused_step - 1]
        options = RenderOptions(precision=self.precision)
        width = self.focus_width()
        key = (step.key, id(step), self.prose, width)
        if self.focus_measured[0] != key:
            change = self.changes.get(step.key)
            blocks = step_blocks(step, 0, options, self.walkthrough.dtype, change, self.prose)
            numbers = blocks[: 2 + (self.prose and bool(step.explanation_at(self.precision)))]
            lines = self.console.render_lines(
                Group(*numbers), self.console.options.update(width=width, highlight=False)
            )
            self.focus_measured = (key, len(lines))
        return self.focus_measured[1]

    def focus_width(self) -> int:
        """The width a step is drawn at: the steps' pane less its scroll bar, a step's bar at
        its left and its padding at its right."""
        return max(1, (self.size.width or 80) - 4)

    @staticmethod
    def in_sight(widget: Widget, top: int, height: int) -> bool:
        """Whether the widget showed within the steps' view (scrolled to ``top``) last frame."""
        region = widget.virtual_region
        return region.height == 0 or (region.y < top + height and region.bottom > top)

    def catch_up(self, generation: int) -> None:
        """Draw the steps put off at the last edit, for at most CATCH_UP_SECONDS at a time, then
        give the keys a turn (a newer edit starts its own catch-up; this one stops)."""
        if generation != self.generation:
            return
        started = time.perf_counter()
        for widget in self.query_one("#steps", VerticalScroll).query(Rendered):
            if widget.stale and widget.display:
                if time.perf_counter() - started > CATCH_UP_SECONDS:
                    self.call_later(self.catch_up, generation)
                    return
                widget.catch_up()
        if self.edit_started is not None:
            self.settled.append(time.perf_counter() - self.edit_started)
            self.edit_started = None

    def show_cells(self) -> None:
        for table in self.query(InputTable):
            for row, entries in enumerate(self.table_cells(table.input_name)):
                for col, cell in enumerate(entries):
                    table.update_cell_at(Coordinate(row, col), cell, update_width=True)

    def show_controls(self) -> None:
        self.syncing = True
        try:
            for option in st.controls(self.start.card):
                value = self.state.options[option.name]
                widget = self.query_one(f"#option-{option.name}")
                if isinstance(widget, Flag):
                    widget.value = bool(value)
                elif isinstance(widget, Select):
                    widget.value = Select.NULL if value is None else value
                elif isinstance(widget, Input):
                    widget.value = self.option_text(value)
            if self.start.card.seed:
                self.query_one("#option-seed", Input).value = str(self.state.seed)
        finally:
            self.call_after_refresh(self.synced)

    def synced(self) -> None:
        self.syncing = False

    def show_message(self, text: str) -> None:
        message = self.query_one("#message", Static)
        message.update(Text(text))
        message.display = bool(text)

    # Which controls change the numbers --------------------------------------------------------

    def check_key(self) -> Any:
        """What decides which controls change a number: the options, and which inputs are given
        (an input the lesson fills in, once edited, is no longer drawn from the seed)."""
        options = tuple(sorted(self.state.options.items(), key=lambda item: item[0]))
        return options, self.state.own, self.state.edited

    def schedule_checks(self) -> None:
        """Check the controls (check_controls) CHECK_DELAY after the next frame: the frame is
        written to the terminal first (by Textual's writer thread, which a long computation on
        this one would hold up)."""
        self.checks_pending = True
        self.call_after_refresh(lambda: self.set_timer(CHECK_DELAY, self.check_controls))

    def check_controls(self) -> None:
        """Show only the controls that change a number of the state on screen (each checked by
        computing it: state.inert_controls)."""
        key = (self.start.lesson, self.check_key())
        if key not in self.checked:
            names = st.checked_controls(self.start)
            self.checked[key] = st.inert_controls(self.start, self.state, self.walkthrough, names)
        if self.checked[key] != self.inert:
            self.inert = self.checked[key]
            self.show_inert()
        self.checks_pending = False

    # Changing the state ----------------------------------------------------------------------

    def apply(self, new: st.State, *, undoing: bool = False) -> bool:
        """Compute the walkthrough of ``new`` and show it; a UserError is shown in its place
        (the command line's message) and the screen stays as it was."""
        started = time.perf_counter()
        try:
            walkthrough = st.walkthrough(self.start, new)
        except UserError as error:
            self.show_message(f"attn: error: {self.spelt(error)}")
            return False
        except Exception as error:  # a lesson's own failure: said, not a crash of the app
            self.show_message(f"attn: unexpected error: {type(error).__name__}: {error}")
            return False
        if not undoing:
            self.history.append(self.state)
        self.edit_started = started
        new = st.with_filled(self.start, new, walkthrough)
        checks_before = self.check_key()
        before, self.state = self.state, new
        self.changes = st.changed_entries(self.walkthrough, walkthrough)
        self.focused_step = same_step(self.walkthrough, walkthrough, self.focused_step)
        self.walkthrough = walkthrough
        self.cells_changed = changed_cells(before, new)
        self.show_message("")
        if any(
            table.shape != (len(new.cells[table.input_name]), len(new.cells[table.input_name][0]))
            for table in self.query(InputTable)
        ):
            self.run_worker(self.build_tables())  # a filled-in input of another shape
        else:
            self.show_cells()
        # Before show_steps, whose catch-up also waits for the frame: this times the frame.
        self.call_after_refresh(lambda: self.latencies.append(time.perf_counter() - started))
        self.show_steps()
        self.show_title()
        if self.check_key() != checks_before:
            self.schedule_checks()
        return True

    @on(InputTable.Nudge)
    def nudge(self, event: InputTable.Nudge) -> None:
        try:
            new = st.nudged(
                self.state, event.name, event.row, event.col, event.direction * st.NUDGE
            )
        except UserError as error:
            self.show_message(f"attn: error: {self.spelt(error)}")
            return
        self.apply(new)

    @on(InputTable.Edit)
    def edit(self, event: InputTable.Edit) -> None:
        self.start_edit(event.name, event.row, event.col, event.typed)

    def start_edit(self, name: str, row: int, col: int, typed: str = "") -> None:
        """Open the cell editor on entry (row, col) of input ``name``."""
        self.editing = Editing(name, row, col)
        self.query_one("#cell-label", Label).update(f"{name}[{row + 1},{col + 1}] =")
        editor = self.query_one("#cell-editor", Input)
        editor.value = typed or self.state.cells[name][row][col]
        self.query_one("#cell-row").add_class("editing")
        editor.focus()
        editor.cursor_position = len(editor.value)

    def stop_edit(self) -> None:
        editing, self.editing = self.editing, None
        self.query_one("#cell-row").remove_class("editing")
        if editing is not None:
            table = self.query_one(f"#input-{editing.name}", InputTable)
            table.focus()

    @on(Input.Submitted, "#cell-editor")
    def cell_typed(self, event: Input.Submitted) -> None:
        editing = self.editing
        if editing is None:
            return
        new = st.with_cell(self.state, editing.name, editing.row, editing.col, event.value)
        if self.apply(new):  # refused: the editor stays open, with the message under it
            self.stop_edit()

    def on_key(self, event: Key) -> None:
        if event.key == "escape" and self.editing is not None:
            event.stop()
            self.show_message("")
            self.stop_edit()

    @on(Flag.Changed)
    def checkbox_changed(self, event: Flag.Changed) -> None:
        self.option_changed(event.checkbox.id, event.value)

    @on(Select.Changed)
    def select_changed(self, event: Select.Changed) -> None:
        value = None if event.value is Select.NULL else event.value
        self.option_changed(event.select.id, value)

    @on(Input.Submitted, "#options Input")
    def option_typed(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if event.input.id == "option-seed":
            if not text.lstrip("-").isdigit() or int(text) < 0:
                given = self.door.words(param("seed", repr(text)))
                self.show_message(f"attn: error: {given} is not a whole number ≥ 0.")
                self.show_controls()
                return
            if int(text) != self.state.seed:
                self.apply(st.with_seed(self.state, int(text)))
            return
        option = self.option_of(event.input.id)
        if option is None:
            return
        if not text:  # left empty: the value the run takes without it
            value = None if option.default is None else st.as_given(option, option.default)
        elif option.type is int:
            value = int(text) if text.lstrip("+-").isdigit() else text  # its range: the runner's
        elif option.type is float:
            try:
                value = float(text)
            except ValueError:
                given = self.door.words(param(option.name, repr(text)))
                self.show_message(f"attn: error: {given} is not a number.")
                return
        else:
            value = text
        if isinstance(value, str) and option.type is int:
            given = self.door.words(param(option.name, repr(text)))
            self.show_message(f"attn: error: {given} is not a whole number.")
            return
        self.option_changed(event.input.id, value)

    def option_of(self, widget_id: str | None) -> Option | None:
        name = (widget_id or "").removeprefix("option-")
        return next(
            (option for option in st.controls(self.start.card) if option.name == name), None
        )

    def option_changed(self, widget_id: str | None, value: Any) -> None:
        option = self.option_of(widget_id)
        if self.syncing or option is None or self.state.options[option.name] == value:
            return
        self.apply(st.with_option(self.state, option.name, value))
        self.show_controls()  # refused or not: the controls show the values in force

    # Keys ------------------------------------------------------------------------------------

    def action_undo(self) -> None:
        if not self.history:
            self.show_message("Nothing to undo: this is the lecture's example as it opened.")
            return
        previous = self.history.pop()  # before apply: the title counts what is left
        if not self.apply(previous, undoing=True):
            self.history.append(previous)
        self.show_title()
        self.show_controls()

    def action_reset(self) -> None:
        if self.state != self.start.state:
            self.apply(self.start.state)
            self.show_controls()

    def action_lessons(self) -> None:
        def chosen(name: str | None) -> None:
            if name and name != self.start.lesson:
                self.run_worker(self.open_lesson(name))

        self.push_screen(lessons(self.start.lesson), chosen)

    async def open_lesson(self, name: str) -> None:
        """Switch to lesson ``name`` on its lecture example (a fresh history)."""
        self.open(name)
        self.stop_edit()
        self.show_message("")
        await self.build_lesson()

    def action_step(self, direction: int) -> None:
        """Focus the previous (-1) or next (1) step: it becomes the first the pane shows."""
        self.go_to(self.focused_step + direction)

    def go_to(self, focus: int) -> None:
        focus = max(0, min(focus, len(self.walkthrough.steps)))
        if focus != self.focused_step:
            self.focused_step = focus
            self.show_steps()
        self.query_one("#steps", VerticalScroll).scroll_home(animate=False)

    def action_steps(self) -> None:
        options = RenderOptions(precision=self.precision)
        entries = [("0", "0  Introduction: the lesson and its example")]
        for number, step in enumerate(self.walkthrough.steps, 1):
            change = self.changes.get(step.key)
            mark = GLYPHS[st.MOVED] if change is not None and change.count else " "
            entries.append((str(number), f"{number:<2} {mark} {step.title_at(options.precision)}"))

        def chosen(picked: str | None) -> None:
            if picked is not None:
                self.go_to(int(picked))

        self.push_screen(
            Pick(
                "Go to a step: type its number, or ↑ ↓; enter goes", entries, str(self.focused_step)
            ),
            chosen,
        )

    def action_prose(self) -> None:
        self.prose = not self.prose
        self.show_steps(redraw=True)

    def action_inputs(self) -> None:
        tables = self.query_one("#tables")
        if not self.state.cells:
            return
        tables.display = not tables.display
        if not tables.display:
            self.query_one("#steps").focus()
        else:
            self.query(InputTable).first().focus()

    def action_keys(self) -> None:
        self.push_screen(Keys())

    def command_text(self) -> str:
        return st.command_line(self.start, self.state, self.door)

    def action_command(self) -> None:
        command = self.command_text()
        self.copy_to_clipboard(command)
        self.push_screen(CommandLine(command))

    def action_export(self) -> None:
        try:
            written = st.export(self.walkthrough, self.export_dir, self.precision)
        except UserError as error:
            self.show_message(f"attn: error: {self.spelt(error)}")
            return
        self.notify("Wrote " + ", ".join(str(path) for path in written), title="Exported")

    def action_scroll_steps(self, direction: int) -> None:
        steps = self.query_one("#steps", VerticalScroll)
        if direction > 0:
            steps.scroll_page_down(animate=False)
        else:
            steps.scroll_page_up(animate=False)


def same_step(before: Any, after: Any, number: int) -> int:
    """The number, in walkthrough ``after``, of step ``number`` of ``before`` (the step in focus
    stays in focus when steps come or go before it, as --decoder adds some); the number itself
    when the step is gone."""
    if not 0 < number <= len(before.steps):
        return number
    key = before.steps[number - 1].key
    return next(
        (index for index, step in enumerate(after.steps, 1) if step.key == key),
        min(number, len(after.steps)),
    )


def changed_cells(before: st.State, after: st.State) -> dict[tuple[str, int, int], int]:
    """The input entries whose text differs between two states (of one lesson), each with how
    it changed (state.ROSE, FELL or MOVED)."""
    if before.lesson != after.lesson:
        return {}
    changed = {}
    for name, rows in after.cells.items():
        old = before.cells.get(name)
        if old is None or len(old) != len(rows):
            continue
        for row, entries in enumerate(rows):
            for col, text in enumerate(entries):
                if col < len(old[row]) and old[row][col] != text:
                    changed[(name, row, col)] = direction(old[row][col], text)
    return changed


def direction(old: str, new: str) -> int:
    try:
        a, b = float(old), float(new)
    except ValueError:
        return st.MOVED
    return st.ROSE if b > a else st.FELL if b < a else st.MOVED
