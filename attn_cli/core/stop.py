"""A stop of the tour: a real command line, where it comes in the lecture, and its lead-in.

Each lesson declares its own stop (``attn_cli/course/<lesson>/stop.py``, ``STOP``), and each
tool that the tour visits declares its own beside its command (the bench's, learn's tasks'). A
stop names the stop it follows (``after``); attn_cli.cli.itinerary links them into the one order
of the tour. Plain data (dataclasses and shlex only), since `attn --help` reads every stop.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """A part of the tour after the lectures' own stops: its stops say they belong to it
    (``Stop.section``); the tour shows its title and opening before its first stop, and its
    closing after its last, with each stop's ``checked`` (what its numbers were checked
    against)."""

    title: str  # the heading before its first stop, and in the tour's list
    opening: str  # said under the heading
    closing: str  # said after its last stop, before the list of what each was checked against


# The stops past the lectures: what the models a student meets next change in attention.
BEYOND_THE_LECTURES = Section(
    "Beyond the lectures",
    "The lectures end here. The next stops are attention as the models of 2026 use it (Llama, "
    "Mistral, Gemma, Qwen, DeepSeek): each changes the positions, the heads, the cache or the "
    "scores of what you have just seen.",
    "That is attention as those models use it. Each stop's numbers are checked in attn's tests "
    "against an independent reference:",
)


@dataclass(frozen=True)
class Stop:
    name: str  # the command, and the name for --only
    title: str  # what the stop shows, in a line
    args: tuple[str, ...] = ()  # arguments after `attn NAME`
    topic: str = ""  # the stop in a few words, for the help's list
    # Shown before the stop when the stop before it in the tour was just shown: why this one
    # comes next in the lecture (the first stop has none).
    lead_in: str = ""
    # The stop this one follows in the lecture (None: the first). A lesson's stop names a lesson;
    # a tool's stop (the bench, a learned model) is shown right after the stop it names, before
    # the lesson that follows that stop too.
    after: str | None = None
    command: str = ""  # the command, when it is not the name (attn learn induction: "learn")
    lesson: bool = True  # a lesson's stop (False: a tool's, or a second visit to a lesson)
    section: Section | None = None  # None: the lectures' own stops
    # What the stop's numbers are checked against in the tests (listed by its section's closing).
    checked: str = ""

    @property
    def command_name(self) -> str:
        return self.command or self.name

    @property
    def command_line(self) -> str:
        return shlex.join(("attn", self.command_name, *self.args))
