"""attn variance --code: the experiment, seeded as the lesson seeds it, so the estimates are the
same numbers: in chunk i of width d_k, the queries (rows, d_k) and each key j (rows, d_k) drawn
from numpy Generators of their own, Generator(SFC64(SeedSequence([seed, d_k, i, 0 or j])
.generate_state(1)[0])) (the lesson's chunk sizes written in). Then the lecture's two worked softmaxes:
the spiky scores raw and scaled, and the logits at each temperature.

numpy only: PyTorch's generator draws other numbers for the same seed.
"""

from __future__ import annotations

from attn_cli.core.errors import param
from attn_cli.core.model import Walkthrough
from attn_cli.course.variance.build import chunk_rows
from attn_cli.render.code_render import nested, options_of, refuse

SUMMARY = '''def summary(logits):
    """How peaked each row's softmax is, averaged over the rows: its largest weight, its entropy
    -Σ w log w, and the gradient w_max (1 - w_max) of the largest weight."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=-1, keepdims=True)
    weights, log_weights = e / total, shifted - np.log(total)
    top = weights.max(axis=-1)
    entropy = -(weights * log_weights).sum(axis=-1)
    return top.mean(), entropy.mean(), (top * (1 - top)).mean()
'''

SOFTMAX = """def softmax(logits):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""

COLUMNS = {
    "moments": ("mean_raw", "var_raw", "std_raw", "mean_scaled", "var_scaled"),
    "softmax": ("max_weight_raw", "max_weight_scaled", "entropy_raw", "entropy_scaled"),
    "gradient": ("grad_raw", "grad_scaled", "grad_ratio"),
}


def numpy_program(walkthrough: Walkthrough) -> str:
    options = options_of(walkthrough)
    dks = [int(dk) for dk in options["dk"]]
    samples, keys = int(options["samples"]), int(options["keys"])
    chunks = [chunk_rows(samples, keys, dk) for dk in dks]
    seed = int(walkthrough.meta["seed"])
    lines = [
        '"""attn variance: why scores are divided by √d_k, measured, in numpy."""',
        "import numpy as np",
        "",
        f"seed, samples, keys = {seed}, {samples}, {keys}",
        f"dks = {dks}  # the widths d_k",
        f"chunks = {chunks}  # samples drawn at a time for each d_k (the lesson's)",
        f"spiky_scores, spiky_dk = {nested(options['spiky_scores'])}, {int(options['spiky_dk'])}",
        f"logits = np.array({nested(options['logits'])})",
        f"temperatures = np.array({nested(options['temperatures'])})",
        "",
        "",
        SUMMARY,
        "",
        SOFTMAX,
        "",
        "table = {name: [] for name in (",
        *(f"    {', '.join(repr(c) for c in columns)}," for columns in COLUMNS.values()),
        ")}",
        "",
        "",
        "def stream(dk, index, vector):",
        '    """The random stream of the queries (vector 0) or of key j (vector j) in chunk index."""',
        "    state = np.random.SeedSequence([seed, dk, index, vector]).generate_state(1)[0]",
        "    return np.random.Generator(np.random.SFC64(state))",
        "",
        "",
        "for dk, chunk in zip(dks, chunks):",
        "    parts = []",
        "    for index, start in enumerate(range(0, samples, chunk)):",
        "        rows = min(chunk, samples - start)",
        "        q = stream(dk, index, 0).standard_normal((rows, dk))  # one query per sample",
        "        k = np.stack(  # (rows, keys, dk): and its own keys",
        "            [stream(dk, index, j).standard_normal((rows, dk)) for j in range(1, keys + 1)],",
        "            axis=1,",
        "        )",
        "        parts.append(np.vecdot(q[:, None, :], k))  # (rows, keys): q · k_j",
        "    raw = np.concatenate(parts)  # (samples, keys), variance about d_k",
        "    scaled = raw / np.sqrt(dk)  # variance about 1, whatever d_k",
        "    table['mean_raw'].append(raw.mean())",
        "    table['var_raw'].append(raw.var(ddof=1))",
        "    table['std_raw'].append(raw.std(ddof=1))",
        "    table['mean_scaled'].append(scaled.mean())",
        "    table['var_scaled'].append(scaled.var(ddof=1))",
        "    for name, scores in (('raw', raw), ('scaled', scaled)):",
        "        top, entropy, gradient = summary(scores)",
        "        table[f'max_weight_{name}'].append(top)",
        "        table[f'entropy_{name}'].append(entropy)",
        "        table[f'grad_{name}'].append(gradient)",
        "    table['grad_ratio'].append(table['grad_scaled'][-1] / table['grad_raw'][-1])",
        "",
        "# the lecture's spiky scores at d_k = spiky_dk, raw and scaled",
        "spiky = softmax(np.array([spiky_scores, np.array(spiky_scores) / np.sqrt(spiky_dk)]))",
        "# the logits at each temperature: softmax(s / T), written as softmax((s - max s) / T)",
        "temperature = softmax((logits - logits.max()) / temperatures[:, None])",
        "",
    ]
    for step, columns in COLUMNS.items():
        lines += [
            f'print("{step}.{column} =", np.array(table["{column}"]).tolist())'
            for column in columns
        ]
    lines += ['print("spiky =", spiky.tolist())', 'print("temperature =", temperature.tolist())']
    return "\n".join(lines)


def torch_program(walkthrough: Walkthrough) -> str:
    raise refuse(
        "variance",
        param("backend", "torch"),
        "the numbers come from numpy's generator, not torch's",
    )
