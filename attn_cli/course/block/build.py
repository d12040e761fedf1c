"""The Transformer-layer lesson: one encoder (or decoder) layer, every intermediate a step.

The layer input is H = X + PE (the token embeddings X plus the sinusoidal positional encoding,
attn posenc's), or H = X with --no-posenc. Post-norm (the paper's drawing): each sublayer is
followed by the residual sum and LayerNorm, LN(H + Sublayer(H)); pre-norm: H + Sublayer(LN(H)).
The decoder adds the causal mask to its self-attention and a cross-attention sublayer whose keys
and values come from the memory M (an encoder's output). The weights are drawn from --seed
(draw_weights), so the layer equals nn.TransformerEncoderLayer / nn.TransformerDecoderLayer
(dropout 0, ReLU, batch_first, norm_first for pre-norm) holding the same weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core import work
from attn_cli.core.backend import LARGEST, namespace_of
from attn_cli.core.errors import UserError
from attn_cli.core.model import InputValue, Note, Part, Walkthrough
from attn_cli.course.block.card import CARD
from attn_cli.course.checks import counted, row_names, whole_at_least
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import block as mech
from attn_cli.mechanisms import masks

LETTERS = "QKVO"
SUBSCRIPTS = "₀₁₂₃₄₅₆₇₈₉"
BOS = "<bos>"


@dataclass(frozen=True)
class Settings:
    heads: int
    d_ff: int
    eps: float
    pre_norm: bool
    decoder: bool
    posenc: bool
    gamma_beta: bool


def settings(options: Mapping[str, Any], d_model: int) -> Settings:
    """The options, checked against the width d_model; each problem names its option."""
    heads = whole_at_least(options.get("heads"), "--heads (options.heads)")
    if d_model % heads:
        raise UserError(
            f"X has d_model = {d_model} columns, which {heads} heads cannot share: --heads must "
            f"divide d_model (each head gets d_model / h columns of W_Q, W_K and W_V)."
        )
    d_ff = options.get("d_ff")
    d_ff = 4 * d_model if d_ff is None else whole_at_least(d_ff, "--d-ff (options.d_ff)")
    eps = options.get("eps")
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < math.inf:
        raise UserError(f"--eps {eps!r}: give LayerNorm's ε as a number > 0, such as 1e-5.")
    posenc = bool(options.get("posenc"))
    if posenc and d_model % 2:
        raise UserError(
            f"X has d_model = {d_model} columns, but the sinusoidal positional encoding fills "
            "two columns per frequency (a sine and a cosine): give an even d_model, or "
            "--no-posenc."
        )
    return Settings(
        heads,
        d_ff,
        float(eps),
        bool(options.get("pre_norm")),
        bool(options.get("decoder")),
        posenc,
        bool(options.get("gamma_beta")),
    )


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    n, d_model = inputs["X"].shape
    chosen = settings(options, d_model)
    check_layer_work(n, inputs["Memory"].shape[0] if "Memory" in inputs else n, d_model, chosen)
    if "Memory" in inputs:
        if not chosen.decoder:
            raise UserError(
                "--memory (or --m) is what the decoder's cross-attention reads; add --decoder, "
                "or leave out --memory and --m."
            )
        rows, cols = inputs["Memory"].shape
        if cols != d_model:
            raise UserError(
                f"--memory is {rows} × {cols} but X has d_model = {d_model} columns: the memory "
                f"must be m × d_model, {d_model} columns (K = M W_K with W_K d_model × d_model)."
            )


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Token embeddings X (n × d_model); the memory M (m × d_model) only when --m is given."""
    shapes: dict[str, tuple[int, ...]] = {"X": (sizes["n"], sizes["d_model"])}
    if sizes.get("m"):
        shapes["Memory"] = (sizes["m"], sizes["d_model"])
    return shapes


# Numbers the layer makes and records a second here (the work guard's speed): about 2.5e7 at
# --d-ff 10,000,000 (18 s on a loaded 2-core machine: drawing W_1 and W_2 dominates), 1e8 at
# --n 1,500 with 8 heads (the scores, made by matmul).
NUMBERS_PER_SECOND = 2.5e7


