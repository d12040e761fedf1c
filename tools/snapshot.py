"""Every output a restructuring must leave byte-identical, written to a folder to compare.

    python tools/snapshot.py write before/      # on the tree before the change
    python tools/snapshot.py write after/       # on the tree after it
    python tools/snapshot.py compare before/ after/

What is written: each lesson's default run and each of its lecture examples (``--example``), in
every text format (rich at 80 columns without colour, JSON, Markdown, LaTeX, HTML and SVG), each
lesson's ``--help``, and every ``attn`` command of the gallery (docs/gallery.md), all run
in-process as tools/transcripts.py runs them. A file per run: its exit code, then its output.
``compare`` names every run whose output differs, or is only on one side, and exits 1 if any.

Left out: the timings (``bench`` and any ``--time`` run), training (``learn``) and the
processes of ``ring``, whose outputs carry the machine's clock.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import transcripts  # noqa: E402

FORMATS = ("rich", "json", "markdown", "latex", "html", "svg")
UNTIMED = frozenset({"bench", "learn", "ring"})


def runs() -> dict[str, tuple[str, ...]]:
    """Each run's file name, and its arguments."""
    from attn_cli.course import lesson_names
    from attn_cli.lessonfiles.loader import bundled_lesson_names, load_bundled

    found: dict[str, tuple[str, ...]] = {}
    for name in lesson_names():
        if name in UNTIMED:
            continue
        found[f"{name}.help"] = (name, "--help")
        bundled = name in bundled_lesson_names()
        named = [example.name for example in load_bundled(name).examples] if bundled else []
        examples: list[str | None] = [None, *named]
        for example in examples:
            chosen = ("--example", example) if example else ()
            for form in FORMATS:
                found[f"{name}.{example or 'default'}.{form}"] = (name, *chosen, "--format", form)
    gallery = (ROOT / "docs" / "gallery.md").read_text(encoding="utf-8").replace("\\\n", " ")
    for line in re.findall(r"^\$ (attn .*)$", gallery, flags=re.M):
        for command in transcripts.attn_commands(line):
            timed = "--time" in command.args  # its step times are the machine's clock
            if (
                command.args
                and command.args[0] not in UNTIMED
                and not command.stdout_to
                and not timed
            ):
                key = hashlib.sha256(" ".join(command.args).encode()).hexdigest()[:12]
                found[f"gallery.{command.args[0]}.{key}"] = command.args
    return found


def write(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    planned = runs()
    for at, (name, args) in enumerate(planned.items(), 1):
        code, output = transcripts.run(args)
        text = f"$ attn {' '.join(args)}\nexit {code}\n{output}\n"
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
        print(f"\r{at}/{len(planned)}", end="", file=sys.stderr, flush=True)
    print(f"\n{len(planned)} runs written to {folder}", file=sys.stderr)
    return 0


def compare(before: Path, after: Path) -> int:
    old = {path.name: path.read_bytes() for path in before.glob("*.txt")}
    new = {path.name: path.read_bytes() for path in after.glob("*.txt")}
    differ = sorted(name for name in old.keys() & new.keys() if old[name] != new[name])
    only = sorted(old.keys() ^ new.keys())
    for name in differ:
        print(f"differs: {name}")
    for name in only:
        print(f"only in {before if name in old else after}: {name}")
    same = len(old.keys() & new.keys()) - len(differ)
    print(f"{same} of {len(old.keys() | new.keys())} runs byte-identical")
    return 1 if differ or only else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "write":
        return write(Path(argv[1]))
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print("usage:\n" + "\n".join((__doc__ or "").strip().splitlines()[2:5]), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
