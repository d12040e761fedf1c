"""One Transformer layer recorded step by step: its sublayers in order (the encoder's, or the
decoder's), each with the names the slides give them, and the masks its attention reads.

A stack records each layer in turn: its steps' keys start with ``layerK.`` and their titles with
"Layer K ·"; a single layer's are unprefixed (``self.Q``, ``norm1`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.backend import LARGEST, namespace_of
from attn_cli.core.model import Note, Part
from attn_cli.course.block import claims
from attn_cli.course.block.parameters import Parameter
from attn_cli.course.block.settings import Settings
from attn_cli.course.checks import counted
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import block as mech
from attn_cli.mechanisms import masks

SUBSCRIPTS = "₀₁₂₃₄₅₆₇₈₉"
ACTIVATION_NAMES = {"relu": "ReLU", "gelu": "GELU", "gelu-tanh": "GELU (tanh)"}
HIDDEN_TEXTS = {
    "relu": "ffn_hidden",
    "gelu": "ffn_hidden_gelu",
    "gelu-tanh": "ffn_hidden_gelu_tanh",
}


def sub(index: int) -> str:
    """1 -> "₁": the subscript of LN₁, Z₁."""
    return "".join(SUBSCRIPTS[int(digit)] for digit in str(index))


@dataclass(frozen=True)
class Mask:
    """The additive mask an attention sublayer reads (n × m), and its rows that block every key."""

    value: Any  # on the backend
    key: str  # its step: "self.mask" or "cross.mask"
    empty: tuple[int, ...]  # rows whose every entry is −∞


def record_mask(
    record: StepRecorder,
    sublayer: str,
    like: Any,
    pieces: list[tuple[str, str, Any]],
    grid: Grid,
) -> Mask | None:
    """The mask of ``sublayer`` ("self" or "cross") as one step: the sum of its ``pieces``
    (name, words, additive matrix), each shown as a part when there are several."""
    if not pieces:
        return None
    total = like
    for _name, _words, piece in pieces:
        total = total + piece
    names = [name for name, _words, _piece in pieces]
    text = "mask" if names == ["causal"] else "mask_combined"
    context = dict(grid.context)
    if text == "mask_combined":
        context |= {
            "sub": "self-attention" if sublayer == "self" else "cross-attention",
            "which": " + ".join(names),
            "pieces": "; ".join(words for _name, words, _piece in pieces),
        }
    parts = tuple(Part(f"{name}: {words}", piece) for name, words, piece in pieces)
    key = f"{sublayer}.mask"
    record.add(
        key,
        total,
        grid=Grid(grid.rows, grid.cols, context),
        parts=parts if len(pieces) > 1 else (),
        text=text,
    )
    shown = np.asarray(record.shown(key), dtype=np.float64)
    empty = tuple(int(i) for i in np.flatnonzero(np.all(np.isneginf(shown), axis=-1)))
    return Mask(total, key, empty)


def padding_piece(xp: Any, like: Any, padding: Any) -> Any:
    """A key padding mask (1 = padding) as an additive mask: −∞ in each padded key's column."""
    allowed = xp.broadcast_to(padding[None, :] == 0, like.shape)
    return masks.additive(allowed, like)


