"""The attention-only Transformer of `attn learn induction`, and its training (torch).

The model (Elhage et al., 2021, "A mathematical framework for Transformer circuits"): tokens
embedded, learned position vectors added, then ``layers`` attention layers, each adding its
multi-head self-attention to the stream (no MLP, no LayerNorm), then the unembedding:

    X_0 = E[x] + P                                   (T, d)
    X_l = X_{l-1} + MultiHead_l(X_{l-1})             causal, h heads of d / h
    logits = X_L W_U                                  (T, vocab)

MultiHead is the one of `attn block` (attn_cli.mechanisms.block.multi_head, run on torch tensors
so that autograd sees it) with the causal mask of `attn causal`; the residual sum is the block's
too. The block's FFN and LayerNorm are left out: an attention-only model is the smallest one in
which an induction head forms, and every head's part of the output stays a sum one can read.
The position vectors are learned, not the block's sinusoids: with the sinusoids the same budget
left the induction head half formed (prefix-matching about 0.6 where learned ones give 0.9).

The initial weights are drawn by numpy from the seed, so the "before training" pictures do not
depend on the torch version; the training runs in torch, float32, on the CPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.learn import induction_data as data
from attn_cli.learn import training
from attn_cli.learn.training import Report, Trained, Weights

if TYPE_CHECKING:
    import torch

HEADS = 2  # heads per layer
BATCH = 64  # sequences per training step
LEARNING_RATE = 1e-2  # Adam's
EVALUATE_EVERY = 50  # steps between held-out evaluations (the curve and the progress bar)


@dataclass(frozen=True)
class Shape:
    """The sizes of a model: layers, width, vocabulary, longest sequence."""

    layers: int
    d_model: int
    max_len: int  # the longest segment: sequences have at most 2 max_len tokens
    vocab: int = data.VOCAB
    heads: int = HEADS

    @property
    def positions(self) -> int:
        return 2 * self.max_len

    def shapes(self) -> dict[str, tuple[int, int]]:
        """Every weight's name and shape (row convention: X W)."""
        d = self.d_model
        shapes = {"embed": (self.vocab, d), "position": (self.positions, d)}
        for layer in range(1, self.layers + 1):
            for name in ("w_q", "w_k", "w_v", "w_o"):
                shapes[f"layer{layer}.{name}"] = (d, d)
        shapes["unembed"] = (d, self.vocab)
        return shapes

    def parameters(self) -> int:
        return sum(rows * cols for rows, cols in self.shapes().values())


def initial_weights(shape: Shape, seed: int) -> Weights:
    """N(0, 1 / fan-in) entries (embedding and positions: N(0, 1 / d)), from numpy's generator
    seeded with (seed, layers): the two models of one seed start from different draws."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, shape.layers]))
    weights: Weights = {}
    for name, (rows, cols) in shape.shapes().items():
        fan_in = cols if name in ("embed", "position") else rows
        weights[name] = rng.standard_normal((rows, cols)) / math.sqrt(fan_in)
    return weights


# --- the forward pass ------------------------------------------------------------------------


def forward(
    weights: Mapping[str, Any], tokens: torch.Tensor, shape: Shape
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits (count, T, vocab) and each layer's attention weights (count, heads, T, T)."""
    import torch

    from attn_cli.mechanisms import block, masks

    t = tokens.shape[-1]
    x = weights["embed"][tokens] + weights["position"][:t]  # (count, T, d)
    mask = masks.causal_additive(torch.zeros(t, t, dtype=x.dtype))  # (T, T): -inf above
    patterns = []
    for layer in range(1, shape.layers + 1):
        w = tuple(weights[f"layer{layer}.{name}"] for name in ("w_q", "w_k", "w_v", "w_o"))
        parts = block.multi_head(x, x, w, shape.heads, mask)
        patterns.append(torch.stack([head.weights for head in parts.heads], dim=1))  # (c, h, T, T)
        x = block.residual(x, parts.output)  # (count, T, d)
    return x @ weights["unembed"], patterns  # (count, T, vocab)


def without_heads(weights: Weights, shape: Shape, heads: Iterable[tuple[int, int]]) -> Weights:
    """The model with each ``(layer, head)`` (both 1-based) ablated: its rows of W_O zeroed, so
    that the head adds nothing to the stream and every other weight is kept."""
    d_k = shape.d_model // shape.heads
    ablated = {name: value.copy() for name, value in weights.items()}
    for layer, head in heads:
        ablated[f"layer{layer}.w_o"][(head - 1) * d_k : head * d_k, :] = 0.0
    return ablated


def _as_torch(weights: Weights, grad: bool) -> dict[str, torch.Tensor]:
    import torch

    return {
        name: torch.tensor(value, dtype=torch.float32, requires_grad=grad)
        for name, value in weights.items()
    }


@dataclass(frozen=True)
class Evaluation:
    """A model on sequences it never trained on."""

    accuracy: float  # on the predictable tokens (the second half but its last)
    patterns: list[np.ndarray]  # per layer (count, heads, T, T), float64
    predicted: np.ndarray  # (count, T) the most likely next token at each position


def evaluate(weights: Weights, shape: Shape, sequences: data.Sequences) -> Evaluation:
    """Accuracy and attention weights of the model ``weights`` on ``sequences``."""
    import torch

    with torch.no_grad():
        logits, patterns = forward(
            _as_torch(weights, grad=False), torch.from_numpy(sequences.tokens), shape
        )
    predicted = logits.argmax(dim=-1).numpy()  # (count, T)
    return Evaluation(
        data.accuracy(predicted, sequences),
        [pattern.double().numpy() for pattern in patterns],
        predicted,
    )


# --- training --------------------------------------------------------------------------------


def train(shape: Shape, start: Weights, split: data.Split, report: Report | None = None) -> Trained:
    """Adam on the next-token cross-entropy of every real position (not the padding), one batch
    of ``split.batches`` per step; the held-out accuracy every EVALUATE_EVERY steps and last."""
    import torch

    def loss(weights: dict[str, torch.Tensor], batch: data.Sequences) -> torch.Tensor:
        tokens = torch.from_numpy(batch.tokens)  # (B, T)
        logits, _ = forward(weights, tokens, shape)  # (B, T, vocab)
        # Position t predicts x_{t+1}, for t = 0 … 2L-2: the last real token predicts nothing.
        real = torch.from_numpy(batch.real()[:, 1:])  # (B, T-1): the target x_{t+1} is real
        return torch.nn.functional.cross_entropy(logits[:, :-1][real], tokens[:, 1:][real])

    return training.train(
        _as_torch(start, grad=True),
        split.batches,
        loss,
        lambda weights: evaluate(weights, shape, split.held_out).accuracy,
        learning_rate=LEARNING_RATE,
        every=EVALUATE_EVERY,
        report=report,
    )
