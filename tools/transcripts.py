"""Transcripts of commands in the docs, made by running them (never pasted by hand;
``python tools/regenerate.py`` makes them afresh in docs/gallery.md and README.md).

A transcript is a ``console`` fence right after a marker line that says which part of the
output to show::

    <!-- transcript: 2, 4:table, notes -->
    ```console
    $ attn causal
    (made afresh from here to the fence's end)
    ```

The fence's first line is the command as a reader types it; the rest is its output, run
in-process at 80 columns (no colour, trailing spaces trimmed), cut to the parts the marker
names, in the output's order, with ``…`` where something is left out:

- ``all``: everything;
- ``header``: the lines before the first step (title, intro, inputs);
- ``N`` or ``N-M``: step N (to M), from its ``Step N ·`` line to the next section (``N#2``:
  the second step N, as in a quiz handout's answer key);
- ``N:table``: step N's heading line, then from its first table on (its explanation left out);
- ``notes``: the closing notes;
- ``head K`` / ``tail K``: the first or last K lines.

tests/test_docs_examples.py fails when a transcript is stale, and runs every fenced ``attn``
example of README.md and docs/ (:func:`attn_commands` splits off the shell around it).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from dataclasses import dataclass

MARKER = re.compile(r"^<!-- transcript: (?P<parts>[^>]*?) -->$")
CUT = "…"
WIDTH = 80


@dataclass(frozen=True)
class ShellLine:
    """A documented command line, split into the attn command and the shell around it."""

    args: tuple[str, ...]  # attn's arguments (without "attn")
    stdout_to: str | None = None  # `> FILE`
    grep: str | None = None  # `| grep WORD`
    rest: str = ""  # another pipe, not run


def attn_commands(line: str) -> list[ShellLine]:
    """Each attn command of a shell line (``a && attn ARGS > FILE; attn ...``), with what is
    around it; a comment (``# exits 2``) is dropped. The other commands are left out."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in (";", "&&", "||"):
            segments.append([])
        else:
            segments[-1].append(token)
    return [_segment(segment) for segment in segments if segment and _is_attn(segment[0])]


def _is_attn(word: str) -> bool:
    return word == "attn" or word.endswith("/attn")


def _segment(tokens: list[str]) -> ShellLine:
    end = next((at for at, token in enumerate(tokens) if token in ("|", ">", ">>")), len(tokens))
    at = end
    stdout_to = grep = None
    rest: list[str] = []
    while at < len(tokens):
        token = tokens[at]
        if token in (">", ">>") and at + 1 < len(tokens):
            stdout_to, at = tokens[at + 1], at + 2
        elif token == "|" and tokens[at + 1 : at + 2] == ["grep"] and at + 2 < len(tokens):
            grep, at = tokens[at + 2], at + 3
        else:
            rest, at = tokens[at:], len(tokens)
    return ShellLine(tuple(tokens[1:end]), stdout_to, grep, " ".join(rest))


def shell_parts(line: str) -> ShellLine:
    """The first attn command of ``line`` (a ValueError if there is none)."""
    found = attn_commands(line)
    if not found:
        raise ValueError(f"not an attn command: {line!r}")
    return found[0]


def run(args: tuple[str, ...]) -> tuple[int, str]:
    """``attn ARGS`` run in-process at 80 columns: its exit code and its output (stdout, then
    stderr), trailing spaces trimmed. Run once per folder (a file it names is read there):
    tests/test_docs_examples.py runs each documented line, then checks the transcripts."""
    return _run(args, os.getcwd())


@functools.cache
def _run(args: tuple[str, ...], folder: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from attn_cli.cli.app import app

    result = CliRunner().invoke(
        app, list(args), terminal_width=WIDTH, env={"COLUMNS": str(WIDTH), "NO_COLOR": "1"}
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise RuntimeError(f"attn {shlex.join(args)} raised {result.exception!r}")
    text = result.output
    return result.exit_code, "\n".join(line.rstrip() for line in text.splitlines())


def _sections(lines: list[str]) -> dict[str, range]:
    """Where the header, each step and the notes lie in the output's lines."""
    starts = [
        (match.group(1) or match.group(2), at)
        for at, line in enumerate(lines)
        if (match := re.match(r"^(?:Step (\d+) · |### (\d+)\. )", line))
    ]
    notes = next(
        (at for at, line in enumerate(lines) if re.match(r"^(Notes ─|### Notes$)", line)), None
    )
    bounds = [at for _name, at in starts] + ([notes] if notes is not None else []) + [len(lines)]
    sections = {"header": range(0, bounds[0])}
    for (name, start), end in zip(starts, bounds[1:], strict=False):
        again = sum(1 for key in sections if key.split("#")[0] == name)
        sections[f"{name}#{again + 1}" if again else name] = range(start, end)
    if notes is not None:
        sections["notes"] = range(notes, len(lines))
    return sections


def _table_lines(lines: list[str], section: range) -> set[int]:
    """The step's heading, then from its first table to its end (tables and notes, without the
    explanation)."""
    boxed = [at for at in section if lines[at].lstrip().startswith(("╭", "|"))]
    if not boxed:
        raise ValueError(f"no table in the step at line {section.start + 1}")
    return {section.start, *range(boxed[0], section.stop)}


def selected(output: str, parts: str) -> str:
    """The parts of ``output`` the marker names, ``…`` where lines are left out."""
    lines = output.splitlines()
    sections = _sections(lines)
    keep: set[int] = set()
    for part in (part.strip() for part in parts.split(",")):
        words = part.split()
        if part == "all":
            keep.update(range(len(lines)))
        elif len(words) == 2 and words[0] in ("head", "tail") and words[1].isdigit():
            count = int(words[1])
            keep.update(
                range(count) if words[0] == "head" else range(len(lines) - count, len(lines))
            )
        elif part.endswith(":table") and part.removesuffix(":table") in sections:
            keep |= _table_lines(lines, sections[part.removesuffix(":table")])
        elif re.fullmatch(r"\d+-\d+", part):
            first, last = map(int, part.split("-"))
            for number in range(first, last + 1):
                keep.update(sections[str(number)])
        elif part in sections:
            keep.update(sections[part])
        else:
            raise ValueError(f"transcript part {part!r}: the output has {', '.join(sections)}")
    shown: list[str] = []
    previous = -1
    for at in sorted(keep):
        if at != previous + 1:
            _cut(shown)
        shown.append(lines[at])
        previous = at
    if previous != len(lines) - 1:
        _cut(shown)
    return "\n".join(shown)


def _cut(shown: list[str]) -> None:
    while shown and not shown[-1].strip():
        shown.pop()
    if not shown or shown[-1] != CUT:
        shown.append(CUT)


def transcript(command: str, parts: str) -> str:
    """What a transcript fence holds after its ``$ command`` line."""
    line = shell_parts(command)
    _code, output = run(line.args)
    if line.grep is not None:
        output = "\n".join(text for text in output.splitlines() if line.grep in text)
    return selected(output, parts)


def with_transcripts(document: str) -> str:
    """``document`` with every marked transcript made afresh."""
    lines = document.split("\n")
    out: list[str] = []
    at = 0
    while at < len(lines):
        out.append(lines[at])
        match = MARKER.match(lines[at])
        at += 1
        if match is None:
            continue
        if not (lines[at] == "```console" and lines[at + 1].startswith("$ ")):
            raise ValueError(f"line {at}: a transcript marker must precede ```console and $ ...")
        out += [lines[at], lines[at + 1]]
        command = lines[at + 1][2:]
        at += 2
        while lines[at] != "```":
            at += 1
        out.append(transcript(command, match.group("parts")))
    return "\n".join(out)
