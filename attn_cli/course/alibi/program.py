"""attn alibi --code: the slopes (the paper's rule for any head count), the bias −m·distance
added to the scaled scores, and each head's softmax; numpy, or PyTorch with every head at once."""

from __future__ import annotations

from attn_cli.core.model import Walkthrough
from attn_cli.render.attention_program import SOFTMAX
from attn_cli.render.code_render import array, inputs_of

SLOPES = '''def slopes(heads):
    """2^(-8h/H) for h = 1..H when H is a power of two; else those of the power of two p
    below H, then every other slope of 2p."""
    def geometric(count):
        return [2.0 ** (-8.0 * h / count) for h in range(1, count + 1)]

    below = 2 ** math.floor(math.log2(heads))
    if below == heads:
        return geometric(heads)
    return geometric(below) + geometric(2 * below)[0::2][: heads - below]
'''


def _settings(walkthrough: Walkthrough, module: str) -> list[str]:
    given = inputs_of(walkthrough)
    heads = len(walkthrough.meta["slopes"])
    causal = bool(walkthrough.meta["causal"])
    return [
        f"Q = {array(given['Q'], module)}",
        f"K = {array(given['K'], module)}",
        f"heads, causal = {heads}, {causal}",
    ]


def numpy_program(walkthrough: Walkthrough) -> str:
    return "\n".join(
        [
            '"""attn alibi: attention with linear biases, in numpy."""',
            "import math",
            "",
            "import numpy as np",
            "",
            *_settings(walkthrough, "np"),
            "",
            "",
            SLOPES,
            "",
            SOFTMAX,
            "n = Q.shape[0]",
            "i, j = np.arange(n)[:, None], np.arange(n)[None, :]",
            "distance = (i - j) if causal else np.abs(i - j)",
            "scores = Q @ K.T / np.sqrt(Q.shape[1])",
            "every_head = []",
            "for h, m in enumerate(slopes(heads), start=1):",
            "    biased = scores - m * distance",
            "    if causal:",
            "        biased = np.where(j <= i, biased, -np.inf)  # no future key",
            "    weights = softmax(biased)",
            '    print(f"head{h}.weights =", weights.tolist())',
            "    every_head.append(weights)",
            'print("output =", np.stack(every_head).tolist())  # (H, n, n): every head\'s weights',
        ]
    )


def torch_program(walkthrough: Walkthrough) -> str:
    return "\n".join(
        [
            '"""attn alibi: attention with linear biases, in PyTorch (all heads at once)."""',
            "import math",
            "",
            "import torch",
            "",
            *_settings(walkthrough, "torch"),
            "",
            "",
            SLOPES,
            "",
            "n = Q.shape[0]",
            "position = torch.arange(n, dtype=torch.float64)",
            "distance = position[:, None] - position[None, :]  # i - j",
            "if not causal:",
            "    distance = distance.abs()",
            "m = torch.tensor(slopes(heads), dtype=torch.float64)[:, None, None]  # (H, 1, 1)",
            "biased = Q @ K.T / Q.shape[1] ** 0.5 - m * distance  # (H, n, n)",
            "if causal:",
            '    biased = biased.masked_fill(distance < 0, float("-inf"))  # no future key',
            "weights = torch.softmax(biased, dim=-1)",
            "",
            "for h in range(heads):",
            '    print(f"head{h + 1}.weights =", weights[h].tolist())',
            'print("output =", weights.tolist())  # (H, n, n): every head\'s weights',
        ]
    )
