"""The explorer's widgets: a step drawn as the command line prints it (its changes marked), an
input table, a checkbox that reads without colour, and a list that jumps as one types.

What changed at the last edit is marked by a glyph after the number (↑ rose, ↓ fell, • moved
otherwise, to or from NaN), never by a colour or a reversed cell: the weights' shading stays the
only colour of a cell, and the marks read on a projector and without colour alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.events import Key
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Checkbox, DataTable, OptionList

from attn_cli.core.model import Step
from attn_cli.core.numbers import as_matrix
from attn_cli.explore import state as st
from attn_cli.explore.keys import KEYS
from attn_cli.render import RenderOptions
from attn_cli.render.rich_render import MatrixTable, step_renderables

# The glyph after an entry that changed at the last edit, by how it changed (a blank where it
# did not: every entry keeps the room for one, so that nothing moves when marks come and go).
GLYPHS = {st.ROSE: "↑", st.FELL: "↓", st.MOVED: "•", 0: " "}
MARKS = ("↑ ↓ •", "after a number: it rose, fell, changed at the last edit")
# What starts typing an entry when pressed on a table (the character is its first).
TYPING = set("0123456789.-+eE")


def glyph(direction: int) -> str:
    return GLYPHS.get(int(direction), GLYPHS[st.MOVED])


def bindings(scope: str) -> list[BindingType]:
    """The bindings of ``scope`` ("app" or "table"), from the one list of keys."""
    out: list[BindingType] = []
    for key in KEYS:
        if key.scope != scope:
            continue
        for names, action in key.bindings:
            out.append(
                Binding(
                    names,
                    action,
                    key.label or key.description,
                    show=bool(key.label),
                    key_display=key.shown if key.label else None,
                    priority=key.priority,
                )
            )
    return out


class MarkedTable(MatrixTable):
    """A matrix as the renderer draws it, each entry followed by its change glyph (or a blank).

    The glyph takes the place of the space that pads a cell on its right, so that the table is
    exactly as wide as the renderer's, and shows the same columns at the same width.
    """

    def __init__(self, table: MatrixTable, directions: np.ndarray | None) -> None:
        self.__dict__.update(table.__dict__)
        self.directions = directions  # int8, the matrix's shape; None: nothing changed

    def table(self, layout: list[int | None], marks: bool) -> Any:
        drawn = super().table(layout, marks)
        drawn.padding = (0, 0, 0, 1)  # top, right, bottom, left: the right one is the glyph's
        columns = [None, *layout] + ([None] if self.sums is not None else [])
        for column, col in zip(drawn.columns, columns, strict=True):
            cells: list[RenderableType] = []
            for cell, row in zip(column._cells, self.shown_rows, strict=True):
                text = Text(cell) if isinstance(cell, str) else cell
                if isinstance(text, Text):
                    mark = " "
                    if col is not None and row is not None and self.directions is not None:
                        mark = glyph(int(self.directions[row, col]))
                    text.append(mark)
                cells.append(text)
            header = column.header if isinstance(column.header, Text) else Text(str(column.header))
            header.append(" ")
            # Right-aligned by padding, not by justifying (which would strip a blank mark).
            right_align([header, *(cell for cell in cells if isinstance(cell, Text))])
            column.header, column._cells, column.justify = header, cells, "left"
        return drawn


def right_align(texts: list[Text]) -> None:
    """Pad each text on its left to the width of the widest."""
    width = max((text.cell_len for text in texts), default=0)
    for text in texts:
        text.pad_left(width - text.cell_len)


def _tables(renderable: Any) -> Iterator[tuple[Callable[[Any], None], MatrixTable]]:
    """Every matrix table in a step's renderables, with a function that puts another in its
    place (padding, groups and side-by-side columns looked into)."""
    if isinstance(renderable, Padding):
        inner = renderable.renderable
        if isinstance(inner, MatrixTable):

            def put(table: Any, padding: Padding = renderable) -> None:
                padding.renderable = table

            yield put, inner
        else:
            yield from _tables(inner)
    elif isinstance(renderable, Group | Columns):
        items = renderable.renderables
        for index, item in enumerate(items):
            if isinstance(item, MatrixTable):

                def put_item(table: Any, items: list[Any] = items, at: int = index) -> None:
                    items[at] = table

                yield put_item, item
            else:
                yield from _tables(item)


def _directions(change: Any, table: MatrixTable) -> np.ndarray | None:
    """A change (StepChange.value or one of its parts) as the table's matrix of directions."""
    if not isinstance(change, np.ndarray) or change.size != table.rows.size or not change.any():
        return None
    return as_matrix(change).reshape(table.rows.shape)


