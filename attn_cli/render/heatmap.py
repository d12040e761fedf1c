"""--plot on the lessons: the attention heatmap the lectures draw (matplotlib, an optional extra).

Placeholder until the heatmaps land: the option is wired and checked, the drawing is not.
"""

from __future__ import annotations

from pathlib import Path

from attn_cli.errors import UserError
from attn_cli.model import Walkthrough
from attn_cli.outputs import check_writable

HEATMAP_FORMATS = ("png", "svg", "pdf")


def check_heatmap_path(path: Path) -> None:
    suffix = path.suffix.lower().removeprefix(".")
    if suffix not in HEATMAP_FORMATS:
        raise UserError(
            f"--plot {path}: the file name must end in .png, .svg or .pdf (it picks the "
            "format); e.g. --plot weights.png."
        )
    check_writable(path, "--plot")


def write_heatmap(walkthrough: Walkthrough, path: Path) -> None:
    raise UserError("--plot is not available yet.")
