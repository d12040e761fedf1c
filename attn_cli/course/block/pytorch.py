"""`attn block --weights FILE`: a PyTorch Transformer layer's state_dict as the lesson's weights.

Four modules are read: nn.TransformerEncoderLayer and nn.TransformerDecoderLayer (one layer),
nn.TransformerEncoder and nn.TransformerDecoder (``layers.0.`` … ``layers.{N-1}.``, each its own
weights, and ``norm.`` when the stack ends with a LayerNorm). The kind is read from the names:
``multihead_attn.`` is a decoder's cross-attention, ``layers.`` a stack, no ``.bias`` at all a
module built with bias=False. Each layer's arrays are mapped as attn_cli.course.pytorch_names
says (in_proj_weight split and transposed, nn.Linear's out × in transposed to d_in × d_out,
norm1/2/3 to γ_1, β_1 …). A file whose every name is the lesson's own (W_Q, W_1, gamma_1, ...)
is read as it is, as if each were given by hand.

A file is read once per process for each (path, size, modification time): a batch's items and
the lesson's checks read it from memory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attn_cli.core.errors import UserError, param
from attn_cli.course.block.card import CARD
from attn_cli.course.pytorch_names import (
    Move,
    Problems,
    attention,
    attention_keys,
    has_bias,
    load_state,
    unexpected,
)

if TYPE_CHECKING:
    import numpy as np

KEYWORD = "weights"
OWN_NAMES = frozenset(
    spec.name
    for spec in CARD.inputs
    if spec.name not in ("X", "Memory") and "mask" not in spec.name
)
ATTENTION_PARTS = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")
_LAYER = re.compile(r"layers\.(\d+)\.(.*)")


@dataclass(frozen=True)
class LoadedModel:
    """A Transformer layer (or stack) read from a state_dict, in the lesson's names."""

    where: str  # "--weights layer.pt" (what the messages name)
    source: str  # "layer.pt", or "the state_dict given" (what the screen names)
    module: str  # "nn.TransformerEncoderLayer", ..., or "attn's own names"
    decoder: bool
    bias: bool
    layers: tuple[dict[str, np.ndarray], ...]  # each layer's weights, by the lesson's names
    final: dict[str, np.ndarray]  # gamma_final and beta_final, when the stack has a last norm
    moves: tuple[Move, ...]  # which key went where ("" for the lesson's own names)
    d_model: int | None  # None: the lesson's own names, checked as inputs are
    d_ff: int | None
    stacked: bool = False  # nn.TransformerEncoder's names (layers.0. ...), even of one layer

    @property
    def own_names(self) -> bool:
        return self.module == "attn's own names"

    @property
    def width(self) -> int | None:
        """The d_model of the layer the file holds: a PyTorch module's, or in the lesson's own
        names the first weight's (W_2's columns, every other's rows but b_1's); None when it
        holds b_1 alone. A weight of another width is refused later, naming it."""
        if self.d_model is not None:
            return self.d_model
        for name, value in self.layers[0].items():
            if name == "W_2" and value.ndim == 2:
                return int(value.shape[1])
            if name != "b_1" and value.ndim >= 1:
                return int(value.shape[0])
        return None


def load(source: Any) -> LoadedModel:
    """The weights of ``--weights`` (a path) or of ``weights=`` (a state_dict from Python)."""
    return load_state(source, _loaded, KEYWORD)


