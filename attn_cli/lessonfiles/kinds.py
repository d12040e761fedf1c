"""attn kinds: the four kinds of attention (the lecture's table) as plain data.

The words live in ``lessons/overview/kinds.toml`` (installed as ``attn_cli/lessons/overview``):
each kind's row, the column headings, and the attn commands that show the kind. This module
reads them into records; the renderers (render/kinds_render.py) lay them out.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attn_cli.lessonfiles.loader import bundled_lessons_dir

# The table's columns, in order; each row also says what its commands show.
COLUMNS: tuple[str, ...] = ("kind", "queries_from", "keys_values_from", "used_in", "commands")
FIELDS: tuple[str, ...] = (*COLUMNS, "shows")
_TOP: frozenset[str] = frozenset(
    {"title", "intro", "source", "run_heading", "headings", "kinds", "beyond"}
)
# Past the slide: what the 2026 models change, each with the commands that show it.
CHANGE_FIELDS: tuple[str, ...] = ("change", "used_in", "commands", "shows")


@dataclass(frozen=True)
class Overview:
    """The table: a title and intro, a heading per column, one record per kind."""

    title: str
    intro: str
    source: str
    run_heading: str  # the heading over the commands, one block per kind
    headings: dict[str, str]  # column key -> display heading
    rows: tuple[dict[str, Any], ...]  # each with FIELDS; commands a tuple of command lines
    beyond_heading: str  # the section after the slide's table: its heading and intro
    beyond_intro: str
    changes: tuple[dict[str, Any], ...]  # each with CHANGE_FIELDS


def overview_path() -> Path:
    return bundled_lessons_dir() / "overview" / "kinds.toml"


def load_overview(path: Path | None = None) -> Overview:
    """The overview from its data file (the bundled one by default), its keys checked."""
    path = path or overview_path()
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    if set(raw) != _TOP:
        raise ValueError(f"{path}: expected the keys {sorted(_TOP)}, got {sorted(raw)}")
    if set(raw["headings"]) != set(COLUMNS):
        raise ValueError(f"{path}: [headings] must name exactly {', '.join(COLUMNS)}")
    beyond = raw["beyond"]
    if set(beyond) != {"heading", "intro", "changes"}:
        raise ValueError(f"{path}: [beyond] must have exactly heading, intro and changes")
    changes = []
    for index, change in enumerate(beyond["changes"], start=1):
        if set(change) != set(CHANGE_FIELDS):
            raise ValueError(f"{path}: beyond.changes {index} must have {', '.join(CHANGE_FIELDS)}")
        commands = tuple(change["commands"])
        if not commands or not all(line.startswith("attn ") for line in commands):
            raise ValueError(f"{path}: beyond.changes {index}: commands must be attn command lines")
        words = {name: " ".join(str(change[name]).split()) for name in CHANGE_FIELDS}
        changes.append({**words, "commands": commands})
    rows = []
    for index, row in enumerate(raw["kinds"], start=1):
        if set(row) != set(FIELDS):
            raise ValueError(f"{path}: kinds {index} must have exactly {', '.join(FIELDS)}")
        commands = tuple(row["commands"])
        if not commands or not all(line.startswith("attn ") for line in commands):
            raise ValueError(f"{path}: kinds {index}: commands must be attn command lines")
        rows.append({name: " ".join(str(row[name]).split()) for name in FIELDS if name != "commands"}
                    | {"commands": commands})  # fmt: skip
    return Overview(
        title=raw["title"],
        intro=" ".join(raw["intro"].split()),
        source=raw["source"],
        run_heading=raw["run_heading"],
        headings=dict(raw["headings"]),
        rows=tuple({name: row[name] for name in FIELDS} for row in rows),
        beyond_heading=beyond["heading"],
        beyond_intro=" ".join(beyond["intro"].split()),
        changes=tuple(changes),
    )