def held_numbers(n: int, m: int, d: int, heads: int, d_ff: int) -> int:
    """The numbers a layer's walkthrough holds at its peak: n queries, m keys (the memory's
    rows, or n), width d, d_ff hidden. The weights of d_ff count four times: drawn, scaled,
    and held for the steps (measured: 1.5 GB at --d-ff 4,000,000, where twice counted 0.8)."""
    scores = heads * 5 * (n * n + n * m)  # per head: scores, scaled, weights, exp, masked
    rows = 40 * n * d + 3 * n * d_ff + 4 * m * d  # every step of n rows, d or d_ff wide
    weights = 2 * (8 * d * d + 7 * d) + 4 * (2 * d * d_ff + d_ff)
    return scores + rows + weights


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    n, d = shapes["X"]
    m = shapes["Memory"][0] if "Memory" in shapes else n
    heads = whole_at_least(options.get("heads"), "--heads (options.heads)")
    d_ff = options.get("d_ff") or 4 * d
    return held_numbers(n, m, d, heads, d_ff) * itemsize


def check_layer_work(n: int, m: int, d: int, chosen: Settings) -> None:
    """Refuse a layer that would take more than a few minutes to make here (the work guard,
    as the other lessons' sizes have it), saying how long."""
    numbers = held_numbers(n, m, d, chosen.heads, chosen.d_ff)
    work.check_work(
        numbers,
        NUMBERS_PER_SECOND,
        f"a layer of n = {n:,} tokens, d_model = {d:,}, d_ff = {chosen.d_ff:,} and "
        f"{counted(chosen.heads, 'head')} makes {numbers:.2g} numbers",
        "a smaller --n, --d-model or --d-ff",
    )


def draw_weights(seed: int, d_model: int, d_ff: int, decoder: bool) -> dict[str, np.ndarray]:
    """The layer's weights, in this order from numpy's default_rng(seed).spawn(1)[0]:
    self-attention's W_Q, W_K, W_V, W_O (d_model × d_model, N(0, 1/d_model): attn multihead's
    for the same seed), with the decoder cross-attention's four, then W_1 (d_model × d_ff) and
    b_1 (d_ff,) with N(0, 1/d_model) entries, W_2 (d_ff × d_model) and b_2 (d_model,) with
    N(0, 1/d_ff) entries: each layer's outputs keep about the scale of its inputs."""
    if seed < 0:
        raise UserError(f"--seed {seed}: give a seed of 0 or more.")
    rng = np.random.default_rng(seed).spawn(1)[0]
    weights: dict[str, np.ndarray] = {}
    for prefix in ("", "cross.") if decoder else ("",):
        for letter in LETTERS:
            weights[f"{prefix}W_{letter}"] = rng.standard_normal((d_model, d_model)) / math.sqrt(
                d_model
            )
    weights["W_1"] = rng.standard_normal((d_model, d_ff)) / math.sqrt(d_model)
    weights["b_1"] = rng.standard_normal(d_ff) / math.sqrt(d_model)
    weights["W_2"] = rng.standard_normal((d_ff, d_model)) / math.sqrt(d_ff)
    weights["b_2"] = rng.standard_normal(d_model) / math.sqrt(d_ff)
    return weights


def draw_norms(seed: int, d_model: int, count: int, drawn: bool) -> dict[str, np.ndarray]:
    """γ_i and β_i of each LayerNorm: 1 and 0 (nn.LayerNorm's initial values), or with
    --gamma-beta γ = 1 + N(0, 0.1²), β = N(0, 0.1²) from default_rng(seed).spawn(3)[2]."""
    rng = np.random.default_rng(seed).spawn(3)[2]
    norms: dict[str, np.ndarray] = {}
    for index in range(1, count + 1):
        gamma, beta = np.ones(d_model), np.zeros(d_model)
        if drawn:
            gamma = gamma + 0.1 * rng.standard_normal(d_model)
            beta = 0.1 * rng.standard_normal(d_model)
        norms[f"γ_{index}"], norms[f"β_{index}"] = gamma, beta
    return norms


def draw_memory(seed: int, m: int, d_model: int) -> np.ndarray:
    """The memory when none is given: N(0, 1) entries from default_rng(seed).spawn(2)[1]."""
    return np.random.default_rng(seed).spawn(2)[1].standard_normal((m, d_model))


def sub(index: int) -> str:
    """1 -> "₁": the subscript of LN₁, Z₁."""
    return "".join(SUBSCRIPTS[int(digit)] for digit in str(index))


