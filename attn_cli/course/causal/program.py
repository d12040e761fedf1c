"""attn causal --code: the causal mask (each token sees itself and the past), from given scores,
from Q, K (and V), or from X and its projections; with --valid-len."""

from __future__ import annotations

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.render.attention_program import AttentionProgram, numpy_text, torch_text
from attn_cli.render.code_render import inputs_of, options_of, refuse


def describe(walkthrough: Walkthrough) -> AttentionProgram:
    options = options_of(walkthrough)
    if options.get("dropout") is not None:
        raise refuse("causal", param("dropout"), "a random mask")
    if options.get("fill") == "zero":
        raise refuse("causal", param("fill", "zero"), "it shows the correct mask, -inf")
    given = inputs_of(walkthrough)
    if "S" in given:
        names, source = ["S", "V"], "scores"
    elif "X" in given:
        names, source = ["X", "W_Q", "W_K", "W_V"], "x"
    else:
        names, source = ["Q", "K", "V"], "qkv"
    inputs = {name: given[name] for name in names if name in given}
    program = AttentionProgram("causal", "causal (masked) attention", inputs, source=source)
    program.scale = source != "scores" and bool(options.get("scale", True))
    program.values = "V" in inputs or source == "x"
    program.masks.append(("causal: no key after the query (j > i is the future)", "j <= i"))
    lengths = walkthrough.meta.get("valid_lengths")
    if lengths is not None:
        program.inputs["valid_len"] = lengths
        program.masks.append(
            ("padding: keys at or past each row's valid length", "j < valid_len[:, None]")
        )
    program.causal_only = lengths is None
    return program


def numpy_program(walkthrough: Walkthrough) -> str:
    return numpy_text(describe(walkthrough))


def torch_program(walkthrough: Walkthrough) -> str:
    return torch_text(describe(walkthrough))
