"""attn window --code: attention inside a band of w keys either side (or before, causal), with
global tokens that see and are seen by every position."""

from __future__ import annotations

from attn_cli.core.model import Walkthrough
from attn_cli.render.attention_program import AttentionProgram, numpy_text, torch_text
from attn_cli.render.code_render import inputs_of


def describe(walkthrough: Walkthrough) -> AttentionProgram:
    given = inputs_of(walkthrough)
    inputs = {name: given[name] for name in ("Q", "K", "V")}
    program = AttentionProgram("window", "sliding-window attention", inputs)
    window, causal = int(walkthrough.meta["window"]), bool(walkthrough.meta["causal"])
    chosen = list(walkthrough.meta.get("global") or [])
    if causal:
        band = (
            "the band: the query and the w keys before it",
            f"(i - j >= 0) & (i - j <= {window})",
        )
    else:
        band = ("the band: |i - j| <= w", f"(i - j <= {window}) & (j - i <= {window})")
    if chosen:
        program.inputs["global_tokens"] = chosen
        spread = "{xp}.isin(i, global_tokens) | {xp}.isin(j, global_tokens)"
        comment = band[0] + "; global tokens see and are seen by every position"
        program.masks.append((comment, f"{band[1]} | {spread}"))
    else:
        program.masks.append(band)
    return program


def numpy_program(walkthrough: Walkthrough) -> str:
    return numpy_text(describe(walkthrough))


def torch_program(walkthrough: Walkthrough) -> str:
    return torch_text(describe(walkthrough))
