"""Hostile outputs, round 4 (issue 43): nothing of the user's destroyed, no traceback.

--output to a character device, a FIFO or a symlink writes through it (the device stays a
device, the link a link, its target replaced); every file output is written, or refused,
before anything is printed; a stdout that cannot be written (``> /dev/full``) is one line and
exit 1; COLUMNS is bounded. The devices are made with mknod in a temporary folder (as root; the
tests that need it are skipped otherwise).
"""

from __future__ import annotations

import errno
import importlib.util
import os
import stat
import sys
import threading
from pathlib import Path

import pytest

from attn_cli.cli.app import MAX_COLUMNS, bounded_width, main
from tests.conftest import assert_user_error
from tests.waits import HANG_GUARD_SECONDS


def device(folder: Path, name: str, major: int, minor: int, kind: int = stat.S_IFCHR) -> Path:
    """A device node in ``folder`` (a copy of /dev/null is 1, 3; of /dev/full 1, 7)."""
    path = folder / name
    try:
        os.mknod(path, kind | 0o666, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return path


def test_output_to_a_character_device_writes_through_it(invoke, tmp_path):
    """`attn block --output /dev/null` as root left a regular file there; tried here on a copy
    of /dev/null, never on the real one (a tree without the fix would replace it)."""
    null = device(tmp_path, "null", 1, 3)
    result = invoke("block", "--output", str(null))
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(null.stat().st_mode)  # was a 45 kB regular file
    assert list(tmp_path.iterdir()) == [null]  # no temporary file left beside it


def test_output_to_a_full_device_is_one_line_and_the_device_stays(invoke, tmp_path):
    full = device(tmp_path, "full", 1, 7)
    for command in ("block", "cost"):
        assert_user_error(invoke(command, "--output", str(full)), "No space left on device")
        assert stat.S_ISCHR(full.stat().st_mode)


def test_output_to_a_block_device_is_refused_unwritten(invoke, tmp_path):
    disk = device(tmp_path, "disk", 7, 0, stat.S_IFBLK)  # a loop device's numbers: never opened
    assert_user_error(invoke("block", "--output", str(disk)), "a block device (a disk)")
    assert stat.S_ISBLK(disk.stat().st_mode)


def test_output_to_a_fifo_is_written_through_to_its_reader(invoke, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = invoke("cost", "--output", str(fifo))
    reader.join(timeout=HANG_GUARD_SECONDS)  # the command has written and closed the fifo
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert b"score matrix" in received[0]


def test_output_through_a_symlink_replaces_its_target_not_the_link(invoke, tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target.name)
    assert invoke("cost", "--output", str(link)).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == "target.txt"
    assert "score matrix" in target.read_text(encoding="utf-8")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to("made.txt")
    assert invoke("cost", "--output", str(dangling)).exit_code == 0
    assert dangling.is_symlink() and (tmp_path / "made.txt").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "dangling.txt",
        "link.txt",
        "made.txt",
        "target.txt",
    ]


def test_output_and_plot_through_a_link_to_the_same_file_are_refused(invoke, tmp_path):
    (tmp_path / "link.png").symlink_to("out.png")
    result = invoke(
        "scaled", "--output", str(tmp_path / "out.png"), "--plot", str(tmp_path / "link.png")
    )
    assert_user_error(result, "both name")


# --- every output checked before anything is printed -------------------------------------------


def test_a_plot_that_cannot_be_written_leaves_stdout_empty(invoke, mpl, tmp_path, monkeypatch):
    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("attn_cli.core.outputs.os.fsync", full)
    result = invoke("block", "--plot", str(tmp_path / "b.png"))
    assert_user_error(result, "--plot", "No space left on device")  # stdout: nothing
    assert list(tmp_path.iterdir()) == []


def test_a_full_filesystem_is_refused_before_the_work(invoke, tmp_path, monkeypatch):
    class Full:
        f_bavail = f_bfree = 0
        f_frsize = 4096

    monkeypatch.setattr("attn_cli.core.outputs.os.statvfs", lambda folder: Full())
    assert_user_error(invoke("block", "--plot", str(tmp_path / "b.png")), "is full")
    assert_user_error(invoke("block", "--output", str(tmp_path / "b.txt")), "is full")


@pytest.fixture
def tiny_filesystem(tmp_path):
    """A 64 KiB tmpfs (root only), unmounted after the test."""
    import subprocess

    folder = tmp_path / "tiny"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_a_plot_on_a_real_full_filesystem_is_one_line_and_nothing_printed(
    invoke, mpl, tiny_filesystem
):
    (tiny_filesystem / "filler").write_bytes(bytes(60 * 1024))  # 4 KiB left: the PNG needs more
    result = invoke("block", "--plot", str(tiny_filesystem / "b.png"))
    assert_user_error(result, "--plot", "No space left on device")
    assert sorted(path.name for path in tiny_filesystem.iterdir()) == ["filler"]


# --- stdout that cannot be written ---------------------------------------------------------------


def run_main(monkeypatch, args: list[str], stdout) -> int:
    """attn ARGS through the console script's main, its stdout ``stdout``; the exit code."""
    monkeypatch.setattr(sys, "argv", ["attn", *args])
    monkeypatch.setattr(sys, "stdout", stdout)
    with pytest.raises(SystemExit) as exited:
        main()
    return int(exited.value.code or 0)


@pytest.mark.parametrize(
    "args",
    [
        ["block"],
        ["cost"],
        ["block", "--code"],
        ["learn", "translate", "--code"],
        ["scaled"],
        ["scaled", "--format", "json"],
        ["scaled", "--help"],
        ["--version"],
    ],
)
def test_a_full_stdout_is_one_line_and_exit_1(monkeypatch, capsys, args):
    with open("/dev/full", "w", encoding="utf-8") as full:
        code = run_main(monkeypatch, args, full)
    stderr = capsys.readouterr().err
    assert code == 1, stderr
    assert stderr.splitlines() == [
        "attn: error: cannot write the output: No space left on device; the output is incomplete."
    ]


# --- COLUMNS -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        ("99999999999999999999", str(MAX_COLUMNS)),
        ("999999999", str(MAX_COLUMNS)),
        ("10000000", str(MAX_COLUMNS)),
        ("1001", str(MAX_COLUMNS)),
        ("1000", "1000"),
        ("120", "120"),
        ("0", None),
        ("wide", "wide"),  # not digits: rich ignores it
    ],
)
def test_columns_is_bounded(given, taken):
    environ = {"COLUMNS": given}
    bounded_width(environ)
    assert environ.get("COLUMNS") == taken


