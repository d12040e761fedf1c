"""attn rope --code: q and k turned by their positions, the scores, and the scores with every
position moved by s; numpy, or PyTorch as the models' code writes it (rotate_half for the split
layout, complex numbers over consecutive pairs for the interleaved one)."""

from __future__ import annotations

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.render.code_render import array, inputs_of, number, options_of, refuse

PRINTED = ("q_rotated", "k_rotated", "scores", "shifted")


def _head(walkthrough: Walkthrough, module: str) -> list[str]:
    scaling = walkthrough.meta.get("rope_scaling")
    if scaling is not None:
        raise refuse(
            "rope", param("rope_scaling", scaling), "the program turns by the plain frequencies"
        )
    given = inputs_of(walkthrough)
    options = options_of(walkthrough)
    rotary_dim = int(walkthrough.meta["rotary_dim"])
    return [
        f"Q = {array(given['Q'], module)}",
        f"K = {array(given['K'], module)}",
        f"base, r, s = {number(float(options['base']))}, {rotary_dim}, {int(options['offset'])}"
        "  # r: the dimensions turned; s: the shift",
    ]


def _tail(xp: str) -> list[str]:
    dtype = "" if xp == "np" else ", dtype=torch.float64"
    return [
        f"positions = {xp}.arange(Q.shape[0]{dtype})  # 0 .. n-1",
        "q_rotated, k_rotated = rope(Q, positions), rope(K, positions)",
        "scores = q_rotated @ k_rotated.T  # q~_m . k~_n",
        "shifted = rope(Q, positions + s) @ rope(K, positions + s).T  # the same: offsets kept",
        "",
        *(f'print("{name} =", {name}.tolist())' for name in PRINTED),
    ]


def numpy_program(walkthrough: Walkthrough) -> str:
    layout = walkthrough.meta["layout"]
    if layout == "split":
        pairs = [
            "    a, b = x[:, : r // 2], x[:, r // 2 : r]  # pair i: dimensions i and i + r/2",
            "    turned = np.concatenate((a * cos - b * sin, a * sin + b * cos), axis=-1)",
        ]
    else:
        pairs = [
            "    a, b = x[:, 0:r:2], x[:, 1:r:2]  # pair i: dimensions 2i and 2i + 1",
            "    turned = np.stack((a * cos - b * sin, a * sin + b * cos), axis=-1)",
            "    turned = turned.reshape(x.shape[0], r)  # back to 0, 1, 2, 3, ...",
        ]
    return "\n".join(
        [
            '"""attn rope: rotary position embedding, in numpy."""',
            "import numpy as np",
            "",
            *_head(walkthrough, "np"),
            "",
            "",
            "def rope(x, positions):",
            '    """Turn pair i of row m by m * theta_i; dimensions past r pass through."""',
            "    theta = base ** (-2.0 * np.arange(r // 2) / r)  # each pair's angle per position",
            "    angles = positions[:, None] * theta[None, :]  # (n, r/2)",
            "    cos, sin = np.cos(angles), np.sin(angles)",
            *pairs,
            "    return np.concatenate((turned, x[:, r:]), axis=-1)",
            "",
            "",
            *_tail("np"),
        ]
    )


def torch_program(walkthrough: Walkthrough) -> str:
    layout = walkthrough.meta["layout"]
    if layout == "split":
        helper = [
            "def rotate_half(x):",
            '    """(x1, x2) -> (-x2, x1): the halves swapped, the second negated."""',
            "    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]",
            "    return torch.cat((-x2, x1), dim=-1)",
            "",
            "",
            "def rope(x, positions):",
            '    """Hugging Face\'s apply_rotary_pos_emb: pair i is dimensions i and i + r/2."""',
            "    freqs = torch.outer(positions, inv_freq)  # (n, r/2): m * theta_i",
            "    emb = torch.cat((freqs, freqs), dim=-1)  # (n, r): each angle for both halves",
            "    x_rot, x_pass = x[..., :r], x[..., r:]",
            "    turned = x_rot * emb.cos() + rotate_half(x_rot) * emb.sin()",
            "    return torch.cat((turned, x_pass), dim=-1)",
        ]
    else:
        helper = [
            "def rope(x, positions):",
            '    """Meta\'s Llama code: pairs (2i, 2i + 1) as complex numbers, times e^(i m theta)."""',
            "    freqs = torch.outer(positions, inv_freq)  # (n, r/2): m * theta_i",
            "    turns = torch.polar(torch.ones_like(freqs), freqs)  # e^(i m theta_i)",
            "    pairs = torch.view_as_complex(x[..., :r].reshape(x.shape[0], r // 2, 2).contiguous())",
            "    turned = torch.view_as_real(pairs * turns).flatten(-2)  # (n, r)",
            "    return torch.cat((turned, x[..., r:]), dim=-1)",
        ]
    return "\n".join(
        [
            '"""attn rope: rotary position embedding, in PyTorch."""',
            "import torch",
            "",
            *_head(walkthrough, "torch"),
            "inv_freq = 1.0 / base ** (torch.arange(0, r, 2, dtype=torch.float64) / r)  # theta_i",
            "",
            "",
            *helper,
            "",
            "",
            *_tail("torch"),
        ]
    )
