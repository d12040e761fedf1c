"""Every generated file of the repository, rewritten by one command (never edit one by hand):

    python tools/regenerate.py          # rewrite each file that is stale, naming it
    python tools/regenerate.py --check  # rewrite nothing; exit 1 naming each stale file (CI)

The files are this repository's wherever the command is run from, and the documented commands
whose transcripts are shown run in its root (where the files they name are). Each generated part
says so with a marker that names this command.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: tools/ is on the path, the repository is not
    sys.path.insert(0, str(ROOT))

from tools import REGENERATE, generated, reference, transcripts  # noqa: E402

# A file's committed text in, its text as generated out.
Make = Callable[[str], str]


def _whole(make: Callable[[], str]) -> Make:
    """A file generated whole (its committed text is not read)."""
    return lambda _committed: make()


# Each generated file and what makes it, in order: the app's command reference and tables, the
# transcripts of documented commands, and what the lessons' declarations generate.
GENERATED: dict[str, tuple[Make, ...]] = {
    "docs/cli.md": (_whole(reference.reference),),
    "README.md": (reference.with_tables, transcripts.with_transcripts),
    "docs/api.md": (reference.with_tables,),
    "docs/install.md": (reference.with_tables,),
    "docs/gallery.md": (transcripts.with_transcripts,),
    "attn_cli/schema/lesson.schema.json": (_whole(generated.schema_json),),
    "docs/lesson-files.md": (generated.with_texts_table,),
    "docs/sentences.md": (_whole(generated.sentences),),
    "docs/explore.md": (generated.with_keys_table,),
}


def made(path: str, committed: str) -> str:
    """File ``path`` as generated, from its committed text."""
    text = committed
    for make in GENERATED[path]:
        text = make(text)
    return text


def regenerate(*, check: bool) -> list[str]:
    """The generated files that were stale, rewritten unless ``check``."""
    stale = []
    for path in GENERATED:
        file = ROOT / path
        committed = file.read_text(encoding="utf-8")
        text = made(path, committed)
        if text != committed:
            stale.append(path)
            if not check:
                file.write_text(text, encoding="utf-8")
    return stale


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print(f"usage: {REGENERATE} [--check]", file=sys.stderr)
        return 2
    check = argv == ["--check"]
    os.chdir(ROOT)  # the documented commands read the files they name from the root
    stale = regenerate(check=check)
    if check and stale:
        print(f"stale: {', '.join(stale)}; run {REGENERATE}", file=sys.stderr)
        return 1
    if stale:
        print(f"rewritten: {', '.join(stale)}")
    else:
        count = len(GENERATED)
        print(f"every generated file is current ({count} file{'s' if count != 1 else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
