"""The block lesson's settings, read from its options, its inputs and a --weights file, and
checked together: each problem one line naming the option, the input or the file's key.

A state_dict holds weights only: the module's kind (encoder or decoder), its depth, whether it
has biases and a final LayerNorm, d_model and d_ff are read from its names and shapes, and an
option that says otherwise is refused; nhead, norm_first, the activation and ε are not in it and
come from the options (the screen says so).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.errors import UserError, param
from attn_cli.core.numbers import shape_text
from attn_cli.course.block import pytorch
from attn_cli.course.block.card import CARD
from attn_cli.course.checks import counted, kv_heads_option, whole_at_least
from attn_cli.mechanisms.block import ACTIVATIONS

ATTENTION_PARTS = pytorch.ATTENTION_PARTS
MASKS = ("key_padding_mask", "memory_key_padding_mask", "attn_mask", "attn_mask_float")
# The weights whose width says how many key/value heads there are (grouped-query attention).
KV_WEIGHTS = ("W_K", "W_V", "W_K_cross", "W_V_cross")


@dataclass(frozen=True)
class Settings:
    heads: int
    d_ff: int
    eps: float
    pre_norm: bool
    decoder: bool
    posenc: bool
    gamma_beta: bool
    activation: str = "relu"
    bias: bool = True
    causal: bool = False
    layers: int = 1
    shared: bool = False
    final_norm: bool = False
    model: pytorch.LoadedModel | None = None  # the --weights file's, read
    kv_heads: int | None = None  # key/value heads g (grouped-query attention); None: h

    @property
    def kv(self) -> int:
        """The key/value heads g: h, one per query head, unless grouped (--kv-heads)."""
        return self.heads if self.kv_heads is None else self.kv_heads

    def kv_width(self, d_model: int) -> int:
        """The columns of W_K and W_V: g·d_k (d_model when g = h)."""
        return d_model // self.heads * self.kv

    @property
    def norms(self) -> int:
        """LayerNorms per layer: two in the encoder, three in the decoder."""
        return 3 if self.decoder else 2

    def names(self) -> tuple[str, ...]:
        """One layer's parameters, in the order the screen lists them."""
        attention = [p for p in ATTENTION_PARTS if self.bias or p.startswith("W")]
        names = list(attention)
        if self.decoder:
            names += [f"{p}_cross" for p in attention]
        names += ["W_1", *(["b_1"] if self.bias else []), "W_2", *(["b_2"] if self.bias else [])]
        for index in range(1, self.norms + 1):
            names += [f"gamma_{index}", *([f"beta_{index}"] if self.bias else [])]
        return tuple(names)

    def final_names(self) -> tuple[str, ...]:
        if not self.final_norm:
            return ()
        return ("gamma_final", *(("beta_final",) if self.bias else ()))


