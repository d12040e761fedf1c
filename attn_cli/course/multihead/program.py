"""attn multihead --code: h heads side by side (each scaled dot-product attention on its own
columns of W_Q, W_K, W_V), concatenated, then W_O; with --causal, --valid-len and biases, and
keys and values from sequences of their own (X_K, X_V).

PyTorch's nn.MultiheadAttention has the same conventions when d_in = d_out and W_O is given:
its in_proj_weight is [W_Qᵀ; W_Kᵀ; W_Vᵀ] (it multiplies by the transpose), or q_proj_weight,
k_proj_weight, v_proj_weight when the keys or values are of other widths (kdim, vdim), and
out_proj.weight is W_Oᵀ; the program loads them as its state_dict
(attn_cli.course.multihead.pytorch.state_dict_of). It has no grouped-query heads, QK-norm
or soft-capping: with --kv-heads, --qk-norm or --softcap the PyTorch program projects the heads
itself and calls F.scaled_dot_product_attention(..., enable_gqa=True) (capped, the softmax of
the capped scores times V, which SDPA cannot do).
"""

from __future__ import annotations

from typing import Any

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.course.multihead.pytorch import state_dict_of
from attn_cli.mechanisms.scoring import EPSILONS
from attn_cli.render.attention_program import NORMS_NUMPY, NORMS_TORCH, SOFTMAX
from attn_cli.render.code_render import array, assignments, inputs_of, options_of, refuse

BIASES = ("b_Q", "b_K", "b_V", "b_O")


def _kv_heads(walkthrough: Walkthrough, heads: int) -> int:
    return int(walkthrough.meta.get("kv_heads", heads))


def _transforms(walkthrough: Walkthrough) -> tuple[str | None, float | None]:
    """--qk-norm and --softcap as the walkthrough ran them."""
    options = options_of(walkthrough)
    return options.get("qk_norm"), options.get("softcap")


def _given(walkthrough: Walkthrough) -> tuple[dict[str, Any], int, list[int] | None, bool]:
    options = options_of(walkthrough)
    if options.get("dropout") is not None:
        raise refuse("multihead", param("dropout"), "a random mask")
    given = inputs_of(walkthrough)
    lengths = walkthrough.meta.get("valid_lengths")
    return given, int(options["heads"]), lengths, bool(options.get("causal"))


def _mask_lines(causal: bool, lengths: list[int] | None, xp: str) -> list[str]:
    if not causal and lengths is None:
        return []
    terms = (["(j <= i)"] if causal else []) + (["(j < valid_len[:, None])"] if lengths else [])
    return [
        f"i = {xp}.arange(X.shape[0])[:, None]  # query positions",
        f"j = {xp}.arange(X_K.shape[0])[None, :]  # key positions",
        "allowed = "
        + " & ".join(terms)
        + "  # causal: no future key; padding: no key past valid_len",
    ]


