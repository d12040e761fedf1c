"""The explorer: a lesson's inputs as editable tables, its options as controls, its steps below.

Nothing is computed here: every edit makes a new :class:`~attn_cli.explore.state.State`, whose
walkthrough the runner computes as `attn LESSON ...` would, and each step is drawn by the rich
renderer the command line uses (attn_cli.render.rich_render), one Static per step. What changed
since the last edit is shown reversed (an input's entry, a step's entries) and marked by a bar
beside its step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, HorizontalScroll, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.events import Key
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import (
    Checkbox,
    DataTable,
    Footer,
    Input,
    Label,
    OptionList,
    Select,
    Static,
)
from textual.widgets.option_list import Option as ListOption

from attn_cli import course as cards
from attn_cli.core.card import Option
from attn_cli.core.errors import UserError
from attn_cli.core.model import Step
from attn_cli.core.numbers import as_matrix
from attn_cli.explore import state as st
from attn_cli.render import RenderOptions
from attn_cli.render.rich_render import (
    MatrixTable,
    header,
    notes_renderables,
    step_renderables,
)

# How a changed entry shows: reversed (it stays visible on a weight's shading, on a projector,
# and without colour).
CHANGED = "reverse"
# How long the steps out of sight are drawn for before the keys get a turn: a key waits at most
# about this long (one step's drawing takes 1 to 6 ms).
CATCH_UP_SECONDS = 0.012
# What starts editing an entry when typed on a table (the character is its first).
TYPING = set("0123456789.-+eE")


class MarkedTable(MatrixTable):
    """A step's matrix as the renderer draws it, its changed entries reversed."""

    def __init__(self, table: MatrixTable, changed: np.ndarray) -> None:
        self.__dict__.update(table.__dict__)
        self.changed = changed

    def table(self, layout: list[int | None], marks: bool) -> Any:
        drawn = super().table(layout, marks)
        for position, row in enumerate(self.shown_rows):
            if row is None:
                continue
            for column, col in enumerate(layout):
                if col is None or not self.changed[row, col]:
                    continue
                cell = drawn.columns[column + 1]._cells[position]
                if isinstance(cell, Text):
                    cell.stylize(CHANGED)
        return drawn


def marked_step(
    step: Step, number: int, options: RenderOptions, dtype: str, change: Any
) -> list[RenderableType]:
    """A step as the command line prints it, with its changed entries reversed."""
    blocks = step_renderables(step, number, options, dtype=dtype)
    if not isinstance(change, np.ndarray) or not change.any():
        return blocks
    for index, block in enumerate(blocks):
        table = block.renderable if isinstance(block, Padding) else None
        if isinstance(table, MatrixTable) and table.rows.size == change.size:
            mask = as_matrix(change).reshape(table.rows.shape).astype(bool)
            blocks[index] = Padding(MarkedTable(table, mask), (0, 0, 0, 2))
            break
    return blocks


def changed_cells(before: st.State, after: st.State) -> set[tuple[str, int, int]]:
    """The input entries whose text differs between two states (of one lesson)."""
    if before.lesson != after.lesson:
        return set()
    return {
        (name, row, col)
        for name, rows in after.cells.items()
        for row, entries in enumerate(rows)
        for col, text in enumerate(entries)
        if name in before.cells and before.cells[name][row][col] != text
    }


