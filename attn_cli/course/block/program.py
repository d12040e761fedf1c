"""attn block --code: one Transformer layer (encoder, or --decoder) or a stack of them, with the
walkthrough's weights, masks and options written in.

numpy writes the layer out: the positional encoding, the masks, multi-head attention head by
head, the residual sums, LayerNorm and the feed-forward network. PyTorch builds the module
(nn.TransformerEncoderLayer / nn.TransformerDecoderLayer, or nn.TransformerEncoder /
nn.TransformerDecoder for a stack or a final LayerNorm), loads the same weights as its own
state_dict (in PyTorch's names and layouts: attn_cli.course.block.pytorch.state_dict_of, the
inverse of reading --weights), and calls it with PyTorch's masks; forward hooks print each
layer's output as it is computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.model import Walkthrough
from attn_cli.course.block.pytorch import state_dict_of
from attn_cli.render.attention_program import SOFTMAX
from attn_cli.render.code_render import array, inputs_of, number

MASKS = ("key_padding_mask", "memory_key_padding_mask", "attn_mask", "attn_mask_float")


@dataclass(frozen=True)
class Layout:
    """What the walkthrough computed, as the programs need it."""

    inputs: dict[str, Any]  # X, M, the masks given
    layers: list[dict[str, Any]]  # each layer's parameters by their own names (one if shared)
    final: dict[str, Any]  # gamma_final, beta_final
    meta: dict[str, Any]
    posenc: bool

    @property
    def count(self) -> int:
        return int(self.meta["layers"])

    @property
    def decoder(self) -> bool:
        return bool(self.meta["decoder"])

    @property
    def stacked(self) -> bool:
        return self.count > 1 or bool(self.meta["final_norm"])

    def prefix(self, index: int) -> str:
        """The walkthrough's step keys of layer ``index`` (1-based) start with this."""
        return f"layer{index}." if self.count > 1 else ""

    def last(self, index: int) -> str:
        """The key of the step that holds layer ``index``'s output."""
        norms = 3 if self.decoder else 2
        return f"{self.prefix(index)}{'add' if self.meta['pre_norm'] else 'norm'}{norms}"


def _layout(walkthrough: Walkthrough) -> Layout:
    meta = dict(walkthrough.meta)
    given = inputs_of(walkthrough)
    sources = meta["sources"]
    inputs = {"X": given["X"]}
    if "Memory" in given:
        inputs["M"] = given["Memory"]
    inputs |= {name: given[name] for name in MASKS if name in given}
    params = {name: given[name] for name in sources}
    count = int(meta["layers"])
    if count > 1 and not meta["shared_weights"]:
        layers = [
            {
                name.partition(".")[2]: value
                for name, value in params.items()
                if name.startswith(f"layer{index}.")
            }
            for index in range(1, count + 1)
        ]
    else:
        layers = [{name: value for name, value in params.items() if not name.endswith("_final")}]
    final = {name: value for name, value in params.items() if name.endswith("_final")}
    posenc = bool(meta.get("options", {}).get("posenc", True))
    return Layout(inputs, layers, final, meta, posenc)


def _title(layout: Layout) -> str:
    kind = "decoder" if layout.decoder else "encoder"
    arrangement = "pre-norm" if layout.meta["pre_norm"] else "post-norm"
    if layout.count > 1:
        shared = ", one set of weights" if layout.meta["shared_weights"] else ""
        return f"a stack of {layout.count} Transformer {kind} layers ({arrangement}{shared})"
    return f"one Transformer {kind} layer ({arrangement})"


def _assign(values: dict[str, Any], module: str) -> list[str]:
    return [f"{name} = {array(value, module)}" for name, value in values.items()]


def _dict(name: str, values: dict[str, Any]) -> list[str]:
    lines = [f"{name} = dict("]
    lines += [f"    {key}={array(value, 'np', 4)}," for key, value in values.items()]
    return [*lines, ")"]


