"""Files a command writes (--output, --plot): checked before computing, written in one piece."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from attn_cli.core.errors import UserError
from attn_cli.core.paths import special_kind


def require_matplotlib(asked: str = "--plot") -> None:
    """The figure's check, made before any work (a sweep, a lesson): is matplotlib installed?
    ``asked`` is what asked for the figure, as the user wrote it: "--plot" on the command line,
    "plot()" in Python."""
    if importlib.util.find_spec("matplotlib") is None:
        from attn_cli.core.install import install_command

        raise UserError(f"{asked} needs matplotlib; install it with: {install_command('plot')}.")


def check_writable(path: Path, option: str) -> None:
    """Refuse, before any work, a path the command could not write to: a folder, a missing
    folder, no permission, a full filesystem, one of the kernel's (/proc, /sys), or a disk (a
    block device). A symlink is judged by its target, which is what will be written; a
    character device (/dev/null) or a FIFO is written through, as a shell's redirection does,
    a link to one too (/dev/stdout, whose target is a pipe or a terminal)."""
    kind = special_kind(path)  # through a symlink: /dev/stdout is the pipe it names
    if kind in ("a block device (a disk)", "a socket"):
        raise UserError(f"{option} {path}: that is {kind}, not a file; give a file name.")
    if kind is not None:
        if not os.access(path, os.W_OK):
            raise UserError(f"{option} {path}: cannot write there; choose a path you can write to.")
        return
    target = written_path(path)
    folder = target.parent
    if target.is_dir():
        raise UserError(f"{option} {path}: that is a folder; give a file name.")
    if not folder.exists():
        raise UserError(f"{option} {path}: the folder {folder} does not exist; create it first.")
    if not folder.is_dir():
        raise UserError(f"{option} {path}: {folder} is not a folder.")
    if not os.access(folder, os.W_OK):
        raise UserError(f"{option} {path}: cannot write there; choose a path you can write to.")
    if target.exists() and not os.access(target, os.W_OK):
        raise UserError(f"{option} {path}: cannot write there; choose a path you can write to.")
    if _holds_no_files(folder):
        raise UserError(
            f"{option} {path}: cannot write there: {folder} is on a filesystem of the kernel's "
            "(it reports no space at all, as /proc and /sys do), which holds no files of yours; "
            "choose a path you can write to."
        )
    if _free_bytes(folder) == 0:
        raise UserError(
            f"{option} {path}: the filesystem of {folder} is full; free some space or choose "
            "another path."
        )


def written_path(path: Path) -> Path:
    """The file writing ``path`` replaces: a symlink's target (followed to the end; a dangling
    one's too), so that the link stays a link; any other path itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _holds_no_files(folder: Path) -> bool:
    """Whether ``folder``'s filesystem has no blocks at all (procfs, sysfs: files the kernel
    makes up), as against one that is full."""
    try:
        return os.statvfs(folder).f_blocks == 0
    except (AttributeError, OSError):
        return False


def _free_bytes(folder: Path) -> int | None:
    """Bytes this process may still write in ``folder``'s filesystem; None where the system
    does not say."""
    try:
        info = os.statvfs(folder)
    except (AttributeError, OSError):
        return None
    root = hasattr(os, "geteuid") and os.geteuid() == 0  # root may write the reserved blocks
    return (info.f_bfree if root else info.f_bavail) * info.f_frsize


def write_text(path: Path, text: str, option: str) -> None:
    """Write the whole text (built in memory first) in place of ``path``, or nothing at all."""
    write_bytes(path, text.encode("utf-8"), option)


def write_bytes(path: Path, data: bytes, option: str) -> None:
    """Write ``data`` to a new file beside ``path`` and rename it into place once complete: on
    any error (a full disk, a permission) the file that was there is untouched and no partial
    file remains."""
    with replacing(path, option, binary=True) as file:
        file.write(data)


def text_replacing(path: Path, option: str) -> contextlib.AbstractContextManager[TextIO]:
    """A UTF-8 text file to write ``path``'s new contents into, as they come (see replacing)."""
    return replacing(path, option, binary=False)


@contextlib.contextmanager
def replacing(path: Path, option: str, binary: bool) -> Iterator[Any]:
    """A new file beside ``path``, renamed into place when the block ends without error: text
    can be written as it is made (--full JSON need not be held whole), and still, on any error
    (a full disk, an exception, Ctrl-C) the file that was there is untouched and no partial
    file remains. A symlink's target is what is replaced (the link stays); a character device
    or a FIFO (/dev/null, a pipe) is written through, never replaced by a regular file."""
    if special_kind(path) is not None:  # a link to one too (/dev/stdout): opened through it
        with _through(path, path, option, binary) as file:
            yield file
        return
    target = written_path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        with (
            open(temporary, "wb") if binary else open(temporary, "w", encoding="utf-8", newline="")
        ) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        if target.exists():  # keep the permissions of the file it replaces
            os.chmod(temporary, target.stat().st_mode & 0o7777)
        os.replace(temporary, target)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise UserError(
            f"{option} {path}: {error.strerror or error}; choose another path."
        ) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _through(target: Path, path: Path, option: str, binary: bool) -> Iterator[Any]:
    """A device or a FIFO, opened and written as it is (what was written is gone once
    written: there is nothing to keep whole)."""
    try:
        with (
            open(target, "wb") if binary else open(target, "w", encoding="utf-8", newline="")
        ) as file:
            yield file
    except OSError as error:
        raise UserError(
            f"{option} {path}: {error.strerror or error}; choose another path."
        ) from None


def check_distinct(paths: dict[str, Path | None]) -> None:
    """Refuse two outputs written to the same file (one would overwrite the other)."""
    given = [(option, path) for option, path in paths.items() if path is not None]
    for index, (option, path) in enumerate(given):
        for other, other_path in given[index + 1 :]:
            if os.path.realpath(path) == os.path.realpath(other_path):
                raise UserError(
                    f"{option} and {other} both name {path}: one would overwrite the other; "
                    "give each its own file."
                )
