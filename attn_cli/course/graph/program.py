"""attn graph --code: dot-product attention over each node's neighbours (the adjacency as the
mask; --no-scale leaves out the √d_k); a node with no neighbour gets weights 0. GAT's additive
scores (--score additive, gatv2) have no program yet."""

from __future__ import annotations

import numpy as np

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.render.attention_program import AttentionProgram, numpy_text, torch_text
from attn_cli.render.code_render import inputs_of, options_of, refuse


def describe(walkthrough: Walkthrough) -> AttentionProgram:
    options = options_of(walkthrough)
    score = options.get("score") or "dot"
    if score != "dot":
        raise refuse("graph", param("score", score), "it shows the dot-product score")
    given = inputs_of(walkthrough)
    d = given["H"].shape[1]
    inputs = {"H": given["H"]}
    inputs |= {name: given.get(name, np.eye(d)) for name in ("W_Q", "W_K", "W_V")}
    inputs["A"] = np.asarray(walkthrough.step("adjacency"), dtype=np.int64)
    program = AttentionProgram("graph", "graph attention over neighbours", inputs)
    program.source = "x_transposed"
    program.scale = bool(options.get("scale", True))
    program.masks.append(("neighbours only: A[i, j] = 1 when j is a neighbour of i", "A != 0"))
    program.zero_empty_rows = bool(walkthrough.meta.get("isolated"))
    return program


def numpy_program(walkthrough: Walkthrough) -> str:
    return numpy_text(describe(walkthrough))


def torch_program(walkthrough: Walkthrough) -> str:
    return torch_text(describe(walkthrough))