class InputTable(DataTable[Text]):
    """One input's entries. Enter or a digit edits the entry under the cursor; + and - nudge it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("plus,equals_sign", "nudge(1)", "+0.1", show=False),
        Binding("minus", "nudge(-1)", "-0.1", show=False),
    ]

    def __init__(self, name: str, cells: st.Cells) -> None:
        super().__init__(cursor_type="cell", id=f"input-{name}", classes="input-table")
        self.input_name = name
        self.shape = (len(cells), len(cells[0]) if cells else 0)

    def action_nudge(self, direction: int) -> None:
        row, col = self.cursor_coordinate
        app = self.app
        if isinstance(app, Explorer):
            app.nudge(self.input_name, row, col, direction * st.NUDGE)

    def on_key(self, event: Key) -> None:
        # + and - nudge (the bindings); a digit, a point or an e starts typing the entry.
        if event.character and event.character in TYPING - {"+", "-"}:
            app = self.app
            if isinstance(app, Explorer):
                event.stop()
                event.prevent_default()
                app.start_edit(self.input_name, *self.cursor_coordinate, event.character)


class Rendered(Widget):
    """A rich renderable (a step as the command line prints it), drawn once per change at the
    width it is shown at: laying out the screen measures it without drawing it again.

    A step out of sight when an edit comes (``show(..., later=True)``) keeps its old lines, and
    the height they take, until it is drawn: by :meth:`catch_up`, which the app calls step by
    step once the screen shows the steps in sight, or at once if it scrolls into sight first.
    """

    DEFAULT_CSS = "Rendered { height: auto; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.renderable: RenderableType = Text("")
        self.lines: list[Strip] = []
        self.drawn_at = -1  # the width the lines were drawn at (-1: not drawn since a change)
        self.later = False  # out of sight at the last change: its old lines stand in until drawn
        self.source: Any = None  # what it shows, as data, when that is a step (see show_steps)

    @property
    def stale(self) -> bool:
        return self.drawn_at < 0

    def show(self, renderable: RenderableType, later: bool = False) -> None:
        self.renderable = renderable
        self.drawn_at = -1
        self.later = later and bool(self.lines)
        if not self.later:
            self.refresh(layout=True)

    def draw(self, width: int) -> list[Strip]:
        width = max(width, 1)
        if width != self.drawn_at:
            console = self.app.console
            options = console.options.update(width=width, highlight=False)
            lines = console.render_lines(self.renderable, options, pad=True)
            self.lines = [Strip(line, width) for line in lines]
            self.drawn_at = width
            self.later = False
        return self.lines

    def catch_up(self) -> None:
        """Draw the lines put off by ``show(..., later=True)``."""
        if self.stale:
            height = len(self.lines)
            self.draw(self.content_size.width or self.drawn_width())
            self.refresh(layout=len(self.lines) != height)

    def drawn_width(self) -> int:
        return self.lines[0].cell_length if self.lines else 1

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self.later and self.stale:
            return len(self.lines)
        return len(self.draw(width))

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        if self.later and self.stale:  # scrolled into sight before its turn came
            height = len(self.lines)
            self.draw(width)
            if len(self.lines) != height:
                self.refresh(layout=True)
        lines = self.draw(width)
        style = self.visual_style.rich_style
        if y < len(lines):
            return lines[y].apply_style(style)
        return Strip.blank(width, style)


@dataclass
class Editing:
    """The entry the cell editor is typing into."""

    name: str
    row: int
    col: int


class Lessons(ModalScreen[str]):
    """Pick a lesson (enter), or go back (escape)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Back")]

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        names = cards.lesson_names()
        options = [ListOption(f"{name:<10} {cards.card(name).summary}", id=name) for name in names]
        with Vertical(id="dialog"):
            yield Label("Switch lesson: ↑ ↓ and enter; escape goes back", classes="dialog-title")
            listing = OptionList(*options, id="lessons")
            listing.highlighted = names.index(self.current)
            yield listing

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(self.current)