def _loaded(arrays: dict[str, np.ndarray], where: str, source: str) -> LoadedModel:
    shown = source or "the state_dict given"
    if set(arrays) <= OWN_NAMES:
        return LoadedModel(
            where,
            shown,
            "attn's own names",
            decoder=any(name.endswith("_cross") for name in arrays),
            bias=any(name.startswith(("b_", "beta_")) for name in arrays),
            layers=(dict(arrays),),
            final={},
            moves=tuple(Move(name, name, "as it is") for name in arrays),
            d_model=None,
            d_ff=None,
        )
    if {"in_proj_weight", "q_proj_weight", "out_proj.weight"} & set(arrays):
        raise UserError(
            f"{where} is the state_dict of an nn.MultiheadAttention, not of a Transformer layer; "
            f"read it with attn multihead {param(KEYWORD, 'FILE')}."
        )
    stacked = any(_LAYER.fullmatch(key) for key in arrays)
    decoder = any("multihead_attn." in key for key in arrays)
    bias = has_bias(arrays)
    kind = "Decoder" if decoder else "Encoder"
    module = f"nn.Transformer{kind}" if stacked else f"nn.Transformer{kind}Layer"
    count = 1
    if stacked:
        indices = {int(found.group(1)) for key in arrays if (found := _LAYER.fullmatch(key))}
        count = max(indices) + 1
    prefixes = [f"layers.{index}." for index in range(count)] if stacked else [""]
    d_model, d_ff = _widths(arrays, prefixes[0])
    problems, moves = Problems(), list[Move]()
    expected: set[str] = set()
    layers = []
    for number, prefix in enumerate(prefixes, start=1):
        name = _namer(number if count > 1 else 0)
        layers.append(
            _layer(arrays, prefix, name, (d_model, d_ff), (decoder, bias), problems, moves)
        )
        expected |= _layer_keys(arrays, prefix, decoder, bias)
    final: dict[str, np.ndarray] = {}
    if stacked and "norm.weight" in arrays:
        _norm(arrays, "norm.", "final", d_model, bias, final, problems, moves)
        expected |= {"norm.weight", "norm.bias"} if bias else {"norm.weight"}
    problems.extra += [unexpected(key) for key in arrays if key not in expected]
    problems.check(where, module)
    return LoadedModel(
        where,
        shown,
        module,
        decoder,
        bias,
        tuple(layers),
        final,
        tuple(moves),
        d_model,
        d_ff,
        stacked,
    )


def _namer(layer: int) -> Any:
    """The lesson's name of a parameter of ``layer`` (0: the only layer, unprefixed)."""
    return (lambda name: f"layer{layer}.{name}") if layer else (lambda name: name)


def _widths(arrays: Mapping[str, np.ndarray], prefix: str) -> tuple[int, int]:
    """d_model and d_ff, read where the first layer keeps them (a missing key is said later)."""
    d_model = d_ff = 0
    for key, axis in (("self_attn.in_proj_weight", 1), ("norm1.weight", 0), ("linear1.weight", 1)):
        value = arrays.get(prefix + key)
        if value is not None and value.ndim > axis:
            d_model = int(value.shape[axis])
            break
    for key, axis in (("linear1.weight", 0), ("linear2.weight", 1), ("linear1.bias", 0)):
        value = arrays.get(prefix + key)
        if value is not None and value.ndim > axis:
            d_ff = int(value.shape[axis])
            break
    return d_model, d_ff


def _layer(
    arrays: Mapping[str, np.ndarray],
    prefix: str,
    name: Any,
    widths: tuple[int, int],
    kind: tuple[bool, bool],
    problems: Problems,
    moves: list[Move],
) -> dict[str, np.ndarray]:
    d_model, d_ff = widths
    decoder, bias = kind
    found: dict[str, np.ndarray] = {}
    sublayers = [("self_attn.", "")] + ([("multihead_attn.", "_cross")] if decoder else [])
    for module, suffix in sublayers:
        names = {part: name(part + suffix) for part in ATTENTION_PARTS}
        sizes = (d_model, d_model, d_model)
        found |= attention(arrays, prefix + module, names, sizes, bias, problems, moves)
    linears = (
        ("linear1", "1", (d_ff, d_model), "d_ff × d_model"),
        ("linear2", "2", (d_model, d_ff), "d_model × d_ff"),
    )
    for linear, number, shape, meaning in linears:
        key = f"{prefix}{linear}.weight"
        if problems.shaped(arrays, key, shape, meaning):
            found[name(f"W_{number}")] = arrays[key].T
            moves.append(Move(key, name(f"W_{number}"), "transposed"))
        key = f"{prefix}{linear}.bias"
        if bias and problems.shaped(arrays, key, (shape[0],), meaning.split(" × ")[0]):
            found[name(f"b_{number}")] = arrays[key]
            moves.append(Move(key, name(f"b_{number}"), "as it is"))
    for index in range(1, 4 if decoder else 3):
        _norm(
            arrays, f"{prefix}norm{index}.", name(str(index)), d_model, bias, found, problems, moves
        )
    return found


