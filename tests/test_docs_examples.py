"""Every fenced `attn ...` example of README.md and docs/*.md runs as written, and the docs'
transcripts are today's output.

An example is a line of a ``console`` fence that starts with ``$ `` or a line of a ``bash`` /
``sh`` / ``shell`` fence, holding an attn command (``attn ...`` or ``.venv/bin/attn ...``, maybe
after ``&&``). Each runs in-process (CliRunner) in a scratch folder that holds the files the
docs name (docs/examples/, lessons/, and week3.toml and my-slides.toml, a course's own lesson
files, as docs/examples/four-dims.toml). It must exit 0, or the code its line documents with a
comment: ``# exits 1``. The shell around it is handled: ``> FILE`` and ``| grep`` as tools/
transcripts.py does, other pipes are not run. Where a line cannot run here it is skipped, saying
why: a GPU (``--device cuda|mps``), PyTorch or matplotlib missing, ``--install-completion``
(it edits the shell's start-up file). A line marked ``# a long run``, and a measurement (attn
bench, a tour with its bench stop: their wall time is the machine's; attn learn's training, tens
of seconds at its default budget), is parsed by its command (every option must exist and take
its value) but not run; so is attn explore, an app that waits for keys or (--serve) for a
browser until stopped (tests/test_explore.py drives it).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main

from attn_cli.cli.app import app
from tools import REGENERATE, transcripts
from tools.transcripts import MARKER, attn_commands, with_transcripts

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_FENCES = ("bash", "sh", "shell")


@dataclass(frozen=True)
class Example:
    file: str
    number: int  # its line in the file
    line: str  # as written (continuation lines joined)

    @property
    def comment(self) -> str:
        """The shell comment that ends the line ("" if none): a # outside quotes."""
        quote = None
        for at, char in enumerate(self.line):
            if quote:
                quote = None if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char == "#" and (at == 0 or self.line[at - 1].isspace()):
                return self.line[at:]
        return ""

    @property
    def exit_codes(self) -> set[int]:
        """``# exits N`` says N; else 0, or for attn check 0 or 1 (its documented status: 1 when
        a printed value is wrong, as the bundled slides' errata are)."""
        found = re.search(r"\bexits (\d+)\b", self.comment)
        if found:
            return {int(found.group(1))}
        return {0, 1} if attn_commands(self.line)[0].args[:1] == ("check",) else {0}

    @property
    def long(self) -> bool:
        """Marked ``# a long run``, a measurement (attn bench, or a tour with its bench stop), or
        training (attn learn, but for --code): their small runs are tests/test_bench_cli.py's,
        test_tour.py's and test_learn*.py's."""
        args = attn_commands(self.line)[0].args
        tour_measures = args[:1] == ("tour",) and not any(
            "--only" in arg and "bench" not in arg for arg in _options(args)
        )
        trains = args[:1] == ("learn",) and "--code" not in args
        return "a long run" in self.comment or args[:1] == ("bench",) or tour_measures or trains

    @property
    def interactive(self) -> bool:
        """attn explore: it runs until a person quits it (or, with --serve, until Ctrl+C)."""
        return attn_commands(self.line)[0].args[:1] == ("explore",)


def _options(args: tuple[str, ...]) -> list[str]:
    """``--only scaled,causal`` as "--only=scaled,causal" (each option with its value)."""
    return [f"{arg}={value}" for arg, value in zip(args, (*args[1:], ""), strict=True)]


def examples_of(path: Path) -> list[Example]:
    found = []
    fence: str | None = None
    lines = path.read_text(encoding="utf-8").split("\n")
    at = 0
    while at < len(lines):
        text, number = lines[at].strip(), at + 1
        at += 1
        if text.startswith("```"):
            fence = None if fence is not None else text[3:].strip()
            continue
        if fence == "console" and text.startswith("$ "):
            command = text[2:]
        elif fence in SHELL_FENCES and text and not text.startswith("#"):
            command = text
        else:
            continue
        while command.endswith("\\") and at < len(lines):
            command, at = command[:-1] + " " + lines[at].strip(), at + 1
        if attn_commands(command):
            found.append(Example(str(path.relative_to(ROOT)), number, command))
    return found


