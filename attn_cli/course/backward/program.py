"""attn backward --code: the backward pass by hand in numpy, and by autograd in PyTorch."""

from __future__ import annotations

from typing import Any

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.render.code_render import (
    PRINT_HELPER,
    TORCH_PRINT_HELPER,
    assignments,
    inputs_of,
    options_of,
    refuse,
)

WEIGHTS = ("W_Q", "W_K", "W_V")


def _inputs(walkthrough: Walkthrough) -> tuple[dict[str, Any], dict[str, Any]]:
    """The literals the program starts from, and the options it covers (refusing the rest)."""
    options = options_of(walkthrough)
    for name, why in (("block", "the tiled loop"), ("vanishing", "random draws of its own")):
        if options.get(name):
            raise refuse("backward", param(name), f"{why}; the program is the plain backward")
    given = inputs_of(walkthrough)
    names = ("X", *WEIGHTS) if "X" in given else ("Q", "K", "V")
    values = {name: given[name] for name in names}
    values["dO"] = given["dO"]
    return values, options


def _header(options: dict[str, Any], what: str) -> str:
    scale = bool(options.get("scale", True))
    causal = bool(options.get("causal"))
    return (
        f'"""attn backward: the gradients of softmax(Q Kᵀ{" / √d_k" if scale else ""}'
        f'{" + M" if causal else ""}) V for the upstream gradient dO, {what}."""'
    )


def numpy_program(walkthrough: Walkthrough) -> str:
    values, options = _inputs(walkthrough)
    scale, causal = bool(options.get("scale", True)), bool(options.get("causal"))
    lines = [_header(options, "by hand"), "import numpy as np", "", PRINT_HELPER]
    lines.append(assignments(values))
    if "X" in values:
        lines += ["Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (n, d_k), (n, d_k), (n, d_v)"]
    lines += [
        "",
        "# forward",
        "S = Q @ K.T  # (m, n)",
        "Z = S / np.sqrt(Q.shape[1])  # (m, n)" if scale else "Z = S  # not scaled",
    ]
    if causal:
        lines.append("Z = np.where(np.tri(*Z.shape, dtype=bool), Z, -np.inf)  # key j <= query i")
    lines += [
        "E = np.exp(Z - Z.max(axis=1, keepdims=True))",
        "A = E / E.sum(axis=1, keepdims=True)  # (m, n) weights",
        "O = A @ V  # (m, d_v)",
        "",
        "# backward",
        "d_v = A.T @ dO  # (n, d_v)",
        "d_weights = dO @ V.T  # (m, n)",
        "D = (d_weights * A).sum(axis=1, keepdims=True)  # (m, 1) = rowsum(dO * O)",
        "d_logits = A * (d_weights - D)  # (m, n): the softmax, backwards",
        "d_scores = d_logits / np.sqrt(Q.shape[1])  # (m, n)" if scale else "d_scores = d_logits",
        "d_q = d_scores @ K  # (m, d_k)",
        "d_k = d_scores.T @ Q  # (n, d_k)",
        "show('d_v', d_v)",
        "show('d_weights', d_weights)",
        "show('d_logits', d_logits)",
        *(["show('d_scores', d_scores)"] if scale else []),
        "show('d_q', d_q)",
        "show('d_k', d_k)",
    ]
    if "X" in values:
        lines += [
            "d_w_q, d_w_k, d_w_v = X.T @ d_q, X.T @ d_k, X.T @ d_v",
            "d_x = d_q @ W_Q.T + d_k @ W_K.T + d_v @ W_V.T  # (n, d): three paths back",
            "show('d_w_q', d_w_q)",
            "show('d_w_k', d_w_k)",
            "show('d_w_v', d_w_v)",
            "show('d_x', d_x)",
        ]
    return "\n".join(lines) + "\n"


def torch_program(walkthrough: Walkthrough) -> str:
    values, options = _inputs(walkthrough)
    scale, causal = bool(options.get("scale", True)), bool(options.get("causal"))
    leaves = ("X", *WEIGHTS) if "X" in values else ("Q", "K", "V")
    lines = [
        _header(options, "by PyTorch's autograd"),
        "import torch",
        "from torch.nn.functional import scaled_dot_product_attention",
        "",
        TORCH_PRINT_HELPER,
        assignments(values, "torch"),
        *(f"{name}.requires_grad_()" for name in leaves),
    ]
    if "X" in values:
        lines.append("Q, K, V = X @ W_Q, X @ W_K, X @ W_V")
    arguments = f"Q, K, V, is_causal={causal}" + ("" if scale else ", scale=1.0")
    lines += [
        f"O = scaled_dot_product_attention({arguments})",
        "O.backward(dO)  # dO = ∂L/∂O: the gradient that reaches the output",
    ]
    if "X" in values:
        lines += [
            "show('d_w_q', W_Q.grad)",
            "show('d_w_k', W_K.grad)",
            "show('d_w_v', W_V.grad)",
            "show('d_x', X.grad)",
        ]
    else:
        lines += ["show('d_q', Q.grad)", "show('d_k', K.grad)", "show('d_v', V.grad)"]
    return "\n".join(lines) + "\n"
