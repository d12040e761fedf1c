"""attn learn translate (being built): see attn_cli/learn/common.py for the task interface."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_cli.errors import UserError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from attn_cli.learn.common import LearnOptions, Progress
    from attn_cli.model import Walkthrough


def run(options: LearnOptions, progress: Progress | None = None) -> Walkthrough:
    raise UserError("attn learn translate is not finished yet.")


def program(options: LearnOptions) -> str:
    return "# attn learn translate: the training program (not finished yet)\n"


def figure(walkthrough: Walkthrough) -> Figure:
    raise UserError("attn learn translate is not finished yet.")