class CommandLine(ModalScreen[None]):
    """The command line that prints the screen (copied to the clipboard where the terminal
    lets Textual)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,c,q", "dismiss", "Back"),
    ]

    def __init__(self, command: str) -> None:
        super().__init__()
        self.command = command

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(
                "The command that prints this screen (copied); escape goes back",
                classes="dialog-title",
            )
            yield Static(Text(self.command), id="command")


class Explorer(App[None]):
    """attn explore: a lesson's inputs and options, edited live, and its walkthrough."""

    TITLE = "attn explore"
    CSS = """
    Screen { layout: vertical; }
    #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    #editor { height: auto; max-height: 50%; border-bottom: solid $primary; }
    #tables { height: auto; }
    .input-box { width: auto; height: auto; margin-right: 2; }
    .input-label { text-style: bold; }
    .input-table { width: auto; height: auto; max-height: 8; }
    #options { layout: grid; grid-size: 3; grid-columns: 1fr 1fr 1fr; grid-rows: 1; height: auto; }
    .option { height: 1; }
    .option Label { width: auto; margin-right: 1; }
    .option Input { width: 1fr; }
    .option Select { width: 1fr; }
    #cell-row { height: 1; display: none; }
    #cell-row.editing { display: block; }
    #cell-label { width: auto; margin-right: 1; text-style: bold; }
    #cell-editor { width: 24; }
    #message { height: auto; color: $error; text-style: bold; }
    #steps { height: 1fr; }
    .step { border-left: blank; padding: 0 1 0 0; }
    .step.changed { border-left: thick $warning; }
    Lessons, CommandLine { align: center middle; }
    #dialog { width: 90%; height: auto; max-height: 90%; border: thick $primary; padding: 0 1; background: $surface; }
    .dialog-title { text-style: bold; }
    #command { height: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("u", "undo", "Undo"),
        Binding("r", "reset", "Reset"),
        Binding("l", "lessons", "Lesson"),
        Binding("c", "command", "Command"),
        Binding("x", "export", "Export"),
        Binding("pagedown", "scroll_steps(1)", "Steps ↓", priority=True),
        Binding("pageup", "scroll_steps(-1)", "Steps ↑", priority=True),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, lesson: str, export_dir: Path = Path(".")) -> None:
        super().__init__()
        self.export_dir = export_dir
        self.start = st.opening(lesson)
        self.state = self.start.state
        self.walkthrough = st.walkthrough(self.start, self.state)
        self.changes: dict[str, Any] = {}
        self.cells_changed: set[tuple[str, int, int]] = set()
        self.history: list[st.State] = []
        self.editing: Editing | None = None
        self.syncing = False  # controls set from the state: their events change nothing
        # Seconds from each edit to the screen showing it (``latencies``: the steps in sight),
        # and to every step drawn (``settled``), for benchmarks/explore.py.
        self.latencies: list[float] = []
        self.settled: list[float] = []
        self.edit_started: float | None = None
        self.generation = 0  # of the steps' drawing: one per edit

    # Layout ----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        with VerticalScroll(id="editor"):
            yield HorizontalScroll(id="tables")
            yield Vertical(id="options")
            with Horizontal(id="cell-row"):
                yield Label(id="cell-label")
                yield Input(id="cell-editor", compact=True)
            yield Static(id="message")
        yield VerticalScroll(id="steps")
        yield Footer()

    async def on_mount(self) -> None:
        await self.build_lesson()

    async def build_lesson(self) -> None:
        """Mount the tables, controls and steps of the lesson in ``self.start``."""
        self.title = f"attn explore {self.start.lesson}"
        tables = self.query_one("#tables", HorizontalScroll)
        options = self.query_one("#options", Vertical)
        steps = self.query_one("#steps", VerticalScroll)
        await tables.remove_children()
        await options.remove_children()
        await steps.remove_children()
        boxes = []
        for name, cells in self.state.cells.items():
            spec = next(spec for spec in self.start.card.inputs if spec.name == name)
            label = Label(f"{name} {spec.description}", classes="input-label")
            table = InputTable(name, cells)
            boxes.append(Vertical(label, table, classes="input-box"))
        await tables.mount_all(boxes)
        for table in self.query(InputTable):
            table.add_columns(*(str(col + 1) for col in range(table.shape[1])))
            for row in range(table.shape[0]):
                table.add_row(*self.row_cells(table.input_name, row), label=str(row + 1))
        await options.mount_all([self.control(option) for option in st.controls(self.start.card)])
        options.display = bool(st.controls(self.start.card))
        tables.display = bool(self.state.cells)
        await steps.mount(Rendered(id="header", classes="step"))
        self.show_steps()
        self.show_title()
        first = self.query(InputTable)
        if first:
            first.first().focus()

    def control(self, option: Option) -> Horizontal:
        """An option's control: a checkbox, a list of its choices, or a field to type in."""
        value = self.state.options[option.name]
        widget_id = f"option-{option.name}"
        widget: Checkbox | Select[str] | Input
        if option.type is bool:
            widget = Checkbox(option.option, bool(value), id=widget_id, compact=True)
            return Horizontal(widget, classes="option")
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
        return Horizontal(Label(option.option), widget, classes="option")

    @staticmethod
    def option_text(value: Any) -> str:
        if value is None:
            return ""
        return st.number_text(value) if isinstance(value, float) else str(value)

    def row_cells(self, name: str, row: int) -> list[Text]:
        return [
            Text(
                text,
                justify="right",
                style=CHANGED if (name, row, col) in self.cells_changed else "",
            )
            for col, text in enumerate(self.state.cells[name][row])
        ]

    # Showing the state -----------------------------------------------------------------------

    def show_title(self) -> None:
        where = "your inputs" if st.runs_own(self.start, self.state) else "the lecture's example"
        edits = (
            f" · {len(self.history)} edit{'s' * (len(self.history) != 1)}" if self.history else ""
        )
        self.query_one("#title", Static).update(
            Text(f"attn explore {self.start.lesson} · {where}{edits}", style="bold")
        )

    @property
    def precision(self) -> int:
        """The decimals shown and exported: the lesson's default, as its command prints."""
        return self.start.card.precision

    def show_steps(self) -> None:
        """Every step of the walkthrough, as the command line prints it, its changes marked:
        those in sight drawn for the next frame, the others right after it (catch_up)."""
        walkthrough = self.walkthrough
        options = RenderOptions(precision=self.precision)
        steps = self.query_one("#steps", VerticalScroll)
        shown = list(steps.query(".walkthrough-step").results(Rendered))
        wanted = len(walkthrough.steps) + (1 if walkthrough.notes else 0)
        if len(shown) != wanted:
            for widget in shown:
                widget.remove()
            shown = [Rendered(classes="step walkthrough-step") for _ in range(wanted)]
            steps.mount_all(shown)
        top, height = steps.scroll_offset.y, steps.size.height
        header_widget = self.query_one("#header", Rendered)
        header_widget.show(header(walkthrough), later=not self.in_sight(header_widget, top, height))
        for number, (widget, step) in enumerate(zip(shown, walkthrough.steps, strict=False), 1):
            change = self.changes.get(step.key, False)
            marked = st.changed_count(change) > 0
            source = (number, walkthrough.dtype, step)
            if not marked and not widget.has_class("changed") and st.same(widget.source, source):
                continue  # the same step, unmarked before and now: its lines stand
            blocks = marked_step(step, number, options, walkthrough.dtype, change)
            widget.show(Group(*blocks), later=not self.in_sight(widget, top, height))
            widget.source = source
            widget.set_class(marked, "changed")
        if walkthrough.notes:
            notes = Group(*notes_renderables(walkthrough, options.precision))
            shown[-1].show(notes, later=not self.in_sight(shown[-1], top, height))
            shown[-1].source = None
        self.generation += 1
        self.call_after_refresh(self.catch_up, self.generation)

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
            if widget.stale:
                if time.perf_counter() - started > CATCH_UP_SECONDS:
                    self.call_later(self.catch_up, generation)
                    return
                widget.catch_up()
        if self.edit_started is not None:
            self.settled.append(time.perf_counter() - self.edit_started)
            self.edit_started = None

    def show_cells(self) -> None:
        for table in self.query(InputTable):
            for row in range(table.shape[0]):
                for col, cell in enumerate(self.row_cells(table.input_name, row)):
                    table.update_cell_at(Coordinate(row, col), cell, update_width=True)

    def show_controls(self) -> None:
        self.syncing = True
        try:
            for option in st.controls(self.start.card):
                value = self.state.options[option.name]
                widget = self.query_one(f"#option-{option.name}")
                if isinstance(widget, Checkbox):
                    widget.value = bool(value)
                elif isinstance(widget, Select):
                    widget.value = Select.NULL if value is None else value
                elif isinstance(widget, Input):
                    widget.value = self.option_text(value)
        finally:
            self.call_after_refresh(self.synced)

    def synced(self) -> None:
        self.syncing = False

    def show_message(self, text: str) -> None:
        self.query_one("#message", Static).update(Text(text))

    # Changing the state ----------------------------------------------------------------------

    def apply(self, new: st.State, *, undoing: bool = False) -> bool:
        """Compute the walkthrough of ``new`` and show it; a UserError is shown in its place
        (the command line's message) and the screen stays as it was."""
        started = time.perf_counter()
        try:
            walkthrough = st.walkthrough(self.start, new)
        except UserError as error:
            self.show_message(f"attn: error: {error}")
            return False
        except Exception as error:  # a lesson's own failure: said, not a crash of the app
            self.show_message(f"attn: unexpected error: {type(error).__name__}: {error}")
            return False
        if not undoing:
            self.history.append(self.state)
        self.edit_started = started
        before, self.state = self.state, new
        self.changes = st.changed_entries(self.walkthrough, walkthrough)
        self.walkthrough = walkthrough
        self.cells_changed = changed_cells(before, new)
        self.show_message("")
        self.show_cells()
        # Before show_steps, whose catch-up also waits for the frame: this times the frame.
        self.call_after_refresh(lambda: self.latencies.append(time.perf_counter() - started))
        self.show_steps()
        self.show_title()
        return True

    def nudge(self, name: str, row: int, col: int, delta: float) -> None:
        try:
            new = st.nudged(self.state, name, row, col, delta)
        except UserError as error:
            self.show_message(f"attn: error: {error}")
            return
        self.apply(new)

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

    @on(DataTable.CellSelected)
    def cell_selected(self, event: DataTable.CellSelected) -> None:
        table = event.data_table
        if isinstance(table, InputTable):
            self.start_edit(table.input_name, *event.coordinate)

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

    @on(Checkbox.Changed)
    def checkbox_changed(self, event: Checkbox.Changed) -> None:
        self.option_changed(event.checkbox.id, event.value)

    @on(Select.Changed)
    def select_changed(self, event: Select.Changed) -> None:
        value = None if event.value is Select.NULL else event.value
        self.option_changed(event.select.id, value)

    @on(Input.Submitted, "#options Input")
    def option_typed(self, event: Input.Submitted) -> None:
        option = self.option_of(event.input.id)
        if option is None:
            return
        text = event.value.strip()
        if not text:  # left empty: the value the run takes without it
            value = None if option.default is None else st.as_given(option, option.default)
        elif option.type is int:
            value = int(text) if text.lstrip("+-").isdigit() else text  # its range: the runner's
        elif option.type is float:
            try:
                value = float(text)
            except ValueError:
                self.show_message(f"attn: error: {option.option} {text!r} is not a number.")
                return
        else:
            value = text
        if isinstance(value, str) and option.type is int:
            self.show_message(f"attn: error: {option.option} {text!r} is not a whole number.")
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
        previous = self.history[-1]
        if self.apply(previous, undoing=True):
            self.history.pop()
            self.show_controls()

    def action_reset(self) -> None:
        if self.state != self.start.state:
            self.apply(self.start.state)
            self.show_controls()

    def action_lessons(self) -> None:
        def chosen(name: str | None) -> None:
            if name and name != self.start.lesson:
                self.run_worker(self.open_lesson(name))

        self.push_screen(Lessons(self.start.lesson), chosen)

    async def open_lesson(self, name: str) -> None:
        """Switch to lesson ``name`` on its lecture example (a fresh history)."""
        self.start = st.opening(name)
        self.state = self.start.state
        self.walkthrough = st.walkthrough(self.start, self.state)
        self.history, self.changes, self.cells_changed = [], {}, set()
        self.stop_edit()
        self.show_message("")
        await self.build_lesson()

    def command_text(self) -> str:
        return st.command_line(self.start, self.state)

    def action_command(self) -> None:
        command = self.command_text()
        self.copy_to_clipboard(command)
        self.push_screen(CommandLine(command))

    def action_export(self) -> None:
        try:
            written = st.export(self.walkthrough, self.export_dir, self.precision)
        except UserError as error:
            self.show_message(f"attn: error: {error}")
            return
        self.notify("Wrote " + ", ".join(str(path) for path in written), title="Exported")

    def action_scroll_steps(self, direction: int) -> None:
        steps = self.query_one("#steps", VerticalScroll)
        if direction > 0:
            steps.scroll_page_down()
        else:
            steps.scroll_page_up()