EXAMPLES = [example for path in DOCS for example in examples_of(path)]


def test_the_docs_have_examples_where_they_should():
    files = {example.file for example in EXAMPLES}
    assert {"README.md", "docs/gallery.md", "docs/cli.md", "docs/lesson-files.md"} <= files
    readme = [example.line for example in EXAMPLES if example.file == "README.md"]
    # The set-up's own command, and the five things to try first, each as written.
    assert readme[0].endswith("&& .venv/bin/attn scaled")
    first_five = ["attn scaled --example library", "attn variance", "attn tour"]
    assert all(line in readme for line in first_five)
    documented = {code for example in EXAMPLES if example.comment for code in example.exit_codes}
    assert {1, 2} <= documented
    assert any(example.interactive for example in EXAMPLES)  # parsed, never run: see above


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A folder holding what the docs' examples read: docs/examples/, lessons/, and a course's
    own lesson files (week3.toml, my-slides.toml), and the layer docs/api.md saves (layer.pt,
    x.npy)."""
    folder = tmp_path_factory.mktemp("docs-examples")
    shutil.copytree(ROOT / "docs" / "examples", folder / "docs" / "examples")
    shutil.copytree(ROOT / "lessons", folder / "lessons")
    for name in ("week3.toml", "my-slides.toml"):
        shutil.copy(ROOT / "docs" / "examples" / "four-dims.toml", folder / name)
    for name in ("layer.pt", "x.npy"):  # what docs/api.md's five lines of PyTorch save
        shutil.copy(ROOT / "docs" / "examples" / name, folder / name)
    return folder


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _missing(args: tuple[str, ...]) -> str | None:
    """Why ``attn ARGS`` cannot run here, or None."""
    words = " ".join(args)
    if "--install-completion" in args:
        return "edits the shell's start-up file (~/.bashrc ...)"
    gpu = re.search(r"--device[ =](cuda|mps)", words)
    if gpu and not (_has("torch") and Path("/dev/nvidiactl" if gpu[1] == "cuda" else "/").exists()):
        return "needs a GPU"  # (torch is not imported here to ask: seconds per line)
    if gpu and gpu[1] == "mps" and sys.platform != "darwin":
        return "needs a Mac's GPU"
    if "--plot" in args and not _has("matplotlib"):
        return "needs matplotlib"
    torch_impls = re.search(r"--impl[ =]\S*\b(naive|sdpa|tiled)\b(?!-numpy)", words)
    reads_pt = any(arg.endswith((".pt", ".pth")) for arg in args)  # torch.load reads it
    if ("torch" in args or torch_impls or reads_pt) and not _has("torch"):
        return "needs PyTorch"
    return None


def parses(args: tuple[str, ...]) -> None:
    """``attn COMMAND ARGS`` parsed by its command, without running it."""
    command = typer.main.get_command(app).commands[args[0]]
    command.make_context(args[0], list(args[1:]))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"{e.file}:{e.number}")
def test_every_example_runs_as_written(example, scratch, monkeypatch):
    monkeypatch.chdir(scratch)
    for command in attn_commands(example.line):
        reason = _missing(command.args)
        if reason:
            pytest.skip(f"{example.line}: {reason}")
        if example.long or example.interactive:
            parses(command.args)
            continue
        code, output = transcripts.run(command.args)  # once: the transcripts' test reuses it
        assert code in example.exit_codes, (example, output[-2000:])
        if code == 0 and command.stdout_to:  # `> FILE`: what the next command reads
            Path(command.stdout_to).write_text(output, encoding="utf-8")


def _has_transcripts(path: Path) -> bool:
    return any(MARKER.match(line) for line in path.read_text(encoding="utf-8").split("\n"))


@pytest.mark.parametrize("path", [path for path in DOCS if _has_transcripts(path)], ids=str)
def test_the_transcripts_are_todays_output(path, scratch, monkeypatch):
    monkeypatch.chdir(scratch)  # where the examples ran: their runs are reused
    committed = path.read_text(encoding="utf-8")
    assert committed == with_transcripts(committed), f"{path.name} is stale; run {REGENERATE}"
