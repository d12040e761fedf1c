"""The console script: a run of one command builds only that command, and behaves the same."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attn_cli import __version__
from attn_cli.cli.app import app, command_names, main


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["attn", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    return exited.value.code or 0, captured.out, captured.err


def test_every_command_is_registered_in_help_order(invoke):
    from typer.main import get_command

    assert list(get_command(app).commands) == list(command_names())
    assert invoke("--help").exit_code == 0


def test_one_command_path_matches_the_full_app(monkeypatch, capsys, invoke):
    code, out, _ = run_main(
        monkeypatch, capsys, "scaled", "--example", "library", "--format", "json"
    )
    assert code == 0
    assert json.loads(out) == json.loads(
        invoke("scaled", "--example", "library", "--format", "json").stdout
    )


def test_one_command_path_keeps_user_errors_one_line(monkeypatch, capsys):
    code, out, err = run_main(
        monkeypatch, capsys, "scaled", "--q", "1,0", "--k", "1,1,1", "--v", "1"
    )
    assert (code, out) == (2, "")
    assert err.strip().splitlines() == [
        "attn: error: Q has 2 columns but K has 3: Q and K must share d_k (each score is a dot "
        "product of a query row with a key row)."
    ]


@pytest.mark.slow
def test_version_and_unknown_commands_use_the_full_app():
    version = subprocess.run(
        [sys.executable, "-m", "attn_cli", "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.strip() == f"attn {__version__}"
    unknown = subprocess.run(
        [sys.executable, "-m", "attn_cli", "nosuch"], capture_output=True, text=True
    )
    assert unknown.returncode == 2 and unknown.stderr.startswith("attn: error: ")
    assert "'nosuch'" in unknown.stderr


@pytest.mark.parametrize(
    ("args", "named", "command"),
    [
        (("scaled", "--format", "xml"), ("--format", "'xml'"), "attn scaled"),
        (("scaled", "--seed", "-1"), ("--seed",), "attn scaled"),
        (("bench", "--block", "0"), ("--block",), "attn bench"),
        (("scaled", "--bogus"), ("--bogus",), "attn scaled"),
        (("scaled", "--q"), ("--q",), "attn scaled"),
        (("nosuch",), ("'nosuch'",), "attn"),
        (("--nosuch",), ("--nosuch",), "attn"),
    ],
)
def test_usage_errors_are_one_line_naming_the_help(invoke, args, named, command):
    """Our frame around click's sentence (which is click's to word): one line, the prefix, the
    option or value at fault, and where the help is."""
    result = invoke(*args)
    assert (result.exit_code, result.stdout) == (2, "")
    [line] = result.stderr.splitlines()
    assert line.startswith("attn: error: ") and line.endswith(f"; see '{command} --help'."), line
    assert all(name in line for name in named), (named, line)


def test_usage_errors_are_one_line_from_the_console_script_too(monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, "causal", "--precision", "99")
    assert (code, out) == (2, "")
    [line] = err.splitlines()
    assert line.startswith("attn: error: ") and "'--precision'" in line and "15" in line, line
    assert line.endswith("; see 'attn causal --help'."), line


def test_attn_alone_still_prints_the_help(invoke):
    result = invoke()
    assert result.exit_code == 2  # click's code for "no command": the help is on stdout
    assert "Usage: attn " in result.stdout
    assert "scaled" in result.stdout and "error" not in result.output
