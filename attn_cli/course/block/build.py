"""The Transformer-layer lesson: one encoder (or decoder) layer, or a stack of them, every
intermediate a step.

The layer input is H = X + PE (the token embeddings X plus the sinusoidal positional encoding,
attn posenc's), or H = X with --no-posenc. Post-norm (the paper's drawing): each sublayer is
followed by the residual sum and LayerNorm, LN(H + Sublayer(H)); pre-norm: H + Sublayer(LN(H)).
The decoder masks its self-attention (causal; PyTorch's tgt_mask is optional: --no-causal) and
adds a cross-attention sublayer whose keys and values come from the memory M (an encoder's
output). Every parameter is given (by hand, or from a PyTorch state_dict: settings.py,
pytorch.py), drawn from --seed, or PyTorch's initial value (parameters.py); with the same
parameters and options the layer equals nn.TransformerEncoderLayer / nn.TransformerDecoderLayer
(dropout 0, batch_first, norm_first for pre-norm) and a stack nn.TransformerEncoder /
nn.TransformerDecoder, masks included (tests/test_block_torch.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core import work
from attn_cli.core.backend import namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import InputValue, Note, Walkthrough
from attn_cli.course.block import claims, pytorch
from attn_cli.course.block.card import CARD
from attn_cli.course.block.layer import (
    Layer,
    Mask,
    decoder,
    encoder,
    last_step,
    padding_piece,
    record_mask,
    sub,
)
from attn_cli.course.block.parameters import (
    Stack,
    draw_memory,
    draw_norms,
    draw_weights,
    records,
    resolve,
)
from attn_cli.course.block.settings import MASKS, Settings, check_masks, settings
from attn_cli.course.checks import counted, row_names, whole_at_least
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import block as mech
from attn_cli.mechanisms import masks

BOS = "<bos>"
# Where the lesson's random parameters come from (attn_cli.course.block.parameters).
__all__ = ["LESSON", "draw_memory", "draw_norms", "draw_weights"]


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    d_model = inputs["X"].shape[1]
    chosen = settings(options, inputs)
    if "Memory" in inputs:
        if not chosen.decoder:
            raise UserError(
                f"{param('memory')} (or {param('m')}) is what the decoder's cross-attention reads; add {param('decoder')}, "
                f"or leave out {param('memory')} and {param('m')}."
            )
        rows, cols = inputs["Memory"].shape
        if cols != d_model:
            raise UserError(
                f"{param('memory')} is {rows} × {cols} but X has d_model = {d_model} columns: the memory "
                f"must be m × d_model, {d_model} columns (K = M W_K with W_K d_model × d_model)."
            )
    check_masks(inputs, chosen)


def arrange(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> dict[str, np.ndarray]:
    """--sequence-first: a 3-D X or Memory is n × batch × d_model (PyTorch's default layout,
    batch_first=False); the lesson computes item by item, batch first. Padding masks are
    batch × n either way, as PyTorch's are."""
    if not options.get("sequence_first"):
        return inputs
    arranged = dict(inputs)
    for name in ("X", "Memory"):
        if name in inputs and inputs[name].ndim == 3:
            arranged[name] = np.ascontiguousarray(np.swapaxes(inputs[name], 0, 1))
    return arranged


