"""attn block --code: one Transformer layer (encoder, or --decoder), post-norm or --pre-norm,
with the walkthrough's weights written in.

numpy writes the layer out: the positional encoding, multi-head attention head by head, the
residual sums, LayerNorm and the feed-forward network. PyTorch loads the same weights into
nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (dropout 0, ReLU, batch_first,
norm_first for pre-norm); nn.Linear multiplies by the transpose, so its weights are Wᵀ.
"""

from __future__ import annotations

from typing import Any

from attn_cli.core.model import Walkthrough
from attn_cli.render.attention_program import SOFTMAX
from attn_cli.render.code_render import array, inputs_of, number

LETTERS = "QKVO"


def _variable(name: str) -> str:
    """The walkthrough's input name as a Python name: cross.W_Q -> W_Q_cross, γ_1 -> gamma_1."""
    if name.startswith("cross."):
        return name.removeprefix("cross.") + "_cross"
    return name.replace("γ", "gamma").replace("β", "beta")


def _layer(walkthrough: Walkthrough) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inputs by program name, and the layer's settings."""
    given = {_variable(name): value for name, value in inputs_of(walkthrough).items()}
    given = {"M" if name == "Memory" else name: value for name, value in given.items()}
    meta = walkthrough.meta
    options = meta.get("options", {})
    chosen = {
        "heads": int(meta["heads"]),
        "d_ff": int(meta["d_ff"]),
        "eps": float(meta["eps"]),
        "pre_norm": bool(meta["pre_norm"]),
        "decoder": bool(meta["decoder"]),
        "posenc": bool(options.get("posenc", True)),
    }
    return given, chosen


def _title(chosen: dict[str, Any]) -> str:
    kind = "decoder" if chosen["decoder"] else "encoder"
    return f"one Transformer {kind} layer ({'pre' if chosen['pre_norm'] else 'post'}-norm)"


def _assign(given: dict[str, Any], module: str) -> str:
    return "\n".join(f"{name} = {array(value, module)}" for name, value in given.items())


POSENC = """\
n, d_model = X.shape
pos = np.arange(n)[:, None]  # (n, 1) positions 0 .. n-1
omega = 10000.0 ** (-2.0 * np.arange(d_model // 2) / d_model)  # (d_model/2,) frequencies
pe = np.stack((np.sin(pos * omega), np.cos(pos * omega)), axis=-1).reshape(n, d_model)
H = X + pe  # the layer's input: embeddings plus positions
"""

NUMPY_FUNCTIONS = '''def layer_norm(x, gamma, beta):
    """Each row to mean 0 and variance 1 (dividing by d_model), then scaled and shifted."""
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * gamma + beta


def multi_head(x, source, W_Q, W_K, W_V, W_O, name, causal=False):
    """Each head attends on its own d_k columns of Q, K, V; the heads side by side, then W_O."""
    Q, K, V = x @ W_Q, source @ W_K, source @ W_V
    d_k = Q.shape[1] // heads
    outputs = []
    for h in range(heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        scores = Q[:, cols] @ K[:, cols].T / np.sqrt(d_k)
        if causal:  # no query sees a later position: -inf above the diagonal
            scores = scores + np.triu(np.full(scores.shape, -np.inf), k=1)
        weights = softmax(scores)
        print(f"{name}.head{h + 1}.weights =", weights.tolist())
        outputs.append(weights @ V[:, cols])
    return np.concatenate(outputs, axis=-1) @ W_O


def feed_forward(x):
    """The same two-layer ReLU network on every row."""
    return np.maximum(x @ W_1 + b_1, 0.0) @ W_2 + b_2

'''


def _numpy_layer(chosen: dict[str, Any]) -> tuple[list[str], list[tuple[str, str]]]:
    """The sublayers in order, each line's result named like the walkthrough's step."""
    pre, decoder = chosen["pre_norm"], chosen["decoder"]
    self_args = "W_Q, W_K, W_V, W_O, 'self'" + (", causal=True" if decoder else "")
    cross_args = "W_Q_cross, W_K_cross, W_V_cross, W_O_cross, 'cross'"
    if pre and not decoder:
        return [
            "normed = layer_norm(H, gamma_1, beta_1)",
            f"Z = H + multi_head(normed, normed, {self_args})  # add1",
            "Y = Z + feed_forward(layer_norm(Z, gamma_2, beta_2))  # add2: no LayerNorm after",
        ], [("add1", "Z")]
    if not decoder:
        return [
            f"Z = layer_norm(H + multi_head(H, H, {self_args}), gamma_1, beta_1)  # norm1",
            "Y = layer_norm(Z + feed_forward(Z), gamma_2, beta_2)  # norm2",
        ], [("norm1", "Z")]
    if pre:
        return [
            "normed = layer_norm(H, gamma_1, beta_1)",
            f"Z_1 = H + multi_head(normed, normed, {self_args})  # add1",
            f"Z_2 = Z_1 + multi_head(layer_norm(Z_1, gamma_2, beta_2), M, {cross_args})  # add2",
            "Y = Z_2 + feed_forward(layer_norm(Z_2, gamma_3, beta_3))  # add3: no LayerNorm after",
        ], [("add1", "Z_1"), ("add2", "Z_2")]
    return [
        f"Z_1 = layer_norm(H + multi_head(H, H, {self_args}), gamma_1, beta_1)  # norm1",
        f"Z_2 = layer_norm(Z_1 + multi_head(Z_1, M, {cross_args}), gamma_2, beta_2)  # norm2",
        "Y = layer_norm(Z_2 + feed_forward(Z_2), gamma_3, beta_3)  # norm3",
    ], [("norm1", "Z_1"), ("norm2", "Z_2")]


