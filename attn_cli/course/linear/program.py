"""attn linear --code: linear attention φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1) with the lesson's feature
map (elu + 1, relu, leaky-squared, or positive random features with their projection W written
in), the quadratic order's weights beside it; with --causal the running state S_t, z_t. Then
softmax attention on the same inputs, which the lesson compares with.

The PyTorch program is the same lines in torch (F.elu, F.relu, F.leaky_relu for φ).
"""

from __future__ import annotations

from typing import Any

from attn_cli.core.model import Walkthrough
from attn_cli.mechanisms import linear as mech
from attn_cli.render.code_render import array, inputs_of, options_of

NUMPY = {
    "library": "numpy",
    "import": "import numpy as np",
    "module": "np",
    "elu": "np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))  # elu(x) + 1: always positive",
    "relu": "np.maximum(x, 0.0)  # 0 for every x <= 0",
    "leaky-squared": f"(np.where(x >= 0, x, {mech.LEAKY_SLOPE} * x) + {mech.LEAKY_SHIFT}) ** 2",
    "exp": "np.exp",
    "sqrt": "np.sqrt",
    "sum0": "phi_k.sum(axis=0)[:, None]",
    "rowsum": "{x}.sum(axis=-1, keepdims=True)",
    "outer": "np.outer",
    "zeros_s": "np.zeros((phi_k.shape[1], V.shape[1]))",
    "zeros_z": "np.zeros(phi_k.shape[1])",
    "stack": "np.stack",
    "tril": "np.tril",
    "divide": "np.divide({a}, {b}, out=np.zeros_like({a}), where={b} != 0)",
    "softmax": "np.exp(logits - logits.max(axis=-1, keepdims=True))",
    "causal_logits": "logits + np.triu(np.full(logits.shape, -np.inf), k=1)",
}
TORCH = {
    "library": "PyTorch",
    "import": "import torch\nimport torch.nn.functional as F",
    "module": "torch",
    "elu": "F.elu(x) + 1  # always positive",
    "relu": "F.relu(x)  # 0 for every x <= 0",
    "leaky-squared": f"(F.leaky_relu(x, {mech.LEAKY_SLOPE}) + {mech.LEAKY_SHIFT}) ** 2",
    "exp": "torch.exp",
    "sqrt": "math.sqrt",
    "sum0": "phi_k.sum(dim=0)[:, None]",
    "rowsum": "{x}.sum(dim=-1, keepdim=True)",
    "outer": "torch.outer",
    "zeros_s": "torch.zeros(phi_k.shape[1], V.shape[1], dtype=torch.float64)",
    "zeros_z": "torch.zeros(phi_k.shape[1], dtype=torch.float64)",
    "stack": "torch.stack",
    "tril": "torch.tril",
    "divide": "torch.where({b} != 0, {a} / {b}, 0.0)",
    "softmax": "torch.exp(logits - logits.amax(dim=-1, keepdim=True))",
    "causal_logits": "logits + torch.full(logits.shape, -torch.inf, dtype=torch.float64).triu(1)",
}


