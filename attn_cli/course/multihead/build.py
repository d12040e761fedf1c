"""The multi-head lesson: h heads on column blocks of W_Q, W_K, W_V, concatenated, projected.

Both conventions: the transformer paper's square d_model × d_model weights, and Raschka's
book's MultiHeadAttention (d_in → d_out, biases on the projections, causal, out_proj with a bias;
its wrapper has no W_O at all). ``causal`` and ``valid_len`` add the masks every head shares.
The keys and values may come from sequences of their own (X_K, X_V: cross-attention, PyTorch's
nn.MultiheadAttention(query, key, value) with kdim and vdim), and the weights from an
nn.MultiheadAttention's state_dict (--weights, attn_cli.course.multihead.pytorch).

``kv_heads`` g < h is grouped-query attention (GQA; g = 1: multi-query, MQA): W_K and W_V have
g blocks of d_k columns, one per key/value head, and query head i uses key/value head
⌊i / (h/g)⌋ (from 0), as PyTorch's scaled_dot_product_attention(enable_gqa=True) and Hugging
Face's repeat_kv pair them. Weights drawn from --seed are those of h heads with W_K and W_V cut
to their first g blocks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from attn_cli.core.backend import namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import InputValue, Note, Part, Walkthrough
from attn_cli.course import dropout, padding, score_transforms
from attn_cli.course.checks import (
    column_names,
    counted,
    is_whole,
    kv_heads_option,
    row_names,
    whole_at_least,
)
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.multihead import pytorch
from attn_cli.course.multihead.card import CARD
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import masks, scoring
from attn_cli.mechanisms import multihead as mh

WEIGHT_NAMES = ("W_Q", "W_K", "W_V", "W_O")
PROJECTIONS = ("W_Q", "W_K", "W_V")
BIAS_OF = {"W_Q": "b_Q", "W_K": "b_K", "W_V": "b_V", "W_O": "b_O"}
# Per head: scores, scaled, masked, softmax intermediates (e^s by hand among them) and weights,
# (n × n) each.
_SCORE_MATRICES = 8
_MASK_MATRICES = 5  # M, P, their boolean spellings


def _heads(options: dict[str, Any]) -> int:
    """The number of heads, checked: a lesson file's options may hold any TOML value."""
    return whole_at_least(options.get("heads"), f"{param('heads')} (options.heads)")


def with_file(
    inputs: dict[str, np.ndarray], options: dict[str, Any]
) -> tuple[dict[str, np.ndarray], pytorch.LoadedAttention | None]:
    """The inputs with the --weights file's weights among them, and the file (None: no file);
    weights given by hand beside a file are refused."""
    if options.get("weights") is None:
        return inputs, None
    loaded = pytorch.load(options["weights"])
    hand = [name for name in (*WEIGHT_NAMES, *BIAS_OF.values()) if name in inputs]
    if hand:
        flags = ", ".join(CARD.param(name) for name in hand)
        raise UserError(f"{loaded.where} gives the weights; leave out {flags}.")
    if options.get("bias"):
        raise UserError(
            f"{param('bias')} draws the biases; {loaded.where} gives them. Leave out {param('bias')}."
        )
    return {**inputs, **loaded.weights}, loaded