POSENC = """\
pos = np.arange(n)[:, None]  # (n, 1) positions 0 .. n-1
omega = 10000.0 ** (-2.0 * np.arange(d_model // 2) / d_model)  # (d_model/2,) frequencies
pe = np.stack((np.sin(pos * omega), np.cos(pos * omega)), axis=-1).reshape(n, d_model)
H = X + pe  # the layer's input: embeddings plus positions
"""

ACTIVATION = {
    "relu": "    return np.maximum(x, 0.0)  # ReLU",
    "gelu": "    return x * 0.5 * (1.0 + erf(x / math.sqrt(2)))  # GELU: x Φ(x)",
    "gelu-tanh": (
        "    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)\n"
        "    return 0.5 * x * (1.0 + np.tanh(inner))  # GELU, tanh approximation"
    ),
}

# Grouped-query heads (--kv-heads g): query head h reads the columns of key/value head h // (h/g).
SHARED_HEAD = """        cols = slice(h * d_k, (h + 1) * d_k)
        kv = h // (heads // kv_heads)  # the key/value head query head h reads
        kv_cols = slice(kv * d_k, (kv + 1) * d_k)  # its columns of K and V (g·d_k wide)
        scores = Q[:, cols] @ K[:, kv_cols].T / np.sqrt(d_k)
        weights = softmax(scores if mask is None else scores + mask)
        print(f"{key}.head{h + 1}.weights =", weights.tolist())
        outputs.append(weights @ V[:, kv_cols])
"""
OWN_HEAD = """        cols = slice(h * d_k, (h + 1) * d_k)
        scores = Q[:, cols] @ K[:, cols].T / np.sqrt(d_k)
        weights = softmax(scores if mask is None else scores + mask)
        print(f"{key}.head{h + 1}.weights =", weights.tolist())
        outputs.append(weights @ V[:, cols])
"""

NUMPY_FUNCTIONS = '''def layer_norm(x, gamma, beta=None):
    """Each row to mean 0 and variance 1 (dividing by d_model), then scaled and shifted."""
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out = (x - mean) / np.sqrt(variance + eps) * gamma
    return out if beta is None else out + beta


def linear(x, W, b=None):
    """x W + b: the lectures' d_in × d_out weights (nn.Linear stores W transposed)."""
    return x @ W if b is None else x @ W + b


def multi_head(x, source, p, suffix, key, mask):
    """Each head attends on its own d_k columns of Q, K, V; the heads side by side, then W_O."""
    Q = linear(x, p["W_Q" + suffix], p.get("b_Q" + suffix))
    K = linear(source, p["W_K" + suffix], p.get("b_K" + suffix))
    V = linear(source, p["W_V" + suffix], p.get("b_V" + suffix))
    d_k = Q.shape[1] // heads
    outputs = []
    for h in range(heads):
{HEAD}
    return linear(np.concatenate(outputs, axis=-1), p["W_O" + suffix], p.get("b_O" + suffix))


def feed_forward(x, p):
    """The same two-layer network on every row."""
    return linear(activation(linear(x, p["W_1"], p.get("b_1"))), p["W_2"], p.get("b_2"))

'''


def _numpy_functions(grouped: bool) -> str:
    """The numpy program's functions; with grouped-query heads, each query head reads its key/value
    head's columns of K and V."""
    if not grouped:
        return NUMPY_FUNCTIONS.replace("{HEAD}\n", OWN_HEAD)
    functions = NUMPY_FUNCTIONS.replace("{HEAD}\n", SHARED_HEAD)
    return functions.replace(
        "Each head attends on its own d_k columns of Q, K, V;",
        "Each query head: its d_k columns of Q, its key/value head's of K, V;",
    )