def numpy_program(walkthrough: Walkthrough) -> str:
    given, heads, lengths, causal = _given(walkthrough)
    values = {name: value for name, value in given.items()}
    if lengths is not None:
        values["valid_len"] = lengths
    kv = _kv_heads(walkthrough, heads)
    bias = {name: f" + {name}[cols]" if name in given else "" for name in BIASES}
    masked = bool(_mask_lines(causal, lengths, "np"))
    if kv < heads:  # grouped-query: K and V from the key/value head this query head shares
        bias |= {name: f" + {name}[kv_cols]" if name in given else "" for name in ("b_K", "b_V")}
    grouping = (
        [
            f"kv_heads = {kv}  # query heads h // group … share key/value head h // group",
            "group = heads // kv_heads",
        ]
        if kv < heads
        else []
    )
    kv_cols = "kv_cols" if kv < heads else "cols"
    norm, cap = _transforms(walkthrough)
    eps = repr(EPSILONS[norm]) if norm is not None else ""
    lines = [
        '"""attn multihead: multi-head attention, in numpy."""',
        "import numpy as np",
        "",
        assignments(values),
        *_sequences(given),
        f"heads = {heads}",
        *grouping,
        "",
        "",
        SOFTMAX,
        *([NORMS_NUMPY[norm]] if norm is not None else []),
        *_mask_lines(causal, lengths, "np"),
        "d_k = W_Q.shape[1] // heads  # each head's width",
        "outputs = []",
        "for h in range(heads):",
        *(
            [
                "    cols = slice(h * d_k, (h + 1) * d_k)  # head h's columns of W_Q",
                "    g = h // group  # the key/value head it shares: its columns of W_K, W_V",
                "    kv_cols = slice(g * d_k, (g + 1) * d_k)",
            ]
            if kv < heads
            else ["    cols = slice(h * d_k, (h + 1) * d_k)  # head h's columns of W_Q, W_K, W_V"]
        ),
        f"    Q = X @ W_Q[:, cols]{bias['b_Q']}",
        f"    K = X_K @ W_K[:, {kv_cols}]{bias['b_K']}",
        f"    V = X_V @ W_V[:, {kv_cols}]{bias['b_V']}",
        *(
            [f"    Q, K = qk_norm(Q, {eps}), qk_norm(K, {eps})  # QK-norm, per head"]
            if norm
            else []
        ),
        "    scores = Q @ K.T / np.sqrt(d_k)",
        *([f"    scores = {cap!r} * np.tanh(scores / {cap!r})  # soft-capped"] if cap else []),
        *(["    scores = np.where(allowed, scores, -np.inf)"] if masked else []),
        "    weights = softmax(scores)",
        '    print(f"head{h + 1}.weights =", weights.tolist())',
        "    outputs.append(weights @ V)",
        "concat = np.concatenate(outputs, axis=-1)  # [Y_1 | ... | Y_h]",
    ]
    if "W_O" in given:
        b_o = " + b_O" if "b_O" in given else ""
        lines += [f"output = concat @ W_O{b_o}", "", 'print("output =", output.tolist())']
    else:
        lines += [
            "",
            'print("concat =", concat.tolist())  # no W_O: the concatenation is the result',
        ]
    return "\n".join(lines)


def _sequences(given: dict[str, Any]) -> list[str]:
    """The keys' and values' sequences: their own where given, else X (or the keys')."""
    lines = []
    if "X_K" not in given:
        lines.append("X_K = X  # the keys come from the tokens themselves (self-attention)")
    if "X_V" not in given:
        lines.append("X_V = X_K  # the values from the same rows as the keys")
    return lines


def torch_program(walkthrough: Walkthrough) -> str:
    given, heads, lengths, causal = _given(walkthrough)
    if _kv_heads(walkthrough, heads) < heads or any(
        x is not None for x in _transforms(walkthrough)
    ):
        return _grouped_torch_program(walkthrough)
    d_in, d_out = given["W_Q"].shape
    if "W_O" not in given or d_in != d_out or given["W_O"].shape != (d_out, d_out):
        raise refuse(
            "multihead",
            f"{param('backend', 'torch')} here",
            "nn.MultiheadAttention needs d_in = d_out and a square W_O",
        )
    weights = {name: given[name] for name in ("W_Q", "W_K", "W_V", "W_O", *BIASES) if name in given}
    state = state_dict_of(weights)
    bias = "in_proj_bias" in state
    kdim, vdim = given["W_K"].shape[0], given["W_V"].shape[0]
    values: dict[str, Any] = {name: given[name] for name in ("X", "X_K", "X_V") if name in given}
    if lengths is not None:
        values["valid_len"] = lengths
    mask_lines = _mask_lines(causal, lengths, "torch")
    widths = f", kdim={kdim}, vdim={vdim}" if (kdim, vdim) != (d_in, d_in) else ""
    packed = (
        "packed into in_proj_weight"
        if "in_proj_weight" in state
        else ("kdim or vdim differ: q_proj_weight, k_proj_weight, v_proj_weight")
    )
    lines = [
        '"""attn multihead: multi-head attention, in PyTorch (nn.MultiheadAttention)."""',
        "import torch",
        "from torch import nn",
        "",
        assignments(values, "torch"),
        *_sequences(given),
        f"heads = {heads}",
        "",
        f"mha = nn.MultiheadAttention(X.shape[1], heads{widths}, bias={bias}, dtype=torch.float64)",
        f"state = {{  # the weights in PyTorch's names and layouts ({packed}; nn.Linear: W.T)",
        *(f'    "{key}": {array(value, "torch", 4)},' for key, value in state.items()),
        "}",
        "mha.load_state_dict(state)",
    ]
    lines += mask_lines
    mask = ", attn_mask=~allowed" if mask_lines else ""  # its boolean mask: True = blocked
    lines += [
        "with torch.no_grad():",
        f"    output, weights = mha(X, X_K, X_V{mask}, average_attn_weights=False)"
        "  # weights (h, n, m)",
        "",
        "for h in range(heads):",
        '    print(f"head{h + 1}.weights =", weights[h].tolist())',
        'print("output =", output.tolist())',
    ]
    return "\n".join(lines)