def sizes_of_file(sizes: dict[str, int], options: dict[str, Any]) -> dict[str, int]:
    """--n N (and --m M) with --weights FILE: X (and the memory) of the file's d_model, drawn
    from --seed; a --d-model that says otherwise is refused."""
    if options.get("weights") is None:
        return sizes
    model = pytorch.load(options["weights"])
    width = model.width
    if width is None:
        return sizes
    asked = sizes.get("d_model")
    if asked is not None and asked != width:
        raise UserError(
            f"{param('d_model', asked)}: {model.where} holds a layer of d_model = {width}; leave out "
            f"{param('d_model')} ({param('n')} draws X of the file's {width} columns)."
        )
    return {**sizes, "d_model": width}


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Token embeddings X (n × d_model); the memory M (m × d_model) only when --m is given."""
    shapes: dict[str, tuple[int, ...]] = {"X": (sizes["n"], sizes["d_model"])}
    if sizes.get("m"):
        shapes["Memory"] = (sizes["m"], sizes["d_model"])
    return shapes


def _estimated_sizes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any]
) -> tuple[int, int, int, int, int, int]:
    """What the estimates read: n, the memory's m (n without one), d_model, the heads, d_ff and
    the layers (taken as 1 where not a whole number of 1 or more)."""
    n, d = shapes["X"]
    m = shapes["Memory"][0] if "Memory" in shapes else n
    heads = whole_at_least(options.get("heads"), f"{param('heads')} (options.heads)")
    d_ff = options.get("d_ff") or 4 * d
    layers = options.get("layers") or 1
    layers = layers if isinstance(layers, int) and layers > 0 else 1
    return n, m, d, heads, d_ff, layers


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    n, m, d, heads, d_ff, layers = _estimated_sizes(shapes, options)
    masks_bytes = 8 * (n * n + n * m)
    return layers * held_numbers(n, m, d, heads, d_ff) * itemsize + masks_bytes


def document_estimate(shapes: dict[str, tuple[int, ...]], options: dict[str, Any]) -> int:
    """The numbers --full JSON writes, layer by layer: each head's weights and scores (a
    causal mask, and a decoder's cross-attention heads, too), the steps of n rows d_model
    or d_ff wide, and the layer's weights (estimate_bytes holds six score matrices a head): a
    head's weights, its scores raw and scaled, and e^s by hand, with Σ e^s."""
    n, m, d, heads, d_ff, layers = _estimated_sizes(shapes, options)
    decoder = bool(options.get("decoder"))
    mask = n * n if decoder or options.get("causal") else 0
    attention = heads * (4 * n * n + n) + mask + (heads * (4 * n * m + n) if decoder else 0)
    rows = (16 + 8 * decoder) * n * d + 2 * n * d_ff + 3 * n * (2 + decoder)
    weights = 4 * d * d * (1 + decoder) + 2 * d * d_ff
    return layers * (attention + rows + weights)


# Numbers the layer makes and records a second here (the work guard's speed): about 2.5e7 at
# --d-ff 10,000,000 (18 s on a loaded 2-core machine: drawing W_1 and W_2 dominates), 1e8 at
# --n 1,500 with 8 heads (the scores, made by matmul).
NUMBERS_PER_SECOND = 2.5e7


def held_numbers(n: int, m: int, d: int, heads: int, d_ff: int) -> int:
    """The numbers one layer's walkthrough holds at its peak: n queries, m keys (the memory's
    rows, or n), width d, d_ff hidden. The weights of d_ff count four times: drawn, scaled,
    and held for the steps (measured: 1.5 GB at --d-ff 4,000,000, where twice counted 0.8)."""
    scores = (
        heads * 6 * (n * n + n * m)
    )  # per head: scores, scaled, weights, exp (and by hand), masked
    rows = 40 * n * d + 3 * n * d_ff + 4 * m * d  # every step of n rows, d or d_ff wide
    weights = 2 * (8 * d * d + 15 * d) + 4 * (2 * d * d_ff + d_ff)
    return scores + rows + weights


# What a layer costs here whatever its sizes (measured with --layers 5 and 45 at the default
# sizes, numpy and torch alike, on a loaded 2-core machine, 2026-12): its 18 steps recorded and
# their claims checked, 0.025 s (with JSON's summaries); and each step drawn as --format asks:
# rich tables 0.55 s a layer, their SVG 1.5 s and HTML 0.75 s, Markdown or LaTeX 0.1 s.
LAYER_SECONDS = 0.025
SHOWN_LAYER_SECONDS = {
    "rich": 0.55,
    "svg": 1.5,
    "html": 0.75,
    "markdown": 0.1,
    "latex": 0.1,
    "beamer": 0.1,  # the LaTeX article's blocks, cut into frames
}
SHOWN_AS = {
    "rich": "draw as tables",
    "svg": "draw as an SVG picture",
    "html": "draw as an HTML page",
    "markdown": "write as Markdown",
    "latex": "write as LaTeX",
    "beamer": "write as beamer slides",
    "json": "write as JSON",
}


def check_work(inputs: dict[str, np.ndarray], options: dict[str, Any], shown: str | None) -> None:
    """The lesson's work guard (Lesson.check_work): its layers at the inputs' sizes."""
    n, d_model = inputs["X"].shape
    m = inputs["Memory"].shape[0] if "Memory" in inputs else n
    check_layer_work(n, m, d_model, settings(options, inputs), shown)


