"""The tour's stops, read from ``lessons/overview/tour.toml``: the one list of the lectures'
order, read by ``attn tour`` and by its help (kept light: no rich, no numpy, so that building
the help costs one small file).
"""

from __future__ import annotations

import functools
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

from attn_cli.lesson_files import bundled_lessons_dir

_TOP = frozenset({"intro", "closing", "stops"})
_FIELDS = frozenset({"name", "topic", "title", "args", "bridge"})


@dataclass(frozen=True)
class Stop:
    name: str  # the command, and the name for --only
    title: str  # what the stop shows, in a line
    args: tuple[str, ...] = ()  # arguments after `attn NAME`
    topic: str = ""  # the stop in a few words, for the help's list
    bridge: str = ""  # shown after the stop: why the next one follows

    @property
    def command_line(self) -> str:
        return shlex.join(("attn", self.name, *self.args))


@dataclass(frozen=True)
class Tour:
    intro: str  # "{count}" and "{s}" filled with the number of stops shown
    closing: str
    stops: tuple[Stop, ...]


def tour_path() -> Path:
    return bundled_lessons_dir() / "overview" / "tour.toml"


def load_tour(path: Path | None = None) -> Tour:
    """The tour from its data file (the bundled one by default), its keys checked."""
    path = path or tour_path()
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    if set(raw) != _TOP:
        raise ValueError(f"{path}: expected the keys {sorted(_TOP)}, got {sorted(raw)}")
    stops = []
    for index, stop in enumerate(raw["stops"], start=1):
        if not set(stop) <= _FIELDS or not {"name", "topic", "title", "bridge"} <= set(stop):
            raise ValueError(f"{path}: stops {index} must have {', '.join(sorted(_FIELDS))}")
        stops.append(
            Stop(
                name=stop["name"],
                title=stop["title"],
                args=tuple(str(arg) for arg in stop.get("args", ())),
                topic=stop["topic"],
                bridge=" ".join(stop["bridge"].split()),
            )
        )
    return Tour(intro=raw["intro"], closing=raw["closing"], stops=tuple(stops))


@functools.cache
def bundled_tour() -> Tour:
    return load_tour()


def help_text() -> str:
    """The tour command's help: its stops' topics, in order, from the tour itself."""
    stops = bundled_tour().stops
    topics = ", ".join(stop.topic for stop in stops)
    return (
        f"The lecture in order, {len(stops)} stops: {topics}; one screen at a time. At a "
        "pause: Enter (or any key) for the next screen, q or Ctrl-D to stop."
    )
