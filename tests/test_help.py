"""The help at 80 columns: -h as well as --help, flags shown as flags, no word or choice cut in
two, each command's examples last (and each example runs); docs/cli.md generated from the app."""

from __future__ import annotations

import inspect
import re
import shlex
import shutil
import subprocess
import sys
from enum import EnumMeta
from pathlib import Path

import pytest
import typer.main
from typer.core import TyperOption
from typer.testing import CliRunner

from attn_cli.cli.app import app, command_names, examples
from tests.command_params import declared_type
from tools import REGENERATE
from tools.reference import reference, with_tables

COMMANDS = command_names()

ROOT = Path(__file__).resolve().parent.parent
GROUP = typer.main.get_command(app)


def params_of(command: object) -> set[str]:
    """The names of the parameters the command's function declares (not Typer's own, such as
    --install-completion)."""
    return set(inspect.signature(command.callback).parameters)  # type: ignore[attr-defined]


def choices_of(command: object, name: str) -> tuple[str, ...]:
    """The choices of a command's parameter, as its function declares them (its enum's
    values; none where it takes no choice)."""
    kind = declared_type(command, name) if name in params_of(command) else None
    return tuple(str(member.value) for member in kind) if isinstance(kind, EnumMeta) else ()


def help_at_80(*args: str) -> str:
    result = CliRunner().invoke(app, [*args], terminal_width=80, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.stdout


def whole_on_a_line(word: str, text: str) -> bool:
    """The word appears on some line with no letter, digit, '-' or '_' glued to either side."""
    pattern = re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w])")
    return any(pattern.search(line) for line in text.splitlines())


@pytest.mark.parametrize("command", [(), *((name,) for name in COMMANDS)], ids=str)
def test_help_at_80_columns(command):
    text = help_at_80(*command, "--help")
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "<bool>" not in text  # flags are shown as flags: `--full`, not `--full <bool>`
    assert help_at_80(*command, "-h") == text
    click_command = GROUP.commands[command[0]] if command else GROUP
    for param in click_command.params:
        if not isinstance(param, TyperOption) or param.hidden:
            continue
        for name in [*param.opts, *param.secondary_opts]:
            assert whole_on_a_line(name, text), (name, text)
        for value in choices_of(click_command, param.name):
            assert whole_on_a_line(value, text), (param.name, value, text)


@pytest.mark.parametrize("name", COMMANDS)
def test_help_ends_with_the_examples(name):
    assert 2 <= len(examples(name)) <= 3
    lines = [line.strip() for line in help_at_80(name, "--help").splitlines() if line.strip()]
    assert lines[-len(examples(name)) - 1 :] == ["Examples", *examples(name)]


def test_check_help_describes_the_lesson_file_format():
    text = help_at_80("check", "--help")
    assert "lesson-files.md" in text and "[[examples]]" in text and "[steps.KEY]" in text
    assert "attn check --help" in help_at_80("scaled", "--help")  # where --lesson points


def test_check_help_shows_its_argument_as_typed_and_points_at_a_real_file():
    """`FILE...`, not Python's `<list[Path]>`; the format's description is a file that is there
    (installed with attn, or the checkout's docs/), not a web address that does not exist."""
    text = help_at_80("check", "--help")
    assert "list[" not in text and "<list" not in text
    (argument_row,) = [line for line in text.splitlines() if line.startswith("│   FILE")]
    assert "FILE..." in argument_row
    joined = "".join(line.strip() for line in text.splitlines())  # a long path may wrap
    (path,) = re.findall(r"(/\S*?lesson-files\.md)", joined)
    assert Path(path).is_file() and "[[examples]]" in Path(path).read_text(encoding="utf-8")


@pytest.mark.parametrize("command", [(), *((name,) for name in COMMANDS)], ids=str)
def test_no_help_prints_a_web_address(command):
    """The project has no public address yet (pyproject.toml's [project.urls] is where it goes):
    no help may invent one."""
    assert "://" not in help_at_80(*command, "--help")


def _runnable_examples() -> list[str]:
    """Every example line, less the ones that need a GPU, write files, run for long or wait for
    keys."""
    # attn learn trains (and needs torch); attn explore is an app that waits for keys.
    slow = ("attn bench", "attn tour", "attn learn", "attn explore")
    return [
        line
        for name in COMMANDS
        for line in examples(name)
        if not line.startswith(slow)
        or "--only" in line
        or (line.startswith("attn learn") and line.endswith("--code"))
    ]


@pytest.mark.parametrize("line", _runnable_examples())
def test_every_example_runs(line, tmp_path, monkeypatch):
    shutil.copy(ROOT / "docs" / "examples" / "four-dims.toml", tmp_path / "my-slides.toml")
    monkeypatch.chdir(tmp_path)
    args = shlex.split(line)
    assert args[0] == "attn"
    result = CliRunner().invoke(app, args[1:])
    # attn check exits 1 when it finds errata, and the bundled lessons record some on purpose.
    allowed = {0, 1} if args[1] == "check" else {0}
    assert result.exit_code in allowed, (line, result.output)


@pytest.mark.slow
def test_the_console_script_help_fits_80_columns():
    completed = subprocess.run(
        [sys.executable, "-m", "attn_cli", "scaled", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "80", "PATH": "", "SYSTEMROOT": ""},
    )
    lines = completed.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert whole_on_a_line("bfloat16", completed.stdout) and "<bool>" not in completed.stdout


def test_docs_cli_md_is_generated_from_the_app():
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == reference(), f"docs/cli.md is stale; regenerate it: {REGENERATE}"


@pytest.mark.parametrize("path", ["README.md", "docs/api.md", "docs/install.md"])
def test_the_tables_of_commands_and_functions_are_generated(path):
    committed = (ROOT / path).read_text(encoding="utf-8")
    assert "<!-- BEGIN " in committed
    assert committed == with_tables(committed), f"{path} is stale; run {REGENERATE}"


def test_the_help_is_made_only_for_the_help(monkeypatch):
    """A run that asks for no help builds none of it: what the help adds to the parameters
    (HelpAsTyped.help_params) is made when the help is drawn."""
    from attn_cli.cli.app import HelpAsTyped

    drawn = []
    real = HelpAsTyped.help_params
    monkeypatch.setattr(
        HelpAsTyped, "help_params", lambda self, ctx: drawn.append(ctx) or real(self, ctx)
    )
    run = CliRunner().invoke(app, ["scaled", "--q", "1,0;0,1", "--k", "1,1;2,0", "--v", "1;2"])
    assert run.exit_code == 0, run.output
    assert drawn == []
    assert "--precision" in help_at_80("scaled", "--help")
    assert [ctx.info_name for ctx in drawn] == ["scaled"]