def test_a_huge_columns_renders_at_most_max_columns(monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "99999999999999999999")
    with (tmp_path / "out.txt").open("w", encoding="utf-8") as out:
        assert run_main(monkeypatch, ["block"], out) == 0
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()
    assert max(len(line) for line in lines) <= MAX_COLUMNS


# --- round 5 (issue 54): a filesystem of the kernel's, a link to stdout ------------------------

KERNELS = "is on a filesystem of the kernel's (it reports no space at all, as /proc and /sys do)"


@pytest.mark.skipif(not Path("/proc/version").is_file(), reason="a Linux /proc")
@pytest.mark.parametrize(
    ("args", "where"),
    [
        (("rope", "-o", "/proc/version"), "/proc"),  # before: "the filesystem of /proc is full"
        (("block", "--output", "/proc/attn-new.txt"), "/proc"),
        (("cost", "-o", "/sys/kernel/attn.txt"), "/sys/kernel"),
        (("scaled", "--format", "json", "-o", "/proc/version"), "/proc"),
    ],
)
def test_a_file_of_the_kernels_filesystem_cannot_be_written_and_says_so(invoke, args, where):
    result = invoke(*args)
    assert_user_error(result, f"cannot write there: {where} {KERNELS}", "choose a path you can")


def test_every_output_refuses_a_filesystem_without_blocks(invoke, mpl, tmp_path, monkeypatch):
    """What /proc's statvfs says (no blocks at all, none free), faked for a folder of ours: the
    shared check, for --output, --plot and learn's --save alike."""

    class Kernels:
        f_blocks = f_bavail = f_bfree = 0
        f_frsize = 4096

    monkeypatch.setattr("attn_cli.core.outputs.os.statvfs", lambda folder: Kernels())
    outputs = [
        ("block", "--output", str(tmp_path / "b.txt")),
        ("block", "--plot", str(tmp_path / "b.png")),
    ]
    # learn trains with PyTorch: without it, the want of torch is refused first (tested elsewhere).
    if importlib.util.find_spec("torch") is not None:
        outputs.append(("learn", "translate", "--save", str(tmp_path / "w.npz")))
    for args in outputs:
        assert_user_error(invoke(*args), f"cannot write there: {tmp_path} {KERNELS}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="a /dev/stdout")
@pytest.mark.parametrize("name", ["/dev/stdout", "/proc/self/fd/1"])
def test_output_to_a_link_to_stdout_writes_through_the_pipe(name):
    """Before: /dev/stdout into a pipe was 'the filesystem of /proc/PID/fd is full' (the link's
    target, pipe:[N], is no path): the pipe it names is written through."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-m", "attn_cli", "cost", "-o", name],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        timeout=HANG_GUARD_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and "score matrix" in done.stdout
