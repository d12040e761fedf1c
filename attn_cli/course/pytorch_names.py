"""PyTorch's names and layouts for attention weights, mapped to the lessons' own.

A ``state_dict`` stores nn.MultiheadAttention's query, key and value weights packed into one
``in_proj_weight`` of 3·E × E rows (or, when the keys or values are narrower or wider than the
queries, as ``q_proj_weight``, ``k_proj_weight`` and ``v_proj_weight``), and every nn.Linear's
weight as out × in: it computes x Wᵀ. The lessons write weights as the lectures do, d_in × d_out
(Q = X W_Q): each weight read is split and transposed, and each move is recorded (:class:`Move`)
so that the screen can say which key went where. What does not fit (a key missing, a key left
over, a shape that is not the module's) is collected (:class:`Problems`) and said in one line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from attn_cli.core.errors import UserError, param
from attn_cli.core.numbers import shape_text
from attn_cli.core.tensor_file import read_named_arrays

if TYPE_CHECKING:
    import numpy as np

LETTERS = "QKV"
# Keys of nn.MultiheadAttention this tool does not compute: learned extra key and value rows.
UNSUPPORTED = {
    "bias_k": "add_bias_kv=True's extra key row",
    "bias_v": "add_bias_kv=True's extra value row",
}


@dataclass(frozen=True)
class Move:
    """One array of the file, and what it became."""

    key: str  # the file's name, e.g. "layers.0.self_attn.in_proj_weight"
    parameter: str  # the lesson's, e.g. "W_Q" (of a stack's layer 2: "layer2.W_Q")
    how: str  # "rows 1–4, transposed", "transposed" or "as it is"


@dataclass
class Problems:
    """What does not fit a module's state_dict, said together in one line."""

    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    misshaped: list[str] = field(default_factory=list)

    def shaped(
        self, arrays: Mapping[str, np.ndarray], key: str, shape: tuple[int, ...], meaning: str
    ) -> bool:
        """Whether ``key`` is there with ``shape``; noted as missing or misshaped if not."""
        if key not in arrays:
            self.missing.append(key)
            return False
        got = arrays[key].shape
        if got != shape:
            self.misshaped.append(
                f"{key} is {shape_text(got)}, expected {meaning} = {shape_text(shape)}"
            )
            return False
        return True

    def check(self, where: str, module: str) -> None:
        """Raise the one line that names every problem, if there is any."""
        parts = []
        if self.missing:
            parts.append(f"missing {', '.join(self.missing)}")
        if self.extra:
            parts.append(f"unexpected {', '.join(self.extra)}")
        parts += self.misshaped
        if parts:
            raise UserError(
                f"{where} is not the state_dict of {module}: {'; '.join(parts)}. Save the "
                "module's own: torch.save(module.state_dict(), FILE)."
            )


def span(index: int, width: int) -> str:
    """The 1-based rows index·width + 1 … (index + 1)·width, as the screen writes them."""
    first, last = index * width + 1, (index + 1) * width
    return str(first) if first == last else f"{first}–{last}"


