"""Issue 32, the channels beside the options: no lost file, no endless run, one line for a bad
seed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attn_cli.core import outputs
from attn_cli.core.errors import UserError
from attn_cli.course.variance import build as variance
from tests.conftest import assert_user_error


def test_a_failed_write_leaves_the_old_file_and_no_partial_one(tmp_path: Path, monkeypatch):
    target = tmp_path / "out.txt"
    target.write_text("the lecturer's notes", encoding="utf-8")

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(UserError, match="No space left on device; choose another path"):
        outputs.write_text(target, "a new walkthrough", "--output")
    assert target.read_text(encoding="utf-8") == "the lecturer's notes"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.txt"]


def test_a_write_replaces_the_file_whole_and_keeps_its_permissions(tmp_path: Path):
    target = tmp_path / "out.md"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    outputs.write_text(target, "new √", "--output")
    assert target.read_text(encoding="utf-8") == "new √"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.md"]


def test_output_and_plot_on_the_same_file_are_refused(invoke, tmp_path: Path):
    pytest.importorskip("matplotlib")
    same = tmp_path / "same.svg"
    result = invoke("scaled", "--output", str(same), "--plot", str(same))
    assert_user_error(result, f"--output and --plot both name {same}")
    assert not same.exists()


def test_bench_refuses_a_negative_seed_in_one_line(invoke):
    result = invoke("bench", "--seed", "-1", "--sizes", "16")
    assert result.exit_code == 2 and result.stdout == ""
    assert "--seed" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--samples", "2147483648"), "draws 2.6e+13 numbers, about 37 hours here"),
        (("--dk", "100000000"), "d_k up to 100,000,000 draws 2.7e+12 numbers, about 4 hours"),
    ],
)
def test_variance_refuses_hours_of_work_before_drawing(invoke, args, expected, monkeypatch):
    monkeypatch.setattr(variance, "_cores", lambda: 2)  # 2.0e8 numbers a second
    result = invoke("variance", *args)
    assert_user_error(result, expected, "ask for less")


def test_the_work_guard_allows_the_lectures_run_and_its_tenfold():
    variance.check_work(3000, 8, (1, 4, 16, 64, 256, 1024))  # the default: 33 M numbers
    variance.check_work(30000, 8, (1, 4, 16, 64, 256, 1024))  # 369 M, about 3 s
    variance.check_work(variance.max_drawn(), 0, (1,))  # exactly the cap: allowed
    with pytest.raises(UserError, match="about 3 minutes here"):
        variance.check_work(variance.max_drawn() + 1, 0, (1,))  # one number more: refused
    with pytest.raises(UserError):
        variance.check_work(variance.max_drawn(), 1, (1,))


def test_summaries_of_huge_finite_entries_stay_finite():
    import numpy as np

    from attn_cli.core.model import summary

    stats = summary(np.full((3, 3), 1e308))
    assert (stats.mean, stats.std, stats.max) == (1e308, 0.0, 1e308)
    assert summary(np.array([1.0, 2.0, 3.0, 4.0])).mean == 2.5


def test_overflowing_inputs_leave_no_numpy_warning_on_stderr(invoke):
    result = invoke("scaled", "--q", "1e308,1e308", "--k", "1e308,1e308", "--v", "1,2")
    assert result.exit_code == 0, result.output
    assert "RuntimeWarning" not in result.stderr and result.stderr == ""
    assert "overflowed" in result.stdout  # the walkthrough says it, in words
