"""The scaled dot-product lesson: scores, scaled scores, softmax weights, output.

--normalise swaps softmax for one of its alternatives (sparsemax, sigmoid, hardmax): see
walkthroughs/normalisers.py."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core.errors import UserError
from attn_cli.core.model import InputValue, Note, Walkthrough
from attn_cli.course import dropout, normalisers, padding, score_transforms
from attn_cli.course.checks import row_names
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder, on_an_example
from attn_cli.course.scaled.card import CARD
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech

# Matrices of this many (m × n) entries live at once: scores, scaled, exp by hand, shifted, exp,
# weights
# (and with --valid-len: the mask P, its two boolean spellings, the masked scores).
_SCORE_MATRICES = 6
_PADDING_MATRICES = 4


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    q, k, v = inputs["Q"], inputs["K"], inputs["V"]
    if q.shape[1] != k.shape[1]:
        raise UserError(
            f"Q has {q.shape[1]} columns but K has {k.shape[1]}: Q and K must share d_k "
            "(each score is a dot product of a query row with a key row)."
        )
    if k.shape[0] != v.shape[0]:
        raise UserError(
            f"K has {k.shape[0]} rows but V has {v.shape[0]}: K and V must have the same number "
            "of rows n (one value per key)."
        )
    padding.valid_lengths(options.get("valid_len"), q.shape[0], k.shape[0])
    dropout.probability(options.get("dropout"))
    normalisers.choice(options.get("normalise"))
    score_transforms.transforms(options)


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Q (m × d_k), K (n × d_k), V (n × d_v); m defaults to n, d_v to d_k (n and d_k: the card)."""
    n, d_k = sizes["n"], sizes["dk"]
    m, d_v = sizes.get("m") or n, sizes.get("dv") or d_k
    return {"Q": (m, d_k), "K": (n, d_k), "V": (n, d_v)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    (m, _d_k), (n, _), (_, d_v) = shapes["Q"], shapes["K"], shapes["V"]
    count = _SCORE_MATRICES + (_PADDING_MATRICES if options.get("valid_len") is not None else 0)
    count += normalisers.EXTRA_MATRICES.get(options.get("normalise") or "softmax", 0)
    count += 1 if options.get("softcap") is not None else 0
    extra = dropout.dropout_bytes(options, m * n, itemsize)
    return (count * m * n + 2 * m * d_v) * itemsize + extra


def document_estimate(shapes: dict[str, tuple[int, ...]], options: dict[str, Any]) -> int:
    """The numbers --full JSON writes: the memory estimate's matrices less the normaliser's
    scratch ones (sparsemax's and entmax's sorts are held, never shown)."""
    (m, _d_k), (n, _) = shapes["Q"], shapes["K"]
    extra = normalisers.EXTRA_MATRICES.get(options.get("normalise") or "softmax", 0)
    return estimate_bytes(shapes, options, 8) // 8 - extra * m * n


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    q, k, v = (backend.asarray(run.inputs[name]) for name in ("Q", "K", "V"))
    (m, d_k), n, d_v = q.shape, k.shape[0], v.shape[1]
    use_scale = bool(run.options.get("scale", True))
    queries = row_names(run, "queries", m, "q", "the lesson file")
    keys = row_names(run, "keys", n, "k", "the lesson file")
    context = {"m": m, "n": n, "dk": d_k, "dv": d_v, "sqrt_dk": math.sqrt(d_k)}
    record = StepRecorder(run)
    grid = Grid(queries, keys, context)
    transforms = score_transforms.transforms(run.options)
    if transforms.norm is not None:
        columns = tuple(str(j) for j in range(1, d_k + 1))
        grids = (Grid(queries, columns, context), Grid(keys, columns, context))
        q, k = score_transforms.record_qk_norm(record, q, k, transforms.norm, grids)

    scores = record.compute("scores", lambda: mech.scores(q, k), grid=grid)
    logits = scores
    if use_scale:
        logits = record.compute("scaled", lambda: mech.scale(scores, d_k), grid=grid)
    if transforms.cap is not None:
        logits = score_transforms.record_softcap(record, logits, transforms.cap, grid)
    lengths = padding.valid_lengths(run.options.get("valid_len"), m, n)
    if lengths is not None:
        unmasked = logits
        pad = padding.record_padding(record, unmasked, lengths, grid, causal=False)
        context["logits"] = ("S / √d_k" if use_scale else "S") if transforms.cap is None else "C"
        logits = record.compute("masked", lambda: unmasked + pad, grid=grid)
    normaliser = normalisers.choice(run.options.get("normalise"))
    normalised = normalisers.record_weights(record, logits, normaliser, grid)
    p = dropout.probability(run.options.get("dropout"))
    weights = normalised if p is None else dropout.record_dropout(record, normalised, p, grid)
    output = record.compute(
        "output",
        lambda: mech.weighted_sum(weights, v),
        grid=Grid(queries, context=context),
        text=dropout.output_text(p),
    )
    # Both wordings of "not scaled" are recorded: the claims keep the slide's for an example.
    notes: tuple[Note, ...] = (
        () if use_scale else (record.note("no_scale"), record.note("no_scale_asked"))
    )
    if n == 1:
        notes += (record.note("one_key", before_dropout="" if p is None else " before dropout"),)
    if use_scale and normaliser == "softmax" and not transforms.any:
        drawn = {"Q", "K"} <= run.drawn
        notes += _peaked_notes(record, record.shown("weights"), queries, drawn)
    if normaliser == "softmax" and transforms.any:
        hidden = np.isneginf(np.asarray(record.to_numpy(logits), dtype=np.float64))
        heads = [(run.inputs["Q"], run.inputs["K"], hidden)]
        shown = [np.asarray(record.shown("weights"), dtype=np.float64)]
        notes += score_transforms.notes(record, transforms, heads, use_scale, shown)
        if transforms.norm is not None and use_scale:
            notes += (score_transforms.bound_note(record, record.shown("scaled"), d_k),)
    if normaliser == "hardmax":
        notes += (record.note("hardmax_gradient"),)
    if normaliser != "softmax" and p is not None:
        notes += (record.note("dropout_normalised", normaliser=normaliser),)
    meta = dropout.meta(run, p)
    if lengths is not None:
        meta["valid_lengths"] = list(lengths)
    return record.walkthrough(
        output, notes=notes, inputs=labelled_inputs(run, queries, keys), meta=meta
    )


# A softmax row whose largest weight is at least this "nearly picks one key".
PEAKED = 0.95


def _peaked_notes(
    record: StepRecorder, weights: np.ndarray, queries: tuple[str, ...], drawn: bool
) -> tuple[Note, ...]:
    """still_peaked: the scaled softmax's most peaked row, when it nearly picks one key; of
    inputs drawn at random (mean 0, variance 1, as the scaling assumes), still_peaked_drawn."""
    tops = _competing_tops(weights)
    if not np.any(tops >= PEAKED):
        return ()
    row = int(np.argmax(tops))
    key = "still_peaked_drawn" if drawn else "still_peaked"
    return (record.note(key, row=queries[row], top=float(tops[row])),)


def _competing_tops(weights: np.ndarray) -> np.ndarray:
    """Each row's largest weight among rows with two keys or more that may be attended (a row
    with one unmasked key has weight 1 whatever the scaling); -1 for any other row."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[1] < 2:
        return np.full(weights.shape[:1], -1.0)
    finite = np.isfinite(weights)
    unmasked = np.sum(finite & (weights > 0), axis=1)  # masked keys have weight exactly 0
    tops = np.max(np.where(finite, weights, -1.0), axis=1)
    return np.where(unmasked >= 2, tops, -1.0)


def is_still_peaked(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``still_peaked``: the scores were scaled, and a row with two keys or more has a
    softmax weight of at least PEAKED, the one the note names."""
    names = [step.key for step in walkthrough.steps]
    if "scaled" not in names or "weights" not in names:
        return False
    tops = _competing_tops(walkthrough.step("weights"))
    top = values.get("top")
    return bool(isinstance(top, float) and np.any(tops >= PEAKED) and np.any(tops == top))


def has_one_key(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``one_key``: the weights have one column and every weight is exactly 1 (not
    when the scores overflowed to NaN, nor a masked row); said without "before dropout", every
    answer shown is V's one row."""
    weights = np.asarray(walkthrough.step("weights"), dtype=np.float64)
    if not (weights.ndim == 2 and weights.shape[1] == 1 and np.all(weights == 1.0)):
        return False
    if values.get("before_dropout"):
        return True
    v = np.asarray({item.name: item.value for item in walkthrough.inputs}["V"], dtype=np.float64)
    output = np.asarray(walkthrough.output, dtype=np.float64)
    return bool(np.all(output == v[0]))


def on_own_inputs(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``no_scale_asked``: the user's own inputs (the slide's wording is for examples)."""
    return not on_an_example(walkthrough, values)


def labelled_inputs(
    run: LessonRun, queries: tuple[str, ...], keys: tuple[str, ...]
) -> tuple[InputValue, ...]:
    return (
        InputValue(
            "Q", run.inputs["Q"], row_labels=queries, description=CARD.inputs[0].description
        ),
        InputValue("K", run.inputs["K"], row_labels=keys, description=CARD.inputs[1].description),
        InputValue("V", run.inputs["V"], row_labels=keys, description=CARD.inputs[2].description),
    )


# What every step's text reads: the sizes (flash reads them too).
SIZES = ("m", "n", "dk", "dv", "sqrt_dk")
TEXTS = Texts(
    steps={
        "scores": SIZES,
        "scaled": SIZES,
        **dict.fromkeys(padding.TEXTS, (*SIZES, *padding.STEP_NAMES)),
        "masked": (*SIZES, "logits"),  # what P is added to: "S / √d_k", "S" or "C" (capped)
        # --qk-norm and --softcap
        **{
            f"{x}_normed_{norm}": (*SIZES, *score_transforms.STEP_NAMES)
            for x in "qk"
            for norm in score_transforms.NORMS
        },
        "capped": (*SIZES, *score_transforms.CAP_NAMES),
        "weights": SIZES,
        # --normalise: the weights step of each alternative to softmax
        **{f"weights_{name}": SIZES for name in normalisers.ALTERNATIVES},
        "output": SIZES,
        "dropout": (*SIZES, *dropout.STEP_NAMES),
        "output_dropout": SIZES,
    },
    notes={
        "no_scale": (),
        "no_scale_asked": (),
        "one_key": ("before_dropout",),
        "still_peaked": ("row", "top"),
        "still_peaked_drawn": ("row", "top"),
        **dropout.NOTES,
        # --normalise: how many weights are exactly 0 ("_zeros"), or that none is ("_dense")
        **{f"{name}_zeros": ("zeros", "total") for name in normalisers.ALTERNATIVES},
        **{f"{name}_dense": ("zeros", "total") for name in normalisers.ALTERNATIVES},
        "masked_zeros": ("masked", "normaliser"),
        "hardmax_gradient": (),
        "dropout_normalised": ("normaliser",),
        **score_transforms.NOTES,
    },
    claims={
        **dropout.CLAIMS,
        **normalisers.CLAIMS,
        "no_scale": on_an_example,
        "no_scale_asked": on_own_inputs,
        "one_key": has_one_key,
        "still_peaked": is_still_peaked,
        "still_peaked_drawn": is_still_peaked,
        **score_transforms.CLAIMS,
    },
    measured=(
        *dropout.MEASURED,
        *normalisers.MEASURED,
    ),
    general=(
        *dropout.GENERAL,
        *normalisers.GENERAL,
    ),
)

LESSON = Lesson(
    card=CARD,
    labels=("queries", "keys"),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    document_estimate=document_estimate,
    build=build,
    texts=TEXTS,
)