class Layer:
    """Records one layer's sublayers in order."""

    def __init__(
        self,
        record: StepRecorder,
        s: Settings,
        rows: tuple[str, ...],
        base: dict[str, Any],
        parameters: dict[str, Parameter],
        index: int,
    ) -> None:
        self.run, self.record, self.s, self.rows = record.run, record, s, rows
        stacked = s.layers > 1
        self.prefix = f"layer{index}." if stacked else ""
        self.base = {**base, "layer": f"Layer {index} · " if stacked else ""}
        self.parameters = parameters
        self.index = index

    def key(self, name: str) -> str:
        return self.prefix + name

    def weight(self, name: str) -> Any:
        parameter = self.parameters.get(name)
        return None if parameter is None else self.run.backend.asarray(parameter.value)

    def context(self, **names: Any) -> dict[str, Any]:
        return {**self.base, **names}

    def norm(self, index: int | str, x: Any, names: tuple[str, str], input_step: str) -> Any:
        """LN_index(x): its statistics, x̂, then γ ⊙ x̂ + β, three steps. ``index`` "final" is
        the stack's last LayerNorm (its parameters are the stack's, not the layer's)."""
        given, result = names
        record = self.record
        final = index == "final"
        which = "_final" if final else sub(int(index))
        gamma = self.weight(f"gamma_{index}")
        beta = self.weight(f"beta_{index}")
        eps = self.s.eps
        parts, seconds = self.run.timed(lambda: mech.layer_norm(x, gamma, beta, eps))
        context = self.context(
            which=which, input=given, result=result, beta="" if beta is None else " + β"
        )
        if final:
            context["layer"] = ""
        xp = namespace_of(x)
        stats = xp.concat((parts.mean, parts.variance, parts.root), axis=-1)  # (n, 3)
        key = "final_norm" if final else self.key(f"norm{index}")
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
            notes=self._norm_notes(key, which, x, parts, given, input_step),
        )
        record.add(
            key, parts.output, grid=Grid(self.rows, context=context), text="norm", seconds=seconds
        )
        return parts.output

    def _norm_notes(
        self, key: str, which: str, x: Any, parts: mech.NormParts, given: str, input_step: str
    ) -> tuple[Note, ...]:
        """One note; the claims keep it only where it holds."""
        record = self.record
        source = np.asarray(record.to_numpy(x), dtype=np.float64)
        hat = np.asarray(record.to_numpy(parts.normalised), dtype=np.float64)
        with np.errstate(all="ignore"):
            flat = [i for i in range(source.shape[0]) if np.ptp(source[i]) == 0]
            means = np.mean(hat, axis=-1)
            variances = np.mean((hat - means[:, None]) ** 2, axis=-1)
        notes: list[Note] = []
        variance = np.asarray(record.to_numpy(parts.variance), dtype=np.float64).ravel()
        root = np.asarray(record.to_numpy(parts.root), dtype=np.float64).ravel()
        beyond = [i for i in range(len(variance)) if np.isinf(variance[i]) and np.isfinite(root[i])]
        if beyond:  # σ² past float64 (rows near 1e155): the root is still exact
            dtype = self.run.backend.dtype
            notes.append(
                record.note(
                    "variance_beyond",
                    rows=", ".join(self.rows[i] for i in beyond),
                    input=given,
                    which=which,
                    dtype=dtype,
                    largest=LARGEST[dtype],
                    norm=key,
                )
            )
        if flat:
            note = record.note(
                "flat_rows",
                rows=", ".join(self.rows[i] for i in flat),
                count=len(flat),
                input=given,
                input_step=input_step,
                which=which,
            )
        else:
            note = record.note(
                "norm_rows",
                which=which,
                gap=float(np.max(np.abs(means))),
                low=float(np.min(variances)),
                high=float(np.max(variances)),
                eps=self.s.eps,
                norm=key,
            )
        return (*notes, note)

    def add(self, index: int, left: Any, right: Any, total: str, names: tuple[str, str]) -> Any:
        return self.record.compute(
            self.key(f"add{index}"),
            lambda: mech.residual(left, right),
            grid=Grid(self.rows, context=self.context(total=total, left=names[0], right=names[1])),
            text="add",
        )

    def attention(
        self,
        sublayer: str,
        x: Any,
        source: tuple[Any, str, tuple[str, ...]],
        names: tuple[str, str, str],
        mask: Mask | None = None,
    ) -> Any:
        """Multi-head attention of x over the source (x itself, or the memory): Q, K, V, each
        head's weights, the concatenation and the output, one step each."""
        record = self.record
        memory, source_name, source_rows = source
        title, given, result = names
        cross = sublayer == "cross"
        suffix = "_cross" if cross else ""
        weights = tuple(self.weight(f"W_{letter}{suffix}") for letter in "QKVO")
        biases = tuple(self.weight(f"b_{letter}{suffix}") for letter in "QKVO")
        heads, kv = self.s.heads, self.s.kv
        group = heads // kv  # query heads per key/value head
        additive = None if mask is None else mask.value
        parts, seconds = self.run.timed(
            lambda: mech.multi_head(x, memory, weights, heads, additive, biases, kv)
        )
        context = self.context(
            sub=title,
            input=given,
            source=source_name,
            source_words=(
                f"the memory M, the encoder's output ({counted(memory.shape[0], 'row')})"
                if cross
                else f"the layer's own tokens {given}"
            ),
            result=result,
        )

        def plus(letter: str) -> dict[str, str]:
            return {"bias": "" if biases["QKVO".index(letter)] is None else f" + b_{letter}"}

        dk = self.base["dk"]
        columns = tuple(f"h{j // dk + 1}·{j % dk + 1}" for j in range(self.base["d_model"]))
        # K and V: a block of d_k columns per key/value head (kv1·1 ...) when grouped
        kv_columns = (
            columns
            if group == 1
            else tuple(f"kv{j // dk + 1}·{j % dk + 1}" for j in range(kv * dk))
        )
        grouped = grouping(heads, kv, dk) if group > 1 else {}
        key = self.key(sublayer)
        for letter, value, labels, cols in (
            ("Q", parts.q, self.rows, columns),
            ("K", parts.k, source_rows, kv_columns),
            ("V", parts.v, source_rows, kv_columns),
        ):
            text = letter.lower() + ("_grouped" if group > 1 and letter != "Q" else "")
            text += "_one" if heads == 1 and letter == "Q" else ""  # no "all 1 heads"
            step_context = {**context, **plus(letter), **(grouped if letter != "Q" else {})}
            record.add(f"{key}.{letter}", value, grid=Grid(labels, cols, step_context), text=text)
        text = self._weights_text(cross, mask, group > 1)
        for index, head in enumerate(parts.heads):
            span = f"{index * dk + 1}–{(index + 1) * dk}"
            shared = index // group  # the key/value head it reads (0-based)
            kv_span = f"{shared * dk + 1}–{(shared + 1) * dk}"
            notes: list[Note] = []
            if group > 1:
                notes.append(
                    record.note(
                        "kv_shared",
                        head=index + 1,
                        kv=shared + 1,
                        kv_cols=kv_span,
                        sharing=_heads_range(shared * group + 1, (shared + 1) * group),
                    )
                )
            if self.s.causal and not cross:
                # Only the decoder's inputs are its targets shifted right, so only there does
                # the mask keep a target's prediction from seeing that target.
                notes.append(
                    record.note(
                        "causal_zero" if self.s.decoder else "causal_zero_encoder",
                        head=index + 1,
                        step=f"{key}.head{index + 1}.weights",
                    )
                )
            if mask is not None and mask.empty and index == 0:
                notes.append(self._empty_note(mask, f"{key}.head1.weights"))
            # The head's raw scores, then its softmax by hand (e^s, Σ e^s) of what it reads.
            by_hand, overflowed = record.by_hand(
                head.scaled if additive is None else head.scaled + additive, "scaled scores"
            )
            notes += overflowed
            record.add(
                f"{key}.head{index + 1}.weights",
                head.weights,
                kind="weights",
                row_sums=True,
                parts=(
                    Part("scores Q Kᵀ (this head's columns)", head.scores),
                    Part("scaled scores Q Kᵀ / √d_k (this head's columns)", head.scaled),
                    *by_hand,
                ),
                grid=Grid(
                    self.rows,
                    source_rows,
                    {**context, "head": index + 1, "cols": span, "kv": shared + 1}
                    | ({"kv_cols": kv_span} if group > 1 else {}),
                ),
                text=text,
                notes=tuple(notes),
            )
        record.add(
            f"{key}.concat",
            parts.concat,
            grid=Grid(self.rows, columns, {**context, **grouped}),
            text="concat_grouped" if group > 1 else "concat" if heads > 1 else "concat_one",
        )
        record.add(
            f"{key}.output",
            parts.output,
            grid=Grid(self.rows, context={**context, **plus("O")}),
            text="attn_output" if heads > 1 else "attn_output_one",
            seconds=seconds,
        )
        return parts.output

    def _weights_text(self, cross: bool, mask: Mask | None, grouped: bool) -> str:
        """The weights step's text; grouped-query heads' name K's columns (and K_j in LaTeX)."""
        if cross:
            text = "cross_weights" if mask is None else "cross_weights_masked"
        elif mask is None:
            text = "head_weights"
        else:
            text = "head_weights_masked" if self._causal_only() else "head_weights_mask"
        return f"{text}_grouped" if grouped else text

    def _causal_only(self) -> bool:
        inputs = self.run.inputs
        others = ("attn_mask", "attn_mask_float", "key_padding_mask")
        return self.s.causal and not any(name in inputs for name in others)

    def _empty_note(self, mask: Mask, step: str) -> Note:
        labels = ", ".join(self.rows[i] for i in mask.empty)
        return self.record.note(
            "empty_rows", rows=labels, count=len(mask.empty), step=step, mask_step=mask.key
        )

    def feed_forward(self, x: Any, given: str, result: str) -> Any:
        record = self.record
        w1, b1, w2, b2 = (self.weight(name) for name in ("W_1", "b_1", "W_2", "b_2"))
        act = self.s.activation
        parts, seconds = self.run.timed(lambda: mech.feed_forward(x, w1, b1, w2, b2, act))
        first = {"act": ACTIVATION_NAMES[act], "bias": "" if b1 is None else " + b₁"}
        context = self.context(input=given, result=result, **first)
        hidden_cols = tuple(f"u{j + 1}" for j in range(self.s.d_ff))
        grid = Grid(self.rows, hidden_cols, context)
        record.add(self.key("ffn.pre"), parts.pre, grid=grid, text="ffn_pre")
        notes: tuple[Note, ...] = ()
        hidden = np.asarray(record.to_numpy(parts.hidden))
        # A NaN hidden entry (a row that may attend no key) is neither on nor off: no tally then.
        if act == "relu" and not np.any(np.isnan(hidden)):
            zeros = int(np.count_nonzero(hidden == 0))
            notes = (
                record.note(
                    "relu_zeros",
                    zeros=zeros,
                    total=int(hidden.size),
                    percent=100.0 * zeros / max(1, hidden.size),
                    step=self.key("ffn.hidden"),
                ),
                record.note(
                    "relu_units",
                    units=self.s.d_ff,
                    step=self.key("ffn.hidden"),
                    **claims.unit_patterns(hidden, hidden_cols),
                ),
            )
        record.add(
            self.key("ffn.hidden"), parts.hidden, grid=grid, text=HIDDEN_TEXTS[act], notes=notes
        )
        second = {**context, "bias": "" if b2 is None else " + b₂"}
        record.add(
            self.key("ffn.output"),
            parts.output,
            grid=Grid(self.rows, context=second),
            text="ffn_output",
            seconds=seconds,
        )
        return parts.output


