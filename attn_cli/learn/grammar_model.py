"""The encoder of `attn learn grammar`, and its training (torch).

A sentence's words are embedded, learned position vectors added, then ``layers`` self-attention
layers (the multi-head attention and residual sum of `attn block`, attn_cli.mechanisms.block,
run on torch tensors so that autograd sees it; no mask: an encoder reads the whole sentence),
then a read-out gives each word's scores over the endings:

    X_0 = E[x] + P                               (n, d)
    X_l = X_{l-1} + MultiHead_l(X_{l-1})         h heads of d / h
    scores = X_L W_U                              (n, endings)

No FFN and no LayerNorm: the smallest model that can do the task, and the one whose attention
map is the whole of what it reads from the other words. The control is the same model with W_Q
and W_K fixed at zero: every score is 0, so every word spreads its weight evenly over the
sentence (1/n each), whatever it learns; it can read the sentence, but not one word of it.

The initial weights are drawn by numpy from the seed (the "before training" map does not depend
on the torch version); the training runs in torch, float32, on the CPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.learn import grammar_data as data
from attn_cli.learn import training
from attn_cli.learn.training import Report, Trained, Weights

if TYPE_CHECKING:
    import torch

LAYERS = 1
HEADS = 1
BATCH = 64
LEARNING_RATE = 1e-2  # Adam's
EVALUATE_EVERY = 50  # steps between held-out evaluations (the curve and the progress bar)
# The weights the control never trains: zero, so that every score is 0.
FROZEN = ("w_q", "w_k")


@dataclass(frozen=True)
class Shape:
    """The sizes of a model, and whether its attention is frozen even (the control)."""

    d_model: int
    max_len: int
    uniform: bool = False
    layers: int = LAYERS
    heads: int = HEADS
    vocab: int = len(data.VOCABULARY)
    endings: int = len(data.ENDINGS)

    def shapes(self) -> dict[str, tuple[int, int]]:
        """Every weight's name and shape (row convention: X W)."""
        d = self.d_model
        shapes = {"embed": (self.vocab, d), "position": (self.max_len, d)}
        for layer in range(1, self.layers + 1):
            for name in ("w_q", "w_k", "w_v", "w_o"):
                shapes[f"layer{layer}.{name}"] = (d, d)
        shapes["unembed"] = (d, self.endings)
        return shapes

    def trained(self, name: str) -> bool:
        """Whether weight ``name`` trains (the control's W_Q and W_K do not)."""
        return not (self.uniform and name.split(".")[-1] in FROZEN)

    def parameters(self) -> int:
        """The weights that train."""
        return sum(r * c for name, (r, c) in self.shapes().items() if self.trained(name))


def initial_weights(shape: Shape, seed: int) -> Weights:
    """N(0, 1 / fan-in) entries (embedding and positions: N(0, 1 / d)) from numpy's generator
    seeded with ``seed``: the model and its control start from the same draw, but the control's
    W_Q and W_K are zero."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    weights: Weights = {}
    for name, (rows, cols) in shape.shapes().items():
        fan_in = cols if name in ("embed", "position") else rows
        weights[name] = rng.standard_normal((rows, cols)) / math.sqrt(fan_in)
        if not shape.trained(name):
            weights[name] = np.zeros((rows, cols))
    return weights


def forward(
    weights: Mapping[str, Any], tokens: torch.Tensor, shape: Shape
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Scores (count, n, endings) and each layer's attention weights (count, heads, n, n)."""
    import torch

    from attn_cli.mechanisms import block

    n = tokens.shape[-1]
    x = weights["embed"][tokens] + weights["position"][:n]  # (count, n, d)
    patterns = []
    for layer in range(1, shape.layers + 1):
        w = tuple(weights[f"layer{layer}.{name}"] for name in ("w_q", "w_k", "w_v", "w_o"))
        parts = block.multi_head(x, x, w, shape.heads)
        patterns.append(torch.stack([head.weights for head in parts.heads], dim=1))
        x = block.residual(x, parts.output)  # (count, n, d)
    return x @ weights["unembed"], patterns


def _as_torch(weights: Weights, shape: Shape, grad: bool) -> dict[str, torch.Tensor]:
    import torch

    return {
        name: torch.tensor(value, dtype=torch.float32, requires_grad=grad and shape.trained(name))
        for name, value in weights.items()
    }


def by_length(sentences: Sequence[data.Sentence]) -> Iterator[list[data.Sentence]]:
    """The sentences in groups of one length (a batch needs no padding), shortest first."""
    groups: dict[int, list[data.Sentence]] = {}
    for sentence in sentences:
        groups.setdefault(len(sentence), []).append(sentence)
    for length in sorted(groups):
        yield groups[length]


@dataclass(frozen=True)
class Evaluation:
    """A model on sentences, in the order given: each word's predicted ending, and each layer's
    attention weights (heads, n, n) for each sentence, float64."""

    predicted: list[np.ndarray]  # per sentence (n,)
    patterns: list[list[np.ndarray]]  # per sentence, per layer (heads, n, n)

    def accuracy(self, sentences: Sequence[data.Sentence]) -> float:
        """The share of the words with a head whose ending is predicted right."""
        right = total = 0
        for sentence, predicted in zip(sentences, self.predicted, strict=True):
            endings = np.array(sentence.endings)
            asked = endings != data.NONE
            right += int(np.sum(predicted[asked] == endings[asked]))
            total += int(np.sum(asked))
        return right / total


def evaluate(weights: Weights, shape: Shape, sentences: Sequence[data.Sentence]) -> Evaluation:
    """Predicted endings and attention weights of the model ``weights`` on ``sentences``."""
    import torch

    tensors = _as_torch(weights, shape, grad=False)
    order = {id(sentence): i for i, sentence in enumerate(sentences)}
    predicted: list[Any] = [None] * len(sentences)
    patterns: list[Any] = [None] * len(sentences)
    with torch.no_grad():
        for group in by_length(sentences):
            logits, found = forward(tensors, torch.tensor([s.tokens for s in group]), shape)
            guesses = logits.argmax(dim=-1).numpy()  # (count, n)
            for row, sentence in enumerate(group):
                i = order[id(sentence)]
                predicted[i] = guesses[row]
                patterns[i] = [pattern[row].double().numpy() for pattern in found]
    return Evaluation(predicted, patterns)


def train(
    shape: Shape,
    start: Weights,
    batches: Sequence[Sequence[data.Sentence]],
    held_out: Sequence[data.Sentence],
    report: Report | None = None,
) -> Trained:
    """Adam on the cross-entropy of each asked ending (the words with a head), one batch per
    step; the held-out accuracy every EVALUATE_EVERY steps and last."""
    import torch

    def loss(weights: dict[str, torch.Tensor], batch: Sequence[data.Sentence]) -> torch.Tensor:
        tokens = torch.tensor([sentence.tokens for sentence in batch])  # (B, n)
        endings = torch.tensor([sentence.endings for sentence in batch])  # (B, n)
        logits, _ = forward(weights, tokens, shape)  # (B, n, endings)
        asked = endings != data.NONE
        return torch.nn.functional.cross_entropy(logits[asked], endings[asked])

    return training.train(
        _as_torch(start, shape, grad=True),
        batches,
        loss,
        lambda weights: evaluate(weights, shape, held_out).accuracy(held_out),
        learning_rate=LEARNING_RATE,
        every=EVALUATE_EVERY,
        report=report,
    )