def weights_given(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The weights given by hand (options, a lesson file, keywords): every input but the tokens,
    the memory and the masks."""
    return {name: value for name, value in inputs.items() if name in pytorch.OWN_NAMES}


def settings(options: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Settings:
    """The options, the inputs and the --weights file, checked against each other."""
    d_model = inputs["X"].shape[1]
    heads = whole_at_least(options.get("heads"), f"{param('heads')} (options.heads)")
    if d_model % heads:
        raise UserError(
            f"X has d_model = {d_model} columns, which {heads} heads cannot share: {param('heads')} must "
            f"divide d_model (each head gets d_model / h columns of W_Q, W_K and W_V)."
        )
    eps = options.get("eps")
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < math.inf:
        raise UserError(
            f"{param('eps', repr(eps))}: give LayerNorm's ε as a number > 0, such as 1e-5."
        )
    posenc = bool(options.get("posenc"))
    if posenc and d_model % 2:
        raise UserError(
            f"X has d_model = {d_model} columns, but the sinusoidal positional encoding fills "
            "two columns per frequency (a sine and a cosine): give an even d_model, or "
            f"{param('posenc', False)}."
        )
    activation = options.get("activation") or "relu"
    if activation not in ACTIVATIONS:
        raise UserError(
            f"{param('activation', repr(activation))}: give one of {', '.join(ACTIVATIONS)} (options.activation)."
        )
    model = None if options.get("weights") is None else pytorch.load(options["weights"])
    given = weights_given(inputs)
    if model is not None and given:
        flags = ", ".join(CARD.param(name) for name in given)
        raise UserError(f"{model.where} gives the weights; leave out {flags}.")
    if model is not None and model.own_names:
        given = dict(model.layers[0])  # a file of the lesson's own names: as if given by hand
    torch_model = model if model is not None and not model.own_names else None
    if torch_model is not None and torch_model.d_model != d_model:
        raise UserError(
            f"{torch_model.where} holds a layer of d_model = {torch_model.d_model} but X has "
            f"{d_model} columns: give X with {torch_model.d_model} columns ({param('x')}, or {param('n', 'N')})."
        )
    kv = _kv_heads(options.get("kv_heads"), given, (heads, d_model), model)
    decoder = _agree(options.get("decoder"), _held(torch_model, "decoder"), "decoder", torch_model)
    bias = _agree(options.get("bias"), _held(torch_model, "bias"), "bias", torch_model)
    stack = torch_model is not None and len(torch_model.layers) > 1
    layers = _layers(options, torch_model, bool(given) or model is not None, stack)
    final_norm = _agree(
        options.get("final_norm"),
        bool(torch_model.final) if torch_model is not None and torch_model.stacked else None,
        "final_norm",
        torch_model,
    )
    chosen = Settings(
        heads=heads,
        d_ff=_d_ff(options, given, torch_model, d_model),
        eps=float(eps),
        pre_norm=bool(options.get("pre_norm")),
        decoder=bool(decoder),
        posenc=posenc,
        gamma_beta=bool(options.get("gamma_beta")),
        activation=activation,
        bias=True if bias is None else bool(bias),
        causal=bool(decoder) if options.get("causal") is None else bool(options["causal"]),
        layers=layers,
        shared=bool(options.get("shared_weights")),
        final_norm=bool(final_norm),
        model=model,
        kv_heads=None if kv == heads else kv,
    )
    _check_given(chosen, given, d_model, model)
    return chosen


def _kv_heads(
    option: Any,
    given: Mapping[str, np.ndarray],
    sizes: tuple[int, int],
    model: pytorch.LoadedModel | None,
) -> int:
    """The key/value heads g: read from the width of W_K or W_V (or the cross-attention's)
    where given, g·d_k columns; else --kv-heads; else h. An option that disagrees with the
    weights is refused, as is g < h with a PyTorch state_dict (its attention has a key and a
    value head per query head)."""
    heads, d_model = sizes
    asked = kv_heads_option(option, heads)
    if model is not None and not model.own_names:
        if asked is not None and asked < heads:
            raise UserError(
                f"{param('kv_heads', asked)}: {model.where} holds an {model.module}, whose attention has "
                "a key and a value head per query head (PyTorch's Transformer layers have no "
                f"grouped-query heads); leave out {param('kv_heads')}, or save W_K and W_V, d_model × "
                "g·d_k, under the lesson's own names in an .npz or .safetensors file."
            )
        return heads
    d_k = d_model // heads
    for name in KV_WEIGHTS:
        value = given.get(name)
        if value is None or value.ndim != 2 or value.shape[0] != d_model:
            continue
        width = int(value.shape[1])
        if width % d_k or not 0 < width <= d_model or heads % (width // d_k):
            break  # a width no g gives: _check_given names it
        held = width // d_k
        if asked is not None and asked != held:
            where = f" (in {model.where})" if model is not None else ""
            raise UserError(
                f"{param('kv_heads', asked)} (yours, or the example's options.kv_heads) but "
                f"{CARD.param(name)}{where} is {shape_text(value.shape)}, so g = {held} "
                f"({width} columns = g·d_k, d_k = d_model / h = {d_k}); leave out {param('kv_heads')}."
            )
        return held
    return heads if asked is None else asked


def _held(model: pytorch.LoadedModel | None, what: str) -> bool | None:
    """What the file says of ``what`` ("decoder", "bias"), or None without a file."""
    return None if model is None else bool(getattr(model, what))


def _agree(option: Any, held: bool | None, keyword: str, model: pytorch.LoadedModel | None) -> Any:
    """The file's answer where it has one (an option that says otherwise is refused), else the
    option's (None: not given). An option set off is named as its door writes it (bias=False,
    --no-bias)."""
    if model is None or held is None:
        return option
    if option is not None and bool(option) != held:
        said = param(keyword) if option else param(keyword, False)
        has = {
            "decoder": "a decoder" if held else "an encoder",
            "bias": "biases" if held else "no biases (bias=False)",
            "final_norm": "a final LayerNorm (norm.)" if held else "no final LayerNorm",
        }[keyword]
        raise UserError(f"{said}: {model.where} holds {has} ({model.module}); leave out {said}.")
    return held


def _layers(
    options: Mapping[str, Any], model: pytorch.LoadedModel | None, given: bool, stack: bool
) -> int:
    asked = options.get("layers")
    if asked is not None:
        asked = whole_at_least(asked, f"{param('layers')} (options.layers)")
    if stack and model is not None:
        held = len(model.layers)
        if asked is not None and asked != held:
            raise UserError(
                f"{param('layers', asked)}: {model.where} holds {held} layers; leave it out."
            )
        if options.get("shared_weights"):
            raise UserError(
                f"{param('shared_weights')}: {model.where} holds each layer's own weights; leave it out."
            )
        return held
    layers = asked or 1
    if layers > 1 and given and not options.get("shared_weights"):
        where = model.where if model is not None else "the weights given by hand"
        raise UserError(
            f"{param('layers', layers)}: {where} are one layer's; add {param('shared_weights')} to use them in "
            "every layer (separate weights per layer come from an nn.TransformerEncoder's "
            "state_dict, or are drawn)."
        )
    return layers


def _d_ff(
    options: Mapping[str, Any],
    given: Mapping[str, np.ndarray],
    model: pytorch.LoadedModel | None,
    d_model: int,
) -> int:
    """W_1's columns (or W_2's rows) when given, the file's, the option's, else
    4 × d_model; an option that disagrees with the weights is refused."""
    asked = options.get("d_ff")
    if asked is not None:
        asked = whole_at_least(asked, f"{param('d_ff')} (options.d_ff)")
    held, where = None, ""
    if model is not None:
        held, where = model.d_ff, f"{model.where} holds d_ff = {model.d_ff}"
    for name, axis in (("W_1", 1), ("W_2", 0)):
        if name in given and given[name].ndim > axis:
            held = int(given[name].shape[axis])
            where = f"{CARD.param(name)} is {shape_text(given[name].shape)}, so d_ff = {held}"
            break
    if held is None:
        return int(asked) if asked is not None else 4 * d_model
    if asked is not None and asked != held:
        raise UserError(
            f"{param('d_ff', asked)} (yours, or the example's options.d_ff) but {where}; leave out {param('d_ff')}."
        )
    return held


def expected_shapes(s: Settings, d_model: int) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each weight's shape, and the shape in words (W_K, W_V and their biases g·d_k wide with
    grouped-query heads)."""
    square = ((d_model, d_model), "d_model × d_model")
    wide = ((d_model,), "d_model")
    kv_width = s.kv_width(d_model)
    narrow = ((d_model, kv_width), "d_model × g·d_k") if s.kv < s.heads else square
    narrow_bias = ((kv_width,), "g·d_k") if s.kv < s.heads else wide
    shapes: dict[str, tuple[tuple[int, ...], str]] = {}
    for suffix in ("", "_cross"):
        for part in ATTENTION_PARTS:
            grouped = part[-1] in "KV"
            if part.startswith("W"):
                shapes[part + suffix] = narrow if grouped else square
            else:
                shapes[part + suffix] = narrow_bias if grouped else wide
    shapes["W_1"] = ((d_model, s.d_ff), "d_model × d_ff")
    shapes["b_1"] = ((s.d_ff,), "d_ff")
    shapes["W_2"] = ((s.d_ff, d_model), "d_ff × d_model")
    shapes["b_2"] = wide
    for index in ("1", "2", "3", "final"):
        shapes[f"gamma_{index}"] = shapes[f"beta_{index}"] = wide
    return shapes