def step_blocks(
    step: Step,
    number: int,
    options: RenderOptions,
    dtype: str,
    change: st.StepChange | None,
    prose: bool,
) -> list[RenderableType]:
    """A step as the command line prints it, for the explorer: its explanation only with the
    prose unfolded, its value before its intermediates (the numbers first), every entry that
    changed at the last edit followed by its glyph."""
    heading, *rest = step_renderables(step, number, options, dtype=dtype)[1:]  # no blank line
    explanation: list[RenderableType] = []
    if step.explanation_at(options.precision):
        explanation, rest = rest[:1], rest[1:]
    if step.parts:  # the intermediates, side by side, then the value: the value first here
        rest = [rest[1], rest[0], *rest[2:]]
    blocks = [heading, *(explanation if prose else []), *rest]
    values = [step.value, *(part.value for part in step.parts)]
    changes = (
        [None, *([None] * len(step.parts))]
        if change is None
        else [
            change.value,
            *change.parts,
        ]
    )
    unpaired = list(range(len(values)))
    for block in blocks:
        for put, table in list(_tables(block)):
            which = next((i for i in unpaired if _shows(table, values[i])), None)
            if which is None:
                continue
            unpaired.remove(which)
            put(MarkedTable(table, _directions(changes[which], table)))
    return blocks


def estimated_height(step: Step, prose: bool) -> int:
    """About how many lines a step takes (its heading, its value's table, its intermediates'
    tables, its notes), to stand in for it until it is drawn: the scroll bar's length."""

    def table(value: Any) -> int:
        return min(int(np.shape(value)[0]), 12) + 5 if np.ndim(value) else 2

    parts = max((table(part.value) for part in step.parts), default=0)
    return 1 + 3 * prose + table(step.value) + parts + len(step.notes)


def _shows(table: MatrixTable, value: Any) -> bool:
    """Whether ``table`` draws ``value`` (a per-row intermediate is drawn as one column)."""
    if not isinstance(value, np.ndarray) or value.size != table.rows.size:
        return False
    return bool(np.array_equal(np.ravel(table.rows), np.ravel(value), equal_nan=True))


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

    def show(self, renderable: RenderableType, later: bool = False, height: int = 0) -> None:
        """Show ``renderable``: now, or ``later`` (its old lines stand in until it is drawn; a
        widget not drawn yet stands in with ``height`` blank lines, when one is given)."""
        self.renderable = renderable
        self.drawn_at = -1
        if later and not self.lines and height:
            self.lines = [Strip.blank(1)] * height
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

    def text(self) -> str:
        """The lines as drawn last, as plain text (the tests read it)."""
        return "\n".join(line.text for line in self.lines)

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


class InputTable(DataTable[Text]):
    """One input's entries. Enter or a digit types the entry under the cursor; + and - nudge
    it. A click moves the cursor and nothing more (DataTable's own selection on a click is not
    listened to): the next key acts on the table."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("table")

    @dataclass
    class Nudge(Message):
        """Move entry (row, col) of the input by ``direction`` × NUDGE."""

        name: str
        row: int
        col: int
        direction: int

    @dataclass
    class Edit(Message):
        """Open the cell editor on entry (row, col), with ``typed`` as its first characters."""

        name: str
        row: int
        col: int
        typed: str = ""

    def __init__(self, name: str, cells: st.Cells) -> None:
        super().__init__(cursor_type="cell", id=f"input-{name}", classes="input-table")
        self.input_name = name
        self.shape = (len(cells), len(cells[0]) if cells else 0)

    def action_nudge(self, direction: int) -> None:
        self.post_message(self.Nudge(self.input_name, *self.cursor_coordinate, direction))

    def action_edit(self) -> None:
        self.post_message(self.Edit(self.input_name, *self.cursor_coordinate))

    def on_key(self, event: Key) -> None:
        # + and - nudge (the bindings); a digit, a point or an e starts typing the entry.
        if event.character and event.character in TYPING - {"+", "-"}:
            event.stop()
            event.prevent_default()
            self.post_message(self.Edit(self.input_name, *self.cursor_coordinate, event.character))


class Flag(Checkbox):
    """A checkbox that says on or off in its characters, [x] or [ ], not by colour alone."""

    @property
    def _button(self) -> Content:
        return Content.assemble(
            ("[x]" if self.value else "[ ]", self.get_visual_style("toggle--label"))
        )


class JumpList(OptionList):
    """A list to pick from with the arrows and enter, or by typing the start of an entry: the
    first entry that starts with what was typed is highlighted (a character that matches none
    starts the typing afresh)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.typed = ""

    def on_key(self, event: Key) -> None:
        character = event.character
        if not character or not character.isprintable() or character == " ":
            return
        event.stop()  # a typed character is for the list (q here is no quit)
        event.prevent_default()
        for typed in (self.typed + character, character):
            found = self.first_starting(typed)
            if found is not None:
                self.typed = typed
                self.highlighted = found
                return

    def first_starting(self, typed: str) -> int | None:
        typed = typed.casefold()
        for index in range(self.option_count):
            prompt = self.get_option_at_index(index).prompt
            text = prompt.plain if isinstance(prompt, Text) else str(prompt)
            if text.casefold().startswith(typed):
                return index
        return None