def _norm(
    arrays: Mapping[str, np.ndarray],
    prefix: str,
    which: str,
    d_model: int,
    bias: bool,
    found: dict[str, np.ndarray],
    problems: Problems,
    moves: list[Move],
) -> None:
    """LayerNorm ``prefix``'s weight and bias as gamma_WHICH and beta_WHICH (``which`` may carry
    its layer: "layer2.1" names layer2.gamma_1)."""
    layer, _, index = which.rpartition(".")
    gamma = f"{layer}.gamma_{index}" if layer else f"gamma_{index}"
    beta = f"{layer}.beta_{index}" if layer else f"beta_{index}"
    if problems.shaped(arrays, prefix + "weight", (d_model,), "d_model"):
        found[gamma] = arrays[prefix + "weight"]
        moves.append(Move(prefix + "weight", gamma, "as it is"))
    if bias and problems.shaped(arrays, prefix + "bias", (d_model,), "d_model"):
        found[beta] = arrays[prefix + "bias"]
        moves.append(Move(prefix + "bias", beta, "as it is"))


def _layer_keys(
    arrays: Mapping[str, np.ndarray], prefix: str, decoder: bool, bias: bool
) -> set[str]:
    """Every key one layer's mapping reads (so that the rest count as left over)."""
    keys = attention_keys(arrays, prefix + "self_attn.", bias)
    if decoder:
        keys |= attention_keys(arrays, prefix + "multihead_attn.", bias)
    for part in ("linear1", "linear2", "norm1", "norm2", *(("norm3",) if decoder else ())):
        keys.add(f"{prefix}{part}.weight")
        if bias:
            keys.add(f"{prefix}{part}.bias")
    return keys


def state_dict_of(
    parameters: Mapping[str, np.ndarray], layers: int, stacked: bool
) -> dict[str, np.ndarray]:
    """The walkthrough's parameters (W_Q, or layer2.W_Q for a stack's separate layers;
    gamma_final) as the PyTorch module's state_dict, in its names and layouts: the inverse of
    reading one. ``stacked``: nn.TransformerEncoder's names (``layers.0.``, ``norm.``)."""
    import numpy as np

    def get(layer: int, name: str) -> np.ndarray | None:
        """Layer ``layer``'s parameter (its own, or the one every layer shares), if it has it."""
        value = parameters.get(f"layer{layer}.{name}")
        return parameters.get(name) if value is None else value

    def need(layer: int, name: str) -> np.ndarray:
        value = get(layer, name)
        if value is None:
            raise KeyError(f"no {name} for layer {layer}")
        return value

    state: dict[str, np.ndarray] = {}
    decoder = any(name.endswith("_cross") for name in parameters)
    for layer in range(1, layers + 1):
        prefix = f"layers.{layer - 1}." if stacked else ""
        for module, suffix in (
            ("self_attn", ""),
            *((("multihead_attn", "_cross"),) if decoder else ()),
        ):
            weights = [need(layer, f"W_{letter}{suffix}") for letter in "QKVO"]
            state[f"{prefix}{module}.in_proj_weight"] = np.concatenate([w.T for w in weights[:3]])
            biases = [get(layer, f"b_{letter}{suffix}") for letter in "QKVO"]
            if all(bias is not None for bias in biases[:3]):
                state[f"{prefix}{module}.in_proj_bias"] = np.concatenate(
                    [need(layer, f"b_{letter}{suffix}") for letter in "QKV"]
                )
            state[f"{prefix}{module}.out_proj.weight"] = weights[3].T
            if biases[3] is not None:
                state[f"{prefix}{module}.out_proj.bias"] = biases[3]
        for number in ("1", "2"):
            state[f"{prefix}linear{number}.weight"] = need(layer, f"W_{number}").T
            bias = get(layer, f"b_{number}")
            if bias is not None:
                state[f"{prefix}linear{number}.bias"] = bias
        for index in range(1, 4 if decoder else 3):
            state[f"{prefix}norm{index}.weight"] = need(layer, f"gamma_{index}")
            beta = get(layer, f"beta_{index}")
            if beta is not None:
                state[f"{prefix}norm{index}.bias"] = beta
    if "gamma_final" in parameters:
        state["norm.weight"] = parameters["gamma_final"]
        if "beta_final" in parameters:
            state["norm.bias"] = parameters["beta_final"]
    return {key: np.ascontiguousarray(value) for key, value in state.items()}