class _Layer:
    """Records the layer's sublayers in order, each with the names the slides give them."""

    def __init__(self, run: LessonRun, s: Settings, rows: tuple[str, ...], base: dict[str, Any]):
        self.run, self.s, self.rows, self.base = run, s, rows, base
        self.record = StepRecorder(run)
        self.norms: dict[str, Any] = {}
        self.relu_notes = 0

    def context(self, **names: Any) -> dict[str, Any]:
        return {**self.base, **names}

    def norm(self, index: int, x: Any, given: str, result: str, input_step: str) -> Any:
        """LN_index(x): its statistics, x̂, then γ ⊙ x̂ + β, three steps."""
        record, backend = self.record, self.run.backend
        gamma = backend.asarray(self.norms[f"γ_{index}"])
        beta = backend.asarray(self.norms[f"β_{index}"])
        parts, seconds = self.run.timed(lambda: mech.layer_norm(x, gamma, beta, self.s.eps))
        context = self.context(which=sub(index), input=given, result=result)
        xp = namespace_of(x)
        stats = xp.concat((parts.mean, parts.variance, parts.root), axis=-1)  # (n, 3)
        key = f"norm{index}"
        record.add(
            f"{key}.stats",
            stats,
            grid=Grid(self.rows, ("mean μ", "variance σ²", "√(σ² + ε)"), context),
            text="norm_stats",
        )
        record.add(
            f"{key}.normalised",
            parts.normalised,
            grid=Grid(self.rows, context=context),
            text="norm_normalised",
            notes=self._norm_notes(index, x, parts, given, input_step),
        )
        record.add(
            key,
            parts.output,
            grid=Grid(self.rows, context=context),
            text="norm",
            seconds=seconds,
        )
        return parts.output

    def _norm_notes(
        self, index: int, x: Any, parts: mech.NormParts, given: str, input_step: str
    ) -> tuple[Note, ...]:
        """Both notes when they apply; the claims keep the true ones."""
        record = self.record
        source = np.asarray(record.to_numpy(x), dtype=np.float64)
        hat = np.asarray(record.to_numpy(parts.normalised), dtype=np.float64)
        with np.errstate(all="ignore"):
            flat = [i for i in range(source.shape[0]) if np.ptp(source[i]) == 0]
            means = np.mean(hat, axis=-1)
            variances = np.mean((hat - means[:, None]) ** 2, axis=-1)
        notes = []
        variance = np.asarray(record.to_numpy(parts.variance), dtype=np.float64).ravel()
        root = np.asarray(record.to_numpy(parts.root), dtype=np.float64).ravel()
        beyond = [i for i in range(len(variance)) if np.isinf(variance[i]) and np.isfinite(root[i])]
        if beyond:
            notes.append(
                record.note(
                    "variance_beyond",
                    rows=", ".join(self.rows[i] for i in beyond),
                    input=given,
                    which=sub(index),
                    dtype=self.run.backend.dtype,
                    largest=LARGEST[self.run.backend.dtype],
                )
            )
        if flat:
            notes.append(
                record.note(
                    "flat_rows",
                    rows=", ".join(self.rows[i] for i in flat),
                    count=len(flat),
                    input=given,
                    input_step=input_step,
                    which=sub(index),
                )
            )
        else:
            notes.append(
                record.note(
                    "norm_rows",
                    which=sub(index),
                    gap=float(np.max(np.abs(means))),
                    low=float(np.min(variances)),
                    high=float(np.max(variances)),
                    eps=self.s.eps,
                )
            )
        return tuple(notes)

    def add(self, index: int, left: Any, right: Any, total: str, names: tuple[str, str]) -> Any:
        return self.record.compute(
            f"add{index}",
            lambda: mech.residual(left, right),
            grid=Grid(self.rows, context=self.context(total=total, left=names[0], right=names[1])),
            text="add",
        )

    def attention(
        self,
        prefix: str,
        x: Any,
        source: tuple[Any, str, tuple[str, ...]],
        names: tuple[str, str, str],
        mask: Any | None = None,
    ) -> Any:
        """Multi-head attention of x over the source (x itself, or the memory): Q, K, V, each
        head's weights, the concatenation and the output, one step each."""
        record, backend = self.record, self.run.backend
        memory, source_name, source_rows = source
        sublayer, given, result = names
        cross = prefix == "cross"
        weights = tuple(
            backend.asarray(self.weights[f"{'cross.' if cross else ''}W_{letter}"])
            for letter in LETTERS
        )
        heads = self.s.heads
        parts, seconds = self.run.timed(lambda: mech.multi_head(x, memory, weights, heads, mask))
        context = self.context(
            sub=sublayer,
            input=given,
            source=source_name,
            source_words=(
                f"the memory M, the encoder's output ({counted(memory.shape[0], 'row')})"
                if cross
                else f"the layer's own tokens {given}"
            ),
            result=result,
        )
        columns = tuple(
            f"h{j // self.base['dk'] + 1}·{j % self.base['dk'] + 1}"
            for j in range(self.base["d_model"])
        )
        record.add(f"{prefix}.Q", parts.q, grid=Grid(self.rows, columns, context), text="q")
        record.add(f"{prefix}.K", parts.k, grid=Grid(source_rows, columns, context), text="k")
        record.add(f"{prefix}.V", parts.v, grid=Grid(source_rows, columns, context), text="v")
        text = (
            "cross_weights"
            if cross
            else "head_weights_masked"
            if mask is not None
            else ("head_weights")
        )
        for index, head in enumerate(parts.heads):
            span = f"{index * self.base['dk'] + 1}–{(index + 1) * self.base['dk']}"
            notes: tuple[Note, ...] = ()
            if mask is not None:
                notes = (record.note("causal_zero", head=index + 1),)
            record.add(
                f"{prefix}.head{index + 1}.weights",
                head.weights,
                kind="weights",
                row_sums=True,
                parts=(Part("scaled scores Q Kᵀ / √d_k (this head's columns)", head.scaled),),
                grid=Grid(self.rows, source_rows, {**context, "head": index + 1, "cols": span}),
                text=text,
                notes=notes,
            )
        record.add(
            f"{prefix}.concat", parts.concat, grid=Grid(self.rows, columns, context), text="concat"
        )
        record.add(
            f"{prefix}.output",
            parts.output,
            grid=Grid(self.rows, context=context),
            text="attn_output",
            seconds=seconds,
        )
        return parts.output

    def feed_forward(self, x: Any, given: str, result: str) -> Any:
        record, backend = self.record, self.run.backend
        w1, b1, w2, b2 = (
            backend.asarray(self.weights[name]) for name in ("W_1", "b_1", "W_2", "b_2")
        )
        parts, seconds = self.run.timed(lambda: mech.feed_forward(x, w1, b1, w2, b2))
        context = self.context(input=given, result=result)
        hidden_cols = tuple(f"u{j + 1}" for j in range(self.s.d_ff))
        record.add("ffn.pre", parts.pre, grid=Grid(self.rows, hidden_cols, context), text="ffn_pre")
        hidden = np.asarray(record.to_numpy(parts.hidden))
        zeros = int(np.count_nonzero(hidden == 0))
        record.add(
            "ffn.hidden",
            parts.hidden,
            grid=Grid(self.rows, hidden_cols, context),
            text="ffn_hidden",
            notes=(
                record.note(
                    "relu_zeros",
                    zeros=zeros,
                    total=int(hidden.size),
                    percent=100.0 * zeros / max(1, hidden.size),
                ),
            ),
        )
        record.add(
            "ffn.output",
            parts.output,
            grid=Grid(self.rows, context=context),
            text="ffn_output",
            seconds=seconds,
        )
        return parts.output

    weights: dict[str, np.ndarray]


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    embeddings = run.inputs["X"]
    n, d = embeddings.shape
    s = settings(run.options, d)
    if s.decoder:
        targets = row_names(run, "tokens", n, "y", "--tokens")
        rows = (BOS, *targets[:-1])
    else:
        targets = ()
        rows = row_names(run, "tokens", n, "t", "--tokens")
    memory_given = "Memory" in run.inputs
    memory_in = run.inputs["Memory"] if memory_given else None
    if s.decoder and memory_in is None:
        memory_in = draw_memory(run.seed, n, d)
    m = 0 if memory_in is None else memory_in.shape[0]
    memory_rows = row_names(run, "memory", m, "m", "the example's labels.memory") if m else ()
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
    }
    layer = _Layer(run, s, rows, base)
    layer.weights = draw_weights(run.seed, d, s.d_ff, s.decoder)
    layer.norms = draw_norms(run.seed, d, 3 if s.decoder else 2, s.gamma_beta)
    record = layer.record
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
    output = _decoder(layer, h, memory, memory_rows) if s.decoder else _encoder(layer, h)
    notes: list[Note] = [record.note("drawn", seed=run.seed)]
    if s.decoder and not memory_given:
        notes.append(record.note("memory_drawn", seed=run.seed, m=m))
    if s.pre_norm:
        out = np.asarray(record.to_numpy(output), dtype=np.float64)
        with np.errstate(all="ignore"):
            variances = np.var(out, axis=-1)
        notes.append(
            record.note("unnormalised", low=float(np.min(variances)), high=float(np.max(variances)))
        )
    inputs = [InputValue("X", embeddings, row_labels=rows, description="token embeddings")]
    if memory_in is not None:
        description = "memory M (encoder output)" + (
            "" if memory_given else f" (drawn, random seed {run.seed})"
        )
        inputs.append(
            InputValue("Memory", memory_in, row_labels=memory_rows, description=description)
        )
    for name, value in {**layer.weights, **layer.norms}.items():
        inputs.append(InputValue(name, value, description=_describe(name, run.seed, s)))
    parameters = sum(int(v.size) for v in (*layer.weights.values(), *layer.norms.values()))
    meta = {
        "pre_norm": s.pre_norm,
        "decoder": s.decoder,
        "heads": s.heads,
        "d_ff": s.d_ff,
        "eps": s.eps,
        "parameters": parameters,
        "memory_drawn": bool(s.decoder and not memory_given),
    }
    return record.walkthrough(output, inputs=tuple(inputs), notes=tuple(notes), meta=meta)


