"""The linear attention lesson: φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1), reassociated step by step.

First the quadratic order, (φ(Q)φ(K)ᵀ)V with its n × n weights; then the same numbers through
the r × d_v matrix φ(K)ᵀV and the r-vector φ(K)ᵀ1; the FLOPs of both orders; and how far the
kernel's weights and output are from softmax attention's on the same inputs. With ``causal``
the sums run over j ≤ i as a running state S_t, z_t (the RNN view).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core import variants
from attn_cli.core.backend import namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Note, Walkthrough
from attn_cli.course.checks import check_causal_square, labels, row_names, whole_at_least
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.linear.card import CARD
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.scaled import build as scaled
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import linear, masks

FEATURE_MAPS = variants.FEATURE_MAPS
# The FLOP table also counts the two orders at this length, where n² has long taken over.
LONG_N = 4096
# (m × n) matrices alive at once: φ(Q)φ(K)ᵀ, its weights, scores, softmax parts (exp by
# hand among them) and weights.
_SCORE_MATRICES = 9


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    scaled.validate(inputs, {})  # Q and K share d_k; K and V share n
    _check_options(inputs["Q"].shape[0], inputs["K"].shape[0], options)


def _check_options(m: int, n: int, options: dict[str, Any]) -> None:
    name = options.get("feature_map", "elu")
    if name not in FEATURE_MAPS:
        raise UserError(
            f"{param('feature_map', repr(name))} is not a feature map; choose one of: {', '.join(FEATURE_MAPS)}."
        )
    whole_at_least(options.get("features", 16), param("features"), meaning="random features r")
    whole_at_least(options.get("feature_seed", 0), param("feature_seed"), minimum=0)
    if name != "random":
        # Only the random features read these; elsewhere a changed value would be ignored
        # (and the example's description would say the run used it).
        defaults = CARD.defaults
        for option in ("features", "feature_seed"):
            if option in options and options[option] != defaults[option]:
                raise UserError(
                    f"{param(option, options[option])} is read only by {param('feature_map')} random ({name} "
                    f"makes one feature per entry of a row, r = d_k): add {param('feature_map')} random, "
                    f"or leave {param(option)} out."
                )
    if options.get("causal"):
        check_causal_square(m, n)


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """attn scaled's shapes, with the card's smaller defaults, so that φ(Q) and φ(K)ᵀV stay
    readable."""
    return scaled.random_shapes(sizes)


def _width(d_k: int, options: dict[str, Any]) -> int:
    """r, the number of features: d_k for elu + 1, --features for random features."""
    return int(options.get("features", 16)) if options.get("feature_map") == "random" else d_k


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    (m, d_k), (n, _), (_, d_v) = shapes["Q"], shapes["K"], shapes["V"]
    _check_options(m, n, options)
    r = _width(d_k, options)
    states = n * r * (d_v + 1) if options.get("causal") else r * (d_v + 1)
    return (_SCORE_MATRICES * m * n + (m + n) * r + states + 6 * m * d_v) * itemsize


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    q, k, v = (backend.asarray(run.inputs[name]) for name in ("Q", "K", "V"))
    (m, d_k), n, d_v = q.shape, k.shape[0], v.shape[1]
    options = run.options
    causal = bool(options.get("causal", False))
    r = _width(d_k, options)
    queries = row_names(run, "queries", m, "q", "the lesson file")
    keys = row_names(run, "keys", n, "k", "the lesson file")
    features = labels("f", r)
    context: dict[str, Any] = {"m": m, "n": n, "dk": d_k, "dv": d_v, "r": r}
    context["sqrt_dk"] = math.sqrt(d_k)
    context["seed"] = options.get("feature_seed", 0)
    context["long"] = LONG_N
    phi = _feature_map(options, d_k)
    record = StepRecorder(run)
    rows = Grid(queries, features, context)
    map_text = "phi_" + str(options.get("feature_map", "elu")).replace("-", "_")
    record.compute("phi_q", lambda: phi(q), grid=rows, text=f"{map_text}_q")
    record.compute(
        "phi_k", lambda: phi(k), grid=Grid(keys, features, context), text=f"{map_text}_k"
    )
    if causal:
        output, weights, check = _running_sum(record, (q, k, v), phi, rows, keys)
    else:
        output, weights, check = _reassociated(record, (q, k, v), phi, rows, keys)
    _flops(record, m, n, r, d_v, context)
    gap = _versus_softmax(record, (q, k, v), weights, output, causal, Grid(queries, keys, context))
    return record.walkthrough(
        output,
        inputs=scaled.labelled_inputs(run, queries, keys),
        meta={"max_abs_difference": check, "softmax_gap": gap},
    )


# The feature maps applied entry by entry, by name (random features need their projection).
ELEMENTWISE: dict[str, linear.FeatureMap] = {
    "elu": linear.ELU_PLUS_ONE,
    "relu": linear.relu,
    "leaky-squared": linear.leaky_squared,
}


def _feature_map(options: dict[str, Any], d_k: int) -> linear.FeatureMap:
    name = str(options.get("feature_map", "elu"))
    if name != "random":
        return ELEMENTWISE[name]
    projection = linear.random_projection(
        d_k, int(options.get("features", 16)), int(options.get("feature_seed", 0))
    )
    root = d_k**0.25  # q·k / √d_k = (q / d_k^¼)·(k / d_k^¼): the features then aim at softmax's
    return linear.random_features(projection, divide_by=root)


def _difference(record: StepRecorder, a: Any, b: Any) -> float:
    return float(np.max(np.abs(record.to_numpy(a) - record.to_numpy(b))))


def _reassociated(
    record: StepRecorder,
    qkv: tuple[Any, Any, Any],
    phi: linear.FeatureMap,
    rows: Grid,
    keys: tuple[str, ...],
) -> tuple[Any, Any, float]:
    """Both orders: (φ(Q)φ(K)ᵀ)V through the m × n weights, then φ(Q)(φ(K)ᵀV) without them."""
    q, k, v = qkv
    queries, features, context = rows.rows, rows.cols, rows.context
    grid = Grid(queries, keys, context)
    quadratic = linear.quadratic_order(q, k, v, phi)
    record.add("similarity", quadratic.similarity, grid=grid)
    record.add("weights", quadratic.weights, kind="weights", row_sums=True, grid=grid)
    record.add("output_quadratic", quadratic.output, grid=Grid(queries, context=context))
    result = linear.linear_attention(q, k, v, phi)
    record.add("kv", result.kv, grid=Grid(features, context=context))
    record.add("k_sum", result.k_sum, grid=Grid(features, context=context))
    record.add("numerator", result.numerator, grid=Grid(queries, context=context))
    record.add(
        "normaliser",
        result.normaliser,
        grid=Grid(queries, context=context),
        notes=_empty_rows(record, result.normaliser, queries, phi),
    )
    check = _difference(record, result.output, quadratic.output)
    record.add(
        "output",
        result.output,
        grid=Grid(queries, context=context),
        notes=(record.note("same_numbers", difference=check),),
    )
    return result.output, quadratic.weights, check


def _running_sum(
    record: StepRecorder,
    qkv: tuple[Any, Any, Any],
    phi: linear.FeatureMap,
    rows: Grid,
    keys: tuple[str, ...],
) -> tuple[Any, Any, float]:
    """The causal form as a recurrence: the state S_t and z_t after each token, then the reads."""
    q, k, v = qkv
    tokens, features, context = rows.rows, rows.cols or (), rows.context
    xp = namespace_of(q, k, v)
    running = linear.causal_linear_attention(q, k, v, phi)
    n, r, d_v = running.states.shape
    flat = record.to_numpy(running.states).reshape(n, r * d_v)  # row t: S_t entry by entry
    cells = tuple(f"S[{f},{c}]" for f in features for c in range(1, d_v + 1))
    record.add("states", flat, grid=Grid(tokens, cells, context))
    record.add("sums", running.sums, grid=Grid(tokens, features, context))
    phi_q = phi(q)  # (n, r)
    reads = xp.sum(phi_q[:, :, None] * running.states, axis=-2)  # row t: φ(q_t)ᵀ S_t
    normaliser = xp.sum(phi_q * running.sums, axis=-1, keepdims=True)  # φ(q_t)ᵀ z_t
    record.add("reads", reads, grid=Grid(tokens, context=context))
    record.add(
        "normaliser",
        normaliser,
        grid=Grid(tokens, context=context),
        text="normaliser_causal",
        notes=_empty_rows(record, normaliser, tokens, phi),
    )
    # The same attention in the quadratic order, masked to j ≤ i: the weights it implies.
    similarity = mech.scores(phi_q, phi(k))  # φ(Q) φ(K)ᵀ
    kept = masks.fill_blocked(similarity, masks.negate(masks.causal_allowed(similarity)), 0.0)
    kept_sum = xp.sum(kept, axis=-1, keepdims=True)
    weights = linear.divide_or_zero(kept, kept_sum)
    if linear.out_of_range(phi, weights, kept_sum):  # φ out of range: the same ratios
        weights = linear.stable_weights(q, k, phi, causal=True)
    check = _difference(record, running.output, mech.weighted_sum(weights, v))
    record.add(
        "output",
        running.output,
        grid=Grid(tokens, context=context),
        text="output_causal",
        notes=(record.note("same_as_masked", difference=check),),
    )
    record.add(
        "weights",
        weights,
        kind="weights",
        row_sums=True,
        grid=Grid(tokens, keys, context),
        text="weights_causal",
    )
    return running.output, weights, check


def _empty_rows(
    record: StepRecorder,
    normaliser: Any,
    queries: tuple[str, ...] | None,
    phi: linear.FeatureMap,
) -> tuple[Note, ...]:
    """A note naming the queries whose normaliser is exactly 0, when there are any:
    zero_normaliser where φ can be 0 (relu: no key shares a positive feature with them, and the
    row is shown with no weight), underflow_normaliser where φ is positive everywhere (a map
    with a log: the exact normaliser is positive, it rounded to 0, and the weights shown are the
    exact ratios, computed from log φ)."""
    values = record.to_numpy(normaliser)
    names = queries or labels("q", int(values.shape[0]))
    empty = _empty_names(values, names)
    if not empty:
        return ()
    positive = getattr(phi, "log", None) is not None
    key = "underflow_normaliser" if positive else "zero_normaliser"
    return (record.note(key, queries=", ".join(empty)),)


def _empty_names(normaliser: np.ndarray, queries: tuple[str, ...]) -> tuple[str, ...]:
    rows = np.asarray(normaliser, dtype=float).reshape(len(queries), -1)[:, 0]
    return tuple(name for name, value in zip(queries, rows, strict=True) if value == 0)


def _flops(record: StepRecorder, m: int, n: int, r: int, d_v: int, context: dict) -> None:
    """Both orders' FLOPs here and at n = m = LONG_N, with their largest intermediate."""
    table = []
    for rows, keys in ((m, n), (LONG_N, LONG_N)):
        table.append(
            {
                "m": rows,
                "n": keys,
                "quadratic_flops": linear.quadratic_flops(rows, keys, r, d_v),
                "linear_flops": linear.linear_flops(rows, keys, r, d_v),
                "quadratic_largest": rows * keys,
                "linear_largest": r * d_v,
            }
        )
    long = table[-1]
    ratio = long["quadratic_flops"] / long["linear_flops"]
    record.add(
        "flops",
        table,
        kind="records",
        grid=Grid(context=context),
        notes=(record.note("flops_ratio", n=LONG_N, ratio=ratio),),
    )


