"""Files a command writes (--output, --plot): checked before computing, written in one piece."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from attn_cli.core.errors import UserError


def require_matplotlib(asked: str = "--plot") -> None:
    """The figure's check, made before any work (a sweep, a lesson): is matplotlib installed?
    ``asked`` is what asked for the figure, as the user wrote it: "--plot" on the command line,
    "plot()" in Python."""
    if importlib.util.find_spec("matplotlib") is None:
        from attn_cli.core.install import install_command

        raise UserError(f"{asked} needs matplotlib; install it with: {install_command('plot')}.")


def check_writable(path: Path, option: str) -> None:
    """Refuse, before any work, a path the command could not write to."""
    folder = path.parent
    if path.is_dir():
        raise UserError(f"{option} {path}: that is a folder; give a file name.")
    if not folder.exists():
        raise UserError(f"{option} {path}: the folder {folder} does not exist; create it first.")
    if not folder.is_dir():
        raise UserError(f"{option} {path}: {folder} is not a folder.")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"{option} {path}: cannot write there; choose a path you can write to.")


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
    file remains."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        with (
            open(temporary, "wb") if binary else open(temporary, "w", encoding="utf-8", newline="")
        ) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        if path.exists():  # keep the permissions of the file it replaces
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise UserError(
            f"{option} {path}: {error.strerror or error}; choose another path."
        ) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def check_distinct(paths: dict[str, Path | None]) -> None:
    """Refuse two outputs written to the same file (one would overwrite the other)."""
    given = [(option, path) for option, path in paths.items() if path is not None]
    for index, (option, path) in enumerate(given):
        for other, other_path in given[index + 1 :]:
            if os.path.abspath(path) == os.path.abspath(other_path):
                raise UserError(
                    f"{option} and {other} both name {path}: one would overwrite the other; "
                    "give each its own file."
                )
