"""Every parameter of the block lesson's layers: given by hand, read from a --weights file, drawn
from --seed, or PyTorch's initial value; and where each came from, for the screen.

The draws come from child streams of numpy's default_rng(seed), each its own, so that a weight
drawn is the same whichever others are given: layer 1's weights from child 0 (attn multihead's
stream: the same W_Q, W_K, W_V, W_O for the same seed), the memory from child 1, layer 1's
LayerNorms (with --gamma-beta) from child 2, the final LayerNorm's from child 3, and layer k ≥ 2's
weights and LayerNorms from children 2k and 2k + 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.errors import UserError, param
from attn_cli.core.numbers import shape_text
from attn_cli.course.block.settings import Settings, weights_given
from attn_cli.course.pytorch_names import Move

LETTERS = "QKVO"
# What the screen says of a parameter that is PyTorch's initial value.
INITIAL = {
    "b": "0, PyTorch's initial value",
    "gamma": "1, PyTorch's initial value",
    "beta": "0, PyTorch's initial value",
}


@dataclass(frozen=True)
class Parameter:
    value: np.ndarray
    source: str  # "given", "file", "drawn" or "initial"
    origin: str  # where from, in words: "drawn, random seed 0", "layer.pt: linear1.weight, ..."
    key: str = ""  # the file's key it was read from
    how: str = ""  # and how: "rows 1–4, transposed"


@dataclass(frozen=True)
class Stack:
    """Each layer's parameters (by the layer's own names: W_Q, gamma_1, ...) and the final
    LayerNorm's; ``shared``: one set, used by every layer."""

    layers: tuple[dict[str, Parameter], ...]
    final: dict[str, Parameter]
    shared: bool

    def named(self) -> dict[str, Parameter]:
        """Every parameter by the name the walkthrough lists it under: W_Q for one layer (or
        weights every layer shares), layer2.W_Q for a stack's separate layers."""
        if len(self.layers) == 1 or self.shared:
            named = dict(self.layers[0])
        else:
            named = {
                f"layer{index}.{name}": parameter
                for index, layer in enumerate(self.layers, start=1)
                for name, parameter in layer.items()
            }
        return {**named, **self.final}

    def sources(self) -> set[str]:
        return {parameter.source for parameter in self.named().values()}


def child(seed: int, index: int) -> np.random.Generator:
    """Child stream ``index`` of numpy's default_rng(seed): default_rng(seed).spawn(index + 1)
    [index], made directly from its spawn key (spawning them all made a stack of L layers
    draw O(L²) streams: 100 layers spent 5 s there)."""
    if seed < 0:
        raise UserError(f"{param('seed', seed)}: give a seed of 0 or more.")
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))


def draw_weights(
    seed: int,
    d_model: int,
    d_ff: int,
    decoder: bool,
    layer: int = 1,
    kv_width: int | None = None,
) -> dict[str, np.ndarray]:
    """A layer's weights, in this order from its stream (layer 1: default_rng(seed).spawn(1)[0]):
    self-attention's W_Q, W_K, W_V, W_O (d_model × d_model, N(0, 1/d_model): attn multihead's
    for the same seed), with the decoder cross-attention's four, then W_1 (d_model × d_ff) and
    b_1 (d_ff,) with N(0, 1/d_model) entries, W_2 (d_ff × d_model) and b_2 (d_model,) with
    N(0, 1/d_ff) entries: each layer's outputs keep about the scale of its inputs.

    ``kv_width`` g·d_k (grouped-query attention: None is d_model): W_K and W_V (and the
    cross-attention's) are cut to their first g blocks of d_k columns after the draw, so every
    other weight of the seed stays what it is with h key/value heads (as attn multihead cuts)."""
    rng = child(seed, 0 if layer == 1 else 2 * layer)
    weights: dict[str, np.ndarray] = {}
    for suffix in ("", "_cross") if decoder else ("",):
        for letter in LETTERS:
            drawn = rng.standard_normal((d_model, d_model)) / math.sqrt(d_model)
            weights[f"W_{letter}{suffix}"] = drawn if letter in "QO" else drawn[:, :kv_width]
    weights["W_1"] = rng.standard_normal((d_model, d_ff)) / math.sqrt(d_model)
    weights["b_1"] = rng.standard_normal(d_ff) / math.sqrt(d_model)
    weights["W_2"] = rng.standard_normal((d_ff, d_model)) / math.sqrt(d_ff)
    weights["b_2"] = rng.standard_normal(d_model) / math.sqrt(d_ff)
    return weights


def draw_norms(
    seed: int, d_model: int, which: tuple[str, ...], drawn: bool, layer: int = 1
) -> dict[str, np.ndarray]:
    """γ and β of each LayerNorm ``which`` ("1", "2", ... or "final"): 1 and 0 (nn.LayerNorm's
    initial values), or with --gamma-beta γ = 1 + N(0, 0.1²), β = N(0, 0.1²), drawn in order
    from the stream of the layer's norms (layer 1's: default_rng(seed).spawn(3)[2]; the final
    LayerNorm's: child 3)."""
    index = 3 if which == ("final",) else (2 if layer == 1 else 2 * layer + 1)
    rng = child(seed, index)
    norms: dict[str, np.ndarray] = {}
    for name in which:
        gamma, beta = np.ones(d_model), np.zeros(d_model)
        if drawn:
            gamma = gamma + 0.1 * rng.standard_normal(d_model)
            beta = 0.1 * rng.standard_normal(d_model)
        norms[f"gamma_{name}"], norms[f"beta_{name}"] = gamma, beta
    return norms