def sequences(inputs: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The queries' X, the keys' sequence (X_K, else X) and the values' (X_V, else X_K, else X)."""
    x = inputs["X"]
    keys = inputs.get("X_K", x)
    return x, keys, inputs.get("X_V", keys)


def kv_heads(options: Mapping[str, Any], heads: int) -> int:
    """The number of key/value heads g (h when not given), checked: a whole number that
    divides h."""
    g = kv_heads_option(options.get("kv_heads"), heads)
    if g is None:
        return heads
    if g < heads and options.get("weights") is not None:
        raise UserError(
            f"{param('weights')} reads an nn.MultiheadAttention, which has a key and a value head for "
            f"each query head; leave out {param('kv_heads')}, or give {param('wq')}, {param('wk')}, {param('wv')}."
        )
    return g


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    heads = _heads(options)
    kv = kv_heads(options, heads)
    inputs, _loaded = with_file(inputs, options)
    given = [name for name in WEIGHT_NAMES if name in inputs]
    biases = [BIAS_OF[name] for name in WEIGHT_NAMES if BIAS_OF[name] in inputs]
    if "X" not in inputs:
        first = ([*given, *biases] + [name for name in ("X_K", "X_V") if name in inputs])[:1]
        needs = (
            f"{CARD.param(first[0])} needs {param('x')}"
            if first
            else f"X is missing; give {param('x')}"
        )
        raise UserError(f"{needs}: the heads project the tokens X (Q = X W_Q).")
    _check_weights_given(inputs, given)
    if biases and options.get("bias"):
        flags = ", ".join(CARD.param(name) for name in biases)
        raise UserError(
            f"{param('bias')} draws every bias from {param('seed')}; leave out {param('bias')} or {flags}."
        )
    x, keys, values = sequences(inputs)
    if values.shape[0] != keys.shape[0]:
        where = param("xk") if "X_K" in inputs else f"X (the keys' sequence without {param('xk')})"
        raise UserError(
            f"{param('xv')} has {counted(values.shape[0], 'row')} but {where} has {keys.shape[0]}: one "
            "value per key."
        )
    d_in = x.shape[1]
    d_out = inputs["W_Q"].shape[1] if "W_Q" in inputs else d_in
    _check_shapes(inputs, (d_in, keys.shape[1], values.shape[1]), d_out, (heads, kv))
    _check_biases(inputs, d_in, d_out, d_out // heads * kv)
    padding.valid_lengths(options.get("valid_len"), x.shape[0], keys.shape[0])
    dropout.probability(options.get("dropout"))
    score_transforms.transforms(options)


def _check_weights_given(inputs: dict[str, np.ndarray], given: list[str]) -> None:
    """W_Q, W_K, W_V together or not at all (then drawn); W_O only with them, and optional."""
    projections = [name for name in PROJECTIONS if name in given]
    if projections and len(projections) < len(PROJECTIONS):
        missing = ", ".join(CARD.param(name) for name in PROJECTIONS if name not in given)
        raise UserError(
            f"missing {missing}: give W_Q, W_K and W_V together ({param('wq')}, {param('wk')}, {param('wv')}; {param('wo')} is "
            f"optional) or none of them (then all four weights are drawn from {param('seed')})."
        )
    if "W_O" in given and not projections:
        raise UserError(
            f"{param('wo')} needs {param('wq')}, {param('wk')} and {param('wv')}: without them all four weights are drawn from {param('seed')}."
        )


def _check_shapes(
    inputs: dict[str, np.ndarray],
    widths: tuple[int, int, int],
    d_out: int,
    counts: tuple[int, int],
) -> None:
    """W_Q d_in × d_out, W_K kdim × d_out, W_V vdim × d_out (kdim, vdim: the widths of the
    keys' and values' sequences, d_in unless --xk, --xv give their own); with g key/value
    heads (``counts``: h and g), W_K and W_V g·d_k wide."""
    d_in, kdim, vdim = widths
    heads, kv = counts
    if "W_Q" in inputs and inputs["W_Q"].shape[0] != d_in:
        rows, cols = inputs["W_Q"].shape
        raise UserError(
            f"{param('wq')} is {rows} × {cols} but X has d_in = {d_in} columns: W_Q must be d_in × d_out, "
            f"{d_in} rows (Q = X W_Q)."
        )
    own = {"W_K": "X_K" in inputs, "W_V": "X_V" in inputs or "X_K" in inputs}
    for name, width, source in (("W_K", kdim, param("xk")), ("W_V", vdim, param("xv"))):
        if kv < heads:
            continue  # their width is checked below, once the heads divide d_out
        if name in inputs and inputs[name].shape != (width, d_out):
            rows, cols = inputs[name].shape
            if not own[name]:
                must = f"d_in × d_out = {d_in} × {d_out}, like W_Q (W_Q, W_K and W_V share "
                must += f"their shape unless {param('xk')}, {param('xv')} give sequences of other widths)"
            else:
                dim = "kdim" if name == "W_K" else "vdim"
                must = f"{dim} × d_out = {width} × {d_out} ({source}'s columns × W_Q's)"
            raise UserError(f"{CARD.param(name)} is {rows} × {cols} but must be {must}.")
    if d_out % heads:
        if d_in == d_out:
            what = f"X has d_model = {d_in} columns"
            fix = f"{param('heads')} must divide d_model (each head gets d_model / h columns"
        else:
            what = f"W_Q has d_out = {d_out} columns"
            fix = f"{param('heads')} must divide d_out (each head gets d_out / h columns"
        raise UserError(f"{what}, which {heads} heads cannot share: {fix} of W_Q, W_K and W_V).")
    for name, width in (("W_K", kdim), ("W_V", vdim)) if kv < heads else ():
        narrow = (width, d_out // heads * kv)
        if name in inputs and inputs[name].shape != narrow:
            rows, cols = inputs[name].shape
            raise UserError(
                f"{CARD.param(name)} is {rows} × {cols} but with {param('kv_heads', kv)} it must be "
                f"{narrow[0]} × g·d_k = {narrow[0]} × {narrow[1]} "
                f"({counted(kv, 'key/value head')} of d_k = d_out / h = "
                f"{counted(d_out // heads, 'column')}): give {param('wk')} and {param('wv')} that wide, or no "
                f"weights (then they are drawn from {param('seed')})."
            )
    if "W_O" in inputs and inputs["W_O"].shape[0] != d_out:
        rows, cols = inputs["W_O"].shape
        raise UserError(
            f"{param('wo')} is {rows} × {cols} but needs d_out = {d_out} rows, one per column of the "
            f"concatenated heads (W_Q is {d_in} × {d_out})."
        )


def _check_biases(inputs: dict[str, np.ndarray], d_in: int, d_out: int, kv_width: int) -> None:
    if "b_O" in inputs and "W_O" not in inputs and "W_Q" in inputs:
        raise UserError(
            f"{param('bo')} needs {param('wo')}: without W_O there is no output projection to add it to."
        )
    width_o = inputs["W_O"].shape[1] if "W_O" in inputs else d_out
    for weight, bias in BIAS_OF.items():
        if bias not in inputs:
            continue
        expected = {"W_O": width_o, "W_K": kv_width, "W_V": kv_width}.get(weight, d_out)
        got = inputs[bias].shape[0]
        if got != expected:
            where = {
                "W_O": "W_O's columns",
                "W_Q": "d_out, the columns of W_Q",
            }.get(weight, "the columns of W_K and W_V" if kv_width != d_out else "")
            where = where or "d_out, the columns of W_Q, W_K, W_V"
            raise UserError(
                f"{CARD.param(bias)} has {counted(got, 'entry', 'entries')} but must have "
                f"{expected} ({where}): one per output column of {weight}."
            )


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Tokens X (n × d_in) and the weights: W_Q d_in × d_out, W_K kdim × d_out, W_V vdim ×
    d_out, W_O d_out × d_out; with --m, --kdim or --vdim the key sequence X_K (m × kdim) and the
    value sequence X_V (m × vdim) too.

    --d-model sets d_in and d_out together (the transformer paper's square weights); --d-in and
    --d-out set one each. draw_random() draws them (the weights scaled, from their own stream).
    """
    n, d_model = sizes["n"], sizes["d_model"]
    d_in = sizes.get("d_in") or d_model
    d_out = sizes.get("d_out") or d_in
    kdim = sizes.get("kdim") or d_in
    vdim = sizes.get("vdim") or kdim
    shapes: dict[str, tuple[int, ...]] = {"X": (n, d_in)}
    if any(sizes.get(name) for name in ("m", "kdim", "vdim")):
        m = sizes.get("m") or n
        shapes |= {"X_K": (m, kdim), "X_V": (m, vdim)}
    return {
        **shapes,
        "W_Q": (d_in, d_out),
        "W_K": (kdim, d_out),
        "W_V": (vdim, d_out),
        "W_O": (d_out, d_out),
    }


def sizes_of_file(sizes: dict[str, int], options: dict[str, Any]) -> dict[str, int]:
    """--n N with --weights FILE: X of the file's embed_dim (and X_K, X_V of its kdim and vdim
    where they differ), drawn from --seed; a width option that says otherwise is refused."""
    if options.get("weights") is None:
        return sizes
    loaded = pytorch.load(options["weights"])
    held = {
        "d_in": loaded.weights["W_Q"].shape[0],
        "d_out": loaded.weights["W_Q"].shape[1],
        "kdim": loaded.weights["W_K"].shape[0],
        "vdim": loaded.weights["W_V"].shape[0],
    }
    held["d_model"] = held["d_in"]
    for name, width in held.items():
        asked = sizes.get(name)
        if asked is not None and asked != width:
            raise UserError(
                f"{param(name, asked)}: {loaded.where} holds {name} = {width}; leave out "
                f"{param(name)} "
                f"({param('n')} draws inputs of the file's widths)."
            )
    found = {**sizes, "d_model": held["d_in"]}
    for name in ("kdim", "vdim"):  # their own sequences only where the file's widths differ
        if held[name] != held["d_in"]:
            found[name] = held[name]
    return found


def option_shapes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any]
) -> dict[str, tuple[int, ...]]:
    """With --weights FILE, no weight is drawn (the file gives them); with --kv-heads g, W_K and
    W_V are g·d_k wide (the shapes as drawn; options that do not fit leave them, for validate
    to name)."""
    if options.get("weights") is not None:
        return {name: shape for name, shape in shapes.items() if name not in WEIGHT_NAMES}
    heads, kv = options.get("heads"), options.get("kv_heads")
    if not (is_whole(heads) and is_whole(kv)) or not 1 <= kv <= heads or heads % kv:
        return shapes
    d_out = shapes["W_Q"][1]
    if d_out % heads:
        return shapes
    width = d_out // heads * kv
    return {**shapes, "W_K": (shapes["W_K"][0], width), "W_V": (shapes["W_V"][0], width)}


def draw_random(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, np.ndarray]:
    """Random inputs: X, then X_K and X_V where drawn, N(0, 1) in that order from numpy's
    default_rng(seed); the weights as draw_weights (W_K and W_V cut to the columns their
    shapes ask for: --kv-heads)."""
    rng = np.random.default_rng(seed)
    drawn: dict[str, np.ndarray] = {
        name: rng.standard_normal(shapes[name]) for name in ("X", "X_K", "X_V") if name in shapes
    }
    if "W_Q" not in shapes:  # --weights FILE gives them
        return drawn
    d_in, d_out = shapes["W_Q"]
    kdim, vdim = shapes["W_K"][0], shapes["W_V"][0]
    weights = draw_weights(seed, d_in, d_out, kdim, vdim)
    return {**drawn, **{name: w[:, : shapes[name][1]] for name, w in weights.items()}}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    n, d_in = shapes["X"]
    m, kdim = shapes.get("X_K", (n, d_in))
    vdim = shapes.get("X_V", (m, kdim))[1]
    d_out = shapes["W_Q"][1] if "W_Q" in shapes else d_in
    d_o = shapes["W_O"][1] if "W_O" in shapes else d_out
    heads = _heads(options)  # random inputs are sized before validate() runs
    per_head = _SCORE_MATRICES * n * m + 3 * max(n, m) * (d_out // heads or 1)
    weights = (d_in + kdim + vdim) * d_out + d_out * d_o + 2 * (3 * d_out + d_o)
    extra = dropout.dropout_bytes(options, heads * n * m, itemsize)
    return (
        heads * per_head + _MASK_MATRICES * n * m + 2 * weights + 3 * n * d_o
    ) * itemsize + extra


def document_estimate(shapes: dict[str, tuple[int, ...]], options: dict[str, Any]) -> int:
    """The numbers --full JSON writes (estimate_bytes holds eight score-sized matrices a head;
    a head's steps show four: its weights, its scores raw and scaled, and e^s by hand, with
    Σ e^s), with the steps of a mask or dropout where one is asked for."""
    n, d_in = shapes["X"]
    m, kdim = shapes.get("X_K", (n, d_in))
    vdim = shapes.get("X_V", (m, kdim))[1]
    d_out = shapes["W_Q"][1] if "W_Q" in shapes else d_in
    d_o = shapes["W_O"][1] if "W_O" in shapes else d_out
    heads = _heads(options)
    per_head = 4 * n * m + n + 4 * max(n, m) * (d_out // heads or 1)
    padded = options.get("valid_len") is not None
    masks = heads + 1 + padded if options.get("causal") or padded else 0  # masked scores, masks
    dropped = 3 * heads if options.get("dropout") else 0  # a head's mask, kept and scaled weights
    weights = (d_in + kdim + vdim) * d_out + d_out * d_o + 3 * d_out + d_o
    return heads * per_head + (masks + dropped) * n * m + weights + 3 * n * d_o


def draw_weights(
    seed: int,
    d_in: int,
    d_out: int | None = None,
    kdim: int | None = None,
    vdim: int | None = None,
) -> dict[str, np.ndarray]:
    """W_Q (d_in × d_out), W_K (kdim × d_out) and W_V (vdim × d_out) with N(0, 1/rows) entries,
    so Q = X W_Q keeps X's scale, and W_O (d_out × d_out) with N(0, 1/d_out) entries (kdim and
    vdim: d_in unless the keys and values come from sequences of other widths).

    They come from a child of numpy's default_rng(seed), independent of the stream that draws
    random tokens X from the same seed (and of the biases', see draw_biases).
    """
    if seed < 0:
        raise UserError(f"{param('seed', seed)}: give a seed of 0 or more.")
    d_out = d_in if d_out is None else d_out
    kdim = d_in if kdim is None else kdim
    vdim = d_in if vdim is None else vdim
    rng = np.random.default_rng(seed).spawn(1)[0]
    shapes = {
        "W_Q": (d_in, d_out),
        "W_K": (kdim, d_out),
        "W_V": (vdim, d_out),
        "W_O": (d_out, d_out),
    }
    return {
        name: rng.standard_normal(shape) / math.sqrt(shape[0]) for name, shape in shapes.items()
    }


def draw_biases(seed: int, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A bias per weight (its columns wide), N(0, 1/rows of the weight) like the weight's entries.

    From a second child of default_rng(seed): drawing them changes neither X nor the weights.
    """
    rng = np.random.default_rng(seed).spawn(2)[1]
    return {
        BIAS_OF[name]: rng.standard_normal((w.shape[1],)) / math.sqrt(w.shape[0])
        for name, w in weights.items()
    }


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    heads: int = run.options["heads"]  # checked by validate()
    kv = kv_heads(run.options, heads)
    group = heads // kv  # the query heads that share one key/value head
    transforms = score_transforms.transforms(run.options)
    given, loaded = with_file(run.inputs, run.options)
    x_in, keys_in, values_in = sequences(given)
    weights_in, biases_in, drawn = _parameters(run, given, kv)
    (n, d_in), d_out = x_in.shape, weights_in["W_Q"].shape[1]
    (m, kdim), vdim = keys_in.shape, values_in.shape[1]
    d_k = d_out // heads
    x, xk, xv = (backend.asarray(value) for value in (x_in, keys_in, values_in))
    wq, wk, wv = (backend.asarray(weights_in[name]) for name in PROJECTIONS)
    bq, bk, bv = (
        None if BIAS_OF[name] not in biases_in else backend.asarray(biases_in[BIAS_OF[name]])
        for name in PROJECTIONS
    )
    tokens = row_names(run, "tokens", n, "t", param("tokens"))
    own_keys = "X_K" in given or "X_V" in given
    keys = row_names(run, "keys", m, "s", "the example's labels.keys") if own_keys else tokens
    keys_from = "X_K" if "X_K" in given else "X"
    projected = "W_O" in weights_in
    base = {
        "n": n,
        "m": m,
        "kdim": kdim,
        "vdim": vdim,
        "keys_from": keys_from,
        "values_from": "X_V" if "X_V" in given else keys_from,
        "h": heads,
        "h_heads": counted(heads, "head"),
        "dk_columns": counted(d_k, "column"),
        "dk_numbers": counted(d_k, "number"),
        "d_model": d_in,
        "d_in": d_in,
        "d_out": d_out,
        "dk": d_k,
        "sqrt_dk": math.sqrt(d_k),
        "g": kv,
        "g_heads": counted(kv, "key/value head"),
        "group": group,
        "kv_width": kv * d_k,
        "then_wo": _THEN_WO if projected else _NO_WO,
        # The transformer paper's name for square weights, Raschka's book's otherwise.
        "width": "d_model" if d_in == d_out else "d_out",
        "weight_shape": _weight_shape(d_in, kdim, vdim, d_out),
    }
    if transforms.cap is not None:
        base["cap"] = transforms.cap
    if transforms.norm is not None:
        base |= {"norm_name": score_transforms.NORM_NAMES[transforms.norm]}
        base |= {"eps": scoring.EPSILONS[transforms.norm]}
    record = StepRecorder(run)
    record.add(
        "split",
        _split_records(heads, d_k, projected, group),
        kind="records",
        grid=Grid(context=base),
        notes=_split_notes(
            record, (n, m), (heads, kv), (d_in, kdim, vdim, d_out), d_k, weights_in.get("W_O")
        ),
        text="split" if group == 1 else "split_grouped",
    )
    mask = _mask_steps(record, x, run.options, (tokens, keys), base)
    p = dropout.probability(run.options.get("dropout"))
    computed = []
    # Key/value head -> its K and V, and K before QK-norm (grouped-query heads).
    shared: dict[int, tuple[Any, Any, Any]] = {}
    for index in range(heads):
        if group > 1 and index // group not in shared:
            shared[index // group] = _kv_steps(
                record, index // group, kv, ((xk, wk, bk), (xv, wv, bv)), keys, base, transforms
            )
        head = _head_steps(
            record,
            index,
            heads,
            ((x, wq, bq), (xk, wk, bk), (xv, wv, bv)),
            mask,
            (tokens, keys),
            base,
            transforms,
            shared.get(index // group),
        )
        computed.append(head)
        if p is None:
            _head_output(record, head)
    head_weights = [head.weights for head in computed]
    if p is not None:
        # One draw for all heads at once, as nn.Dropout on the (h, n, n) weights of Raschka's
        # MultiHeadAttention (and of nn.MultiheadAttention's dropout) draws it; then per head.
        draw = dropout.draw(record, namespace_of(x).stack(head_weights), p)
        for index, head in enumerate(computed):
            grid = replace(head.rows, cols=keys)
            dropped = dropout.record_dropout(
                record,
                head.weights,
                p,
                grid,
                key=f"{head.prefix}.dropout",
                text="head_dropout",
                drawn=draw.part(index),
            )
            _head_output(record, head, dropped)
    outputs = [head.output for head in computed]
    head_names = tuple(f"head {i}" for i in range(1, heads + 1))
    differences = record.compute(
        "differences",
        lambda: mh.weight_differences(head_weights),
        grid=Grid(head_names, head_names, context=base),
        text="differences" if heads > 1 else "differences_one",
    )
    concat_labels = _split_labels(d_out, d_k)
    joined = record.compute(
        "concat",
        lambda: mh.concat(outputs),
        grid=Grid(tokens, concat_labels, context=base),
        notes=() if projected else (record.note("concat_only"),),
        text="concat" if heads > 1 else "concat_one",
    )
    output = joined
    if projected:
        wo = backend.asarray(weights_in["W_O"])
        bo = backend.asarray(biases_in["b_O"]) if "b_O" in biases_in else None
        output_context = {**base, "d_o": wo.shape[1]}
        output = record.compute(
            "output",
            lambda: mh.affine(joined, wo, bo),
            grid=Grid(tokens, context=output_context),
            text=("output" if bo is None else "output_bias") + ("" if heads > 1 else "_one"),
        )
    inputs = _labelled_inputs(run, (weights_in, biases_in), (tokens, keys), d_k, drawn, loaded)
    notes = _difference_notes(record, record.to_numpy(differences))
    if group > 1:
        notes += (_cache_note(record, shared, m, heads, d_out),)
    if transforms.any:
        on_screen = [np.asarray(record.to_numpy(w), dtype=np.float64) for w in head_weights]
        raw = [head.raw for head in computed]
        notes += score_transforms.notes(record, transforms, raw, True, on_screen)
    if not projected:
        notes += (record.note("concat_only"),)
    if drawn:
        notes += (_drawn_note(record, drawn, [*weights_in, *biases_in], run.seed),)
    if loaded is not None:
        layout = (
            "a packed in_proj_weight"
            if loaded.packed
            else "q_proj_weight, k_proj_weight, v_proj_weight"
        )
        notes += (record.note("file_weights", source=loaded.source, layout=layout, heads=heads),)
    parameters = sum(int(a.size) for a in (*weights_in.values(), *biases_in.values()))
    meta: dict[str, Any] = {"parameters": parameters, **dropout.meta(run, p)}
    if kv < heads:
        meta["kv_heads"] = kv
    weights_option = run.options.get("weights")
    if weights_option is not None and not isinstance(weights_option, str):
        shown = f"a state_dict of {len(weights_option)} arrays"
        meta["options"] = {**run.options, "weights": shown}
    lengths = padding.valid_lengths(run.options.get("valid_len"), n, m)
    if lengths is not None:
        meta["valid_lengths"] = list(lengths)
    return record.walkthrough(output, inputs=inputs, notes=notes, meta=meta)


_THEN_WO = ", and W_O turns the concatenation into the output"
_NO_WO = "; no W_O was given, so the concatenation is the result"


def _parameters(
    run: LessonRun, inputs: dict[str, np.ndarray], kv: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], frozenset[str]]:
    """The weights and biases used (``inputs``: the run's with a --weights file's among them),
    and the names of those drawn from --seed.

    Weights not given are all four drawn (d_in, kdim and vdim rows, d_in columns; with g
    key/value heads W_K and W_V cut to their first g blocks); --bias draws a bias for every
    weight; weights drawn as random inputs (--n, --d-model, ...) count as drawn too.
    """
    drawn = set(run.drawn) & set(WEIGHT_NAMES)
    if "W_Q" in inputs:
        weights = {name: inputs[name] for name in WEIGHT_NAMES if name in inputs}
    else:
        x, keys, values = sequences(inputs)
        d_in = x.shape[1]
        width = d_in // run.options["heads"] * kv
        weights = {
            name: w if name in ("W_Q", "W_O") else w[:, :width]
            for name, w in draw_weights(
                run.seed, d_in, d_in, keys.shape[1], values.shape[1]
            ).items()
        }
        drawn |= set(WEIGHT_NAMES)
    biases = {BIAS_OF[name]: inputs[BIAS_OF[name]] for name in weights if BIAS_OF[name] in inputs}
    if run.options.get("bias"):
        biases = draw_biases(run.seed, weights)
        drawn |= set(biases)
    return weights, biases, frozenset(drawn)


def _drawn_note(record: StepRecorder, drawn: frozenset[str], used: list[str], seed: int) -> Note:
    """The note on what was drawn from --seed: the weights, the biases, or both; by name, beside
    the ones given, when some of the weights (or biases) were given and others drawn."""
    weights = any(name in drawn for name in WEIGHT_NAMES)
    biases = any(name in drawn for name in BIAS_OF.values())
    given = [name for name in used if name not in drawn]
    if weights and given and any(name in WEIGHT_NAMES for name in given):
        names = [name for name in used if name in drawn]
        return record.note(
            "drawn_some", seed=seed, names=_listed(names), given=_listed(given),
            verb="was" if len(names) == 1 else "were",
        )  # fmt: skip
    if weights and biases:
        return record.note("drawn_both", seed=seed)
    return record.note("drawn_weights" if weights else "drawn_biases", seed=seed)


def _listed(names: list[str]) -> str:
    """W_Q; W_Q and W_K; W_Q, W_K and W_V."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _mask_steps(
    record: StepRecorder,
    x: Any,
    options: dict[str, Any],
    labels: tuple[tuple[str, ...], tuple[str, ...]],
    base: dict[str, Any],
) -> Any | None:
    """The mask every head shares: causal M and/or padding P, each its own step; their sum."""
    tokens, keys = labels
    causal = bool(options.get("causal"))
    n, m = len(tokens), len(keys)
    lengths = padding.valid_lengths(options.get("valid_len"), n, m)
    if not causal and lengths is None:
        return None
    grid = Grid(tokens, keys, base)
    xp = namespace_of(x)
    like = xp.zeros((n, m), dtype=x.dtype, device=x.device)  # (n, m): a mask's shape and dtype
    mask = None
    if causal:
        # Keys of their own (X_K): query i sees keys 1 … i of another sequence, not "itself".
        text = "mask" if base["keys_from"] == "X" else "mask_cross"
        mask = record.compute("mask", lambda: masks.causal_additive(like), grid=grid, text=text)
    if lengths is not None:
        pad = padding.record_padding(record, like, lengths, grid, causal=causal)
        mask = pad if mask is None else mask + pad
    base["mask_name"] = " + ".join(("M",) * causal + ("P",) * (lengths is not None))
    return mask


def _split_records(heads: int, d_k: int, projected: bool, group: int) -> list[dict[str, Any]]:
    concat = "concat_wo_rows" if projected else "concat_columns"
    if group > 1:  # grouped-query: the query head's columns, and the key/value head it shares
        return [
            {
                "head": index + 1,
                "q_columns": _span(index, d_k),
                "kv_head": index // group + 1,
                "kv_columns": _span(index // group, d_k),
                "d_k": d_k,
                concat: _span(index, d_k),
            }
            for index in range(heads)
        ]
    return [
        {
            "head": index + 1,
            "qkv_columns": _span(index, d_k),
            "d_k": d_k,
            concat: _span(index, d_k),
        }
        for index in range(heads)
    ]


def _span(index: int, d_k: int) -> str:
    first, last = index * d_k + 1, (index + 1) * d_k
    return str(first) if first == last else f"{first}–{last}"


def _weight_shape(d_in: int, kdim: int, vdim: int, d_out: int) -> str:
    """W_Q, W_K and W_V's shape (or shapes), as the split step says them."""
    if kdim != d_in or vdim != d_in:
        return (
            f"{d_in} × {d_out}, {kdim} × {d_out} and {vdim} × {d_out} (d_in, kdim and vdim rows, "
            f"d_out = {d_out} columns)"
        )
    if d_in == d_out:
        return f"d_model × d_model = {d_in} × {d_in}"
    return f"d_in × d_out = {d_in} × {d_out}"


def _split_notes(
    record: StepRecorder,
    rows: tuple[int, int],
    counts: tuple[int, int],
    widths: tuple[int, int, int, int],
    d_k: int,
    wo: Any | None,
) -> tuple[Note, ...]:
    n, m = rows
    heads, kv = counts
    d_in, kdim, vdim, d_out = widths
    if kdim != d_in or vdim != d_in:
        return (
            record.note(
                "split_cross", d_in=d_in, kdim=kdim, vdim=vdim, d_out=d_out, heads=heads, d_k=d_k
            ),
        )
    if d_in != d_out:
        return (record.note("split_rectangular", d_in=d_in, d_out=d_out, heads=heads, d_k=d_k),)
    # The parameter tally names W_O only when this run has one, d_model × d_model; a W_O of
    # another width (d_out × d_o) gets no tally rather than a wrong one.
    notes: tuple[Note, ...] = (record.note("split_square", d_model=d_in, heads=heads, d_k=d_k),)
    if wo is None or tuple(wo.shape) == (d_in, d_in):
        without = d_in * d_in if wo is None else 0  # the d_model² of the absent W_O
        suffix = "_no_wo" if wo is None else ""
        if kv == heads:
            count = record.note(
                "parameters" + suffix, d_model=d_in, count=mh.parameter_count(d_in) - without
            )
        else:
            count = record.note(
                "parameters_grouped" + suffix,
                d_model=d_in,
                kv_width=kv * d_k,
                count=mh.parameter_count(d_in, kv * d_k) - without,
                full=mh.parameter_count(d_in) - without,
            )
        notes += (count,)
    if heads == 1:
        return notes
    cost = record.note(
        "heads_cost",
        n=n,
        m=m,
        heads=heads,
        d_model=d_in,
        d_k=d_k,
        weights=heads * n * m,  # each head its own n × m scores and softmax
        one=n * m,
        dots=heads * n * m,
        score_flops=2 * heads * n * m * d_k,  # h · n · m dot products, each d_k long
    )
    return (*notes, cost)


def _head_steps(
    record: StepRecorder,
    index: int,
    heads: int,
    projections: tuple[tuple[Any, Any, Any | None], ...],
    mask: Any | None,
    labels: tuple[tuple[str, ...], tuple[str, ...]],
    base: dict[str, Any],
    transforms: score_transforms.Transforms,
    shared: tuple[Any, Any, Any] | None = None,
) -> _Head:
    """Head i: its column blocks of W_Q, W_K, W_V (and biases), each applied to its sequence
    (X for the queries, the keys' and values' own where given); Q, K, V; weights (the output
    is recorded by _head_output, after dropout when there is dropout). ``shared``: the K and V
    of the key/value head it shares (grouped-query), recorded before it; then only Q is its
    own."""
    tokens, keys = labels
    d_k = base["dk"]
    span = _span(index, d_k)
    context = {
        **base,
        "head": index + 1,
        "kv": index // base["group"] + 1,
        "cols": span,
        "cols_word": ("column " if d_k == 1 else "columns ") + span,
        "entries_word": ("entry " if d_k == 1 else "entries ") + span,
    }
    rows = Grid(tokens, context=context)
    prefix = f"head{index + 1}"
    qkv = [
        record.compute(
            f"{prefix}.{letter}",
            functools.partial(_head_affine, source, w, b, index, heads),
            text=_projection_text(PROJECTION_TEXTS if b is None else BIASED_TEXTS, letter, base),
            grid=rows if letter == "Q" else Grid(keys, context=context),
        )
        for letter, (source, w, b) in zip(
            "QKV" if shared is None else "Q", projections, strict=False
        )
    ]
    raw_k = qkv[1] if shared is None else shared[2]
    raw = (record.to_numpy(qkv[0]), record.to_numpy(raw_k))
    if shared is not None:
        qkv += shared[:2]
    if transforms.norm is not None:  # QK-norm: this head's q (and k, unless shared) normalised
        norm = transforms.norm
        qkv[0] = record.compute(
            f"{prefix}.Q_normed", lambda: scoring.qk_norm(qkv[0], norm), grid=rows,
            text="head_Q_normed",
        )  # fmt: skip
        if shared is None:
            qkv[1] = record.compute(
                f"{prefix}.K_normed", lambda: scoring.qk_norm(qkv[1], norm),
                grid=Grid(keys, context=context), text="head_K_normed",
            )  # fmt: skip
    # Inside the head: scaled dot-product attention on its Q, K, V (the scores soft-capped
    # before the mask with --softcap). Its time (scores, softmax and A V together) is shown on
    # the head's output, the last value it computes.
    (scores, scaled, logits, weights, output), seconds = record.run.timed(
        lambda: _attend(qkv[0], qkv[1], qkv[2], mask, transforms.cap)
    )
    capped = "" if transforms.cap is None else "_capped"
    weights_text = f"head_weights{capped}"
    if mask is not None:
        record.add(
            f"{prefix}.masked",
            logits + mask,
            text=f"head_masked{capped}",
            grid=replace(rows, cols=keys),
        )
        weights_text = f"head_weights{capped}_masked"
    elif base["group"] > 1 and transforms.cap is None:
        weights_text = "head_weights_grouped"  # its formula reads K_j, key/value head j's keys
    elif heads == 1 and transforms.cap is None:
        weights_text = "head_weights_one"  # no other head to compare its pattern with
    # The head's raw scores first, as a student computes them before the scale, and the softmax
    # by hand (e^s, Σ e^s) of what it reads: the scaled (capped, masked) scores.
    parts = [Part("scores Q Kᵀ", scores), Part("scaled scores Q Kᵀ / √d_k", scaled)]
    if transforms.cap is not None:
        parts.append(
            Part(f"soft-capped scores {transforms.cap:g}·tanh(scaled / {transforms.cap:g})", logits)
        )
    by_hand, overflowed = record.by_hand(logits if mask is None else logits + mask, "scaled scores")
    parts += by_hand
    record.add(
        f"{prefix}.weights",
        weights,
        kind="weights",
        row_sums=True,
        parts=tuple(parts),
        text=weights_text,
        grid=replace(rows, cols=keys),
        notes=overflowed,
    )
    hidden = np.zeros(weights.shape, dtype=bool)
    if mask is not None:
        hidden = np.isneginf(np.asarray(record.to_numpy(mask), dtype=np.float64))
    return _Head(prefix, rows, weights, qkv[2], output, seconds, (*raw, hidden))


def _attend(q: Any, k: Any, v: Any, mask: Any | None, cap: float | None) -> tuple[Any, ...]:
    """(scores, scaled scores, the logits before the mask, weights, output) of one head."""
    if cap is None:
        result = mech.attention(q, k, v, mask=mask)
        return result.scores, result.scaled, result.scaled, result.weights, result.output
    scores = mech.scores(q, k)  # (m, n)
    scaled = mech.scale(scores, q.shape[-1])
    capped = scoring.softcap(scaled, cap)
    weights = mech.softmax(capped if mask is None else capped + mask)
    return scores, scaled, capped, weights, mech.weighted_sum(weights, v)


def _kv_steps(
    record: StepRecorder,
    index: int,
    kv: int,
    projections: tuple[tuple[Any, Any, Any | None], ...],
    keys: tuple[str, ...],
    base: dict[str, Any],
    transforms: score_transforms.Transforms,
) -> tuple[Any, Any, Any]:
    """Key/value head j (grouped-query): its blocks of W_K and W_V (and biases) applied to the
    keys' and values' sequences, K and V, which the query heads j·h/g + 1 … (j + 1)·h/g share;
    with QK-norm, K normalised too. (K as used, V, K before QK-norm.)"""
    d_k, group = base["dk"], base["group"]
    span = _span(index, d_k)
    first, last = index * group + 1, (index + 1) * group
    context = {
        **base,
        "kv": index + 1,
        "cols": span,
        "cols_word": ("column " if d_k == 1 else "columns ") + span,
        "entries_word": ("entry " if d_k == 1 else "entries ") + span,
        "sharing": f"query heads {first} and {last}"
        if group == 2
        else f"query heads {first}–{last}",
    }
    k, v = (
        record.compute(
            f"kv{index + 1}.{letter}",
            functools.partial(_head_affine, source, w, b, index, kv),
            text=_projection_text(KV_TEXTS if b is None else KV_BIASED_TEXTS, letter, base),
            grid=Grid(keys, context=context),
        )
        for letter, (source, w, b) in zip("KV", projections, strict=True)
    )
    if transforms.norm is None:
        return k, v, k
    norm = transforms.norm
    normed = record.compute(
        f"kv{index + 1}.K_normed",
        lambda: scoring.qk_norm(k, norm),
        grid=Grid(keys, context=context),
        text="kv_K_normed",
    )
    return normed, v, k


def _cache_note(
    record: StepRecorder, shared: dict[int, tuple[Any, Any, Any]], m: int, heads: int, d_out: int
) -> Note:
    """What a decoder's K/V cache holds for these keys: the key/value heads' K and V, counted
    from the matrices above, against a key and a value head per query head."""
    cached = sum(int(np.size(record.to_numpy(a))) for kv in shared.values() for a in kv[:2])
    full = 2 * m * d_out  # K and V of h heads of d_k: m × d_out each
    return record.note(
        "kv_cache",
        n=m,
        g_heads=counted(len(shared), "key/value head"),
        heads=heads,
        cached=cached,
        per_token=cached // max(m, 1),
        full=full,
        full_per_token=2 * d_out,
        ratio=heads // len(shared),
    )


def _head_affine(x: Any, w: Any, b: Any | None, index: int, heads: int) -> Any:
    """Head ``index``'s projection: X times its block of W's columns, plus its block of b."""
    return mh.affine(
        x, mh.head_block(w, index, heads), None if b is None else mh.head_block(b, index, heads)
    )


@dataclass
class _Head:
    """One head's results, for its output step (recorded after dropout when there is any)."""

    prefix: str  # "head1"
    rows: Grid  # row labels and the step context
    weights: Any  # (n, n)
    v: Any  # (n, d_k)
    output: Any  # (n, d_k) A V, replaced by Ã V after dropout
    seconds: float | None
    # Q and K before any QK-norm, and where the logits are −∞: for the notes on the largest weight.
    raw: tuple[np.ndarray, np.ndarray, np.ndarray]


def _head_output(record: StepRecorder, head: _Head, dropped: Any | None = None) -> None:
    """Record head i's output: A_i V_i, or Ã_i V_i with the dropped weights."""
    seconds: float | None = head.seconds
    if dropped is not None:
        head.output, seconds = record.run.timed(lambda: mech.weighted_sum(dropped, head.v))
    record.add(
        f"{head.prefix}.output",
        head.output,
        seconds=seconds,
        text=("head_output" if dropped is None else "head_output_dropout")
        + ("_grouped" if head.rows.context["group"] > 1 else ""),  # V_j: key/value head j's
        grid=head.rows,
    )


def _difference_notes(record: StepRecorder, differences: np.ndarray) -> tuple[Note, ...]:
    heads = differences.shape[0]
    if heads < 2:
        return (record.note("one_head"),)
    pairs = [
        (float(differences[i, j]), i + 1, j + 1) for i in range(heads) for j in range(i + 1, heads)
    ]
    most, least = max(pairs), min(pairs)
    if least[0] == 0:
        return (record.note("heads_same", first=least[1], second=least[2]),)
    if heads == 2:
        return (record.note("two_heads_differ", most=most[0]),)
    return (
        record.note(
            "heads_differ",
            most=most[0],
            most_first=most[1],
            most_second=most[2],
            least=least[0],
            least_first=least[1],
            least_second=least[2],
        ),
    )


def _pair_gaps(walkthrough: Walkthrough) -> dict[tuple[Any, Any], float] | None:
    """(i, j) -> max |A_i − A_j| for every pair of heads i < j (1-based), from the walkthrough's
    differences step; None when it cannot be read or holds a NaN."""
    try:
        differences = np.asarray(walkthrough.step("differences"), dtype=float)
    except (KeyError, ValueError, TypeError):
        return None
    if differences.ndim != 2 or not np.all(np.isfinite(differences)):
        return None
    heads = differences.shape[0]
    return {
        (i + 1, j + 1): float(differences[i, j]) for i in range(heads) for j in range(i + 1, heads)
    }


def heads_have_same_weights(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The two named heads' weights differ nowhere."""
    gaps = _pair_gaps(walkthrough)
    return gaps is not None and gaps.get((values.get("first"), values.get("second"))) == 0.0


def two_heads_differ(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Two heads whose weights differ, by the note's amount."""
    gaps = _pair_gaps(walkthrough)
    return gaps is not None and list(gaps) == [(1, 2)] and 0 < gaps[1, 2] == values.get("most")


def every_pair_differs(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every pair of heads differs, and the note's most and least different pairs are so."""
    gaps = _pair_gaps(walkthrough)
    if not gaps or min(gaps.values()) <= 0:
        return False
    most = gaps.get((values.get("most_first"), values.get("most_second")))
    least = gaps.get((values.get("least_first"), values.get("least_second")))
    return most == max(gaps.values()) and least == min(gaps.values())


def read_heads(
    walkthrough: Walkthrough,
) -> tuple[list[score_transforms.Head], bool, list[np.ndarray]] | None:
    """Every head's Q and K before any QK-norm (its K, or its key/value head's), where its
    logits are −∞ (its masked step), and its weights, read from the steps on screen."""
    found: list[score_transforms.Head] = []
    weights: list[np.ndarray] = []
    keys = {step.key for step in walkthrough.steps}
    heads = sum(1 for key in keys if key.startswith("head") and key.endswith(".weights"))
    kv = int(walkthrough.meta.get("kv_heads", heads) or heads)
    try:
        for i in range(1, heads + 1):
            k_key = f"head{i}.K" if f"head{i}.K" in keys else f"kv{(i - 1) // (heads // kv) + 1}.K"
            w = np.asarray(walkthrough.step(f"head{i}.weights"), dtype=np.float64)
            masked = f"head{i}.masked"
            hidden = (
                np.isneginf(np.asarray(walkthrough.step(masked), dtype=np.float64))
                if masked in keys
                else np.zeros(w.shape, dtype=bool)
            )
            q = np.asarray(walkthrough.step(f"head{i}.Q"), dtype=np.float64)
            k = np.asarray(walkthrough.step(k_key), dtype=np.float64)
            found.append((q, k, hidden))
            weights.append(w)
    except (KeyError, ValueError, TypeError, ZeroDivisionError):
        return None
    return (found, True, weights) if found else None


def _labelled_inputs(
    run: LessonRun,
    parameters: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
    labels: tuple[tuple[str, ...], tuple[str, ...]],
    d_k: int,
    drawn: frozenset[str],
    loaded: pytorch.LoadedAttention | None,
) -> tuple[InputValue, ...]:
    """X (and the keys' and values' sequences) and every weight and bias used; W_Q, W_K, W_V
    columns and W_O rows named by head."""
    weights, biases = parameters
    tokens, keys = labels
    split = _split_labels(weights["W_Q"].shape[1], d_k)
    grouped = _split_labels(weights["W_K"].shape[1], d_k, "kv")
    descriptions = {spec.name: spec.description for spec in CARD.inputs}

    def sequence(name: str) -> str:
        """How --n drew a sequence: from the seed; beside --weights, of the file's width
        (sizes_of_file). "" for a sequence given."""
        if name not in run.drawn:
            return ""
        if loaded is None:
            return f" (drawn, random seed {run.seed})"
        width = run.inputs[name].shape[1]
        return f" (drawn, random seed {run.seed}; {width} columns, the width of {loaded.source})"

    # X's columns (the rows of W_Q, W_K and W_V) by the features they hold, where named.
    features = column_names(run, "features", run.inputs["X"].shape[1])
    items = [
        InputValue(
            "X",
            run.inputs["X"],
            row_labels=tokens,
            col_labels=features,
            description="tokens" + sequence("X"),
        )
    ]
    for name in ("X_K", "X_V"):
        if name in run.inputs:
            description = descriptions[name] + sequence(name)
            items.append(
                InputValue(name, run.inputs[name], row_labels=keys, description=description)
            )

    def origin(name: str) -> str:
        if name in drawn:
            return f" (drawn, random seed {run.seed})"
        if loaded is not None and name in loaded.weights:
            return f" ({loaded.origin(name)})"
        return ""

    for name in WEIGHT_NAMES:
        if name not in weights:
            continue
        description = descriptions[name] + origin(name)
        by_head = {"row_labels": split} if name == "W_O" else {"col_labels": split}
        if name in ("W_K", "W_V") and len(grouped) < len(split):  # a block per key/value head
            by_head = {"col_labels": grouped}
        items.append(
            InputValue(
                name,
                weights[name],
                row_labels=by_head.get("row_labels", features if name != "W_O" else None),
                col_labels=by_head.get("col_labels"),
                description=description,
            )
        )
    for name in WEIGHT_NAMES:
        bias = BIAS_OF[name]
        if bias in biases:
            description = descriptions[bias] + origin(bias)
            items.append(InputValue(bias, biases[bias], description=description))
    return tuple(items)


def _split_labels(d_out: int, d_k: int, prefix: str = "h") -> tuple[str, ...]:
    """Column j of the concatenation (and of W_Q, W_K, W_V) as head·column: h1·1, h1·2, h2·1
    (kv1·1, ... for the key/value heads of grouped-query attention)."""
    return tuple(f"{prefix}{j // d_k + 1}·{j % d_k + 1}" for j in range(d_out))


# What every step's text reads: the sizes and words of both conventions; each head's steps add
# the head and its columns; the masked ones the mask's name ("M", "P" or "M + P").
SIZES = (
    *("n", "h", "h_heads", "dk_columns", "dk_numbers", "d_model", "d_in", "d_out", "dk", "sqrt_dk"),
    *("then_wo", "width", "weight_shape", "m", "kdim", "vdim", "keys_from", "values_from"),
    *("g", "g_heads", "group", "kv_width"),
)
HEAD = (*SIZES, "head", "kv", "cols", "cols_word", "entries_word")
KV = (*SIZES, "kv", "cols", "cols_word", "entries_word", "sharing")
NORMED = score_transforms.STEP_NAMES  # --qk-norm: the norm's name and its ε
MASKED = (*HEAD, "mask_name")
# Head i's Q, K and V: one text each, and one when the projection adds a bias.
PROJECTION_TEXTS = {"Q": "head_Q", "K": "head_K", "V": "head_V"}
BIASED_TEXTS = {"Q": "head_Q_bias", "K": "head_K_bias", "V": "head_V_bias"}
# A key/value head's K and V (grouped-query attention), plain and with a bias.
KV_TEXTS = {"K": "kv_K", "V": "kv_V"}
KV_BIASED_TEXTS = {"K": "kv_K_bias", "V": "kv_V_bias"}

# Each projection text with its names, each K and V one followed by its "_cross" twin (keys or
# values from X_K, X_V), in the lesson file's order.
PROJECTION_STEPS = {
    name: names
    for texts, names in (
        (PROJECTION_TEXTS, HEAD),
        (BIASED_TEXTS, HEAD),
        (KV_TEXTS, KV),
        (KV_BIASED_TEXTS, KV),
    )
    for letter, text in texts.items()
    for name in ((text,) if letter == "Q" else (text, f"{text}_cross"))
}


def _projection_text(texts: dict[str, str], letter: str, base: dict[str, Any]) -> str:
    """The text of a Q, K or V step; K and V read from a sequence of their own (X_K, X_V) take
    the "_cross" text, whose LaTeX has no formula in X."""
    source = {"K": base["keys_from"], "V": base["values_from"]}.get(letter, "X")
    return texts[letter] + ("" if source == "X" else "_cross")


TEXTS = Texts(
    steps={
        "split": SIZES,
        "split_grouped": SIZES,
        "mask": SIZES,
        "mask_cross": SIZES,
        **dict.fromkeys(padding.TEXTS, (*SIZES, *padding.STEP_NAMES)),
        **PROJECTION_STEPS,
        "head_Q_normed": (*HEAD, *NORMED),
        "head_K_normed": (*HEAD, *NORMED),
        "kv_K_normed": (*KV, *NORMED),
        "head_masked": MASKED,
        "head_weights_masked": MASKED,
        "head_weights": HEAD,
        "head_weights_one": HEAD,
        "head_masked_capped": (*MASKED, "cap"),
        "head_weights_capped": (*HEAD, "cap"),
        "head_weights_capped_masked": (*MASKED, "cap"),
        "head_weights_grouped": HEAD,  # grouped-query heads: K_j, V_j in LaTeX
        "head_output": HEAD,
        "head_output_grouped": HEAD,
        "head_dropout": (*HEAD, *dropout.STEP_NAMES),
        "head_output_dropout": HEAD,
        "head_output_dropout_grouped": HEAD,
        "differences": SIZES,
        "differences_one": SIZES,
        "concat": SIZES,
        "concat_one": SIZES,
        "output": (*SIZES, "d_o"),
        "output_one": (*SIZES, "d_o"),
        "output_bias": (*SIZES, "d_o"),
        "output_bias_one": (*SIZES, "d_o"),
    },
    notes={
        "split_rectangular": ("d_in", "d_out", "heads", "d_k"),
        "split_cross": ("d_in", "kdim", "vdim", "d_out", "heads", "d_k"),
        "split_square": ("d_model", "heads", "d_k"),
        "parameters": ("d_model", "count"),
        "parameters_no_wo": ("d_model", "count"),
        "parameters_grouped_no_wo": ("d_model", "kv_width", "count", "full"),
        "parameters_grouped": ("d_model", "kv_width", "count", "full"),
        "kv_cache": (
            "n",
            "g_heads",
            "heads",
            "cached",
            "per_token",
            "full",
            "full_per_token",
            "ratio",
        ),
        "heads_cost": (
            *("n", "m", "heads", "d_model", "d_k", "weights", "one", "dots", "score_flops"),
        ),
        "concat_only": (),
        "one_head": (),
        "heads_same": ("first", "second"),
        "two_heads_differ": ("most",),
        "heads_differ": (
            *("most", "most_first", "most_second"),
            *("least", "least_first", "least_second"),
        ),
        **dict.fromkeys(("drawn_weights", "drawn_biases", "drawn_both"), ("seed",)),
        "drawn_some": ("seed", "names", "given", "verb"),
        "file_weights": ("source", "layout", "heads"),
        **dropout.NOTES,
        **{key: names for key, names in score_transforms.NOTES.items() if key != "qknorm_bound"},
    },
    claims={
        **dropout.CLAIMS,
        "heads_same": heads_have_same_weights,
        "two_heads_differ": two_heads_differ,
        "heads_differ": every_pair_differs,
        **score_transforms.claims_of(read_heads),
    },
    measured=(
        "heads_cost",
        "kv_cache",
        *dropout.MEASURED,
    ),
    general=(
        "split_rectangular",
        "split_cross",
        "split_square",
        "parameters",
        "parameters_grouped",
        "parameters_no_wo",
        "parameters_grouped_no_wo",
        "concat_only",
        "one_head",
        "drawn_weights",
        "drawn_biases",
        "drawn_both",
        "drawn_some",
        "file_weights",
        *dropout.GENERAL,
    ),
)

LESSON = Lesson(
    card=CARD,
    labels=("tokens", "keys", "features"),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    document_estimate=document_estimate,
    build=build,
    draw_random=draw_random,
    option_shapes=option_shapes,
    option_sizes=sizes_of_file,
    texts=TEXTS,
)