def _check_given(
    s: Settings,
    given: Mapping[str, np.ndarray],
    d_model: int,
    model: pytorch.LoadedModel | None,
) -> None:
    """Weights given by hand (or under the lesson's own names in a file): each one the layer
    has, of its shape; every misshaped one named in one line."""
    where = f" (in {model.where})" if model is not None else ""
    usable = set(s.names()) | set(s.final_names())
    for name in given:
        if name in usable:
            continue
        flag = CARD.param(name) + where
        if name.endswith("_cross") or name.endswith("_3"):
            raise UserError(
                f"{flag} belongs to the decoder's layer; add {param('decoder')} or leave it out."
            )
        if name.endswith("_final"):
            raise UserError(
                f"{flag} is the final LayerNorm's; add {param('final_norm')} or leave it out."
            )
        raise UserError(
            f"{flag} is a bias, but {param('bias', False)} leaves every bias out; leave it out."
        )
    shapes = expected_shapes(s, d_model)
    wrong = []
    d_k = d_model // s.heads
    for name, value in given.items():
        shape, words = shapes[name]
        if value.shape != shape:
            what = "has" if value.ndim == 1 else "is"
            got = f"{value.shape[0]} entries" if value.ndim == 1 else shape_text(value.shape)
            why = ""
            part = name.removesuffix("_cross")
            if part in ("W_K", "W_V", "b_K", "b_V") and s.kv < s.heads:
                why = (
                    f" (g = {counted(s.kv, 'key/value head')} of d_k = d_model / h = "
                    f"{counted(d_k, 'column')})"
                )
            elif part in ("W_K", "W_V"):
                why = (
                    f" (or g·d_k columns for g key/value heads, g dividing h: {param('kv_heads')})"
                )
            wrong.append(
                f"{CARD.param(name)}{where} {what} {got} but must be {words} = "
                f"{shape_text(shape)}{why}"
            )
    if wrong:
        raise UserError("; ".join(wrong) + ".")


