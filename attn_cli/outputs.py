"""Files a command writes (--output, --plot): checked before computing, written in one piece."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from attn_cli.errors import UserError

PLOT_INSTALL_HINT = "pip install 'attn-cli[plot]'"


def require_matplotlib() -> None:
    """--plot's check, made before any work (a sweep, a lesson): is matplotlib installed?"""
    if importlib.util.find_spec("matplotlib") is None:
        raise UserError(f"--plot needs matplotlib; install it with: {PLOT_INSTALL_HINT}.")


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
    """Write the whole text at once (it is built in memory first: no half-written file)."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise UserError(
            f"{option} {path}: {error.strerror or error}; choose another path."
        ) from None