def _describe(name: str, seed: int, s: Settings) -> str:
    if name.startswith(("γ", "β")):
        which = "γ" if name.startswith("γ") else "β"
        norm = f"LN{sub(int(name.split('_')[1]))}"
        if s.gamma_beta:
            return f"{which} of {norm} (drawn, random seed {seed})"
        return f"{which} of {norm} ({'1' if which == 'γ' else '0'}, nn.LayerNorm's initial value)"
    where = (
        "cross-attention"
        if name.startswith("cross.")
        else ("self-attention" if name.startswith("W_") and name[-1] in LETTERS else "feed-forward")
    )
    return f"{where} weight (drawn, random seed {seed})"


def _encoder(layer: _Layer, h: Any) -> Any:
    """Post-norm: Z = LN₁(H + A), Y = LN₂(Z + F); pre-norm: Z = H + A(LN₁(H)), Y = Z + F(LN₂(Z))."""
    self_attention = "multi-head self-attention"
    if layer.s.pre_norm:
        normed = layer.norm(1, h, "H", "LN₁(H)", "x")
        a = layer.attention(
            "self", normed, (normed, "LN₁(H)", layer.rows), (self_attention, "LN₁(H)", "A")
        )
        z = layer.add(1, h, a, "Z = H + A", ("H", "A"))
        normed = layer.norm(2, z, "Z", "LN₂(Z)", "add1")
        f = layer.feed_forward(normed, "LN₂(Z)", "F")
        return layer.add(2, z, f, "Y = Z + F", ("Z", "F"))
    a = layer.attention("self", h, (h, "H", layer.rows), (self_attention, "H", "A"))
    total = layer.add(1, h, a, "H + A", ("H", "A"))
    z = layer.norm(1, total, "H + A", "Z", "add1")
    f = layer.feed_forward(z, "Z", "F")
    total = layer.add(2, z, f, "Z + F", ("Z", "F"))
    return layer.norm(2, total, "Z + F", "Y", "add2")