def attention(
    arrays: Mapping[str, np.ndarray],
    prefix: str,
    names: Mapping[str, str],
    sizes: tuple[int, int, int],
    bias: bool,
    problems: Problems,
    moves: list[Move],
) -> dict[str, np.ndarray]:
    """nn.MultiheadAttention's weights under ``prefix`` ("self_attn.", "" ...) as the lesson's:
    ``names`` maps W_Q … W_O, b_Q … b_O to the lesson's names for them. ``sizes``: embed_dim E
    (queries, and every output), kdim and vdim (the keys' and values' widths; E when equal)."""
    embed, kdim, vdim = sizes
    found: dict[str, np.ndarray] = {}
    packed = f"{prefix}in_proj_weight"
    if packed in arrays or (kdim == vdim == embed and f"{prefix}q_proj_weight" not in arrays):
        if problems.shaped(arrays, packed, (3 * embed, embed), "3·embed_dim × embed_dim"):
            for index, letter in enumerate(LETTERS):
                rows = arrays[packed][index * embed : (index + 1) * embed]
                found[names[f"W_{letter}"]] = rows.T
                moves.append(
                    Move(packed, names[f"W_{letter}"], f"rows {span(index, embed)}, transposed")
                )
    else:
        widths = {"Q": embed, "K": kdim, "V": vdim}
        for letter in LETTERS:
            key = f"{prefix}{letter.lower()}_proj_weight"
            meaning = f"embed_dim × {'embed_dim' if letter == 'Q' else letter.lower() + 'dim'}"
            if problems.shaped(arrays, key, (embed, widths[letter]), meaning):
                found[names[f"W_{letter}"]] = arrays[key].T
                moves.append(Move(key, names[f"W_{letter}"], "transposed"))
    out = f"{prefix}out_proj.weight"
    if problems.shaped(arrays, out, (embed, embed), "embed_dim × embed_dim"):
        found[names["W_O"]] = arrays[out].T
        moves.append(Move(out, names["W_O"], "transposed"))
    if bias:
        packed_bias = f"{prefix}in_proj_bias"
        if problems.shaped(arrays, packed_bias, (3 * embed,), "3·embed_dim"):
            for index, letter in enumerate(LETTERS):
                found[names[f"b_{letter}"]] = arrays[packed_bias][
                    index * embed : (index + 1) * embed
                ]
                moves.append(
                    Move(packed_bias, names[f"b_{letter}"], f"entries {span(index, embed)}")
                )
        out_bias = f"{prefix}out_proj.bias"
        if problems.shaped(arrays, out_bias, (embed,), "embed_dim"):
            found[names["b_O"]] = arrays[out_bias]
            moves.append(Move(out_bias, names["b_O"], "as it is"))
    return found


def attention_keys(arrays: Mapping[str, np.ndarray], prefix: str, bias: bool) -> set[str]:
    """The keys :func:`attention` reads under ``prefix`` (those the file has of the two ways of
    storing the projections, so that neither is counted as left over)."""
    keys = {f"{prefix}in_proj_weight", f"{prefix}out_proj.weight"}
    keys |= {f"{prefix}{letter.lower()}_proj_weight" for letter in LETTERS}
    if bias:
        keys |= {f"{prefix}in_proj_bias", f"{prefix}out_proj.bias"}
    return keys


def has_bias(arrays: Mapping[str, np.ndarray]) -> bool:
    """Whether a state_dict holds biases (a module built with bias=False has none)."""
    return any(key.endswith(("in_proj_bias", ".bias")) for key in arrays)


def unexpected(key: str) -> str:
    """A key left over, with why where the module has it but the lesson does not compute it."""
    leaf = key.rsplit(".", 1)[-1]
    reason = UNSUPPORTED.get(leaf)
    return f"{key} ({reason}, which attn does not compute)" if reason else key


Loaded = TypeVar("Loaded")
# What a lesson makes of a state_dict's arrays: (arrays, where, source) -> its loaded model;
# where names the parameter and the file for messages, source the file for the screen ("" given).
Build = Callable[[dict[str, "np.ndarray"], str, str], Loaded]


def load_state(source: Any, build: Build[Loaded], keyword: str = "weights") -> Loaded:
    """``build`` of the arrays of ``--weights`` (a path: a file, read once while it stays the
    same) or of ``weights=`` (a state_dict from Python); messages name it as the parameter
    ``keyword``."""
    if isinstance(source, str | Path):
        path = Path(source)
        try:
            stat = path.stat()
        except OSError:
            raise UserError(f"{param(keyword, path)}: no such file.") from None
        return _load_file(build, str(path), stat.st_size, stat.st_mtime_ns, keyword)
    if isinstance(source, Mapping):
        return build(
            read_named_arrays(source, keyword), f"{param(keyword)} (the state_dict given)", ""
        )
    raise UserError(
        f"{param(keyword)}: a {type(source).__name__} is neither a file name nor a state_dict; give a .pt, "
        ".safetensors or .npz file, or module.state_dict()."
    )


@functools.lru_cache(maxsize=8)
def _load_file(build: Build[Loaded], path: str, size: int, modified: int, keyword: str) -> Loaded:
    """A file, read once while it stays the same (its size and time are part of the key)."""
    return build(read_named_arrays(path, keyword), param(keyword, path), Path(path).name)
