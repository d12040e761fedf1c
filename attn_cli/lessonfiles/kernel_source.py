"""A lesson's GPU kernel as text, cut into the parts that implement its steps (`attn flash
--kernel`).

The kernel module is read as a file, never imported: showing it needs neither triton nor torch.
A part starts at a marker comment ``# ── step KEY ──`` (KEY: the lesson's step text key, as in
lessons/flash.toml's ``[steps.KEY]``) and runs to the last line before the next blank line; the
lines between parts are plumbing (pointers, masks, the trace for the tests).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from attn_cli.core.templates import template_fields

MARKER = re.compile(r"^\s*# ── step (\w+) ──")

# The lessons with a kernel: lesson -> (module file in attn_cli/kernels, what it is).
KERNELS = {
    "flash": ("flash_triton.py", "FlashAttention's forward pass as a Triton kernel"),
}

# A lesson title's placeholders, written as the kernel's names for them: the title of step
# "scores", "{where} · scores of keys {first}..{last}", reads "Block b · scores of keys
# start..start+BLOCK−1" beside the kernel's loop over start.
SYMBOLS = {
    "where": "Block b",
    "b": "b",
    "t": "t",
    "tiles": "T",
    "first": "start",
    "last": "start+BLOCK−1",
    "q_range": "row0..row0+QUERY_BLOCK−1",
}


@dataclass(frozen=True)
class KernelPart:
    step: str  # the lesson's step text key
    title: str  # that step's title in the lesson, its placeholders as the kernel's names
    first: int  # first line (1-based, the marker)
    last: int  # last line (inclusive)


@dataclass(frozen=True)
class KernelSource:
    lesson: str
    title: str  # what the kernel is
    path: str  # the file, relative to the package's parent (attn_cli/kernels/...)
    source: str
    parts: tuple[KernelPart, ...]


def kernel_source(lesson: str = "flash") -> KernelSource:
    """The kernel of ``lesson``, read as text, with its parts and their lesson titles."""
    from attn_cli.lessonfiles.loader import load_bundled

    name, title = KERNELS[lesson]
    source = resources.files("attn_cli.kernels").joinpath(name).read_text(encoding="utf-8")
    words = load_bundled(lesson)
    parts = tuple(
        KernelPart(step, symbolic_title(words.text(step).title), first, last)
        for step, first, last in marked_parts(source)
    )
    return KernelSource(lesson, title, f"attn_cli/kernels/{name}", source, parts)


def marked_parts(source: str) -> list[tuple[str, int, int]]:
    """(step key, first line, last line) of each marked part, in order (lines 1-based)."""
    lines = source.splitlines()
    parts = []
    for index, line in enumerate(lines):
        found = MARKER.match(line)
        if not found:
            continue
        last = index
        while last + 1 < len(lines) and lines[last + 1].strip():
            if MARKER.match(lines[last + 1]):
                break
            last += 1
        parts.append((found.group(1), index + 1, last + 1))
    return parts


def symbolic_title(template: str) -> str:
    """A step title template with each placeholder written as the kernel names it."""
    pieces = []
    for literal, name, _spec, _ in template_fields(template, "kernel step title"):
        pieces.append(literal)
        if name is not None:
            pieces.append(SYMBOLS.get(name, name))
    return "".join(pieces)