def numpy_program(walkthrough: Walkthrough) -> str:
    given, chosen = _layer(walkthrough)
    layer, named = _numpy_layer(chosen)
    lines = [
        f'"""attn block: {_title(chosen)}, in numpy."""',
        "import numpy as np",
        "",
        _assign(given, "np"),
        f"heads, eps = {chosen['heads']}, {number(chosen['eps'])}",
        "",
        "",
        SOFTMAX,
        NUMPY_FUNCTIONS,
        POSENC if chosen["posenc"] else "H = X  # --no-posenc: the embeddings as they are\n",
        *layer,
        "",
        *(['print("pe =", pe.tolist())'] if chosen["posenc"] else []),
        *(f'print("{key} =", {var}.tolist())' for key, var in named),
        'print("output =", Y.tolist())',
    ]
    return "\n".join(lines)


def torch_program(walkthrough: Walkthrough) -> str:
    given, chosen = _layer(walkthrough)
    decoder = chosen["decoder"]
    kind = "TransformerDecoderLayer" if decoder else "TransformerEncoderLayer"
    load = [
        "    layer.self_attn.in_proj_weight.copy_(torch.cat([W_Q.T, W_K.T, W_V.T]))",
        "    layer.self_attn.out_proj.weight.copy_(W_O.T)",
    ]
    if decoder:
        load += [
            "    layer.multihead_attn.in_proj_weight.copy_("
            "torch.cat([W_Q_cross.T, W_K_cross.T, W_V_cross.T]))",
            "    layer.multihead_attn.out_proj.weight.copy_(W_O_cross.T)",
        ]
    norms = 3 if decoder else 2
    load += [
        "    layer.linear1.weight.copy_(W_1.T)",
        "    layer.linear1.bias.copy_(b_1)",
        "    layer.linear2.weight.copy_(W_2.T)",
        "    layer.linear2.bias.copy_(b_2)",
        *(
            f"    layer.norm{i}.{part}.copy_({name}_{i})"
            for i in range(1, norms + 1)
            for part, name in (("weight", "gamma"), ("bias", "beta"))
        ),
    ]
    posenc = [
        "n, d_model = X.shape",
        "pos = torch.arange(n, dtype=torch.float64)[:, None]  # (n, 1) positions 0 .. n-1",
        "omega = 10000.0 ** (-2.0 * torch.arange(d_model // 2, dtype=torch.float64) / d_model)",
        "pe = torch.stack((torch.sin(pos * omega), torch.cos(pos * omega)), dim=-1)"
        ".reshape(n, d_model)",
        "H = X + pe  # the layer's input: embeddings plus positions",
    ]
    if decoder:
        call = [
            "causal = nn.Transformer.generate_square_subsequent_mask(H.shape[0], "
            "dtype=torch.float64)",
            "with torch.no_grad():",
            "    Y = layer(H[None], M[None], tgt_mask=causal)[0]  # a batch of one",
        ]
    else:
        call = ["with torch.no_grad():", "    Y = layer(H[None])[0]  # a batch of one"]
    lines = [
        f'"""attn block: {_title(chosen)}, in PyTorch (nn.{kind})."""',
        "import torch",
        "from torch import nn",
        "",
        _assign(given, "torch"),
        "",
        f"layer = nn.{kind}(",
        f"    d_model={given['X'].shape[1]}, nhead={chosen['heads']}, "
        f"dim_feedforward={chosen['d_ff']}, dropout=0.0,",
        f"    activation='relu', layer_norm_eps={number(chosen['eps'])}, batch_first=True, "
        f"norm_first={chosen['pre_norm']},",
        "    dtype=torch.float64,",
        ").eval()",
        "with torch.no_grad():  # nn.Linear computes x @ weight.T: each weight is W transposed",
        *load,
        *(
            f"    layer.{module}.{bias}.zero_()  # attention has no biases here"
            for module in ("self_attn", *(["multihead_attn"] if decoder else []))
            for bias in ("in_proj_bias", "out_proj.bias")
        ),
        "",
        *(posenc if chosen["posenc"] else ["H = X  # --no-posenc: the embeddings as they are"]),
        *call,
        "",
        *(['print("pe =", pe.tolist())'] if chosen["posenc"] else []),
        'print("output =", Y.tolist())',
    ]
    return "\n".join(lines)
