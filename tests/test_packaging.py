"""The wheel carries the lesson files: `pip install .` (not -e) works from any directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    return next(out.glob("attn_cli-*.whl"))


def test_wheel_contains_every_lesson_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for lesson in (ROOT / "lessons").glob("*.toml"):
        assert f"attn_cli/lessons/{lesson.name}" in names
    assert any(name.endswith("entry_points.txt") for name in names)


def test_installed_wheel_runs_from_another_directory(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    probe = (
        "import attn_cli, attn_cli.lesson_files as f; "
        "print(attn_cli.__file__); print(f.bundled_lessons_dir())"
    )
    where = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert all(line.startswith(str(site)) for line in where), where
    completed = subprocess.run(
        [sys.executable, "-m", "attn_cli", "scaled", "--format", "json"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(completed.stdout)["example"] == "two-tokens"


def test_wheel_ships_the_json_schema(wheel):
    """The schema of docs/json.md, where json_render.schema() reads it in an installed copy."""
    packaged = zipfile.ZipFile(wheel).read("attn_cli/schema/output.schema.json")
    assert packaged == (ROOT / "attn_cli" / "schema" / "output.schema.json").read_bytes()
