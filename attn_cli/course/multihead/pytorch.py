"""`attn multihead --weights FILE`: an nn.MultiheadAttention's state_dict as the lesson's weights.

Its query, key and value weights come packed in ``in_proj_weight`` (3·E × E), or, when the keys
or values have their own widths (kdim, vdim), as ``q_proj_weight`` (E × E), ``k_proj_weight``
(E × kdim) and ``v_proj_weight`` (E × vdim); ``out_proj.weight`` is E × E, and with bias=True
``in_proj_bias`` (3·E) and ``out_proj.bias`` (E). Each is split and transposed to the lesson's
d_in × d_out (attn_cli.course.pytorch_names.attention), each move recorded. A file is read once
per process while it stays the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attn_cli.core.errors import UserError, param
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
NAMES = {name: name for name in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")}


@dataclass(frozen=True)
class LoadedAttention:
    where: str  # "--weights mha.pt"
    source: str  # "mha.pt", or "the state_dict given"
    weights: dict[str, np.ndarray]  # W_Q … b_O, the lesson's names and layouts
    moves: tuple[Move, ...]
    packed: bool  # in_proj_weight (kdim = vdim = embed_dim), or q/k/v_proj_weight

    def origin(self, name: str) -> str:
        """Where parameter ``name`` came from, in words."""
        move = next(move for move in self.moves if move.parameter == name)
        return f"{self.source}: {move.key}, {move.how}"


def load(source: Any) -> LoadedAttention:
    """The weights of ``--weights`` (a path) or of ``weights=`` (a state_dict from Python)."""
    return load_state(source, _loaded, KEYWORD)


def _loaded(arrays: dict[str, np.ndarray], where: str, source: str) -> LoadedAttention:
    if any(key.startswith(("self_attn.", "layers.", "linear1.")) for key in arrays):
        raise UserError(
            f"{where} is the state_dict of a Transformer layer, not of an nn.MultiheadAttention; "
            f"read it with attn block {param(KEYWORD, 'FILE')}."
        )
    packed = "in_proj_weight" in arrays or "q_proj_weight" not in arrays
    embed = _width(arrays, "out_proj.weight", 0) or _width(arrays, "q_proj_weight", 0)
    if packed and not embed:
        embed = _width(arrays, "in_proj_weight", 1)
    kdim = embed if packed else _width(arrays, "k_proj_weight", 1)
    vdim = embed if packed else _width(arrays, "v_proj_weight", 1)
    bias = has_bias(arrays)
    problems, moves = Problems(), list[Move]()
    weights = attention(arrays, "", NAMES, (embed, kdim, vdim), bias, problems, moves)
    expected = attention_keys(arrays, "", bias)
    problems.extra += [unexpected(key) for key in arrays if key not in expected]
    problems.check(where, "nn.MultiheadAttention")
    return LoadedAttention(where, source or "the state_dict given", weights, tuple(moves), packed)


def _width(arrays: Mapping[str, np.ndarray], key: str, axis: int) -> int:
    value = arrays.get(key)
    return int(value.shape[axis]) if value is not None and value.ndim > axis else 0


def state_dict_of(weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The lesson's W_Q … b_O as nn.MultiheadAttention's state_dict: packed when W_Q, W_K and
    W_V have as many rows (kdim = vdim = embed_dim), else q/k/v_proj_weight; the biases (all four,
    a missing one as 0) when any is given."""
    import numpy as np

    w_q, w_k, w_v, w_o = (weights[f"W_{letter}"] for letter in "QKVO")
    state: dict[str, np.ndarray] = {}
    if w_q.shape[0] == w_k.shape[0] == w_v.shape[0]:
        state["in_proj_weight"] = np.concatenate([w_q.T, w_k.T, w_v.T])
    else:
        state |= {"q_proj_weight": w_q.T, "k_proj_weight": w_k.T, "v_proj_weight": w_v.T}
    if any(f"b_{letter}" in weights for letter in "QKVO"):
        zero = np.zeros(w_q.shape[1])
        state["in_proj_bias"] = np.concatenate(
            [weights.get(f"b_{letter}", zero) for letter in "QKV"]
        )
    state["out_proj.weight"] = w_o.T
    if "in_proj_bias" in state:
        state["out_proj.bias"] = weights.get("b_O", zero)
    return {key: np.ascontiguousarray(value) for key, value in state.items()}