def _grouped_torch_program(walkthrough: Walkthrough) -> str:
    """Grouped-query heads in PyTorch: the projections by hand, the heads as (h, n, d_k) and
    (g, n, d_k), F.scaled_dot_product_attention with enable_gqa=True (which pairs query head i
    with key/value head i // (h/g)); the weights printed from K and V repeated the same way."""
    given, heads, lengths, causal = _given(walkthrough)
    kv = _kv_heads(walkthrough, heads)
    values = {name: value for name, value in given.items()}
    if lengths is not None:
        values["valid_len"] = lengths
    plus = {name: f" + {name}" if name in given else "" for name in BIASES}
    mask_lines = _mask_lines(causal, lengths, "torch")
    lines = [
        '"""attn multihead: grouped-query attention, in PyTorch (SDPA with enable_gqa)."""',
        "import torch",
        "import torch.nn.functional as F",
        "",
        assignments(values, "torch"),
        *_sequences(given),
        f"heads, kv_heads = {heads}, {kv}",
        "",
        "n, d_k = X.shape[0], W_Q.shape[1] // heads",
        "",
        "",
        "def split(t, count):  # (rows, count · d_k) -> (count, rows, d_k): one block per head",
        "    return t.reshape(t.shape[0], count, d_k).transpose(0, 1)",
        "",
        "",
        f"Q = split(X @ W_Q{plus['b_Q']}, heads)  # (h, n, d_k)",
        f"K = split(X_K @ W_K{plus['b_K']}, kv_heads)  # (g, m, d_k): one per key/value head",
        f"V = split(X_V @ W_V{plus['b_V']}, kv_heads)",
        *mask_lines,
    ]
    norm, cap = _transforms(walkthrough)
    if norm is not None:
        lines.append(
            f"Q, K = ({NORMS_TORCH[norm]}(t, (d_k,), eps={EPSILONS[norm]!r}) for t in (Q, K))"
            "  # QK-norm, per head"
        )
    mask = ", attn_mask=allowed" if mask_lines else ""  # SDPA's boolean mask: True = may attend
    if cap is None:
        lines += [
            f"heads_out = F.scaled_dot_product_attention(Q, K, V{mask}, enable_gqa=True)"
            "  # (h, n, d_k)",
            "",
            "# SDPA returns no weights: the same ones from K repeated h/g times, as enable_gqa "
            "pairs",
        ]
    lines += [
        "K_repeated = K.repeat_interleave(heads // kv_heads, dim=0)  # (h, m, d_k)",
        "scores = Q @ K_repeated.transpose(1, 2) / d_k**0.5",
    ]
    if cap is not None:
        lines.append(f"scores = {cap!r} * torch.tanh(scores / {cap!r})  # soft-capped (Gemma 2)")
    if mask_lines:
        lines.append('scores = scores.masked_fill(~allowed, float("-inf"))')
    lines += ["weights = torch.softmax(scores, dim=-1)"]
    if cap is not None:  # SDPA cannot cap its scores: the weights times V, repeated likewise
        lines.append("heads_out = weights @ V.repeat_interleave(heads // kv_heads, dim=0)")
    lines += [
        "concat = heads_out.transpose(0, 1).reshape(n, heads * d_k)  # [Y_1 | ... | Y_h]",
        "for h in range(heads):",
        '    print(f"head{h + 1}.weights =", weights[h].tolist())',
    ]
    if "W_O" in given:
        lines += [f"output = concat @ W_O{plus['b_O']}", 'print("output =", output.tolist())']
    else:
        lines.append(
            'print("concat =", concat.tolist())  # no W_O: the concatenation is the result'
        )
    return "\n".join(lines)
