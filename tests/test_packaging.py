"""The wheel carries the lesson files: `pip install .` (not -e) works from any directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
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


def test_wheel_carries_the_license_the_marker_and_the_metadata(wheel):
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    dist_info = next(name.split("/")[0] for name in names if ".dist-info/" in name)
    assert f"{dist_info}/licenses/LICENSE" in names
    assert archive.read(f"{dist_info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
    assert "attn_cli/py.typed" in names
    metadata = archive.read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: MIT" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    assert f"Project-URL: Homepage, {_homepage()}" in metadata


def _homepage() -> str:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return pyproject["project"]["urls"]["Homepage"]


def test_one_base_address_for_the_project():
    """pyproject's Homepage is the base of the help's and the README's links: the README is
    shown on the package index, where a relative link leads nowhere."""
    from attn_cli.project import REPOSITORY

    assert _homepage() == REPOSITORY
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert targets, "the README has no links?"
    relative = [target for target in targets if not target.startswith(("https://", "#"))]
    assert relative == [], f"make these absolute against {REPOSITORY}: {relative}"
    for target in targets:
        if "github.com" in target:
            assert target.startswith(REPOSITORY), target


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> list[Path]:
    """The sdist and the wheel, as `python -m build` makes them for an upload."""
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "-o", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return sorted(out.iterdir())


def test_sdist_carries_the_license_and_the_docs(built):
    sdist = next(path for path in built if path.name.endswith(".tar.gz"))
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "README.md", "docs/cli.md", "docs/lesson-files.md"} <= names
    assert "attn_cli/py.typed" in names


def test_twine_check_passes(built):
    pytest.importorskip("twine")
    completed = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, built)],
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_wheel_ships_the_json_schema(wheel):
    """The schema of docs/json.md, where json_render.schema() reads it in an installed copy."""
    for name in ("output.schema.json", "lesson.schema.json"):  # lesson files: docs/lesson-files.md
        packaged = zipfile.ZipFile(wheel).read(f"attn_cli/schema/{name}")
        assert packaged == (ROOT / "attn_cli" / "schema" / name).read_bytes()
