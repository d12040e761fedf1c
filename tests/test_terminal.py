"""The terminal as a learner meets it: line editing, single keys, Ctrl-D, Ctrl-C, `| head`.

The key and signal tests run the real command on a pseudo-terminal (POSIX only); the pipe
tests run it with a reader that goes away, as `attn tour | head -3` does.
"""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attn_cli.cli import terminal
from tests.waits import HANG_GUARD_SECONDS

ROOT = Path(__file__).resolve().parent.parent


class _Stdin(io.StringIO):
    def __init__(self, text: str, tty: bool) -> None:
        super().__init__(text)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_at_a_terminal_a_line_is_read_by_input_with_readline_loaded(monkeypatch):
    """The quiz's answers: arrow keys edit the line instead of typing ^[[D."""
    pytest.importorskip("readline")
    monkeypatch.delitem(sys.modules, "readline", raising=False)
    monkeypatch.setattr(sys, "stdin", _Stdin("", tty=True))
    prompts = []

    def fake_input(prompt: str = "") -> str:
        assert "readline" in sys.modules  # loaded before input() reads
        prompts.append(prompt)
        return "0.5, 0.5"

    monkeypatch.setattr("builtins.input", fake_input)
    assert terminal.read_line("  row 1 (2 numbers): ") == "0.5, 0.5"
    assert prompts == ["  row 1 (2 numbers): "]


def test_at_a_terminal_ctrl_d_ends_the_line_and_returns_none(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", _Stdin("", tty=True))

    def fake_input(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", fake_input)
    assert terminal.read_line("> ") is None
    assert capsys.readouterr().out == "\n"


def test_off_a_terminal_lines_come_from_stdin_without_readline(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", _Stdin("1, 2\n", tty=False))
    monkeypatch.setattr("builtins.input", lambda *_: pytest.fail("input() off a terminal"))
    assert terminal.read_line("> ") == "1, 2"
    assert terminal.read_line("> ") is None
    assert terminal.read_key() is None
    assert capsys.readouterr().out == "> > "


# --- the real command on a pseudo-terminal -----------------------------------------------


def _on_a_terminal(
    args: list[str], keys: list[bytes], wait_for: bytes, env: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """Run ``attn ARGS`` on a pseudo-terminal of its own (``env`` added to its environment);
    send each key once ``wait_for`` has appeared (again); the exit code and everything it
    wrote."""
    import fcntl
    import pty
    import termios

    master, slave = pty.openpty()

    def controlling_terminal() -> None:  # so that Ctrl-C sends SIGINT, as at a real terminal
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    process = subprocess.Popen(
        [sys.executable, "-m", "attn_cli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "80", "LINES": "40", "TERM": "xterm", **(env or {})},
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    out = b""

    def read_until(marker: bytes | None, seen: int, timeout: float = HANG_GUARD_SECONDS) -> None:
        nonlocal out
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker is not None and out.count(marker) > seen:
                return
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    out += os.read(master, 65536)
                except OSError:  # the command ended and closed the terminal
                    return
            elif process.poll() is not None:
                return

    def single_keys() -> None:
        """Wait until the reader has switched the terminal to single keys (canonical mode off,
        as the pty's own settings say), which it does after writing the prompt: a key sent
        before then would wait in the line buffer for an Enter."""
        deadline = time.monotonic() + HANG_GUARD_SECONDS
        while termios.tcgetattr(master)[3] & termios.ICANON:
            if process.poll() is not None or time.monotonic() > deadline:
                return
            time.sleep(0.01)  # the next look at the terminal's state

    try:
        for seen, key in enumerate(keys):
            read_until(wait_for, seen)
            single_keys()
            os.write(master, key)
        read_until(None, 0)  # until the command ends and closes the terminal
        return process.wait(timeout=HANG_GUARD_SECONDS), out
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)


needs_pty = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
PROMPT_BYTES = b"q: quit"


@pytest.mark.slow
@needs_pty
@pytest.mark.parametrize(
    ("keys", "what"),
    [([b"q"], "q, no Enter"), ([b" ", b"\x04"], "a key, then Ctrl-D")],
)
def test_at_a_terminal_one_key_moves_on_and_q_or_ctrl_d_quits(keys, what):
    code, out = _on_a_terminal(["tour", "--only", "scaled", "--full"], keys, PROMPT_BYTES)
    text = out.decode(errors="replace")
    assert code == 0, (what, text)
    assert "Tour stopped." in text, what
    assert text.count("Enter: next") == len(keys), what
    assert "End of the tour" not in text, what


@pytest.mark.slow
@needs_pty
def test_at_a_terminal_ctrl_c_ends_the_prompt_line():
    code, out = _on_a_terminal(["tour", "--only", "scaled"], [b"\x03"], PROMPT_BYTES)
    assert code == 130
    assert out.rstrip(b"\x1b[0m").endswith(b"\r\n"), out[-80:]  # the shell prompt on a new line
    assert b"Traceback" not in out


# --- `| head -3` ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["tour", "--no-pause", "--only", "scaled,causal"],
        ["scaled", "--quiz"],
        ["scaled"],
        ["scaled", "--format", "json"],
    ],
)
def test_a_reader_that_goes_away_ends_every_command_quietly_with_0(args):
    """tour and quiz used to exit 1 where the other commands exit 0."""
    process = subprocess.Popen(
        [sys.executable, "-m", "attn_cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()  # head -1
    process.stdout.close()
    error = process.stderr.read()
    assert process.wait(timeout=HANG_GUARD_SECONDS) == 0, error
    assert error == b""
