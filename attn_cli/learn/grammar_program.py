"""The program of `attn learn grammar --code`: the language (attn_cli/learn/grammar_data.py, its
source), then the encoder and its control, their training on the same batches and the held-out
scores, written out with torch's own operations in the order the lessons' mechanisms run them
(so that it prints the command's numbers), with the options written in. It needs numpy and
PyTorch, nothing of attn; printing it imports no torch (the data module is read as text).
"""

from __future__ import annotations

from pathlib import Path

from attn_cli.learn import grammar_model as model
from attn_cli.learn.common import KERNELS

PROGRAM_MAIN = """
# --- the run: attn learn grammar --seed {seed} --steps {steps} --hidden {hidden} --max-len {max_len}

import math
import os

os.environ.update({kernels})  # torch's and MKL's CPU kernels pinned (before torch is imported)

import torch

SEED, STEPS, D_MODEL, MAX_LEN = {seed}, {steps}, {hidden}, {max_len}
LAYERS, HEADS, BATCH, LEARNING_RATE = {layers}, {heads}, {batch}, {rate}
HELD_OUT_PER_LENGTH = {per_length}


def initial_weights(uniform):
    \"\"\"N(0, 1 / fan-in) from numpy, seeded with (SEED, 3); the control's W_Q and W_K zero.\"\"\"
    rng = np.random.default_rng(np.random.SeedSequence([SEED, 3]))
    shapes = {{"embed": (len(VOCABULARY), D_MODEL), "position": (MAX_LEN, D_MODEL)}}
    for layer in range(1, LAYERS + 1):
        for name in ("w_q", "w_k", "w_v", "w_o"):
            shapes[f"layer{{layer}}.{{name}}"] = (D_MODEL, D_MODEL)
    shapes["unembed"] = (D_MODEL, len(ENDINGS))
    weights = {{}}
    for name, (rows, cols) in shapes.items():
        fan_in = cols if name in ("embed", "position") else rows
        value = rng.standard_normal((rows, cols)) / math.sqrt(fan_in)
        frozen = uniform and name.split(".")[-1] in ("w_q", "w_k")
        if frozen:
            value = np.zeros((rows, cols))
        weights[name] = torch.tensor(value, dtype=torch.float32, requires_grad=not frozen)
    return weights


def forward(weights, tokens):
    \"\"\"X = E[x] + P; X += MultiHead(X) per layer (no mask: an encoder); scores X W_U.\"\"\"
    n = tokens.shape[-1]
    x = weights["embed"][tokens] + weights["position"][:n]  # (B, n, d)
    d_k = D_MODEL // HEADS
    patterns = []
    for layer in range(1, LAYERS + 1):
        w_q, w_k, w_v, w_o = (weights[f"layer{{layer}}.{{m}}"] for m in ("w_q", "w_k", "w_v", "w_o"))
        q, k, v = x @ w_q, x @ w_k, x @ w_v  # (B, n, d) each; head i: columns i d_k … (i+1) d_k
        heads, outputs = [], []
        for i in range(HEADS):
            part = slice(i * d_k, (i + 1) * d_k)
            scores = q[..., part] @ k[..., part].transpose(-1, -2) / math.sqrt(d_k)
            shifted = scores - scores.amax(dim=-1, keepdim=True)  # the stable softmax
            exp = torch.exp(shifted)
            a = exp / exp.sum(dim=-1, keepdim=True)  # (B, n, n): rows sum to 1
            heads.append(a)
            outputs.append(a @ v[..., part])
        patterns.append(torch.stack(heads, dim=1))  # (B, HEADS, n, n)
        x = x + torch.cat(outputs, dim=-1) @ w_o  # the residual sum
    return x @ weights["unembed"], patterns


def evaluate(weights, sentences):
    \"\"\"Accuracy on the asked endings; per layer and head, the share of the words with a head
    whose head gets more weight than any other word, and the mean weight on it.\"\"\"
    right = asked_count = 0
    hits = np.zeros((LAYERS, HEADS))
    weight = np.zeros((LAYERS, HEADS))
    with torch.no_grad():
        for length in sorted({{len(s) for s in sentences}}):
            group = [s for s in sentences if len(s) == length]
            logits, patterns = forward(weights, torch.tensor([s.tokens for s in group]))
            predicted = logits.argmax(dim=-1).numpy()
            for row, sentence in enumerate(group):
                endings, heads = np.array(sentence.endings), np.array(sentence.heads)
                asked = np.flatnonzero(heads != NONE)
                right += int(np.sum(predicted[row][asked] == endings[asked]))
                asked_count += len(asked)
                for layer, pattern in enumerate(patterns):
                    rows = pattern[row].double().numpy()[:, asked, :]  # (HEADS, k, n)
                    on_head = rows[:, np.arange(len(asked)), heads[asked]]
                    others = rows.copy()
                    others[:, np.arange(len(asked)), heads[asked]] = -np.inf
                    hits[layer] += np.sum(on_head > others.max(axis=-1), axis=-1)
                    weight[layer] += np.sum(on_head, axis=-1)
    return right / asked_count, hits / asked_count, weight / asked_count


def main():
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads({threads})
    corpus_ = corpus(SEED, MAX_LEN, HELD_OUT_PER_LENGTH)  # held-out sentences, never trained on
    held = corpus_.sentences()
    stream = corpus_.batches(BATCH)
    batches = [next(stream) for _ in range(STEPS)]  # the same batches for both models
    for name, uniform in (("attention", False), ("control", True)):
        weights = initial_weights(uniform)
        optimiser = torch.optim.Adam([w for w in weights.values() if w.requires_grad], lr=LEARNING_RATE)
        for batch in batches:
            tokens = torch.tensor([s.tokens for s in batch])
            endings = torch.tensor([s.endings for s in batch])
            logits, _ = forward(weights, tokens)
            asked = endings != NONE
            loss = torch.nn.functional.cross_entropy(logits[asked], endings[asked])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        accuracy, share, weight = evaluate(weights, held)
        print(f"{{name}}: held-out accuracy {{accuracy:.3f}}")
        for layer in range(LAYERS):
            for head in range(HEADS):
                print(
                    f"  layer {{layer + 1}} head {{head + 1}}: share on the head "
                    f"{{share[layer, head]:.3f}}, mean weight {{weight[layer, head]:.3f}}"
                )


if __name__ == "__main__":
    main()
"""


def program_text(
    *, seed: int, steps: int, hidden: int, max_len: int, per_length: int, threads: int
) -> str:
    """The program with these options written in."""
    here = Path(__file__).parent  # read as text: printing the program imports no torch
    source = (here / "grammar_data.py").read_text(encoding="utf-8")
    source = source.replace("from __future__ import annotations\n", "")
    parts = [
        "# attn learn grammar --code: the training program, self-contained (numpy, torch).",
        "from __future__ import annotations",
        "",
        "# --- grammar_data " + "-" * 60,
        source,
        PROGRAM_MAIN.format(
            seed=seed,
            steps=steps,
            hidden=hidden,
            max_len=max_len,
            layers=model.LAYERS,
            heads=model.HEADS,
            batch=model.BATCH,
            rate=model.LEARNING_RATE,
            per_length=per_length,
            threads=threads,
            kernels=dict(KERNELS),
        ),
    ]
    return "\n".join(parts)
