"""attn bahdanau --code: additive attention for one decoder step, softmax(vᵀ tanh(W1 hᵢ + W2
sₜ)), the context Σ αᵢ hᵢ (or Σ αᵢ vᵢ with --values), --valid-len's padding, Luong's dot and
general scores with --all-scores; with --steps T the decoder over time beside the fixed-vector
decoder. PyTorch has no additive-attention module: its program is the same lines in torch.

Column convention as on the slides (W1 hᵢ is a matrix times a column): with the hᵢ as the rows
of H, all the W1 hᵢ at once are the rows of H W1ᵀ.
"""

from __future__ import annotations

from typing import Any

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.course.padding import valid_lengths
from attn_cli.render.code_render import array, inputs_of, options_of, refuse

NUMPY = {
    "module": "numpy",
    "import": "import numpy as np",
    "tanh": "np.tanh",
    "arange": "np.arange",
    "stack": "np.stack",
    "inf": "np.inf",
    "softmax": '''def softmax(scores):
    """Stable: subtract the max before exp (a -inf score gets weight 0)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
''',
}
TORCH = {
    "module": "PyTorch",
    "import": "import torch",
    "tanh": "torch.tanh",
    "arange": "torch.arange",
    "stack": "torch.stack",
    "inf": "torch.inf",
    "softmax": """def softmax(scores):
    return torch.softmax(scores, dim=-1)
""",
}


def _refuse_options(walkthrough: Walkthrough) -> dict[str, Any]:
    options = options_of(walkthrough)
    if options.get("dropout") is not None:
        raise refuse("bahdanau", param("dropout"), "a random mask")
    return options


def _assign(values: dict[str, Any], xp: dict[str, str]) -> str:
    module = "np" if xp["module"] == "numpy" else "torch"
    return "\n".join(f"{name} = {array(value, module)}" for name, value in values.items())


def _padded(scores: str, length: int | None, xp: dict[str, str]) -> str:
    """The expression of ``scores`` with the padding's -inf (with --valid-len)."""
    if length is None:
        return scores
    if xp["module"] == "PyTorch":
        return f"({scores}).masked_fill(~valid, -torch.inf)"
    return f"np.where(valid, {scores}, -np.inf)"


def _one_step(walkthrough: Walkthrough, xp: dict[str, str]) -> str:
    options = _refuse_options(walkthrough)
    given = inputs_of(walkthrough)
    compare = bool(options.get("all_scores"))
    lengths = valid_lengths(options.get("valid_len"), 1, given["H"].shape[0])
    length = None if lengths is None else lengths[0]
    names = ["s_t", "H", "W1", "W2", "v", *(["values"] if "values" in given else [])]
    if compare:
        names.append("W_a")
    inputs = {name: given[name] for name in names}
    source = "values" if "values" in given else "H"
    lines = [
        f'"""attn bahdanau: additive attention for one decoder step, in {xp["module"]}."""',
        xp["import"],
        "",
        _assign(inputs, xp),
        *([f"valid_len = {length}"] if length is not None else []),
        "",
        "",
        xp["softmax"],
        "",
        "W1h = H @ W1.T  # (n, d_a): row i is W1 h_i",
        "W2s = W2 @ s_t  # (d_a,)",
        "U = W1h + W2s  # (n, d_a): the same W2 s_t added to every row",
        f"activated = {xp['tanh']}(U)  # every entry in (-1, 1)",
        "scores = activated @ v  # (n,): e_i = vᵀ tanh(W1 h_i + W2 s_t)",
    ]
    printed = ["W1h", "W2s", ("sum", "U"), ("tanh", "activated"), "scores"]
    weighed = "scores"
    if length is not None:
        lines += [
            f"valid = {xp['arange']}(H.shape[0]) < valid_len  # the states before the padding",
            f"masked = scores.masked_fill(~valid, -{xp['inf']})"
            if xp["module"] == "PyTorch"
            else f"masked = np.where(valid, scores, -{xp['inf']})  # padding: weight 0",
        ]
        printed.append("masked")
        weighed = "masked"
    lines += [
        f"weights = softmax({weighed})  # α_i, summing to 1",
        f"context = weights @ {source}  # c_t = Σ α_i {'v_i' if source == 'values' else 'h_i'}",
    ]
    printed += ["weights", "context"]
    if compare:
        lines += [
            "",
            "# Luong's scores for the same s_t and h_i",
            f"dot_scores = {_padded('H @ s_t', length, xp)}  # s_t · h_i",
            f"general_scores = {_padded('H @ (W_a.T @ s_t)', length, xp)}  # s_tᵀ W_a h_i",
            "dot_weights, general_weights = softmax(dot_scores), softmax(general_scores)",
            f"dot_context, general_context = dot_weights @ {source}, general_weights @ {source}",
        ]
        for form in ("dot", "general"):
            printed += [(f"{form}.{part}", f"{form}_{part}") for part in ("scores", "weights")]
            printed.append((f"{form}.context", f"{form}_context"))
    lines.append("")
    for item in printed:
        key, var = item if isinstance(item, tuple) else (item, item)
        lines.append(f'print("{key} =", {var}.tolist())')
    return "\n".join(lines)