def check_masks(inputs: Mapping[str, np.ndarray], s: Settings) -> None:
    """The masks fit the tokens (n), the memory (m) and PyTorch's conventions."""
    n = inputs["X"].shape[0]
    m = inputs["Memory"].shape[0] if "Memory" in inputs else n
    if "attn_mask" in inputs and "attn_mask_float" in inputs:
        raise UserError(
            f"{param('attn_mask')} and {param('attn_mask_float')} are two spellings of PyTorch's one attn_mask; "
            "give one of them."
        )
    if "memory_key_padding_mask" in inputs and not s.decoder:
        raise UserError(
            f"{CARD.param('memory_key_padding_mask')} pads the memory, which only the decoder "
            f"reads; add {param('decoder')} or leave it out."
        )
    sizes = {
        "key_padding_mask": ((n,), "n, one per token"),
        "memory_key_padding_mask": ((m,), "m, one per memory row"),
        "attn_mask": ((n, n), "n × n"),
        "attn_mask_float": ((n, n), "n × n"),
    }
    for name in MASKS:
        if name not in inputs:
            continue
        value = inputs[name]
        shape, words = sizes[name]
        if value.shape != shape:
            got = (
                f"has {counted(value.size, 'entry', 'entries')}"
                if value.ndim == 1
                else f"is {shape_text(value.shape)}"
            )
            raise UserError(f"{CARD.param(name)} {got} but must be {words} = {shape_text(shape)}.")
        if name != "attn_mask_float" and not np.all((value == 0) | (value == 1)):
            raise UserError(
                f"{CARD.param(name)} holds {_first_other(value)}: a boolean mask is 0 or 1 (1 = "
                f"masked, PyTorch's True); an additive mask is {param('attn_mask_float')}."
            )
        if name == "attn_mask_float" and np.any(np.isposinf(value)):
            raise UserError(f"{CARD.param(name)} holds +inf; an additive mask blocks with -inf.")


def _first_other(value: np.ndarray) -> str:
    other = value[(value != 0) & (value != 1)]
    return f"{float(other[0]):g}"