def _heads_range(first: int, last: int) -> str:
    """Query heads first … last, in words: "1 and 2", "1–4"."""
    return f"{first} and {last}" if last == first + 1 else f"{first}–{last}"


def grouping(heads: int, kv: int, dk: int) -> dict[str, Any]:
    """What the grouped steps' texts read: the g key/value heads, the h/g query heads each
    serves and which ("kv1: heads 1 and 2; kv2: heads 3 and 4"), and g·d_k."""
    group = heads // kv
    pairing = "; ".join(
        f"kv{j + 1}: heads {_heads_range(j * group + 1, (j + 1) * group)}" for j in range(kv)
    )
    return {
        "g_heads": counted(kv, "key/value head"),
        "group": group,
        "pairing": pairing,
        "kv_width": kv * dk,
    }


def encoder(layer: Layer, h: Any, names: tuple[str, str, str], mask: Mask | None) -> Any:
    """Post-norm: Z = LN₁(H + A), Y = LN₂(Z + F); pre-norm: Z = H + A(LN₁(H)), Y = Z + F(LN₂(Z)).
    ``names``: the layer's input (H, or the layer before's Y), the step that holds it, its
    output's name."""
    given, given_step, out = names
    title = "masked multi-head self-attention" if mask is not None else "multi-head self-attention"
    if layer.s.pre_norm:
        normed = layer.norm(1, h, (given, f"LN₁({given})"), given_step)
        a = layer.attention(
            "self",
            normed,
            (normed, f"LN₁({given})", layer.rows),
            (title, f"LN₁({given})", "A"),
            mask,
        )
        z = layer.add(1, h, a, f"Z = {given} + A", (given, "A"))
        normed = layer.norm(2, z, ("Z", "LN₂(Z)"), layer.key("add1"))
        f = layer.feed_forward(normed, "LN₂(Z)", "F")
        return layer.add(2, z, f, f"{out} = Z + F", ("Z", "F"))
    a = layer.attention("self", h, (h, given, layer.rows), (title, given, "A"), mask)
    total = layer.add(1, h, a, f"{given} + A", (given, "A"))
    z = layer.norm(1, total, (f"{given} + A", "Z"), layer.key("add1"))
    f = layer.feed_forward(z, "Z", "F")
    total = layer.add(2, z, f, "Z + F", ("Z", "F"))
    return layer.norm(2, total, ("Z + F", out), layer.key("add2"))