def draw_memory(seed: int, m: int, d_model: int) -> np.ndarray:
    """The memory when none is given: N(0, 1) entries from default_rng(seed).spawn(2)[1]."""
    return child(seed, 1).standard_normal((m, d_model))


def drawn_value(name: str, seed: int, s: Settings, d_model: int) -> np.ndarray:
    """What --seed draws for the parameter the walkthrough lists as ``name`` (layer2.W_Q, W_1,
    gamma_final ...): the claims recompute a drawn parameter with it."""
    layer_text, _, own = name.rpartition(".")
    layer = int(layer_text.removeprefix("layer")) if layer_text else 1
    if own.startswith(("gamma_", "beta_")):
        which = own.split("_", 1)[1]
        group = ("final",) if which == "final" else tuple(str(i) for i in range(1, s.norms + 1))
        return draw_norms(seed, d_model, group, s.gamma_beta, layer)[own]
    return draw_weights(seed, d_model, s.d_ff, s.decoder, layer, s.kv_width(d_model))[own]


def resolve(inputs: dict[str, np.ndarray], s: Settings, seed: int, d_model: int) -> Stack:
    """Every layer's parameters: the file's, then the ones given, then the drawn or initial."""
    model = s.model
    given = weights_given(inputs)
    moves: dict[str, Move] = {}
    source = ""
    if model is not None:
        given = {} if not model.own_names else dict(model.layers[0])
        moves = {move.parameter: move for move in model.moves}
        source = model.source
    count = 1 if s.shared else s.layers
    layers = []
    for index in range(1, count + 1):
        if model is not None and not model.own_names:
            held = model.layers[min(index, len(model.layers)) - 1]
            prefix = f"layer{index}." if len(model.layers) > 1 else ""
            layer = {
                name: _read(held[prefix + name], moves[prefix + name], source) for name in s.names()
            }
        else:
            layer = _layer(given, s, seed, d_model, index, (moves, source))
        layers.append(layer)
    final = _final(given, s, seed, d_model, (moves, source))
    if model is not None and model.final:
        final = {name: _read(model.final[name], moves[name], source) for name in s.final_names()}
    return Stack(tuple(layers), final, shared=s.shared and s.layers > 1)


def _read(value: np.ndarray, move: Move, source: str) -> Parameter:
    """A parameter read from a file: which key, and how it was split or transposed."""
    return Parameter(value, "file", f"{source}: {move.key}, {move.how}", move.key, move.how)


def _given(value: np.ndarray, name: str, read: tuple[dict[str, Move], str]) -> Parameter:
    """A parameter given by hand, or under its own name in a file."""
    moves, source = read
    if name in moves:
        return _read(value, moves[name], source)
    return Parameter(value, "given", "given")


def _layer(
    given: dict[str, np.ndarray],
    s: Settings,
    seed: int,
    d_model: int,
    index: int,
    read: tuple[dict[str, Move], str],
) -> dict[str, Parameter]:
    kv_width = s.kv_width(d_model)
    drawn = draw_weights(seed, d_model, s.d_ff, s.decoder, index, kv_width)
    which = tuple(str(i) for i in range(1, s.norms + 1))
    norms = draw_norms(seed, d_model, which, s.gamma_beta, index)
    seeded = f"drawn, random seed {seed}"
    layer = {}
    for name in s.names():
        if name in given:
            layer[name] = _given(given[name], name, read)
        elif name in drawn:
            layer[name] = Parameter(drawn[name], "drawn", seeded)
        elif name in norms and s.gamma_beta:
            layer[name] = Parameter(norms[name], "drawn", seeded)
        elif name in norms:
            layer[name] = Parameter(norms[name], "initial", INITIAL[name.split("_")[0]])
        else:  # an attention bias: nn.MultiheadAttention starts them at 0
            width = kv_width if name.removesuffix("_cross") in ("b_K", "b_V") else d_model
            layer[name] = Parameter(np.zeros(width), "initial", INITIAL["b"])
    return layer


def _final(
    given: dict[str, np.ndarray],
    s: Settings,
    seed: int,
    d_model: int,
    read: tuple[dict[str, Move], str],
) -> dict[str, Parameter]:
    norms = draw_norms(seed, d_model, ("final",), s.gamma_beta)
    final = {}
    for name in s.final_names():
        if name in given:
            final[name] = _given(given[name], name, read)
        elif s.gamma_beta:
            final[name] = Parameter(norms[name], "drawn", f"drawn, random seed {seed}")
        else:
            final[name] = Parameter(norms[name], "initial", INITIAL[name.split("_")[0]])
    return final


def records(stack: Stack) -> list[dict[str, Any]]:
    """The parameters step: each parameter, its shape and where it came from."""
    rows = []
    named = stack.named()
    from_file = any(parameter.source == "file" for parameter in named.values())
    for name, parameter in named.items():
        layer, _, own = name.rpartition(".")
        row: dict[str, Any] = {}
        if len(stack.layers) > 1 or stack.shared:
            row["layer"] = (
                layer.removeprefix("layer")
                if layer
                else ("last" if own.endswith("_final") else "every")
            )
        row |= {"parameter": own, "shape": shape_text(parameter.value.shape)}
        if parameter.source == "file":
            source = parameter.origin.split(": ", 1)[0]
            row |= {"source": source, "key": parameter.key, "how": parameter.how}
        else:
            row["source"] = parameter.origin
            if from_file:
                row |= {"key": "", "how": ""}
        rows.append(row)
    return rows