def _steps(walkthrough: Walkthrough, xp: dict[str, str]) -> str:
    _refuse_options(walkthrough)
    given = inputs_of(walkthrough)
    inputs = {"s_0" if name == "s_t" else name: given[name] for name in ("s_t", "H", "W1", "W2")}
    inputs |= {name: given[name] for name in ("v", "W_s", "W_y", "W_c", "Y")}
    stack = xp["stack"]
    lines = [
        f'"""attn bahdanau: the decoder over time with additive attention, beside the '
        f'fixed-vector decoder, in {xp["module"]}."""',
        xp["import"],
        "",
        _assign(inputs, xp),
        "",
        "",
        xp["softmax"],
        "",
        "def cell(s, y, c):",
        '    """s_t = tanh(W_s s_{t-1} + W_y y_{t-1} + W_c c_t): a tanh RNN cell, no bias."""',
        f"    return {xp['tanh']}(W_s @ s + W_y @ y + W_c @ c)",
        "",
        "",
        "W1h = H @ W1.T  # (n, d_a): row i is W1 h_i, the same at every step",
        "scores, alignment, contexts, states = [], [], [], []",
        "s = s_0",
        "for t in range(Y.shape[0]):  # Y[t] is y_{t-1}, the previous output's embedding",
        f"    e = {xp['tanh']}(W1h + W2 @ s) @ v  # (n,): scored with s_{{t-1}}",
        "    alpha = softmax(e)  # this step's weights over the encoder states",
        "    c = alpha @ H  # this step's own context c_t",
        "    s = cell(s, Y[t], c)",
        "    scores.append(e)",
        "    alignment.append(alpha)",
        "    contexts.append(c)",
        "    states.append(s)",
        "",
        "# the fixed-vector encoder-decoder: every step gets the same c = h_n",
        "fixed_states, s = [], s_0",
        "for t in range(Y.shape[0]):",
        "    s = cell(s, Y[t], H[-1])",
        "    fixed_states.append(s)",
        "",
        f'print("decoder.scores =", {stack}(scores).tolist())',
        f'print("decoder.alignment =", {stack}(alignment).tolist())  # T × n',
        f'print("decoder.states =", {stack}(states).tolist())',
        f'print("fixed.states =", {stack}(fixed_states).tolist())',
        f'print("decoder.contexts =", {stack}(contexts).tolist())  # a different c_t each step',
    ]
    return "\n".join(lines)


def _program(walkthrough: Walkthrough, xp: dict[str, str]) -> str:
    if options_of(walkthrough).get("steps") is not None:
        return _steps(walkthrough, xp)
    return _one_step(walkthrough, xp)


def numpy_program(walkthrough: Walkthrough) -> str:
    return _program(walkthrough, NUMPY)


def torch_program(walkthrough: Walkthrough) -> str:
    return _program(walkthrough, TORCH)