def _numpy_masks(layout: Layout) -> list[str]:
    """The additive masks each attention reads: 0 where a query may attend a key, -inf not."""
    inputs = layout.inputs
    causal = bool(layout.meta["causal"])
    terms = []
    if causal:
        terms.append("np.triu(np.full((n, n), -np.inf), k=1)  # causal: no later key")
    if "attn_mask" in inputs:
        terms.append("np.where(attn_mask == 1, -np.inf, 0.0)  # PyTorch's True: may not attend")
    if "attn_mask_float" in inputs:
        terms.append("attn_mask_float  # added as it is")
    if "key_padding_mask" in inputs:
        terms.append("np.where(key_padding_mask[None, :] == 1, -np.inf, 0.0)  # padded keys")
    lines = []
    if terms:
        lines.append("self_mask = np.zeros((n, n))")
        lines += [f"self_mask = self_mask + {term}" for term in terms]
        lines.append('print("self.mask =", self_mask.tolist())')
    else:
        lines.append("self_mask = None")
    if "memory_key_padding_mask" in inputs:
        lines += [
            "cross_mask = np.where(memory_key_padding_mask[None, :] == 1, -np.inf, 0.0)",
            "cross_mask = np.broadcast_to(cross_mask, (n, M.shape[0]))  # padded memory rows",
            'print("cross.mask =", cross_mask.tolist())',
        ]
    elif layout.decoder:
        lines.append("cross_mask = None")
    return lines


def _heads_line(meta: dict[str, Any]) -> list[str]:
    heads, eps = int(meta["heads"]), number(meta["eps"])
    if "kv_heads" not in meta:
        return [f"heads, eps = {heads}, {eps}"]
    return [f"heads, kv_heads, eps = {heads}, {int(meta['kv_heads'])}, {eps}  # g key/value heads"]


def _numpy_layer(layout: Layout) -> list[str]:
    """The function that runs one layer, its sublayers in order."""
    pre, decoder = layout.meta["pre_norm"], layout.decoder
    sa = "multi_head({x}, {x}, p, '', key + 'self', self_mask)"
    ca = "multi_head({x}, M, p, '_cross', key + 'cross', cross_mask)"
    if pre:
        body = [
            "    normed = layer_norm(H, p['gamma_1'], p.get('beta_1'))",
            "    Z = H + " + sa.format(x="normed"),
        ]
        last = "Z"
        if decoder:
            body.append(
                "    Z = Z + " + ca.format(x="layer_norm(Z, p['gamma_2'], p.get('beta_2'))")
            )
        index = 3 if decoder else 2
        body.append(
            f"    return Z + feed_forward(layer_norm({last}, p['gamma_{index}'], "
            f"p.get('beta_{index}')), p)  # no LayerNorm after"
        )
    else:
        body = [
            "    Z = layer_norm(H + " + sa.format(x="H") + ", p['gamma_1'], p.get('beta_1'))",
        ]
        if decoder:
            body.append(
                "    Z = layer_norm(Z + " + ca.format(x="Z") + ", p['gamma_2'], p.get('beta_2'))"
            )
        index = 3 if decoder else 2
        body.append(
            f"    return layer_norm(Z + feed_forward(Z, p), p['gamma_{index}'], "
            f"p.get('beta_{index}'))"
        )
    head = '''def layer(H, p, key):
    """One layer: each sublayer with its residual sum and LayerNorm."""'''
    return [head, *body, ""]