def _decoder(layer: _Layer, h: Any, memory: Any, memory_rows: tuple[str, ...]) -> Any:
    """Masked self-attention, cross-attention over M, FFN; each with residual and LayerNorm."""
    rows = layer.rows
    n = len(rows)
    xp = namespace_of(h)
    like = xp.zeros((n, n), dtype=h.dtype, device=h.device)  # (n, n): the mask's shape, dtype
    mask = layer.record.compute(
        "self.mask",
        lambda: masks.causal_additive(like),
        grid=Grid(rows, rows, layer.base),
        text="mask",
    )
    masked = "masked multi-head self-attention"
    cross = "multi-head cross-attention"
    source = (memory, "M", memory_rows)
    if layer.s.pre_norm:
        normed = layer.norm(1, h, "H", "LN₁(H)", "x")
        a = layer.attention("self", normed, (normed, "LN₁(H)", rows), (masked, "LN₁(H)", "A"), mask)
        z1 = layer.add(1, h, a, "Z₁ = H + A", ("H", "A"))
        normed = layer.norm(2, z1, "Z₁", "LN₂(Z₁)", "add1")
        c = layer.attention("cross", normed, source, (cross, "LN₂(Z₁)", "C"))
        z2 = layer.add(2, z1, c, "Z₂ = Z₁ + C", ("Z₁", "C"))
        normed = layer.norm(3, z2, "Z₂", "LN₃(Z₂)", "add2")
        f = layer.feed_forward(normed, "LN₃(Z₂)", "F")
        return layer.add(3, z2, f, "Y = Z₂ + F", ("Z₂", "F"))
    a = layer.attention("self", h, (h, "H", rows), (masked, "H", "A"), mask)
    z1 = layer.norm(1, layer.add(1, h, a, "H + A", ("H", "A")), "H + A", "Z₁", "add1")
    c = layer.attention("cross", z1, source, (cross, "Z₁", "C"))
    z2 = layer.norm(2, layer.add(2, z1, c, "Z₁ + C", ("Z₁", "C")), "Z₁ + C", "Z₂", "add2")
    f = layer.feed_forward(z2, "Z₂", "F")
    return layer.norm(3, layer.add(3, z2, f, "Z₂ + F", ("Z₂", "F")), "Z₂ + F", "Y", "add3")


