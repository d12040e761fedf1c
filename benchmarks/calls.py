"""Count what one run does inside attn_cli: calls, the files they are in, the modules imported.

    python benchmarks/calls.py [--top 15] [ARGS...]

Runs `attn ARGS` (default: the lecture's scaled example with the user's own matrices,
``scaled --q "1,0;0,1" --k "1,1;2,0" --v "0.1,0.2;0.3,0.4"``) in this process, through the console
script's entry point (attn_cli.__main__.main, sys.argv set), with a sys.setprofile hook that
counts every 'call' event whose code lies under attn_cli/ (a module's or a class's body run on
import counts, as a function's call does; so does each step of a generator). Its output is
discarded. It prints the calls, the files they were in (and how many of those had a function
called, not only their module run), the attn_cli modules imported, and the functions called
most. The target for the default run (issue 55): at most 2,000 calls in at most 30 files.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

DEFAULT = ["scaled", "--q", "1,0;0,1", "--k", "1,1;2,0", "--v", "0.1,0.2;0.3,0.4"]
CALLS_TARGET = 2_000
FILES_TARGET = 30


@dataclass
class Counted:
    """What one run called inside attn_cli."""

    calls: Counter[tuple[str, str]] = field(default_factory=Counter)  # (file, function) -> calls
    functions: set[str] = field(default_factory=set)  # files with a function (not a body) called
    imported: list[str] = field(default_factory=list)  # attn_cli modules the run imported
    status: int = 0  # the run's exit status


def count_calls(args: list[str]) -> Counted:
    """The calls into attn_cli of one run of `attn ARGS`, in this process."""
    import attn_cli  # the package's own __init__ is imported before counting starts

    package = str(Path(attn_cli.__file__).resolve().parent) + "/"
    before = set(sys.modules)
    counted = Counted()
    ours: dict[str, bool] = {}  # code file -> under attn_cli/ (asked once per file)

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        filename = code.co_filename
        inside = ours.get(filename)
        if inside is None:
            inside = ours[filename] = str(Path(filename).resolve()).startswith(package)
        if inside:
            counted.calls[(filename, code.co_qualname)] += 1
            if code.co_flags & inspect.CO_OPTIMIZED:  # a function's code, not a module's or class's
                counted.functions.add(filename)

    from attn_cli.__main__ import main

    sys.argv = ["attn", *args]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        sys.setprofile(profile)
        try:
            main()
        except SystemExit as exit_:
            counted.status = exit_.code if isinstance(exit_.code, int) else 1
        finally:
            sys.setprofile(None)
    counted.imported = sorted(
        name for name in set(sys.modules) - before if name.split(".")[0] == "attn_cli"
    )
    return counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="functions listed (default 15)")
    parser.add_argument("args", nargs="*", help="the attn command line (default: scaled ...)")
    options = parser.parse_args()
    args = options.args or DEFAULT
    counted = count_calls(args)
    root = Path(__file__).resolve().parent.parent
    by_file: Counter[str] = Counter()
    for (filename, _), count in counted.calls.items():
        by_file[filename] += count

    def shown(filename: str) -> str:
        path = Path(filename).resolve()
        return str(path.relative_to(root)) if path.is_relative_to(root) else filename

    print(f"attn {' '.join(args)}  (exit status {counted.status})")
    print(f"calls into attn_cli: {counted.calls.total():,} (target <= {CALLS_TARGET:,})")
    print(
        f"files: {len(by_file)} (target <= {FILES_TARGET}); with a function called: "
        f"{len(counted.functions)}"
    )
    print(f"attn_cli modules imported: {len(counted.imported)}")
    print("\ncalls by file:")
    for filename, count in by_file.most_common():
        print(f"  {count:6,}  {shown(filename)}")
    print(f"\nthe {options.top} functions called most:")
    for (filename, name), count in counted.calls.most_common(options.top):
        print(f"  {count:6,}  {shown(filename)}:{name}")


if __name__ == "__main__":
    main()
