"""Softmax attention as a program: the inputs (or X and its projections, or the scores
themselves), the scaling, boolean masks, softmax, the weighted sum, then the printed results.

The lessons that are softmax attention with a mask (scaled, causal, selfattn, window, graph)
describe theirs as an :class:`AttentionProgram`; :func:`numpy_text` and :func:`torch_text`
write it. A mask is a boolean expression in ``i`` (query positions, a column) and ``j`` (key
positions, a row) that reads the same in numpy and torch: True where the query may attend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attn_cli.render.code_render import array

SOFTMAX = '''def softmax(scores):
    """Row-wise and stable: subtract each row's max before exp (a -inf score gets weight 0)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

'''


@dataclass
class AttentionProgram:
    lesson: str
    title: str  # the docstring's first line: what is computed
    inputs: dict[str, Any]  # program variable -> array, in order
    source: str = "qkv"  # "qkv", "x" (Q = X W_Q ...), "x_transposed" (Q = H W_Qᵀ), "scores"
    scale: bool = True
    masks: list[tuple[str, str]] = field(default_factory=list)  # (comment, expression)
    causal_only: bool = False  # the one mask is the causal one (torch: is_causal=True)
    values: bool = True  # V is given: the output is weights @ V
    zero_empty_rows: bool = False  # a row with no allowed key gets weights 0 (not NaN)
    qk_norm: str | None = None  # "layernorm" or "rmsnorm": Q and K rows normalised first
    softcap: float | None = None  # the scores become cap·tanh(scores / cap) before any mask
    epsilon: float = 0.0  # the norm's ε (qk_norm)


# QK-norm in numpy, as nn.LayerNorm and nn.RMSNorm compute it without their learned gain.
NORMS_NUMPY = {
    "layernorm": "def qk_norm(x, eps):  # LayerNorm over each row, no learned gain or bias\n"
    "    centred = x - x.mean(axis=-1, keepdims=True)\n"
    "    return centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps)\n",
    "rmsnorm": "def qk_norm(x, eps):  # RMSNorm over each row, no learned gain\n"
    "    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps)\n",
}
NORMS_TORCH = {"layernorm": "F.layer_norm", "rmsnorm": "F.rms_norm"}


def _transform_lines(program: AttentionProgram, xp: str) -> tuple[list[str], list[str]]:
    """The lines before the scores (QK-norm) and after them (soft-capping)."""
    before, after = [], []
    if program.qk_norm is not None:
        eps = repr(program.epsilon)
        if xp == "np":
            before.append(f"Q, K = qk_norm(Q, {eps}), qk_norm(K, {eps})  # QK-norm: each row")
        else:
            norm = NORMS_TORCH[program.qk_norm]
            before.append(
                f"Q, K = ({norm}(t, (t.shape[-1],), eps={eps}) for t in (Q, K))  # QK-norm"
            )
    if program.softcap is not None:
        cap = repr(program.softcap)
        after.append(f"scores = {cap} * {xp}.tanh(scores / {cap})  # soft-capped (Gemma 2)")
    return before, after


def _inputs(program: AttentionProgram, module: str) -> str:
    return "\n".join(f"{name} = {array(value, module)}" for name, value in program.inputs.items())


def _projections(program: AttentionProgram) -> list[str]:
    if program.source == "x":
        return ["Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # each token's query, key and value rows"]
    if program.source == "x_transposed":
        return ["Q, K, V = H @ W_Q.T, H @ W_K.T, H @ W_V.T  # q_i = W_Q h_i for every node at once"]
    return []


def _mask_lines(program: AttentionProgram, xp: str) -> list[str]:
    if not program.masks:
        return []
    lines = [
        f"i = {xp}.arange(scores.shape[-2])[:, None]  # query positions, a column",
        f"j = {xp}.arange(scores.shape[-1])[None, :]  # key positions, a row",
    ]
    terms = []
    for comment, expression in program.masks:
        lines.append(f"# {comment}")
        terms.append("(" + expression.replace("{xp}", xp) + ")")
    lines.append("allowed = " + " & ".join(terms) + "  # True where query i may attend key j")
    return lines


def numpy_text(program: AttentionProgram) -> str:
    lines = [
        f'"""attn {program.lesson}: {program.title}, in numpy."""',
        "import numpy as np",
        "",
        _inputs(program, "np"),
        "",
        "",
        SOFTMAX,
        *([NORMS_NUMPY[program.qk_norm]] if program.qk_norm else []),
        *_projections(program),
    ]
    before, after = _transform_lines(program, "np")
    lines += before
    if program.source == "scores":
        lines.append("scores = S  # given: no Q K^T to compute, and never scaled")
    elif program.scale:
        lines.append("scores = Q @ K.T / np.sqrt(K.shape[-1])  # (m, n) scaled dot products")
    else:
        lines.append("scores = Q @ K.T  # (m, n) dot products, not scaled")
    lines += after
    lines += _mask_lines(program, "np")
    if program.masks:
        lines.append(
            "scores = np.where(allowed, scores, -np.inf)  # masked: weight 0 after softmax"
        )
    if program.zero_empty_rows:
        lines += [
            "with np.errstate(invalid='ignore'):  # a row with no key: 0 / 0",
            "    weights = softmax(scores)",
            "weights = np.where(allowed.any(axis=-1, keepdims=True), weights, 0.0)  # such a row: 0",
        ]
    else:
        lines.append("weights = softmax(scores)  # each row sums to 1")
    printed = ["weights"]
    if program.values:
        lines.append("output = weights @ V  # each row a weighted average of the value rows")
        printed.append("output")
    lines.append("")
    lines += [f'print("{name} =", {name}.tolist())' for name in printed]
    return "\n".join(lines)


def torch_text(program: AttentionProgram) -> str:
    if not program.values:
        return _torch_weights_only(program)
    lines = [
        f'"""attn {program.lesson}: {program.title}, in PyTorch (F.scaled_dot_product_attention)."""',
        "import torch",
        "import torch.nn.functional as F",
        "",
        _inputs(program, "torch"),
        "",
        *_projections(program),
    ]
    before, after = _transform_lines(program, "torch")
    lines += before
    lines.append(
        "scores = Q @ K.T" + (" / K.shape[-1] ** 0.5" if program.scale else "") + "  # (m, n)"
    )
    lines += after
    lines += _mask_lines(program, "torch")
    scale = "" if program.scale else ", scale=1.0"
    if program.softcap is not None:
        call = None  # SDPA cannot cap its scores: the weights below, times V
    elif program.causal_only:
        call = f"F.scaled_dot_product_attention(Q, K, V, is_causal=True{scale})"
    elif program.masks:
        call = f"F.scaled_dot_product_attention(Q, K, V, attn_mask=allowed{scale})"
    else:
        call = f"F.scaled_dot_product_attention(Q, K, V{scale})"
    if call is not None:
        lines.append(f"output = {call}")
    if program.masks:
        lines.append('scores = scores.masked_fill(~allowed, float("-inf"))')
    if call is None:
        lines += ["weights = torch.softmax(scores, dim=-1)", "output = weights @ V"]
    else:
        lines.append(
            "weights = torch.softmax(scores, dim=-1)  # what SDPA computes inside; it returns "
            "only the output"
        )
    if program.zero_empty_rows:
        lines += [
            "empty = ~allowed.any(dim=-1, keepdim=True)  # a node with no neighbour",
            "weights = weights.masked_fill(empty, 0.0)",
            "output = output.masked_fill(empty, 0.0)",
        ]
    lines += ["", 'print("weights =", weights.tolist())', 'print("output =", output.tolist())']
    return "\n".join(lines)


def _torch_weights_only(program: AttentionProgram) -> str:
    lines = [
        f'"""attn {program.lesson}: {program.title}, in PyTorch."""',
        "import torch",
        "",
        _inputs(program, "torch"),
        "",
        *_projections(program),
    ]
    if program.source == "scores":
        lines.append("scores = S  # given: never scaled")
    else:
        lines.append("scores = Q @ K.T" + (" / K.shape[-1] ** 0.5" if program.scale else ""))
    lines += _mask_lines(program, "torch")
    if program.masks:
        lines.append('scores = scores.masked_fill(~allowed, float("-inf"))')
    lines += ["weights = torch.softmax(scores, dim=-1)", "", 'print("weights =", weights.tolist())']
    return "\n".join(lines)