# --- the claims: each note's condition, read from the finished walkthrough ---------------------


def _tolerance(walkthrough: Walkthrough) -> float:
    return 1e-9 if walkthrough.dtype == "float64" else 1e-3


def _norm_index(values: Mapping[str, Any]) -> str:
    """ "₂" -> "2": the LayerNorm a note is about."""
    return "".join(
        str(SUBSCRIPTS.index(c)) for c in str(values.get("which", "")) if c in SUBSCRIPTS
    )


def rows_normalised(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every row of x̂ has mean 0 and variance σ²/(σ² + ε) (σ² > 0 in every row), to rounding;
    the note's largest |mean| and variance range are those of the rows shown."""
    try:
        key = f"norm{_norm_index(values)}"
        stats = np.asarray(walkthrough.step(f"{key}.stats"), dtype=np.float64)
        hat = np.asarray(walkthrough.step(f"{key}.normalised"), dtype=np.float64)
        eps = float(walkthrough.meta["eps"])
    except (KeyError, ValueError, TypeError):
        return False
    with np.errstate(all="ignore"):
        if not (np.all(np.isfinite(stats)) and np.all(np.isfinite(hat))):
            return False
        variance = stats[:, 1]
        means = np.mean(hat, axis=-1)
        spread = np.mean((hat - means[:, None]) ** 2, axis=-1)
        expected = variance / (variance + eps)
    tol = _tolerance(walkthrough)
    return bool(
        np.all(variance > 0)
        and np.max(np.abs(means)) <= tol
        and np.max(np.abs(spread - expected)) <= tol
        and np.all(spread < 1)
        and math.isclose(values.get("low", math.nan), float(np.min(spread)), abs_tol=tol)
        and math.isclose(values.get("high", math.nan), float(np.max(spread)), abs_tol=tol)
    )


def variance_beyond(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The named rows, and only those, show σ² = ∞ beside a finite √(σ² + ε)."""
    try:
        key = f"norm{_norm_index(values)}"
        step = walkthrough.find(f"{key}.stats")
        stats = np.asarray(step.value, dtype=np.float64)
        labels = step.row_labels or ()
    except (KeyError, ValueError, TypeError):
        return False
    if stats.ndim != 2 or stats.shape[1] != 3 or len(labels) != stats.shape[0]:
        return False
    beyond = {
        labels[i]
        for i in range(stats.shape[0])
        if np.isinf(stats[i, 1]) and np.isfinite(stats[i, 2])
    }
    return bool(beyond) and beyond == set(str(values.get("rows", "")).split(", "))


def rows_flat(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The named rows, and only those, have every entry of the LayerNorm's input equal."""
    try:
        step = walkthrough.find(str(values["input_step"]))
        source = np.asarray(step.value, dtype=np.float64)
        labels = step.row_labels or ()
    except (KeyError, ValueError, TypeError):
        return False
    if source.ndim != 2 or len(labels) != source.shape[0]:
        return False
    with np.errstate(all="ignore"):
        flat = {labels[i] for i in range(source.shape[0]) if np.ptp(source[i]) == 0}
    named = set(str(values.get("rows", "")).split(", "))
    return bool(flat) and flat == named and values.get("count") == len(flat)


def causal_zero(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The head's weights are exactly 0 above the diagonal."""
    try:
        weights = np.asarray(walkthrough.step(f"self.head{values['head']}.weights"))
    except (KeyError, ValueError, TypeError):
        return False
    return bool(weights.ndim == 2 and np.all(np.triu(weights, 1) == 0))


def relu_zeros(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The hidden layer holds exactly the note's count of zeros, of its total."""
    try:
        hidden = np.asarray(walkthrough.step("ffn.hidden"))
    except (KeyError, ValueError, TypeError):
        return False
    return bool(
        values.get("zeros") == int(np.count_nonzero(hidden == 0))
        and values.get("total") == hidden.size
    )


def unnormalised(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The output rows' variances run from the note's low to its high, and some row's exceeds 1
    (more than a LayerNorm with γ = 1, β = 0 lets out)."""
    output = np.asarray(walkthrough.output, dtype=np.float64)
    if output.ndim != 2 or not np.all(np.isfinite(output)):
        return False
    with np.errstate(all="ignore"):
        variances = np.var(output, axis=-1)
    if not np.all(np.isfinite(variances)):
        return False
    tol = _tolerance(walkthrough) * max(1.0, float(np.max(variances)))
    return bool(
        np.max(variances) > 1
        and math.isclose(values.get("low", math.nan), float(np.min(variances)), abs_tol=tol)
        and math.isclose(values.get("high", math.nan), float(np.max(variances)), abs_tol=tol)
    )


# The values the step texts read: the sizes everywhere; a sublayer's names where it runs.
BASE = ("n", "m", "d_model", "d_ff", "h", "dk", "sqrt_dk", "eps", "arrangement")
ATTENTION = (*BASE, "sub", "input", "source", "source_words", "result")
HEAD = (*ATTENTION, "head", "cols")
NORM = (*BASE, "which", "input", "result")
FFN = (*BASE, "input", "result")
TEXTS = Texts(
    steps={
        "shift": BASE,
        "pe": BASE,
        "x": BASE,
        "x_plain": BASE,
        "mask": BASE,
        "q": ATTENTION,
        "k": ATTENTION,
        "v": ATTENTION,
        "head_weights": HEAD,
        "head_weights_masked": HEAD,
        "cross_weights": HEAD,
        "concat": ATTENTION,
        "attn_output": ATTENTION,
        "add": (*BASE, "total", "left", "right"),
        "norm_stats": NORM,
        "norm_normalised": NORM,
        "norm": NORM,
        "ffn_pre": FFN,
        "ffn_hidden": FFN,
        "ffn_output": FFN,
    },
    notes={
        "norm_rows": ("which", "gap", "low", "high", "eps"),
        "flat_rows": ("rows", "count", "input", "input_step", "which"),
        "variance_beyond": ("rows", "input", "which", "dtype", "largest"),
        "causal_zero": ("head",),
        "relu_zeros": ("zeros", "total", "percent"),
        "drawn": ("seed",),
        "memory_drawn": ("seed", "m"),
        "unnormalised": ("low", "high"),
    },
    claims={
        "norm_rows": rows_normalised,
        "flat_rows": rows_flat,
        "variance_beyond": variance_beyond,
        "causal_zero": causal_zero,
        "relu_zeros": relu_zeros,
        "unnormalised": unnormalised,
    },
)

LESSON = Lesson(
    card=CARD,
    labels=("tokens", "memory"),
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
    example_overrides=frozenset({"Memory"}),
    memory_fix="choose a smaller --n, --m, --d-model or --d-ff",
)
