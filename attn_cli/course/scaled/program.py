"""attn scaled --code: softmax(Q Kᵀ / √d_k) V, with --no-scale and --valid-len."""

from __future__ import annotations

from typing import Any

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.mechanisms.scoring import EPSILONS
from attn_cli.render.attention_program import AttentionProgram, numpy_text, torch_text
from attn_cli.render.code_render import inputs_of, options_of, refuse


def describe(walkthrough: Walkthrough) -> AttentionProgram:
    options = options_of(walkthrough)
    if options.get("dropout") is not None:
        raise refuse("scaled", param("dropout"), "a random mask")
    normaliser = options.get("normalise") or "softmax"
    if normaliser != "softmax":
        raise refuse("scaled", param("normalise", normaliser), "it shows softmax attention")
    inputs: dict[str, Any] = {name: inputs_of(walkthrough)[name] for name in ("Q", "K", "V")}
    program = AttentionProgram("scaled", "scaled dot-product attention", inputs)
    program.scale = bool(options.get("scale", True))
    program.qk_norm = options.get("qk_norm")
    program.softcap = options.get("softcap")
    if program.qk_norm is not None:
        program.epsilon = EPSILONS[program.qk_norm]
    lengths = walkthrough.meta.get("valid_lengths")
    if lengths is not None:
        program.inputs["valid_len"] = lengths
        program.masks.append(
            ("padding: keys at or past each row's valid length", "j < valid_len[:, None]")
        )
    return program


def numpy_program(walkthrough: Walkthrough) -> str:
    return numpy_text(describe(walkthrough))


def torch_program(walkthrough: Walkthrough) -> str:
    return torch_text(describe(walkthrough))
