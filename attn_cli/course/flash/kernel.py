"""`attn flash --kernel`: the lesson's GPU kernel instead of its walkthrough.

The card's ``before_run`` hook: with --kernel the command shows the kernel's source, read as
text (neither triton nor a GPU needed), in place of the lesson; nothing is computed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attn_cli.lessonfiles.kernel_source import KernelSource


def kernel_instead(given: dict[str, Any]) -> KernelSource | None:
    """With --kernel, the kernel's source, to be shown instead of the lesson; else None."""
    if not given.get("kernel"):
        return None
    from attn_cli.lessonfiles.kernel_source import kernel_source

    return kernel_source("flash")
