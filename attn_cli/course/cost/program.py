"""attn cost --code: the lectures' complexity formulas evaluated at the lesson's sizes, in plain
Python (whole numbers, no arrays: nothing here needs numpy or PyTorch). Each table's numeric
columns are printed one a line, ``table.column = [...]``, in the lesson's row order."""

from __future__ import annotations

from attn_cli.core.backend import ITEMSIZE
from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.render.code_render import options_of, refuse

CEIL_LOG = '''def ceil_log(n, k):
    """⌈log_k n⌉ in whole numbers: the fewest dilated convolutions of kernel k that reach n."""
    layers, reach = 0, 1
    while reach < n:
        layers, reach = layers + 1, reach * k
    return layers
'''


def numpy_program(walkthrough: Walkthrough) -> str:
    options = options_of(walkthrough)
    n, d, w = (int(options[name]) for name in ("n", "d", "window"))
    r, heads, layers = (int(options[name]) for name in ("features", "heads", "layers"))
    dtype = str(options["memory_dtype"])
    return "\n".join(
        [
            '"""attn cost: the lectures\' complexity tables, evaluated, in Python."""',
            "",
            f"n, d, w, r = {n}, {d}, {w}, {r}  # tokens, width, window half-width, features",
            f"heads, layers = {heads}, {layers}",
            f"itemsize = {ITEMSIZE[dtype]}  # bytes per number in {dtype}",
            "",
            "",
            CEIL_LOG,
            "",
            "def window_keys(n):",
            '    """k: the keys a query of the window sees, 2w + 1 (at most n)."""',
            "    return min(2 * w + 1, n)",
            "",
            "",
            "def variants(n):",
            '    """Time and memory of the four variants (leading terms, no constants)."""',
            "    k = window_keys(n)",
            "    return {",
            '        "vanilla": (n * n * d, n * n),',
            '        "flash": (n * n * d, n),  # a running max and sum per query',
            '        "linear": (n * r * d, n * d),  # r = d: the lecture\'s O(n d²)',
            '        "window": (n * k * d, n * k),',
            "    }",
            "",
            "",
            "k = window_keys(n)",
            "# the Transformer paper's layer types: operations, sequential operations, path length",
            "layer_types = {",
            '    "self-attention": (n * n * d, 1, 1),',
            '    "recurrent": (n * d * d, n, n),',
            '    "convolutional": (k * n * d * d, 1, ceil_log(n, k)),',
            '    "restricted self-attention": (k * n * d, 1, -(-n // k)),',
            "}",
            "at_n, at_2n = variants(n), variants(2 * n)  # double the context",
            "one_word = [n, n * n, k, n * k]  # scores: one word, all words; in a window, the same",
            "entries = [n * n, n * n * heads, n * n * heads * layers]  # the n × n score matrices",
            "",
            'print("layer_types.ops =", [row[0] for row in layer_types.values()])',
            'print("layer_types.sequential =", [row[1] for row in layer_types.values()])',
            'print("layer_types.path =", [row[2] for row in layer_types.values()])',
            'print("variants.time =", [time for time, _ in at_n.values()])',
            'print("variants.memory =", [memory for _, memory in at_n.values()])',
            'print("variants.bytes =", [memory * itemsize for _, memory in at_n.values()])',
            'print("doubling.time_ratio =", [at_2n[v][0] / at_n[v][0] for v in at_n])',
            'print("doubling.memory_ratio =", [at_2n[v][1] / at_n[v][1] for v in at_n])',
            'print("one_word.scores =", one_word)',
            'print("one_word.multiply_adds =", [scores * d for scores in one_word])',
            "# entries, bytes, MiB (2^20 bytes), GB (10^9 bytes)",
            'print("score_matrix =", [[float(e), float(e * itemsize), e * itemsize / 2**20, '
            "e * itemsize / 10**9] for e in entries])",
        ]
    )


def torch_program(walkthrough: Walkthrough) -> str:
    raise refuse(
        "cost", param("backend", "torch"), "its program is whole-number arithmetic, no tensors"
    )
