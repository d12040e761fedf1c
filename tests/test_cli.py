"""The console script: a run of one command builds only that command, and behaves the same."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attn_cli import __version__
from attn_cli.cli import COMMANDS, app, main


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["attn", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    return exited.value.code or 0, captured.out, captured.err


def test_every_command_is_registered_in_help_order(invoke):
    from typer.main import get_command

    assert list(get_command(app).commands) == list(COMMANDS)
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


def test_version_and_unknown_commands_use_the_full_app():
    version = subprocess.run(
        [sys.executable, "-m", "attn_cli", "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.strip() == f"attn {__version__}"
    unknown = subprocess.run(
        [sys.executable, "-m", "attn_cli", "nosuch"], capture_output=True, text=True
    )
    assert unknown.returncode == 2 and "No such command 'nosuch'" in unknown.stderr
