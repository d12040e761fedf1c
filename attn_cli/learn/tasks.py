"""`attn learn`'s tasks by name: each task's module imported when it is asked for.

Above the tasks (each imports attn_cli.learn.common, where :class:`Task` is declared), so that
what they share never imports them.
"""

from __future__ import annotations

from attn_cli.core.errors import UserError
from attn_cli.learn.common import Task


def get_task(name: str) -> Task:
    """Task ``name``'s declaration (its module imported now); a UserError when this attn has
    none."""
    declared: Task
    if name == "translate":
        from attn_cli.learn.translate import TASK as declared
    elif name == "induction":
        from attn_cli.learn.induction import TASK as declared
    elif name == "grammar":
        from attn_cli.learn.grammar import TASK as declared
    else:
        raise UserError(f"attn learn {name} is not part of this version of attn.")
    return declared