def numpy_program(walkthrough: Walkthrough) -> str:
    layout = _layout(walkthrough)
    meta = layout.meta
    lines = [
        f'"""attn block: {_title(layout)}, in numpy."""',
        "import math",
        "",
        "import numpy as np",
        "",
        *_assign(layout.inputs, "np"),
    ]
    for index, params in enumerate(layout.layers, start=1):
        lines += _dict(f"layer{index}", params)
    lines += _assign(layout.final, "np")
    lines += [
        *_heads_line(meta),
        "n, d_model = X.shape",
        "erf = np.vectorize(math.erf)",
        "",
        "",
        SOFTMAX,
        "def activation(x):",
        ACTIVATION[meta["activation"]],
        "",
        "",
        _numpy_functions("kv_heads" in meta),
        *_numpy_layer(layout),
        "",
        *_numpy_masks(layout),
    ]
    lines += (
        [POSENC, 'print("pe =", pe.tolist())']
        if layout.posenc
        else ["H = X  # no positional encoding: the embeddings as they are"]
    )
    if meta["shared_weights"]:
        lines.append(f"for index in range(1, {layout.count + 1}):  # every layer the same weights")
        lines.append("    p = layer1")
    else:
        names = ", ".join(f"layer{index}" for index in range(1, len(layout.layers) + 1))
        lines.append(f"for index, p in enumerate([{names}], start=1):")
    key = "f'layer{index}.'" if layout.count > 1 else "''"
    lines += [f"    H = layer(H, p, {key})"]
    last = layout.last(1).rpartition(".")[2]
    shown = f"f'layer{{index}}.{last}'" if layout.count > 1 else repr(last)
    lines.append(f"    print({shown}, '=', H.tolist())")
    if meta["final_norm"]:
        beta = ", beta_final" if "beta_final" in layout.final else ""
        lines += ["H = layer_norm(H, gamma_final" + beta + ")  # the stack's last LayerNorm"]
    lines += ["", 'print("output =", H.tolist())']
    return "\n".join(lines)


def _torch_masks(layout: Layout) -> tuple[list[str], dict[str, str]]:
    """PyTorch's masks, as the module's call takes them: lines that make them, and keywords."""
    inputs, decoder = layout.inputs, layout.decoder
    lines: list[str] = []
    mask = None
    if "attn_mask" in inputs:
        lines.append("attn_mask = attn_mask.bool()  # True: query i may not attend key j")
        mask = "attn_mask"
    if "attn_mask_float" in inputs:
        mask = "attn_mask_float"  # added to the scaled scores
    if layout.meta["causal"]:
        lines.append(
            "causal = nn.Transformer.generate_square_subsequent_mask(X.shape[0], "
            "dtype=torch.float64)  # -inf above the diagonal"
        )
        if mask == "attn_mask":
            lines.append("attn_mask = causal.masked_fill(attn_mask, -torch.inf)")
        elif mask is not None:
            lines.append(f"{mask} = causal + {mask}")
        else:
            mask = "causal"
    floats = mask not in (None, "attn_mask") or (
        mask == "attn_mask" and bool(layout.meta["causal"])
    )
    paddings = {}
    for name in ("key_padding_mask", "memory_key_padding_mask"):
        if name in inputs:
            if floats:  # a float mask beside: the padding as float too, as PyTorch asks
                lines.append(
                    f"{name} = torch.zeros({name}.shape, dtype=torch.float64)"
                    f".masked_fill({name}.bool(), -torch.inf)[None]"
                )
            else:
                lines.append(f"{name} = {name}.bool()[None]  # True: a padded key; a batch of one")
            paddings[name] = name
    keywords: dict[str, str] = {}
    stacked = layout.stacked
    if decoder:
        if mask:
            keywords["tgt_mask"] = mask
        if "key_padding_mask" in paddings:
            keywords["tgt_key_padding_mask"] = "key_padding_mask"
        if "memory_key_padding_mask" in paddings:
            keywords["memory_key_padding_mask"] = "memory_key_padding_mask"
    else:
        if mask:
            keywords["mask" if stacked else "src_mask"] = mask
        if "key_padding_mask" in paddings:
            keywords["src_key_padding_mask"] = "key_padding_mask"
    return lines, keywords


KV_PARTS = ("W_K", "W_V", "b_K", "b_V")  # g·d_k wide with grouped-query heads
PACKED = ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V")  # what in_proj_weight and in_proj_bias pack