def check_layer_work(n: int, m: int, d: int, chosen: Settings, shown: str | None = None) -> None:
    """Refuse layers that would take more than a few minutes to make here (the work guard, as
    the other lessons' sizes have it), saying how long: their numbers, and what each layer's
    steps cost to record and (``shown``: the --format they are written in) to write."""
    numbers = chosen.layers * held_numbers(n, m, d, chosen.heads, chosen.d_ff)
    per_layer = LAYER_SECONDS + SHOWN_LAYER_SECONDS.get(shown or "", 0.0)
    seconds = numbers / NUMBERS_PER_SECOND + chosen.layers * per_layer
    writing = f" and {SHOWN_AS[shown]}" if shown in SHOWN_AS else ""
    work.check_work(
        seconds,
        1.0,
        f"{counted(chosen.layers, 'layer')} of n = {n:,} token{'' if n == 1 else 's'}, "
        f"d_model = {d:,}, "
        f"d_ff = {chosen.d_ff:,} and {counted(chosen.heads, 'head')} make {numbers:.2g} numbers, "
        f"and each layer's steps take {per_layer:.2g} s to record{writing}",
        f"a smaller {param('n')}, {param('d_model')}, {param('d_ff')} or {param('layers')}",
    )


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    embeddings = run.inputs["X"]
    n, d = embeddings.shape
    s = settings(run.options, run.inputs)
    if s.decoder:
        targets = row_names(run, "tokens", n, "y", param("tokens"))
        rows = (BOS, *targets[:-1])
    else:
        targets = ()
        rows = row_names(run, "tokens", n, "t", param("tokens"))
    memory_given = "Memory" in run.inputs
    memory_in = run.inputs["Memory"] if memory_given else None
    if s.decoder and memory_in is None:
        memory_in = draw_memory(run.seed, n, d)
    m = 0 if memory_in is None else memory_in.shape[0]
    memory_rows = row_names(run, "memory", m, "m", "the example's labels.memory") if m else ()
    stack = resolve(run.inputs, s, run.seed, d)
    base = {
        "n": n,
        "m": m,
        "d_model": d,
        "d_ff": s.d_ff,
        "h": s.heads,
        "dk": d // s.heads,
        "sqrt_dk": math.sqrt(d // s.heads),
        "eps": s.eps,
        "arrangement": "pre-norm" if s.pre_norm else "post-norm",
        "layer": "",
    }
    record = StepRecorder(run)
    if stack.sources() & {"given", "file"}:
        record.add("parameters", records(stack), kind="records", grid=Grid(context=base))
    if s.decoder:
        record.add(
            "shift",
            [{"position": i + 1, "decoder_input": rows[i], "target": targets[i]} for i in range(n)],
            kind="records",
            grid=Grid(context=base),
        )
    x = backend.asarray(embeddings)
    if s.posenc:
        positions = backend.asarray(np.arange(n, dtype=np.float64))  # (n,) 0 .. n-1
        pairs = backend.asarray(np.arange(d // 2, dtype=np.float64))  # (d/2,)
        pe_columns = tuple(label for i in range(d // 2) for label in (f"sin{i}", f"cos{i}"))
        pe = record.compute(
            "pe",
            lambda: mech.positional_encoding(positions, pairs, d),
            grid=Grid(rows, pe_columns, base),
        )
        h = record.compute("x", lambda: x + pe, grid=Grid(rows, context=base))
    else:
        h = x
        record.add("x", h, grid=Grid(rows, context=base), text="x_plain")
    memory = None if memory_in is None else backend.asarray(memory_in)
    self_mask, cross_mask = _masks(record, run, s, h, (rows, memory_rows), base)
    output = _layers(
        record, s, stack, (h, rows, base), (memory, memory_rows), (self_mask, cross_mask)
    )
    notes = _notes(record, run, s, stack, output, memory_given)
    x_words = "token embeddings" + _drawn_words(run, s, "X", d)
    inputs = [InputValue("X", embeddings, row_labels=rows, description=x_words)]
    if memory_in is not None:
        description = "memory M (encoder output)" + (
            _drawn_words(run, s, "Memory", d)
            if memory_given
            else f" (drawn, random seed {run.seed})"
        )
        inputs.append(
            InputValue("Memory", memory_in, row_labels=memory_rows, description=description)
        )
    descriptions = {spec.name: spec.description for spec in CARD.inputs}
    for name in MASKS:
        if name in run.inputs:
            labels = memory_rows if name.startswith("memory") else rows
            square = name.startswith("attn")  # a query-by-key mask: rows and columns named
            inputs.append(
                InputValue(
                    name,
                    run.inputs[name],
                    row_labels=rows if square else None,
                    col_labels=labels if square else None,
                    description=descriptions[name],
                )
            )
    named = stack.named()
    for name, parameter in named.items():
        own = name.rpartition(".")[2]
        layer = name.partition(".")[0].removeprefix("layer") if "." in name else ""
        where = f"layer {layer}'s " if layer else ""
        description = f"{where}{descriptions[own]} ({parameter.origin})"
        by_head: dict[str, tuple[str, ...]] = {}
        if s.kv < s.heads and own.startswith(("W_K", "W_V")):  # a block per key/value head
            dk = d // s.heads
            by_head["col_labels"] = tuple(
                f"kv{j // dk + 1}·{j % dk + 1}" for j in range(parameter.value.shape[1])
            )
        inputs.append(
            InputValue(
                name,
                parameter.value,
                col_labels=by_head.get("col_labels"),
                description=description,
            )
        )
    meta = {
        "pre_norm": s.pre_norm,
        "decoder": s.decoder,
        "heads": s.heads,
        "d_ff": s.d_ff,
        "d_model": d,
        "eps": s.eps,
        "activation": s.activation,
        "bias": s.bias,
        "causal": s.causal,
        "layers": s.layers,
        "shared_weights": stack.shared,
        "final_norm": s.final_norm,
        "gamma_beta": s.gamma_beta,
        "parameters": sum(int(parameter.value.size) for parameter in named.values()),
        "memory_drawn": bool(s.decoder and not memory_given),
        "module": None if s.model is None else s.model.module,
        "sources": {name: parameter.source for name, parameter in named.items()},
        "seed": run.seed,
        "options": _shown_options(run.options),
    }
    if s.kv < s.heads:  # grouped-query heads (plain multi-head runs keep their JSON as it was)
        meta["kv_heads"] = s.kv
    return record.walkthrough(output, inputs=tuple(inputs), notes=notes, meta=meta)


def _drawn_words(run: LessonRun, s: Settings, name: str, d: int) -> str:
    """How --n (X) or --m (the memory) drew an input, after its description: from the seed,
    its d_model the file's beside --weights (settings refuses another width); "" for an input
    given."""
    if name not in run.drawn:
        return ""
    width = "" if s.model is None else f"; d_model = {d} from {s.model.source}"
    return f" (drawn, random seed {run.seed}{width})"


def _shown_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options as the JSON shows them: a state_dict given from Python as what it is."""
    shown = dict(options)
    weights = shown.get("weights")
    if weights is not None and not isinstance(weights, str):
        shown["weights"] = (
            f"a state_dict of {len(weights)} arrays"
            if isinstance(weights, Mapping)
            else str(weights)
        )
    return shown


def _masks(
    record: StepRecorder,
    run: LessonRun,
    s: Settings,
    h: Any,
    rows_of: tuple[tuple[str, ...], tuple[str, ...]],
    base: dict[str, Any],
) -> tuple[Mask | None, Mask | None]:
    """The self-attention's mask and the cross-attention's, each one step (recorded once: every
    layer of a stack reads the same), or None where there is none."""
    rows, memory_rows = rows_of
    backend, inputs = run.backend, run.inputs
    xp = namespace_of(h)
    n = len(rows)
    like = xp.zeros((n, n), dtype=h.dtype, device=h.device)  # (n, n): the mask's shape, dtype
    pieces: list[tuple[str, str, Any]] = []
    if s.causal:
        pieces.append(("causal", "−∞ above the diagonal", masks.causal_additive(like)))
    if "attn_mask" in inputs:
        blocked = backend.asarray(inputs["attn_mask"])
        pieces.append(("attn_mask", "−∞ where it is 1", masks.additive(blocked == 0, like)))
    if "attn_mask_float" in inputs:
        pieces.append(
            ("attn_mask", "its numbers, as given", backend.asarray(inputs["attn_mask_float"]))
        )
    if "key_padding_mask" in inputs:
        padding = backend.asarray(inputs["key_padding_mask"])
        words = "−∞ in every padded token's column"
        pieces.append(("key padding", words, padding_piece(xp, like, padding)))
    self_mask = record_mask(record, "self", like, pieces, Grid(rows, rows, base))
    cross_mask = None
    if "memory_key_padding_mask" in inputs:
        m = len(memory_rows)
        wide = xp.zeros((n, m), dtype=h.dtype, device=h.device)
        padding = backend.asarray(inputs["memory_key_padding_mask"])
        words = "−∞ in every padded memory row's column"
        piece = ("memory key padding", words, padding_piece(xp, wide, padding))
        cross_mask = record_mask(record, "cross", wide, [piece], Grid(rows, memory_rows, base))
    return self_mask, cross_mask


def _layers(
    record: StepRecorder,
    s: Settings,
    stack: Stack,
    start: tuple[Any, tuple[str, ...], dict[str, Any]],
    memory: tuple[Any, tuple[str, ...]],
    masks_of: tuple[Mask | None, Mask | None],
) -> Any:
    """Every layer in turn, each reading the one before; then the stack's final LayerNorm."""
    h, rows, base = start
    given, given_step = "H", "x"
    for index in range(1, s.layers + 1):
        parameters = stack.layers[0 if stack.shared else index - 1]
        layer = Layer(record, s, rows, base, parameters, index)
        # a stack's layer k writes H_k, which layer k + 1 reads (Y_i are the heads' outputs)
        out = "Y" if s.layers == 1 and not s.final_norm else f"H{sub(index)}"
        names = (given, given_step, out)
        if s.decoder:
            h = decoder(layer, h, names, memory, masks_of)
        else:
            h = encoder(layer, h, names, masks_of[0])
        given, given_step = out, last_step(s, layer.prefix)
    if s.final_norm:
        final = Layer(record, s, rows, base, stack.final, 0)
        h = final.norm("final", h, (given, "Y"), given_step)
    return h


def _notes(
    record: StepRecorder,
    run: LessonRun,
    s: Settings,
    stack: Stack,
    output: Any,
    memory_given: bool,
) -> tuple[Note, ...]:
    sources = [parameter.source for parameter in stack.named().values()]
    notes: list[Note] = []
    if {"given", "file"} & set(sources):
        drawn, initial = sources.count("drawn"), sources.count("initial")
        notes.append(
            record.note(
                "given_drawn",
                given=len(sources) - drawn - initial,
                drawn=drawn,
                initial=initial,
                seed=run.seed,
            )
        )
    else:
        notes.append(record.note("drawn", seed=run.seed))
    if s.model is not None:
        notes.append(
            record.note(
                "file_settings",
                source=s.model.source,
                module=s.model.module,
                heads=s.heads,
                arrangement="pre-norm (norm_first=True)" if s.pre_norm else "post-norm",
                activation=s.activation,
                eps=s.eps,
            )
        )
    if stack.shared:
        notes.append(record.note("shared", layers=s.layers))
    if s.decoder and not memory_given:
        notes.append(record.note("memory_drawn", seed=run.seed, m=int(run.inputs["X"].shape[0])))
    if s.kv < s.heads:
        notes.append(_saving_note(record, s, int(run.inputs["X"].shape[1])))
    if s.pre_norm and not s.final_norm:
        out = np.asarray(record.to_numpy(output), dtype=np.float64)
        with np.errstate(all="ignore"):
            variances = np.var(out, axis=-1)
        notes.append(
            record.note("unnormalised", low=float(np.min(variances)), high=float(np.max(variances)))
        )
    return tuple(notes)


def _saving_note(record: StepRecorder, s: Settings, d_model: int) -> Note:
    """What grouped-query heads save, from the shapes on screen: K and V g·d_k wide per token
    and attention sublayer instead of d_model, and W_K, W_V's weights."""
    kv_width = s.kv_width(d_model)
    return record.note(
        "kv_saving",
        g=s.kv,
        h=s.heads,
        dk=d_model // s.heads,
        d_model=d_model,
        kv_width=kv_width,
        per_token=2 * kv_width,
        full_per_token=2 * d_model,
        ratio=s.heads // s.kv,
        params=2 * d_model * kv_width,
        full_params=2 * d_model * d_model,
    )


# The values the step texts read: the sizes everywhere; a sublayer's names where it runs.
BASE = ("n", "m", "d_model", "d_ff", "h", "dk", "sqrt_dk", "eps", "arrangement", "layer")
ATTENTION = (*BASE, "sub", "input", "source", "source_words", "result")
PROJECTION = (*ATTENTION, "bias")
HEAD = (*ATTENTION, "head", "cols", "kv")
GROUPED = ("g_heads", "group", "pairing", "kv_width")  # grouped-query heads (--kv-heads)
NORM = (*BASE, "which", "input", "result", "beta")
FFN = (*BASE, "input", "result", "act", "bias")
TEXTS = Texts(
    steps={
        "parameters": BASE,
        "shift": BASE,
        "pe": BASE,
        "x": BASE,
        "x_plain": BASE,
        "mask": BASE,
        "mask_combined": (*BASE, "sub", "which", "pieces"),
        "q": PROJECTION,
        "q_one": PROJECTION,
        "k": PROJECTION,
        "v": PROJECTION,
        "k_grouped": (*PROJECTION, *GROUPED),
        "v_grouped": (*PROJECTION, *GROUPED),
        "head_weights": HEAD,
        "head_weights_grouped": (*HEAD, "kv_cols"),
        "head_weights_masked": HEAD,
        "head_weights_mask": HEAD,
        "cross_weights": HEAD,
        "cross_weights_masked": HEAD,
        # grouped-query heads: the same, naming the key/value head's columns (K_j in LaTeX)
        "head_weights_masked_grouped": (*HEAD, "kv_cols"),
        "head_weights_mask_grouped": (*HEAD, "kv_cols"),
        "cross_weights_grouped": (*HEAD, "kv_cols"),
        "cross_weights_masked_grouped": (*HEAD, "kv_cols"),
        "concat": ATTENTION,
        "concat_one": ATTENTION,
        "concat_grouped": (*ATTENTION, *GROUPED),
        "attn_output": PROJECTION,
        "attn_output_one": PROJECTION,
        "add": (*BASE, "total", "left", "right"),
        "norm_stats": NORM,
        "norm_normalised": NORM,
        "norm": NORM,
        "ffn_pre": FFN,
        "ffn_hidden": FFN,
        "ffn_hidden_gelu": FFN,
        "ffn_hidden_gelu_tanh": FFN,
        "ffn_output": FFN,
    },
    notes={
        "norm_rows": ("which", "gap", "low", "high", "eps", "norm"),
        "flat_rows": ("rows", "count", "input", "input_step", "which"),
        "variance_beyond": ("rows", "input", "which", "dtype", "largest", "norm"),
        "causal_zero": ("head", "step"),
        "causal_zero_encoder": ("head", "step"),
        "kv_shared": ("head", "kv", "kv_cols", "sharing"),
        "kv_saving": (
            *("g", "h", "dk", "d_model", "kv_width", "per_token", "full_per_token", "ratio"),
            *("params", "full_params"),
        ),
        "empty_rows": ("rows", "count", "step", "mask_step"),
        "relu_zeros": ("zeros", "total", "percent", "step"),
        "relu_units": ("units", "always", "never", "mixed", "step"),
        "drawn": ("seed",),
        "given_drawn": ("given", "drawn", "initial", "seed"),
        "file_settings": ("source", "module", "heads", "arrangement", "activation", "eps"),
        "shared": ("layers",),
        "memory_drawn": ("seed", "m"),
        "unnormalised": ("low", "high"),
    },
    claims={
        "norm_rows": claims.rows_normalised,
        "flat_rows": claims.rows_flat,
        "variance_beyond": claims.variance_beyond,
        "causal_zero": claims.causal_zero,
        "causal_zero_encoder": claims.causal_zero,
        "empty_rows": claims.empty_rows,
        "relu_zeros": claims.relu_zeros,
        "relu_units": claims.relu_units,
        "drawn": claims.drawn_as_said,
        "given_drawn": claims.drawn_as_said,
        "unnormalised": claims.unnormalised,
        "kv_saving": claims.kv_saving,
    },
    general=(
        "kv_shared",
        "memory_drawn",
        "file_settings",
        "shared",
    ),
)

LESSON = Lesson(
    card=CARD,
    labels=("tokens", "memory"),
    validate=validate,
    check_work=check_work,
    random_shapes=random_shapes,
    option_sizes=sizes_of_file,
    estimate_bytes=estimate_bytes,
    document_estimate=document_estimate,
    build=build,
    texts=TEXTS,
    example_overrides=frozenset(spec.name for spec in CARD.inputs if spec.name != "X"),
    memory_fix=(
        f"choose a smaller {param('n')}, {param('m')}, {param('d_model')}, {param('d_ff')} or "
        f"{param('layers')}"
    ),
    arrange=arrange,
)
