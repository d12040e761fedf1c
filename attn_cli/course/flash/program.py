"""attn flash --code: tiled attention, one key block at a time, with the running max m, the
running sum ℓ and the running weighted sum acc (rescaled whenever the max rises); the output
acc / ℓ, then plain attention to compare. With --query-block, the outer loop over query tiles
too, each skipping (with --causal) the key blocks wholly in its future, as FlashAttention does.

The PyTorch program is the same loop in torch, with F.scaled_dot_product_attention as the check.
"""

from __future__ import annotations

from attn_cli.core.model import Walkthrough
from attn_cli.render.code_render import assignments, inputs_of, options_of

NUMPY = {
    "library": "numpy",
    "import": "import numpy as np",
    "module": "np",
    "full": "np.full(({rows}, 1), -np.inf)",
    "zeros": "np.zeros(({rows}, {cols}))",
    "arange": "np.arange",
    "sqrt": "np.sqrt(d_k)",
    "rowmax": "scores.max(axis=-1, keepdims=True)",
    "rowsum": "p.sum(axis=-1, keepdims=True)",
    "maximum": "np.maximum",
    "exp": "np.exp",
    "mask": "np.where(j <= i, scores, -np.inf)",
    "concat": "np.concatenate(outputs)",
}
TORCH = {
    "library": "PyTorch",
    "import": "import torch\nimport torch.nn.functional as F",
    "module": "torch",
    "full": "torch.full(({rows}, 1), -torch.inf, dtype=torch.float64)",
    "zeros": "torch.zeros(({rows}, {cols}), dtype=torch.float64)",
    "arange": "torch.arange",
    "sqrt": "d_k**0.5",
    "rowmax": "scores.amax(dim=-1, keepdim=True)",
    "rowsum": "p.sum(dim=-1, keepdim=True)",
    "maximum": "torch.maximum",
    "exp": "torch.exp",
    "mask": "scores.masked_fill(j > i, -torch.inf)",
    "concat": "torch.cat(outputs)",
}


def _settings(walkthrough: Walkthrough) -> tuple[int, int | None, bool, bool]:
    options = options_of(walkthrough)
    query_block = options.get("query_block")
    return (
        int(options["block"]),
        None if query_block is None else int(query_block),
        bool(options.get("causal", False)),
        bool(options.get("scale", True)),
    )


def _inner(x: dict[str, str], causal: bool, scale: bool, indent: str, name: str) -> list[str]:
    """The loop over key blocks for the query rows q (rows q0 .. q1 - 1 of Q)."""
    scores = "q @ K[keys].T" + (f" / {x['sqrt']}" if scale else "")
    lines = [
        f"row_max = {x['full'].format(rows='q.shape[0]')}  # running max: the largest score so far",
        f"row_sum = {x['zeros'].format(rows='q.shape[0]', cols=1)}  # running sum ℓ: Σ exp(score - max)",
        f"acc = {x['zeros'].format(rows='q.shape[0]', cols='V.shape[1]')}"
        "  # Σ exp(score - max) v, not yet / ℓ",
        "for b, start in enumerate(range(0, n, block), start=1):",
    ]
    body = []
    if causal and name:
        body.append("if start > q1 - 1:  # this block and every later one: all future keys")
        body.append("    break")
    body += [
        "keys = slice(start, min(start + block, n))",
        f"scores = {scores}  # (rows, b): this block's scores only",
    ]
    if causal:
        body += [
            f"i = {x['arange']}(q0, q1)[:, None]  # query positions",
            f"j = {x['arange']}(keys.start, keys.stop)[None, :]  # key positions",
            f"scores = {x['mask']}  # no future key",
        ]
    body += [
        f"new_max = {x['maximum']}(row_max, {x['rowmax']})",
        f"rescale = {x['exp']}(row_max - new_max)  # what was summed, put on the new max",
        f"p = {x['exp']}(scores - new_max)  # (rows, b), each in [0, 1]",
        f"row_sum = rescale * row_sum + {x['rowsum']}",
        "acc = rescale * acc + p @ V[keys]",
        "row_max = new_max",
        *(
            f'print(f"{name}block{{b}}.{step} =", {var}.tolist())'
            for step, var in (("max", "row_max"), ("sum", "row_sum"), ("acc", "acc"))
        ),
    ]
    lines += ["    " + line for line in body]
    return [indent + line for line in lines]


def _program(walkthrough: Walkthrough, x: dict[str, str]) -> str:
    block, query_block, causal, scale = _settings(walkthrough)
    given = inputs_of(walkthrough)
    qkv = {name: given[name] for name in ("Q", "K", "V")}
    what = "tiled attention" + (" (causal)" if causal else "")
    lines = [
        f'"""attn flash: {what}, one key block at a time, in {x["library"]}."""',
        x["import"],
        "",
        assignments(qkv, x["module"]),
        f"block = {block}  # keys per block",
        *([f"query_block = {query_block}  # queries per tile"] if query_block else []),
        "",
        "m, d_k = Q.shape",
        "n = K.shape[0]",
    ]
    if query_block is None:
        lines += ["q, q0, q1 = Q, 0, m  # one tile: every query row at once"]
        lines += _inner(x, causal, scale, "", "")
        lines += ["output = acc / row_sum  # each row: Σ exp(score - max) v / Σ exp(score - max)"]
    else:
        lines += [
            "outputs = []",
            "for t, q0 in enumerate(range(0, m, query_block), start=1):  # the outer loop",
            "    q1 = min(q0 + query_block, m)",
            "    q = Q[q0:q1]  # this tile's queries, with its own max, ℓ and acc",
        ]
        lines += _inner(x, causal, scale, "    ", "tile{t}.")
        lines += [
            "    outputs.append(acc / row_sum)",
            '    print(f"tile{t}.output =", outputs[-1].tolist())',
            f"output = {x['concat']}  # the tiles' rows, in order",
        ]
    lines += ["", "# plain attention, the whole score matrix at once, to compare"]
    if x["module"] == "torch":
        flags = (", is_causal=True" if causal else "") + ("" if scale else ", scale=1.0")
        lines.append(f"check = F.scaled_dot_product_attention(Q, K, V{flags})")
    else:
        lines.append("scores = Q @ K.T" + (" / np.sqrt(d_k)" if scale else ""))
        if causal:
            lines.append("scores = scores + np.triu(np.full(scores.shape, -np.inf), k=1)")
        lines += [
            "e = np.exp(scores - scores.max(axis=-1, keepdims=True))",
            "check = e / e.sum(axis=-1, keepdims=True) @ V",
        ]
    lines += ["", 'print("check =", check.tolist())', 'print("output =", output.tolist())']
    return "\n".join(lines)


def numpy_program(walkthrough: Walkthrough) -> str:
    return _program(walkthrough, NUMPY)


def torch_program(walkthrough: Walkthrough) -> str:
    return _program(walkthrough, TORCH)