def _versus_softmax(
    record: StepRecorder,
    qkv: tuple[Any, Any, Any],
    weights: Any,
    output: Any,
    causal: bool,
    grid: Grid,
) -> float:
    """Softmax attention on the same inputs, and how far the kernel's weights and output are."""
    q, k, v = qkv
    logits = mech.scale(mech.scores(q, k), q.shape[-1])
    if causal:
        logits = logits + masks.causal_additive(logits)
    soft = record.softmax("softmax", logits, grid=grid, text="softmax_causal" if causal else None)
    soft_out = mech.weighted_sum(soft, v)
    a, b = record.to_numpy(weights), record.to_numpy(soft)
    out, soft_np = record.to_numpy(output), record.to_numpy(soft_out)
    weight_gaps = np.max(np.abs(a - b), axis=-1)  # (m,)
    output_gaps = np.max(np.abs(out - soft_np), axis=-1)  # (m,)
    kernel_h, softmax_h = row_entropy(a), row_entropy(b)
    queries = tuple(grid.rows or ())
    table: list[dict[str, Any]] = [
        {
            "query": name,
            "max_weight_gap": float(weight_gaps[i]),
            "total_variation": float(np.sum(np.abs(a[i] - b[i])) / 2),
            "max_output_gap": float(output_gaps[i]),
            "entropy": float(kernel_h[i]),
            "entropy_softmax": float(softmax_h[i]),
        }
        for i, name in enumerate(queries)
    ]
    gap = float(np.max(output_gaps))
    flatter, sharper = _flatter_and_sharper(queries, a, b)
    record.add(
        "versus_softmax",
        table,
        kind="records",
        grid=Grid(context=grid.context),
        notes=(
            record.note(
                "softmax_gap",
                weights=float(np.max(weight_gaps)),
                output=gap,
            ),
            record.note("flatter", queries=", ".join(flatter)),
            record.note("sharper", queries=", ".join(sharper)),
        ),
    )
    return gap


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """H = −Σ_j a_j ln a_j of each row, in nats (0 ln 0 = 0: a masked key adds nothing); NaN
    where a row holds NaN or inf."""
    a = np.asarray(weights, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(a > 0, -a * np.log(np.where(a > 0, a, 1.0)), 0.0)
    terms = np.where(np.isfinite(a), terms, np.nan)
    return np.sum(terms, axis=-1)


# Two entropies closer than this (in nats) are the same flatness: neither note names the row.
_ENTROPY_TIE = 1e-9


def _flatter_and_sharper(
    queries: tuple[str, ...], kernel: np.ndarray, soft: np.ndarray
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The queries whose kernel row has a higher entropy than softmax's row (flatter), and
    those with a lower one (sharper); ties, rows with NaN and kernel rows with no weight at all
    (a zero normaliser) are in neither."""
    kernel_h, softmax_h = row_entropy(kernel), row_entropy(soft)
    empty = ~(np.sum(np.asarray(kernel, dtype=float), axis=-1) != 0)  # NaN sums count as empty
    kernel_h = np.where(empty, np.nan, kernel_h)
    flatter = tuple(
        q for q, hk, hs in zip(queries, kernel_h, softmax_h, strict=False) if hk > hs + _ENTROPY_TIE
    )
    sharper = tuple(
        q for q, hk, hs in zip(queries, kernel_h, softmax_h, strict=False) if hk < hs - _ENTROPY_TIE
    )
    return flatter, sharper


def _rows_compared(walkthrough: Walkthrough) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(flatter, sharper) recomputed from the walkthrough's own kernel and softmax weights."""
    table = walkthrough.step("versus_softmax")
    queries = tuple(str(row["query"]) for row in table)
    return _flatter_and_sharper(
        queries, np.asarray(walkthrough.step("weights")), np.asarray(walkthrough.step("softmax"))
    )


def _names_exactly(side: int, walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The rows the note names are exactly those on ``side`` (0 flatter, 1 sharper) of
    :func:`_rows_compared`, and there is at least one."""
    try:
        rows = _rows_compared(walkthrough)[side]
    except (KeyError, ValueError, TypeError):
        return False
    return bool(rows) and ", ".join(rows) == values.get("queries")


def flatter_than_softmax(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The rows the note names have the higher entropy than softmax's: exactly those."""
    return _names_exactly(0, walkthrough, values)


def sharper_than_softmax(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The rows the note names have the lower entropy than softmax's: exactly those."""
    return _names_exactly(1, walkthrough, values)


def _named_rows(
    walkthrough: Walkthrough, values: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The weight rows of the queries a normaliser note names, and the rows of every other
    query, when the names are exactly the queries whose normaliser step holds an exact 0 (at
    least one); else None."""
    try:
        step = walkthrough.find("normaliser")
        normaliser = np.asarray(step.value, dtype=float)
        names = tuple(step.row_labels or ())
        empty = _empty_names(normaliser, names)
        weights = np.asarray(walkthrough.step("weights"), dtype=float)
    except (KeyError, ValueError, TypeError):
        return None
    if not empty or ", ".join(empty) != values.get("queries"):
        return None
    named = np.array([name in empty for name in names])
    return weights[named], weights[~named]


def names_the_empty_rows(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``zero_normaliser``: the queries it names are exactly those whose normaliser
    step holds an exact 0, there is at least one, and their weights are shown as 0."""
    rows = _named_rows(walkthrough, values)
    return rows is not None and bool(np.all(rows[0] == 0))


def names_the_underflowed_rows(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``underflow_normaliser``: the queries it names are exactly those whose
    normaliser step holds an exact 0, there is at least one, and their weights (the exact
    ratios) are finite and sum to 1 within rounding."""
    rows = _named_rows(walkthrough, values)
    if rows is None:
        return False
    sums = np.sum(rows[0], axis=-1)
    return bool(np.all(np.isfinite(rows[0])) and np.all(np.abs(sums - 1.0) <= 1e-6))


def the_same_numbers(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The two orders agree to rounding: the gap is finite and within 1e-9 of the output's
    scale (on huge inputs both orders overflow and the gap is NaN)."""
    try:
        output = np.asarray(walkthrough.output, dtype=float)
        difference = float(values["difference"])
    except (KeyError, ValueError, TypeError):
        return False
    if not np.all(np.isfinite(output)) or not math.isfinite(difference):
        return False
    scale = max(1.0, float(np.max(np.abs(output), initial=0.0)))
    return difference <= 1e-9 * scale


# The values every step text of this lesson may read.
CONTEXT = ("m", "n", "dk", "dv", "r", "sqrt_dk", "seed", "long")

TEXTS = Texts(
    steps={
        "phi_elu_q": CONTEXT,
        "phi_elu_k": CONTEXT,
        "phi_random_q": CONTEXT,
        "phi_random_k": CONTEXT,
        "phi_relu_q": CONTEXT,
        "phi_relu_k": CONTEXT,
        "phi_leaky_squared_q": CONTEXT,
        "phi_leaky_squared_k": CONTEXT,
        "similarity": CONTEXT,
        "weights": CONTEXT,
        "output_quadratic": CONTEXT,
        "kv": CONTEXT,
        "k_sum": CONTEXT,
        "numerator": CONTEXT,
        "normaliser": CONTEXT,
        "output": CONTEXT,
        "states": CONTEXT,
        "sums": CONTEXT,
        "reads": CONTEXT,
        "normaliser_causal": CONTEXT,
        "output_causal": CONTEXT,
        "weights_causal": CONTEXT,
        "flops": CONTEXT,
        "softmax": CONTEXT,
        "softmax_causal": CONTEXT,
        "versus_softmax": CONTEXT,
    },
    notes={
        "same_numbers": ("difference",),
        "same_as_masked": ("difference",),
        "flops_ratio": ("n", "ratio"),
        "softmax_gap": ("weights", "output"),
        "flatter": ("queries",),
        "sharper": ("queries",),
        "zero_normaliser": ("queries",),
        "underflow_normaliser": ("queries",),
    },
    claims={
        "flatter": flatter_than_softmax,
        "sharper": sharper_than_softmax,
        "same_numbers": the_same_numbers,
        "same_as_masked": the_same_numbers,
        "zero_normaliser": names_the_empty_rows,
        "underflow_normaliser": names_the_underflowed_rows,
    },
    measured=(
        "flops_ratio",
        "softmax_gap",
    ),
)

LESSON = Lesson(
    card=CARD,
    labels=("queries", "keys"),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
)