REPEAT_KV = '''

def repeat_kv(w):
    """Each key/value head's d_k columns once for each query head it serves (h/g times, in
    order: kv1, kv1, kv2, kv2 for 4 heads, 2 key/value heads), as enable_gqa and Hugging Face's
    repeat_kv pair them: the h heads' W_K, W_V that nn.MultiheadAttention takes."""
    blocks = w.unflatten(-1, (kv_heads, -1))  # (…, g, d_k)
    return blocks.repeat_interleave(heads // kv_heads, dim=-2).flatten(-2)  # (…, h·d_k)


def in_proj(p, kind):
    """nn.MultiheadAttention's packed in_proj_weight ("W": W_Q, W_K, W_V transposed, stacked)
    or in_proj_bias ("b"), with K's and V's repeated."""
    parts = [p[kind + "_Q"], repeat_kv(p[kind + "_K"]), repeat_kv(p[kind + "_V"])]
    return torch.cat([part.T for part in parts] if kind == "W" else parts)


'''


def _repeated(params: dict[str, Any], heads: int, kv: int) -> dict[str, Any]:
    """The parameters with W_K, W_V, b_K, b_V repeated to h heads (g·d_k -> d_model columns)."""

    def widen(value: Any) -> Any:
        blocks = np.split(np.asarray(value), kv, axis=-1)
        return np.concatenate([block for block in blocks for _ in range(heads // kv)], axis=-1)

    return {
        name: widen(value) if name.rpartition(".")[2].removesuffix("_cross") in KV_PARTS else value
        for name, value in params.items()
    }


def _grouped_lines(layout: Layout) -> list[str]:
    """Grouped-query heads: each attention's narrow W_K, W_V (and the rest of what in_proj
    packs), and the functions that repeat them for nn.MultiheadAttention."""
    meta = layout.meta
    lines = [
        "",
        "# Grouped-query heads: W_K and W_V are d_model × g·d_k. PyTorch's Transformer layers have",
        "# none, so each key/value head is repeated for the h/g query heads it serves: the same layer.",
        f"heads, kv_heads = {int(meta['heads'])}, {int(meta['kv_heads'])}",
        *REPEAT_KV.splitlines(),
        "grouped = {  # each attention's W_Q, W_K, W_V (and b_Q, b_K, b_V) as the lesson has them",
    ]
    modules = [("self_attn", "")] + ([("multihead_attn", "_cross")] if layout.decoder else [])
    for index, params in enumerate(layout.layers, start=1):
        for module, suffix in modules:
            lines.append(f'    "layer{index}.{module}": dict(')
            for part in PACKED:
                if part + suffix in params:
                    lines.append(f"        {part}={array(params[part + suffix], 'torch', 8)},")
            lines.append("    ),")
    return [*lines, "}"]


def _state_lines(layout: Layout, state: dict[str, Any]) -> list[str]:
    """The state_dict, written out; with grouped-query heads in_proj_weight and in_proj_bias
    are made from the narrow weights above."""
    lines = ["state = {  # the weights in PyTorch's names and layouts (nn.Linear: W.T)"]
    shared = bool(layout.meta["shared_weights"]) or layout.count == 1
    for key, value in state.items():
        module, _, part = key.rpartition(".")
        if "kv_heads" in layout.meta and part in ("in_proj_weight", "in_proj_bias"):
            found = module.split(".")
            layer = 1 if shared or found[0] != "layers" else int(found[1]) + 1
            kind = "W" if part == "in_proj_weight" else "b"
            lines.append(f'    "{key}": in_proj(grouped["layer{layer}.{found[-1]}"], "{kind}"),')
            continue
        lines.append(f'    "{key}": {array(value, "torch", 4)},')
    return [*lines, "}"]


def torch_program(walkthrough: Walkthrough) -> str:
    layout = _layout(walkthrough)
    meta = layout.meta
    decoder, stacked = layout.decoder, layout.stacked
    kind = "Decoder" if decoder else "Encoder"
    params = {
        name if layout.count == 1 or meta["shared_weights"] else f"layer{index}.{name}": value
        for index, layer in enumerate(layout.layers, start=1)
        for name, value in layer.items()
    } | layout.final
    grouped = "kv_heads" in meta
    if grouped:  # the state's keys and shapes: every key/value head repeated, h of them
        params = _repeated(params, int(meta["heads"]), int(meta["kv_heads"]))
    state = state_dict_of(params, layout.count, stacked)
    activation = {
        "relu": '"relu"',
        "gelu": '"gelu"',
        # a function, not nn.GELU(approximate="tanh"): nn.TransformerDecoder's copies of a layer
        # given that module fall back to ReLU
        "gelu-tanh": 'functools.partial(F.gelu, approximate="tanh")',
    }[meta["activation"]]
    d_model = int(layout.inputs["X"].shape[1])
    layer = [
        f"layer = nn.Transformer{kind}Layer(",
        f"    d_model={d_model}, nhead={int(meta['heads'])}, dim_feedforward={int(meta['d_ff'])}, "
        "dropout=0.0,",
        f"    activation={activation}, layer_norm_eps={number(meta['eps'])}, batch_first=True,",
        f"    norm_first={bool(meta['pre_norm'])}, bias={bool(meta['bias'])}, dtype=torch.float64,",
        ")",
    ]
    build = [*layer, "model = layer"]
    if stacked:
        norm = "None"
        if meta["final_norm"]:
            norm = (
                f"nn.LayerNorm({d_model}, eps={number(meta['eps'])}, bias={bool(meta['bias'])}, "
                "dtype=torch.float64)"
            )
        nested = "" if decoder else ", enable_nested_tensor=False"
        build = [
            *layer,
            f"model = nn.Transformer{kind}(layer, num_layers={layout.count}, norm={norm}{nested})",
        ]
    state_lines = _state_lines(layout, state)
    if grouped:
        state_lines = [*_grouped_lines(layout), *state_lines]
    mask_lines, keywords = _torch_masks(layout)
    call_args = ", ".join(f"{key}={value}" for key, value in keywords.items())
    call_args = ", " + call_args if call_args else ""
    source = "H[None], M[None]" if decoder else "H[None]"
    hooks = []
    if stacked:
        last = layout.last(1).rpartition(".")[2]
        shown = f"f'layer{{index + 1}}.{last}'" if layout.count > 1 else repr(last)
        hooks = [
            "for index, each in enumerate(model.layers):  # print each layer's output as it comes",
            "    each.register_forward_hook(",
            f"        lambda module, args, out, key={shown}: print(key, '=', out[0].tolist())",
            "    )",
        ]
    posenc = [
        "n, d_model = X.shape",
        "pos = torch.arange(n, dtype=torch.float64)[:, None]  # (n, 1) positions 0 .. n-1",
        "omega = 10000.0 ** (-2.0 * torch.arange(d_model // 2, dtype=torch.float64) / d_model)",
        "pe = torch.stack((torch.sin(pos * omega), torch.cos(pos * omega)), dim=-1)"
        ".reshape(n, d_model)",
        "H = X + pe  # the layer's input: embeddings plus positions",
        'print("pe =", pe.tolist())',
    ]
    lines = [
        f'"""attn block: {_title(layout)}, in PyTorch (nn.Transformer{kind}'
        f'{"" if stacked else "Layer"})."""',
        *(["import functools", ""] if meta["activation"] == "gelu-tanh" else []),
        "import torch",
        *(["import torch.nn.functional as F"] if meta["activation"] == "gelu-tanh" else []),
        "from torch import nn",
        "",
        *_assign(layout.inputs, "torch"),
        "",
        *build,
        *state_lines,
        "model.load_state_dict(state)  # every weight, as torch.load(FILE) would give them",
        "model.eval()",
        *hooks,
        "",
        *(
            posenc
            if layout.posenc
            else ["H = X  # no positional encoding: the embeddings as they are"]
        ),
        *mask_lines,
        "with torch.no_grad():",
        f"    Y = model({source}{call_args})[0]  # a batch of one",
        "",
        'print("output =", Y.tolist())',
    ]
    if meta["shared_weights"]:
        lines.insert(lines.index("model.eval()"), "# shared weights: every layer loads the same")
    return "\n".join(lines)
