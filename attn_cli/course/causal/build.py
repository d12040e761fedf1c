"""The causal mask lesson: scores, the additive mask, masked scores, weights, output.

The scores come one of three ways: given (``--scores``), from queries and keys (``--q``/``--k``,
scaled by sqrt(d_k)), or from tokens X and weights (``--x``, row convention Q = X W_Q, the
identity where a weight is not given). ``fill = "zero"`` shows the classic bug (future scores
overwritten with 0 instead of -inf); ``conventions`` adds the boolean mask conventions of
PyTorch and what a row with no visible key does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from attn_cli.core import variants
from attn_cli.core.backend import EPSILON
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import InputValue, Note, Part, Walkthrough
from attn_cli.course import dropout, padding
from attn_cli.course.causal.card import CARD
from attn_cli.course.checks import row_names
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder, on_an_example
from attn_cli.course.scaled import build as scaled
from attn_cli.course.selfattn import build as selfattn
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import masks
from attn_cli.mechanisms.selfattn import project

FILLS = variants.FILLS
WEIGHT_NAMES = ("W_Q", "W_K", "W_V")
# The finite fill of the last fix: large enough that exp() underflows to 0 in float32/64.
FINITE_FILL = -1e9
# (n × n) matrices alive at once: scores, scaled, mask, masked, softmax parts (exp by hand
# among them), weights.
_SCORE_MATRICES = 9
_CONVENTION_MATRICES = 14
_PADDING_MATRICES = 4  # P, its two boolean spellings, S + M + P


def _size(array: np.ndarray) -> str:
    return f"{array.shape[0]} × {array.shape[1]}"


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    fill = options.get("fill", "-inf")
    if fill not in FILLS:
        raise UserError(f"{param('fill', repr(fill))} is not a fill; choose -inf or zero.")
    if options.get("conventions") and fill == "zero":
        raise UserError(
            f"{param('conventions')} shows the correct −∞ mask; leave out {param('fill', 'zero')}."
        )
    if options.get("valid_len") is not None and fill == "zero":
        raise UserError(
            f"{param('valid_len')} adds a −∞ padding mask to the correct one; leave out {param('fill', 'zero')}."
        )
    if dropout.probability(options.get("dropout")) is not None and fill == "zero":
        raise UserError(
            f"{param('dropout')} applies to the correct −∞-masked weights; leave out {param('fill', 'zero')} (or "
            f"{param('dropout')})."
        )
    _check_sources(inputs)
    if "S" in inputs:
        s = inputs["S"]
        if s.shape[0] != s.shape[1]:
            raise UserError(
                f"{param('scores')} is {_size(s)}; a causal mask needs a square score matrix, n × n "
                "(one row and one column per token of the same sequence)."
            )
        _check_values(inputs, s.shape[0], "the scores have")
    elif "Q" in inputs:
        q, k = inputs["Q"], inputs["K"]
        if q.shape[0] != k.shape[0]:
            raise UserError(
                f"Q has {q.shape[0]} rows but K has {k.shape[0]}: causal attention is over one "
                "sequence, so Q and K need one row per token (the same n)."
            )
        # The rest is what scaled dot-product attention requires (shared d_k, a value per key).
        scaled.validate({"Q": q, "K": k, "V": inputs.get("V", k)}, options)
    else:  # tokens and projections: exactly what self-attention requires
        selfattn.validate(
            {name: inputs[name] for name in ("X", *WEIGHT_NAMES) if name in inputs}, {}
        )
    n = _token_count(inputs)
    if n == 1 and fill == "zero":
        raise UserError(
            f"{param('fill', 'zero')} shows the weight that leaks to later tokens, and one token has none; "
            "give 2 tokens or more."
        )
    padding.valid_lengths(options.get("valid_len"), n, n)


def _check_sources(inputs: dict[str, np.ndarray]) -> None:
    """Exactly one source of scores: --scores, --q with --k, or --x (with its weights)."""
    weights = [name for name in WEIGHT_NAMES if name in inputs]
    if weights and "X" not in inputs:
        raise UserError(
            f"{CARD.param(weights[0])} needs {param('x')}: the weights project the tokens X (Q = X W_Q)."
        )
    sources = [
        source
        for source, present in (
            (param("scores"), "S" in inputs),
            (f"{param('q')}/{param('k')}", "Q" in inputs or "K" in inputs),
            (param("x"), "X" in inputs),
        )
        if present
    ]
    if not sources:
        raise UserError(
            f"{param('v')} alone gives no scores; add {param('scores')}, or {param('q')} and {param('k')}, or use {param('x')} with {param('wv')}."
        )
    if len(sources) > 1:
        raise UserError(
            f"give the scores one way, not {' and '.join(sources)}: {param('scores')}, or {param('q')} with {param('k')}, "
            f"or {param('x')} with {param('wq')}/{param('wk')}/{param('wv')}."
        )
    if ("Q" in inputs) != ("K" in inputs):
        given, missing = (param("q"), param("k")) if "Q" in inputs else (param("k"), param("q"))
        raise UserError(f"{given} needs {missing}: the scores are Q Kᵀ.")
    if "X" in inputs and "V" in inputs:
        raise UserError(
            f"{param('v')} does not go with {param('x')}: the values are X W_V; give {param('wv')} instead."
        )


def _check_values(inputs: dict[str, np.ndarray], n: int, what: str) -> None:
    if "V" in inputs and inputs["V"].shape[0] != n:
        raise UserError(
            f"{what} {n} rows but V has {inputs['V'].shape[0]}: V needs one row per token "
            "(one value per key)."
        )


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Scores (n × n) by default; Q, K, V (n × d_k) when --dk is given."""
    n, d_k = sizes["n"], sizes.get("dk")
    if d_k:
        return {"Q": (n, d_k), "K": (n, d_k), "V": (n, d_k)}
    return {"S": (n, n)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    first = next(iter(shapes.values()))
    n = first[0]
    count = _SCORE_MATRICES + (_CONVENTION_MATRICES if options.get("conventions") else 0)
    count += _PADDING_MATRICES if options.get("valid_len") is not None else 0
    widths = sum(shape[1] for name, shape in shapes.items() if name in ("X", "Q", "K", "V"))
    extra = dropout.dropout_bytes(options, n * n, itemsize)
    return (count * n * n + 3 * n * max(widths, 1)) * itemsize + extra


def build(run: LessonRun) -> Walkthrough:
    inputs = _with_default_weights(run.inputs)
    n = _token_count(inputs)
    tokens = row_names(run, "tokens", n, "t", param("tokens"))
    record = StepRecorder(run)
    context: dict[str, Any] = {"n": n, "last": tokens[-1]}
    logits, v = _logits(record, inputs, tokens, context)
    grid = Grid(tokens, tokens, context)
    lengths = padding.valid_lengths(run.options.get("valid_len"), n, n)
    # The scores masked are S / √d_k where the lesson scales Q Kᵀ (lecture 4's softmax(QKᵀ/√d_k +
    # M)), and the steps after say so: their texts "masked_scaled", "weights_scaled", ...
    scaled = "_scaled" if "scaled" in (step.key for step in record.steps) else ""
    if run.options.get("fill") == "zero":
        output = _zero_fill(record, logits, v, grid)
    else:
        output = _masked(record, logits, v, grid, lengths, scaled)
        if run.options.get("conventions"):
            _conventions(record, logits, grid)
    notes: tuple[Note, ...] = ()
    if "S" in inputs:
        # Both are recorded; the claims keep the one for a slide's example or the user's scores.
        notes = (record.note("scores_given"), record.note("scores_given_slide"))
    elif not run.options.get("scale", True):
        notes = (record.note("no_scale"),)
    meta = dropout.meta(run, dropout.probability(run.options.get("dropout")))
    if lengths is not None:
        meta["valid_lengths"] = list(lengths)
    return record.walkthrough(
        output, inputs=_labelled_inputs(run, inputs, tokens), notes=notes, meta=meta
    )


def _with_default_weights(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """With --x, every weight not given is the d_model × d_model identity (listed as an input)."""
    if "X" not in inputs:
        return dict(inputs)
    weights, _defaulted = selfattn.projection_weights(inputs)
    return {"X": inputs["X"], **weights}


def _token_count(inputs: dict[str, np.ndarray]) -> int:
    for name in ("S", "K", "X"):
        if name in inputs:
            return int(inputs[name].shape[0])
    raise AssertionError("validate() guarantees scores, keys or tokens")


def _logits(
    record: StepRecorder, inputs: dict[str, np.ndarray], tokens: tuple[str, ...], context: dict
) -> tuple[Any, Any | None]:
    """The scores to be masked (scaled when they come from Q and K) and the values, if any."""
    backend = record.run.backend
    rows = Grid(tokens, context=context)
    grid = replace(rows, cols=tokens)
    if "S" in inputs:
        s = backend.asarray(inputs["S"])
        record.add("scores", s, text="scores_given", grid=grid)
        return s, backend.asarray(inputs["V"]) if "V" in inputs else None
    if "X" in inputs:
        x, wq, wk, wv = (backend.asarray(inputs[name]) for name in ("X", *WEIGHT_NAMES))
        q = record.compute("Q", lambda: project(x, wq), grid=rows)
        k = record.compute("K", lambda: project(x, wk), grid=rows)
        v = record.compute("V", lambda: project(x, wv), grid=rows)
    else:
        q, k = backend.asarray(inputs["Q"]), backend.asarray(inputs["K"])
        v = backend.asarray(inputs["V"]) if "V" in inputs else None
    d_k = q.shape[-1]
    context.update(dk=d_k, sqrt_dk=math.sqrt(d_k))
    scores = record.compute("scores", lambda: mech.scores(q, k), grid=grid)
    if not record.run.options.get("scale", True):
        return scores, v
    return record.compute("scaled", lambda: mech.scale(scores, d_k), grid=grid), v


def _masked(
    record: StepRecorder,
    logits: Any,
    v: Any | None,
    grid: Grid,
    lengths: tuple[int, ...] | None = None,
    scaled: str = "",
) -> Any:
    """The correct walkthrough: M (and the padding P), S + M, softmax, A V when there are values
    (``scaled``: "_scaled" where the scores masked are S / √d_k, their texts say so)."""
    mask = record.compute("mask", lambda: masks.causal_additive(logits), grid=grid)
    if lengths is None:
        masked = record.compute("masked", lambda: logits + mask, text=f"masked{scaled}", grid=grid)
        weights = record.softmax(
            "weights",
            masked,
            notes_of=lambda w: _zero_future_note(record, w),
            text=f"weights{scaled}",
            grid=grid,
        )
    else:
        pad = padding.record_padding(record, logits, lengths, grid, causal=True)
        masked = record.compute(
            "masked", lambda: logits + mask + pad, text=f"masked_valid{scaled}", grid=grid
        )
        weights = record.softmax("weights", masked, text=f"weights_valid{scaled}", grid=grid)
    p = dropout.probability(record.run.options.get("dropout"))
    if p is not None:
        weights = dropout.record_dropout(record, weights, p, grid)
    if v is None:
        return weights
    return record.compute(
        "output",
        lambda: mech.weighted_sum(weights, v),
        grid=Grid(grid.rows, context=grid.context),
        text=dropout.output_text(p),
    )


def _zero_future_note(record: StepRecorder, weights: np.ndarray) -> tuple[Note, ...]:
    above = weights[np.triu_indices(weights.shape[0], k=1)]
    exact = int(np.count_nonzero(above == 0))
    drift = float(np.max(np.abs(np.sum(weights, axis=-1) - 1.0)))
    return (record.note("zero_future", exact=exact, above=int(above.size), drift=drift),)


def _nan_rows_note(
    record: StepRecorder, weights: np.ndarray, tokens: tuple[str, ...]
) -> tuple[Note, ...]:
    rows = [token for token, row in zip(tokens, weights, strict=True) if np.isnan(row).any()]
    if not rows:
        return (record.note("no_nan_rows"),)
    return (record.note("nan_rows", rows=", ".join(rows)),)


def _zero_fill(record: StepRecorder, logits: Any, v: Any | None, grid: Grid) -> Any:
    """The bug: future scores overwritten with 0 rather than -inf, and the weight that leaks."""
    future = record.compute("future", lambda: masks.causal_blocked(logits), grid=grid)
    filled = record.compute(
        "masked", lambda: masks.fill_blocked(logits, future, 0.0), text="masked_zero", grid=grid
    )
    leaky = record.softmax("weights", filled, text="weights_zero", grid=grid)
    correct = mech.softmax(logits + masks.causal_additive(logits))
    table = [_to_numpy(record, masks.weight_on(w, future)) for w in (leaky, correct)]
    names = ["future weight, fill 0", "future weight, fill −∞"]
    output = leaky
    if v is not None:
        output = record.compute(
            "output",
            lambda: mech.weighted_sum(leaky, v),
            grid=Grid(grid.rows, context=grid.context),
            text="output_zero",
        )
        right = _to_numpy(record, mech.weighted_sum(correct, v))
        table.append(np.max(np.abs(_to_numpy(record, output) - right), axis=-1))
        names.append("max |Δ output|")
    leak = np.stack(table, axis=-1)  # (n, 2 or 3)
    worst = int(np.argmax(leak[:, 0]))
    tokens = grid.rows or ()
    record.add(
        "leak",
        leak,
        grid=Grid(tokens, tuple(names), context=grid.context),
        notes=(
            record.note(
                "worst_leak",
                token=tokens[worst],
                leaked=float(leak[worst, 0]),
                masked=float(leak[worst, 1]),
            ),
        ),
    )
    return output


def _to_numpy(record: StepRecorder, array: Any) -> np.ndarray:
    return np.asarray(record.run.backend.to_numpy(array), dtype=np.float64)


def _conventions(record: StepRecorder, logits: Any, grid: Grid) -> None:
    """The same mask in PyTorch's boolean conventions, and rows that can see no key."""
    allowed = record.compute("sdpa_mask", lambda: masks.causal_allowed(logits), grid=grid)
    blocked = record.compute("mha_mask", lambda: masks.causal_blocked(logits), grid=grid)
    reference = _to_numpy(record, mech.softmax(logits + masks.causal_additive(logits)))

    def gap(weights: Any) -> float:
        return float(np.max(np.abs(_to_numpy(record, weights) - reference)))

    from_allowed = mech.softmax(masks.fill_blocked(logits, masks.negate(allowed), -math.inf))
    from_blocked = mech.softmax(masks.fill_blocked(logits, blocked, -math.inf))
    record.add(
        "agree",
        [
            _convention("additive M (float)", "0", "−∞", "softmax(S + M)", 0.0),
            _convention("SDPA bool", "True", "False", "sdpa(…, attn_mask=A)", gap(from_allowed)),
            _convention("MHA bool", "False", "True", "mha(…, attn_mask=B)", gap(from_blocked)),
        ],
        kind="records",
        grid=Grid(context=grid.context),
    )
    swapped = mech.softmax(masks.fill_blocked(logits, allowed, -math.inf))  # last row: NaN
    record.add("swapped", swapped, kind="weights", row_sums=True, grid=grid)
    _padding(record, logits, blocked, grid)


def _convention(name: str, attend: str, block: str, call: str, gap: float) -> dict[str, Any]:
    return {
        "convention": name,
        "attend": attend,
        "blocked": block,
        "call": call,
        "max_abs_diff": gap,
    }


def _padding(record: StepRecorder, logits: Any, blocked: Any, grid: Grid) -> None:
    """Left padding: token 1 is a pad, so query 1 (which may see only key 1) sees nothing."""
    padded = masks.with_left_padding(blocked, 1)  # (n, n) True = blocked
    pad_row = record.to_numpy(masks.leading_keys(logits, 1))[:1]  # (1, n) True = pad
    mask = record.compute(
        "padding_mask",
        lambda: masks.additive(masks.negate(padded), logits),
        parts=(Part("key_padding_mask (True = pad)", pad_row),),
        grid=grid,
    )
    tokens = grid.rows or ()
    weights = record.softmax(
        "padded_weights",
        logits + mask,
        notes_of=lambda w: _nan_rows_note(record, w, tokens),
        grid=grid,
    )
    fixes = {
        "fix_keep_self": lambda: mech.softmax(
            masks.fill_blocked(logits, masks.unblock_diagonal(padded), -math.inf)
        ),
        "fix_zero_row": lambda: masks.zero_empty_rows(weights, masks.negate(padded)),
        "fix_finite": lambda: mech.softmax(masks.fill_blocked(logits, padded, FINITE_FILL)),
    }
    for key, compute in fixes.items():
        record.compute(key, compute, kind="weights", row_sums=True, grid=grid)


def _labelled_inputs(
    run: LessonRun, inputs: dict[str, np.ndarray], tokens: tuple[str, ...]
) -> tuple[InputValue, ...]:
    descriptions = {spec.name: spec.description for spec in CARD.inputs}
    items = []
    for name, value in inputs.items():
        is_weight = name in WEIGHT_NAMES
        if is_weight and name not in run.inputs:
            description = "weights (identity: not given)"
        else:
            description = descriptions[name]
        items.append(
            InputValue(
                name,
                value,
                row_labels=None if is_weight else tokens,
                col_labels=tokens if name == "S" else None,
                description=description,
            )
        )
    return tuple(items)


def rows_sum_to_one(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every row of the weights sums to 1 up to rounding in the run's dtype (not when a score
    overflowed and a row became NaN)."""
    try:
        drift = float(values["drift"])
        n = max(1, int(np.shape(walkthrough.step("weights"))[-1]))
    except (KeyError, TypeError, ValueError, IndexError):
        return False
    tolerance = 4 * n * EPSILON.get(walkthrough.dtype, 2.0**-7)
    return math.isfinite(drift) and drift <= tolerance


def on_your_own_scores(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The note for scores the user gave (not one of the lesson file's examples)."""
    return not on_an_example(walkthrough, values)


# What every step's text reads: n and the last token's name; the scores from Q and K add d_k.
TOKENS = ("n", "last")
SCALED = (*TOKENS, "dk", "sqrt_dk")


TEXTS = Texts(
    steps={
        **dict.fromkeys(("Q", "K", "V", "scores_given"), TOKENS),
        "scores": SCALED,
        "scaled": SCALED,
        **dict.fromkeys(("mask", "masked", "weights"), TOKENS),
        **dict.fromkeys(("masked_scaled", "weights_scaled"), SCALED),  # of S / √d_k
        **dict.fromkeys(padding.TEXTS, (*TOKENS, *padding.STEP_NAMES)),
        **dict.fromkeys(("masked_valid", "weights_valid"), TOKENS),
        **dict.fromkeys(("masked_valid_scaled", "weights_valid_scaled"), SCALED),
        "output": TOKENS,
        "dropout": (*TOKENS, *dropout.STEP_NAMES),
        "output_dropout": TOKENS,
        # --fill zero
        **dict.fromkeys(("future", "masked_zero", "weights_zero", "output_zero", "leak"), TOKENS),
        # --conventions
        **dict.fromkeys(
            ("sdpa_mask", "mha_mask", "agree", "swapped", "padding_mask", "padded_weights"), TOKENS
        ),
        **dict.fromkeys(("fix_keep_self", "fix_zero_row", "fix_finite"), TOKENS),
    },
    notes={
        "scores_given": (),
        "scores_given_slide": (),
        "no_scale": (),
        "zero_future": ("exact", "above", "drift"),
        "worst_leak": ("token", "leaked", "masked"),
        "nan_rows": ("rows",),
        "no_nan_rows": (),
        **dropout.NOTES,
    },
    claims={
        **dropout.CLAIMS,
        "scores_given": on_your_own_scores,
        "scores_given_slide": on_an_example,
        "zero_future": rows_sum_to_one,
    },
    measured=(
        "worst_leak",
        "nan_rows",
        "no_nan_rows",  # "none": the list measured, empty
        *dropout.MEASURED,
    ),
    general=(
        "no_scale",
        *dropout.GENERAL,
    ),
)

LESSON = Lesson(
    card=CARD,
    labels=("tokens",),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
)
