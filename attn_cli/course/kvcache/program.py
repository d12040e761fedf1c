"""attn kvcache --code: generation token by token: each step appends k_t and v_t to the cache
and lets q_t attend once over it; the stacked outputs, then full causal attention to compare.

The cache-size options (--layers, --heads, --kv-heads, --d-head, --cache-dtype, --window-layers,
--latent-width) size the lesson's tables, not these numbers: the program leaves them out.
"""

from __future__ import annotations

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.render.attention_program import SOFTMAX
from attn_cli.render.code_render import assignments, inputs_of, refuse


def _inputs(walkthrough: Walkthrough, module: str) -> str:
    given = inputs_of(walkthrough)
    return assignments({name: given[name] for name in ("Q", "K", "V")}, module)


def _check_shown_whole(walkthrough: Walkthrough) -> None:
    """The program writes every token's step: a long run, shown at chosen tokens and summed up
    (cache_summary), is refused in one line."""
    if any(step.key == "cache_summary" for step in walkthrough.steps):
        raise refuse(
            "kvcache",
            param("n"),
            f"past 32 tokens or with {param('show_tokens')} the lesson shows chosen tokens, "
            "the program every one",
        )


def numpy_program(walkthrough: Walkthrough) -> str:
    _check_shown_whole(walkthrough)
    return "\n".join(
        [
            '"""attn kvcache: generation with a KV cache, token by token, in numpy."""',
            "import numpy as np",
            "",
            _inputs(walkthrough, "np"),
            "",
            "",
            SOFTMAX,
            "d_k = K.shape[1]",
            "K_cache = np.empty((0, d_k))  # the empty cache: no key yet",
            "V_cache = np.empty((0, V.shape[1]))",
            "outputs = []",
            "for t in range(Q.shape[0]):  # token t arrives",
            "    K_cache = np.vstack([K_cache, K[t]])  # append its key and value: (t + 1, d_k)",
            "    V_cache = np.vstack([V_cache, V[t]])",
            "    q = Q[t : t + 1]  # (1, d_k): only the new token's query",
            "    weights = softmax(q @ K_cache.T / np.sqrt(d_k))  # (1, t + 1): one row",
            '    print(f"token{t + 1} =", weights.tolist())',
            "    outputs.append(weights @ V_cache)",
            "output = np.vstack(outputs)  # (n, d_v): the steps' outputs, one row each",
            "",
            "# the same rows from full causal attention over all n tokens at once",
            "scores = Q @ K.T / np.sqrt(d_k)",
            "scores = scores + np.triu(np.full(scores.shape, -np.inf), k=1)  # no future key",
            "full = softmax(scores) @ V",
            "",
            'print("full =", full.tolist())  # equal to the output, to rounding',
            'print("output =", output.tolist())',
        ]
    )


def torch_program(walkthrough: Walkthrough) -> str:
    _check_shown_whole(walkthrough)
    return "\n".join(
        [
            '"""attn kvcache: generation with a KV cache, token by token, in PyTorch '
            '(F.scaled_dot_product_attention)."""',
            "import torch",
            "import torch.nn.functional as F",
            "",
            _inputs(walkthrough, "torch"),
            "",
            "d_k = K.shape[1]",
            "K_cache = K[:0]  # the empty cache: (0, d_k)",
            "V_cache = V[:0]",
            "outputs = []",
            "for t in range(Q.shape[0]):  # token t arrives",
            "    K_cache = torch.cat([K_cache, K[t : t + 1]])  # append its key and value",
            "    V_cache = torch.cat([V_cache, V[t : t + 1]])",
            "    q = Q[t : t + 1]  # (1, d_k): only the new token's query",
            "    outputs.append(F.scaled_dot_product_attention(q, K_cache, V_cache))",
            "    weights = torch.softmax(q @ K_cache.T / d_k**0.5, dim=-1)  # what SDPA computes inside",
            '    print(f"token{t + 1} =", weights.tolist())',
            "output = torch.cat(outputs)  # (n, d_v): the steps' outputs, one row each",
            "full = F.scaled_dot_product_attention(Q, K, V, is_causal=True)  # all at once",
            "",
            'print("full =", full.tolist())  # equal to the output, to rounding',
            'print("output =", output.tolist())',
        ]
    )