def decoder(
    layer: Layer,
    h: Any,
    names: tuple[str, str, str],
    memory: tuple[Any, tuple[str, ...]],
    masks_of: tuple[Mask | None, Mask | None],
) -> Any:
    """Masked self-attention, cross-attention over M, FFN; each with residual and LayerNorm."""
    given, given_step, out = names
    rows = layer.rows
    self_mask, cross_mask = masks_of
    masked = "masked multi-head self-attention" if self_mask else "multi-head self-attention"
    cross = "multi-head cross-attention"
    source = (memory[0], "M", memory[1])
    if layer.s.pre_norm:
        normed = layer.norm(1, h, (given, f"LN₁({given})"), given_step)
        a = layer.attention(
            "self",
            normed,
            (normed, f"LN₁({given})", rows),
            (masked, f"LN₁({given})", "A"),
            self_mask,
        )
        z1 = layer.add(1, h, a, f"Z₁ = {given} + A", (given, "A"))
        normed = layer.norm(2, z1, ("Z₁", "LN₂(Z₁)"), layer.key("add1"))
        c = layer.attention("cross", normed, source, (cross, "LN₂(Z₁)", "C"), cross_mask)
        z2 = layer.add(2, z1, c, "Z₂ = Z₁ + C", ("Z₁", "C"))
        normed = layer.norm(3, z2, ("Z₂", "LN₃(Z₂)"), layer.key("add2"))
        f = layer.feed_forward(normed, "LN₃(Z₂)", "F")
        return layer.add(3, z2, f, f"{out} = Z₂ + F", ("Z₂", "F"))
    a = layer.attention("self", h, (h, given, rows), (masked, given, "A"), self_mask)
    total = layer.add(1, h, a, f"{given} + A", (given, "A"))
    z1 = layer.norm(1, total, (f"{given} + A", "Z₁"), layer.key("add1"))
    c = layer.attention("cross", z1, source, (cross, "Z₁", "C"), cross_mask)
    z2 = layer.norm(
        2, layer.add(2, z1, c, "Z₁ + C", ("Z₁", "C")), ("Z₁ + C", "Z₂"), layer.key("add2")
    )
    f = layer.feed_forward(z2, "Z₂", "F")
    total = layer.add(3, z2, f, "Z₂ + F", ("Z₂", "F"))
    return layer.norm(3, total, ("Z₂ + F", out), layer.key("add3"))


def last_step(s: Settings, prefix: str) -> str:
    """The key of the step that holds a layer's output."""
    count = s.norms
    return f"{prefix}add{count}" if s.pre_norm else f"{prefix}norm{count}"