def _phi(walkthrough: Walkthrough, x: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The projection W (random features only) and the lines of φ."""
    options = options_of(walkthrough)
    name = str(options.get("feature_map", "elu"))
    if name != "random":
        return {}, ["def phi(x):", f"    return {x[name]}"]
    d_k = inputs_of(walkthrough)["Q"].shape[1]
    features, seed = int(options.get("features", 16)), int(options.get("feature_seed", 0))
    projection = mech.random_projection(d_k, features, seed)
    return {"W": projection}, [
        "def phi(x):",
        '    """Positive random features: E[φ(q)·φ(k)] = exp(q·k / √d_k) over the random W."""',
        "    x = x / x.shape[-1] ** 0.25  # q·k / √d_k = (q / d_k^¼)·(k / d_k^¼)",
        f"    half_norm = {x['rowsum'].format(x='(x * x)')} / 2",
        f"    return {x['exp']}(x @ W - half_norm) / {x['sqrt']}(W.shape[1])",
    ]


def _divide(x: dict[str, str], a: str, b: str, relu: bool) -> str:
    """a / b; with relu a row whose normaliser is 0 gets 0 (0 / 0 has no value)."""
    return x["divide"].format(a=a, b=b) if relu else f"{a} / {b}"


def _underflowed(walkthrough: Walkthrough) -> str:
    """A comment for the lines that divide by the normaliser, where φ underflowed for some
    queries (the lesson's underflow_normaliser note): this plain ratio gives NaN for them."""
    try:
        notes = walkthrough.find("normaliser").notes
    except KeyError:
        return ""
    for note in notes:
        if note.key == "underflow_normaliser":
            return (
                f"  # NaN for {note.values['queries']}: φ underflowed to 0 (0 / 0); attn linear "
                "takes the ratio from log φ"
            )
    return ""


def _program(walkthrough: Walkthrough, x: dict[str, str]) -> str:
    options = options_of(walkthrough)
    causal = bool(options.get("causal", False))
    relu = options.get("feature_map") == "relu"
    nan = _underflowed(walkthrough)
    given = inputs_of(walkthrough)
    extra, phi = _phi(walkthrough, x)
    values = {name: given[name] for name in ("Q", "K", "V")} | extra
    module = x["module"]
    lines = [
        f'"""attn linear: {"causal " if causal else ""}linear attention, in {x["library"]}."""',
        *(["import math"] if module == "torch" else []),
        x["import"],
        "",
        "\n".join(f"{name} = {array(value, module)}" for name, value in values.items()),
        "",
        "",
        *phi,
        "",
        "",
        "phi_q, phi_k = phi(Q), phi(K)  # (m, r), (n, r): no √d_k, φ takes Q and K as they are",
    ]
    printed = ["phi_q", "phi_k"]
    if causal:
        lines += [
            f"S = {x['zeros_s']}  # S_0 = 0: Σ φ(k_j) v_jᵀ so far, r × d_v",
            f"z = {x['zeros_z']}  # z_0 = 0: Σ φ(k_j) so far",
            "states, sums, reads, normaliser = [], [], [], []",
            "for t in range(Q.shape[0]):  # one token at a time, as an RNN",
            f"    S = S + {x['outer']}(phi_k[t], V[t])",
            "    z = z + phi_k[t]",
            "    states.append(S.reshape(-1))  # S_t entry by entry",
            "    sums.append(z)",
            "    reads.append(phi_q[t] @ S)  # φ(q_t)ᵀ S_t",
            "    normaliser.append((phi_q[t] @ z)[None])  # φ(q_t)ᵀ z_t",
            "states, sums, reads, normaliser = (",
            f"    {x['stack']}(states), {x['stack']}(sums), {x['stack']}(reads), "
            f"{x['stack']}(normaliser)",
            ")",
            f"output = {_divide(x, 'reads', 'normaliser', relu)}{nan}",
            "",
            "# the weights it implies: φ(q_i)·φ(k_j) for j <= i, each row divided by its sum",
            f"kept = {x['tril']}(phi_q @ phi_k.T)",
            f"weights = {_divide(x, 'kept', x['rowsum'].format(x='kept'), relu)}{nan}",
        ]
        printed += ["states", "sums", "reads", "normaliser", "weights"]
    else:
        lines += [
            "",
            "# the quadratic order (φ(Q) φ(K)ᵀ) V: an m × n matrix",
            "similarity = phi_q @ phi_k.T",
            f"weights = {_divide(x, 'similarity', x['rowsum'].format(x='similarity'), relu)}{nan}",
            "output_quadratic = weights @ V",
            "",
            "# the linear order φ(Q) (φ(K)ᵀ V): r × d_v numbers summarise the keys",
            "kv = phi_k.T @ V  # (r, d_v)",
            f"k_sum = {x['sum0']}  # (r, 1): φ(K)ᵀ 1",
            "numerator = phi_q @ kv  # (m, d_v)",
            "normaliser = phi_q @ k_sum  # (m, 1)",
            f"output = {_divide(x, 'numerator', 'normaliser', relu)}"
            + (nan or "  # the same numbers"),
        ]
        printed += [
            "similarity",
            "weights",
            "output_quadratic",
            "kv",
            "k_sum",
            "numerator",
            "normaliser",
        ]
    lines += [
        "",
        "# softmax attention on the same inputs, to compare",
        "logits = Q @ K.T / " + ("np.sqrt" if module == "np" else "math.sqrt") + "(Q.shape[1])",
        *([f"logits = {x['causal_logits']}"] if causal else []),
        f"e = {x['softmax']}",
        f"softmax = e / {x['rowsum'].format(x='e')}",
        "",
        *(f'print("{name} =", {name}.tolist())' for name in (*printed, "softmax", "output")),
    ]
    return "\n".join(lines)


def numpy_program(walkthrough: Walkthrough) -> str:
    return _program(walkthrough, NUMPY)


def torch_program(walkthrough: Walkthrough) -> str:
    return _program(walkthrough, TORCH)
