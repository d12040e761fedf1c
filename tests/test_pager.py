"""A lesson at a projector's pace (issue 57, part 1): at a terminal, output taller than the
screen opens in a pager at its top; never when piped, written to a file, or with --no-pager."""

from __future__ import annotations

import shlex
import sys

import pytest

from tests.test_terminal import _on_a_terminal, needs_pty


@pytest.fixture
def pages(monkeypatch):
    """stdout a terminal; what would go to the pager, kept instead."""
    from attn_cli.cli import terminal

    shown: list[str] = []
    monkeypatch.setattr(terminal, "on_screen", lambda: True)
    monkeypatch.setattr(terminal, "page", shown.append)
    return shown


def test_output_taller_than_the_screen_opens_in_the_pager_whole(invoke, pages, monkeypatch):
    monkeypatch.setenv("LINES", "24")
    result = invoke("multihead")
    assert result.exit_code == 0, result.output
    (text,) = pages
    assert result.stdout == ""  # all of it went to the pager
    assert text.startswith("Multi-head attention · example two-heads")
    assert text.count("\n") > 24
    monkeypatch.setattr("attn_cli.cli.terminal.on_screen", lambda: False)
    assert invoke("multihead").stdout == text  # the same text, off a terminal


def test_output_that_fits_the_screen_is_printed_as_usual(invoke, pages, monkeypatch):
    monkeypatch.setenv("LINES", "100000")
    result = invoke("scaled")
    assert result.exit_code == 0, result.output
    assert pages == [] and result.stdout.startswith("Scaled dot-product attention")


def test_pager_always_and_no_pager_never(invoke, pages, monkeypatch):
    monkeypatch.setenv("LINES", "100000")
    assert invoke("scaled", "--pager").stdout == "" and len(pages) == 1
    monkeypatch.setenv("LINES", "24")
    result = invoke("multihead", "--no-pager")
    assert len(pages) == 1 and result.stdout.startswith("Multi-head attention")


@pytest.mark.parametrize("args", [("--format", "markdown"), ("--format", "json")])
def test_other_formats_are_never_paged(invoke, pages, monkeypatch, args):
    monkeypatch.setenv("LINES", "24")
    assert invoke("multihead", *args).exit_code == 0
    assert pages == []


def test_off_a_terminal_nothing_is_paged(invoke, monkeypatch):
    from attn_cli.cli import terminal

    monkeypatch.setattr(terminal, "page", lambda text: pytest.fail("paged off a terminal"))
    monkeypatch.setenv("LINES", "24")
    assert invoke("multihead", "--pager").stdout.startswith("Multi-head attention")


@needs_pty
def test_at_a_real_terminal_the_pager_gets_the_lesson_from_its_top(tmp_path):
    """On a pseudo-terminal of 40 lines, with $PAGER a command that keeps what it is given."""
    kept = tmp_path / "paged.txt"
    keeper = tmp_path / "keep.py"
    keeper.write_text(f"import sys\nopen({str(kept)!r}, 'w').write(sys.stdin.read())\n")
    pager = f"{shlex.quote(sys.executable)} {shlex.quote(str(keeper))}"
    code, out = _on_a_terminal(["multihead"], [], b"", env={"PAGER": pager})
    assert code == 0, out
    text = kept.read_text(encoding="utf-8")
    assert "Multi-head attention" in text.splitlines()[0]
    assert "\x1b[" in text  # the colours kept, for less -R
    assert b"Multi-head attention" not in out  # nothing printed past the pager
