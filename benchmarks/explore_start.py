"""Time `attn explore`'s start-up and lesson switch in a real terminal, with the load beside them.

    python benchmarks/explore_start.py [--runs 3] [--only scaled,block] [--compare /work/main]

Each run starts `python -m attn_cli explore LESSON` in a pseudo-terminal of 80 × 24 (as a
lecturer's terminal is) and reads what it writes there:

- start-up: from the process's start to the lesson's first screen written (its title bar,
  "LESSON · the lecture's example", which the app draws with the steps, in one frame);
- lesson switch: in one session, ``l`` opens the list, the arrows move to the next lesson, and
  the time runs from enter to the new lesson's first screen; every lesson in turn.

The floor, in the same rounds: a minimal Textual app (one line of text and a footer) from its
start to its first screen. Start-up is printed beside it (the ratio, which the load changes
less than the times). With ``--compare FOLDER`` the same runs of another checkout (its
``attn_cli`` first on the path, this interpreter) take turns with this one's, so that both
meet the same load. The load average is read before and after (os.getloadavg), on how many
cores. The package is byte-compiled first (as `pip install` does).
"""

from __future__ import annotations

import argparse
import compileall
import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SIZE = (80, 24)
FLOOR = """
from textual.app import App
from textual.widgets import Footer, Static

class Floor(App):
    def compose(self):
        yield Static("the floor is ready")
        yield Footer()

Floor().run()
"""
LIST_TITLE = b"Switch lesson"
DOWN, UP = b"\x1b[B", b"\x1b[A"


class Terminal:
    """A command running in a pseudo-terminal of SIZE; what it writes, read as it comes."""

    def __init__(self, command: list[str], root: Path) -> None:
        master, slave = pty.openpty()
        columns, rows = SIZE
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(root)}
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave, cwd=root, env=env
        )
        os.close(slave)
        self.master = master
        self.written = b""

    def wait_for(self, marker: bytes, seconds: float = 120) -> float:
        """Read until ``marker`` is written after what was read before; the time it showed."""
        seen = len(self.written)
        deadline = time.perf_counter() + seconds
        while marker not in self.written[max(0, seen - len(marker)) :]:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{marker!r} not written in {seconds} s")
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    self.written += os.read(self.master, 1 << 16)
                except OSError:
                    raise TimeoutError(f"ended before {marker!r}") from None
        return time.perf_counter()

    def send(self, keys: bytes) -> float:
        os.write(self.master, keys)
        return time.perf_counter()

    def settle(self, seconds: float = 0.3) -> None:
        """Read (and drop) what comes for ``seconds``: the keys before a timed one land."""
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.02)
            if ready:
                try:
                    self.written += os.read(self.master, 1 << 16)
                except OSError:
                    return

    def close(self, quit_keys: bytes) -> None:
        try:
            os.write(self.master, quit_keys)
            deadline = time.perf_counter() + 10
            while self.process.poll() is None and time.perf_counter() < deadline:
                self.settle(0.1)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            os.close(self.master)


def explorer(lesson: str, python: str) -> list[str]:
    return [python, "-m", "attn_cli", "explore", lesson]


def title(lesson: str) -> bytes:
    return f"{lesson} · the lecture's example".encode()


def start_up(lesson: str, root: Path, python: str) -> float:
    terminal = Terminal(explorer(lesson, python), root)
    try:
        return terminal.wait_for(title(lesson)) - terminal.started
    finally:
        terminal.close(b"q")


def floor(python: str) -> float:
    terminal = Terminal([python, "-c", FLOOR], HERE)
    try:
        return terminal.wait_for(b"the floor is ready") - terminal.started
    finally:
        terminal.close(b"\x11")  # ctrl+q


class Session:
    """One explorer, switched from lesson to lesson through its list (``order``)."""

    def __init__(self, lesson: str, order: list[str], root: Path, python: str) -> None:
        self.terminal = Terminal(explorer(lesson, python), root)
        self.terminal.wait_for(title(lesson))
        self.current = lesson
        self.order = order

    def switch(self, lesson: str) -> float:
        """Seconds from enter in the lesson list to ``lesson``'s first screen."""
        terminal = self.terminal
        terminal.settle()
        terminal.send(b"l")
        terminal.wait_for(LIST_TITLE)
        steps = self.order.index(lesson) - self.order.index(self.current)
        terminal.send((DOWN if steps > 0 else UP) * abs(steps))
        terminal.settle()
        pressed = terminal.send(b"\r")
        self.current = lesson
        return terminal.wait_for(title(lesson)) - pressed

    def close(self) -> None:
        self.terminal.close(b"q")


def spread(seconds: list[float]) -> str:
    ms = sorted(value * 1e3 for value in seconds)
    return f"{statistics.median(ms):6.0f} ms ({ms[0]:.0f}-{ms[-1]:.0f})"


def main() -> None:
    sys.path.insert(0, str(HERE))
    from attn_cli import course

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="Start-ups per lesson (default 3).")
    parser.add_argument("--only", default="", help="Comma-separated lessons (default: all).")
    parser.add_argument("--compare", type=Path, help="Another checkout, timed in the same run.")
    args = parser.parse_args()
    lessons = [name for name in args.only.split(",") if name] or list(course.lesson_names())
    python = sys.executable
    roots = {"this": HERE}
    if args.compare:
        roots["compared"] = args.compare.resolve()
    for root in roots.values():
        compileall.compile_dir(root / "attn_cli", quiet=1)
    before = os.getloadavg()
    print(f"attn explore in a terminal of {SIZE[0]} × {SIZE[1]}: median (min-max)")
    print(f"load average before: {before[0]:.2f} ({os.cpu_count()} cores)")
    floors: list[float] = []
    starts: dict[str, dict[str, list[float]]] = {key: {} for key in roots}
    for lesson in lessons:
        for _ in range(args.runs):
            floors.append(floor(python))
            for key, root in roots.items():
                starts[key].setdefault(lesson, []).append(start_up(lesson, root, python))
        line = "  ".join(f"{key} {spread(starts[key][lesson])}" for key in roots)
        print(f"start-up {lesson:<10} {line}", flush=True)
    print(f"start-up of a minimal Textual app (the floor): {spread(floors)}")
    for key in roots:
        every = [value for values in starts[key].values() for value in values]
        ratio = statistics.median(every) / statistics.median(floors)
        print(f"start-up, every lesson ({key}): {spread(every)}; {ratio:.2f} × the floor")
    # Every session open at once, each switch made in one then the other: the same load.
    order = list(course.lesson_names())
    sessions = {key: Session(lessons[0], order, root, python) for key, root in roots.items()}
    switched: dict[str, dict[str, float]] = {key: {} for key in roots}
    try:
        for lesson in lessons[1:] + lessons[:1]:
            for key, session in sessions.items():
                switched[key][lesson] = session.switch(lesson)
            line = "  ".join(f"{key} {switched[key][lesson] * 1e3:6.0f} ms" for key in roots)
            print(f"switch to {lesson:<10} {line}", flush=True)
    finally:
        for session in sessions.values():
            session.close()
    for key in roots:
        print(f"lesson switch ({key}): {spread(list(switched[key].values()))}")
    after = os.getloadavg()
    print(f"load average after: {after[0]:.2f} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
