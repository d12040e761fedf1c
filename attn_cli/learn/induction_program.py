"""The program of `attn learn induction --code`: the task's data, models, training and scores in
one file of numpy and PyTorch, with the options written in.

It follows attn_cli/learn/induction_data.py and induction_model.py step for step (the same
seeded streams, the same initial weights, the same batches), written out with torch's own
operations instead of the lessons' mechanisms, so its numbers agree with the command's up to
float32 rounding.
"""

from __future__ import annotations

from attn_cli.learn import induction_data as data
from attn_cli.learn import induction_model as model
from attn_cli.learn.common import KERNELS

TEMPLATE = '''\
"""attn learn induction, as one program: a two-layer attention-only Transformer learns an
induction head on sequences whose second half repeats the first; a one-layer one does not."""

import math
import os

os.environ.update({kernels})  # torch's and MKL's CPU kernels pinned, before torch is imported

import numpy as np
import torch

SEED = {seed}
STEPS = {steps}  # training steps, one batch each, for both models
D_MODEL = {hidden}
MAX_LEN = {max_len}  # the longest repeated half; sequences have 2 L tokens, L = MIN_LEN … MAX_LEN
MIN_LEN = {min_len}
VOCAB = {vocab}
HEADS = {heads}
BATCH = {batch}
LEARNING_RATE = {learning_rate}
HELD_OUT = {held_out}
T = 2 * MAX_LEN

torch.manual_seed(SEED)
torch.use_deterministic_algorithms(True)
torch.set_num_threads({threads})


def draw(rng, count):
    """Segments of L distinct tokens, then the segment again; padding (0) after 2 L."""
    lengths = rng.integers(MIN_LEN, MAX_LEN + 1, size=count)
    order = np.argsort(rng.random((count, VOCAB)), axis=1)[:, :MAX_LEN]
    positions = np.arange(T)[None, :]
    source = np.where(positions < lengths[:, None], positions, positions - lengths[:, None])
    tokens = np.take_along_axis(order, np.clip(source, 0, MAX_LEN - 1), axis=1)
    tokens = np.where(positions < 2 * lengths[:, None], tokens, 0)
    return tokens.astype(np.int64), lengths.astype(np.int64)


def keys(tokens, lengths):
    return [row[: 2 * n].tobytes() for row, n in zip(tokens, lengths)]


# Held-out sequences first, then training batches that never contain one of them.
evaluation, training = (np.random.default_rng(s) for s in np.random.SeedSequence(SEED).spawn(2))
held_tokens, held_lengths = draw(evaluation, HELD_OUT)
excluded = set(keys(held_tokens, held_lengths))
batches = []
for _ in range(STEPS):
    tokens, lengths = draw(training, BATCH)
    while True:
        clash = np.array([key in excluded for key in keys(tokens, lengths)])
        if not clash.any():
            break
        tokens[clash], lengths[clash] = draw(training, int(clash.sum()))
    batches.append((tokens, lengths))


def initial_weights(layers):
    """N(0, 1 / fan-in) from numpy, seeded with (SEED, layers)."""
    rng = np.random.default_rng(np.random.SeedSequence([SEED, layers]))
    shapes = {{"embed": (VOCAB, D_MODEL), "position": (T, D_MODEL)}}
    for layer in range(1, layers + 1):
        for name in ("w_q", "w_k", "w_v", "w_o"):
            shapes[f"layer{{layer}}.{{name}}"] = (D_MODEL, D_MODEL)
    shapes["unembed"] = (D_MODEL, VOCAB)
    weights = {{}}
    for name, (rows, cols) in shapes.items():
        fan_in = cols if name in ("embed", "position") else rows
        value = rng.standard_normal((rows, cols)) / math.sqrt(fan_in)
        weights[name] = torch.tensor(value, dtype=torch.float32, requires_grad=True)
    return weights


def forward(weights, tokens, layers):
    """X = E[x] + P; X += MultiHead(X) per layer (causal, no MLP, no LayerNorm); logits X W_U."""
    t = tokens.shape[-1]
    x = weights["embed"][tokens] + weights["position"][:t]  # (B, T, d)
    mask = torch.full((t, t), -math.inf).triu(1)  # -inf above the diagonal
    d_k = D_MODEL // HEADS
    patterns = []
    for layer in range(1, layers + 1):
        w_q, w_k, w_v, w_o = (weights[f"layer{{layer}}.{{n}}"] for n in ("w_q", "w_k", "w_v", "w_o"))
        q, k, v = x @ w_q, x @ w_k, x @ w_v  # (B, T, d) each; head i: columns i d_k … (i+1) d_k
        heads, outputs = [], []
        for i in range(HEADS):
            part = slice(i * d_k, (i + 1) * d_k)
            scores = q[..., part] @ k[..., part].transpose(-1, -2) / math.sqrt(d_k) + mask
            a = torch.softmax(scores, dim=-1)  # (B, T, T): rows sum to 1
            heads.append(a)
            outputs.append(a @ v[..., part])
        patterns.append(torch.stack(heads, dim=1))  # (B, HEADS, T, T)
        x = x + torch.cat(outputs, dim=-1) @ w_o  # the residual sum
    return x @ weights["unembed"], patterns


def scores(pattern, lengths):
    """Per head: previous-token score (t -> t-1) and prefix-matching score (a token's second
    occurrence t = L … 2L-1 -> the token after its first, t - L + 1)."""
    previous, prefix = [], []
    for i, n in enumerate(lengths.tolist()):
        t = np.arange(1, 2 * n)
        previous.append(pattern[i, :, t, t - 1])
        t = np.arange(n, 2 * n)
        prefix.append(pattern[i, :, t, t - n + 1])
    return np.concatenate(previous).mean(axis=0), np.concatenate(prefix).mean(axis=0)


def evaluate(weights, layers):
    with torch.no_grad():
        logits, patterns = forward(weights, torch.from_numpy(held_tokens), layers)
    predicted = logits.argmax(dim=-1).numpy()
    target = np.roll(held_tokens, -1, axis=1)
    positions = np.arange(T)[None, :]
    lengths = held_lengths[:, None]
    predictable = (positions >= lengths) & (positions <= 2 * lengths - 2)
    accuracy = float(np.mean(predicted[predictable] == target[predictable]))
    return accuracy, [scores(p.double().numpy(), held_lengths) for p in patterns]


for layers in (2, 1):
    weights = initial_weights(layers)
    optimiser = torch.optim.Adam(list(weights.values()), lr=LEARNING_RATE)
    for step, (tokens, lengths) in enumerate(batches, start=1):
        tokens = torch.from_numpy(tokens)
        logits, _ = forward(weights, tokens, layers)
        real = torch.from_numpy(np.arange(1, T)[None, :] < 2 * lengths[:, None])  # target real
        loss = torch.nn.functional.cross_entropy(logits[:, :-1][real], tokens[:, 1:][real])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    accuracy, per_layer = evaluate(weights, layers)
    print(f"{{layers}} layer(s): held-out accuracy on the predictable tokens {{accuracy:.3f}}")
    for layer, (previous, prefix) in enumerate(per_layer, start=1):
        for head in range(HEADS):
            print(
                f"  layer {{layer}} head {{head + 1}}: previous-token {{previous[head]:.3f}}, "
                f"prefix-matching {{prefix[head]:.3f}}"
            )
'''


def program_text(
    *, seed: int, steps: int, hidden: int, max_len: int, held_out: int, threads: int
) -> str:
    """The program with these options written in."""
    return TEMPLATE.format(
        seed=seed,
        steps=steps,
        hidden=hidden,
        max_len=max_len,
        min_len=data.MIN_LEN,
        vocab=data.VOCAB,
        heads=model.HEADS,
        batch=model.BATCH,
        learning_rate=model.LEARNING_RATE,
        held_out=held_out,
        threads=threads,
        kernels=dict(KERNELS),
    )
