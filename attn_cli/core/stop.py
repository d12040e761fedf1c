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
    lesson: bool = True  # a lesson's stop (False: a tool's)

    @property
    def command_name(self) -> str:
        return self.command or self.name

    @property
    def command_line(self) -> str:
        return shlex.join(("attn", self.command_name, *self.args))
