"""What a path names when it is not a regular file: said in a message, in place of "not found"."""

from __future__ import annotations

import stat
from pathlib import Path


def special_kind(path: Path) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder, in words; a
    symlink is judged by what it names (/dev/stdout: a pipe, a terminal or a file)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISBLK(mode):
        return "a block device (a disk)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def not_a_file(path: Path) -> str | None:
    """What ``path`` is, in words, when it exists but is not a regular file a reader can take
    ("a folder", "a FIFO (a named pipe)" ...); None when it is one, or does not exist."""
    if path.is_dir():
        return "a folder"
    kind = special_kind(path)
    return "a FIFO (a named pipe)" if kind == "a FIFO" else kind
