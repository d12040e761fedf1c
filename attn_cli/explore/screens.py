"""The explorer's dialogs: switch lesson, go to a step, the command line, every key."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option as ListOption

from attn_cli import course as cards
from attn_cli.explore.keys import groups
from attn_cli.explore.widgets import MARKS, JumpList


class Pick(ModalScreen[str]):
    """Pick an entry of a list (enter, or type its start), or go back (escape)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back")]

    def __init__(self, title: str, entries: list[tuple[str, str]], current: str) -> None:
        super().__init__()
        self.heading = title
        self.entries = entries  # (id, what the list shows)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.heading, classes="dialog-title")
            listing = JumpList(*(ListOption(text, id=key) for key, text in self.entries))
            listing.highlighted = next(
                (index for index, (key, _) in enumerate(self.entries) if key == self.current), 0
            )
            yield listing

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_back(self) -> None:
        self.dismiss(self.current)


def lessons(current: str) -> Pick:
    """The list of lessons: type a name's first letters to jump to it."""
    entries = [(name, f"{name:<10} {cards.card(name).summary}") for name in cards.lesson_names()]
    return Pick(
        "Switch lesson: type its first letters, or ↑ ↓; enter opens, escape goes back",
        entries,
        current,
    )


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


class Keys(ModalScreen[None]):
    """Every key, under its heading (attn_cli.explore.keys), and what the marks mean."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,question_mark,q", "dismiss", "Back"),
    ]

    def compose(self) -> ComposeResult:
        dialog = VerticalScroll(id="keys-dialog")
        dialog.border_title = "Every key · escape goes back"
        with dialog:
            yield Static(keys_table(), id="keys")


def keys_table() -> Table:
    """The keys as the overlay shows them: under each heading, a key and what it does."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for group, keys in groups().items():
        table.add_row(Text(group, style="bold underline"), "")
        for key in keys:
            table.add_row(key.shown, key.description.replace("`", ""))
    table.add_row(*MARKS)
    return table
