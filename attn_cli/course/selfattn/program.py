"""attn selfattn --code: Q, K, V projected from X, then scaled dot-product attention."""

from __future__ import annotations

import numpy as np

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.render.attention_program import AttentionProgram, numpy_text, torch_text
from attn_cli.render.code_render import inputs_of, options_of, refuse


def describe(walkthrough: Walkthrough) -> AttentionProgram:
    options = options_of(walkthrough)
    if options.get("dropout") is not None:
        raise refuse("selfattn", param("dropout"), "a random mask")
    if options.get("permute") is not None:
        raise refuse("selfattn", param("permute"), "it computes the tokens in their order")
    given = inputs_of(walkthrough)
    d = given["X"].shape[1]
    inputs = {"X": given["X"]}
    inputs |= {name: given.get(name, np.eye(d)) for name in ("W_Q", "W_K", "W_V")}
    program = AttentionProgram("selfattn", "self-attention", inputs, source="x")
    program.scale = bool(options.get("scale", True))
    return program


def numpy_program(walkthrough: Walkthrough) -> str:
    return numpy_text(describe(walkthrough))


def torch_program(walkthrough: Walkthrough) -> str:
    return torch_text(describe(walkthrough))
