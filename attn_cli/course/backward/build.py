"""The backward lesson: the forward's A and L, then dV, dA, one row's Jacobian, D, dZ, dS, dQ, dK.

The upstream gradient dO is the user's (``--do``), drawn with random inputs, or all ones (the
gradient of L = Σ O, every output entry summed); the inputs say which. ``--causal`` masks the
later keys and counts the masked entries whose gradient is exactly 0; ``--vanishing`` measures
the gradient that reaches the scores at d_k = 16, 64 and 512, scaled and not (the lectures'
"softmax ≈ one-hot → gradient ≈ 0 → learning stalls").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core.backend import EPSILON
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import InputValue, Note, Part, Walkthrough
from attn_cli.course.backward.card import CARD
from attn_cli.course.checks import counted, row_names
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.scaled import build as scaled
from attn_cli.course.selfattn import build as selfattn
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import backward as grad
from attn_cli.mechanisms import masks
from attn_cli.mechanisms.selfattn import project

# The softmax's Jacobian is shown for the first row when it has at most this many keys (an
# n × n matrix per row: a small case is the one a student can check by hand).
JACOBIAN_MOST_KEYS = 6
# --vanishing: the widths the lectures name, and the size of each random draw (m = n tokens).
VANISHING_WIDTHS = (16, 64, 512)
VANISHING_TOKENS = 32
# The values' width there, the same at every d_k: dA = dO Vᵀ then has the same spread at every
# width, and only the softmax's saturation changes what reaches the scores.
VANISHING_VALUE_WIDTH = 16
# A row whose gradient (the norm of its row of dZ) is below this gets almost none: stalled.
STALLED = 1e-3
# The m × n matrices alive at once: scores, scaled, mask, masked, the softmax's parts (five,
# the by-hand two among them), weights, dA, dZ, dS, and their products (three).
_SCORE_MATRICES = 16


QKV = ("Q", "K", "V")
WEIGHT_NAMES = ("W_Q", "W_K", "W_V")


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    _check_sources(inputs)
    if "X" in inputs:
        tokens = {name: inputs[name] for name in ("X", *WEIGHT_NAMES) if name in inputs}
        selfattn.validate(tokens, {})
        shapes = _projected_shapes(tokens)
    else:
        scaled.validate({name: inputs[name] for name in QKV}, {})
        shapes = {name: inputs[name].shape for name in QKV}
    (m, _), (n, _), (_, d_v) = shapes["Q"], shapes["K"], shapes["V"]
    d_out = inputs.get("dO")
    if d_out is not None and d_out.shape != (m, d_v):
        raise UserError(
            f"dO is {d_out.shape[0]} × {d_out.shape[1]} but the output O = A V is {m} × {d_v}: "
            f"{param('do')} needs one entry per entry of the output (m rows, d_v columns)."
        )
    if options.get("causal") and m != n:
        raise UserError(
            f"Q has {m} rows but K has {n}: {param('causal')} masks the keys after each query "
            "in one sequence, so Q and K need one row per token (the same n)."
        )


def _check_sources(inputs: dict[str, np.ndarray]) -> None:
    """Q, K and V, or tokens X (with its weights, each the identity when not given): one way."""
    weights = [name for name in WEIGHT_NAMES if name in inputs]
    given = [name for name in QKV if name in inputs]
    if weights and "X" not in inputs:
        raise UserError(
            f"{CARD.param(weights[0])} needs {param('x')}: the weights project the tokens X "
            "(Q = X W_Q)."
        )
    if "X" in inputs and given:
        raise UserError(
            f"give {param('q')}, {param('k')} and {param('v')}, or {param('x')} (with "
            f"{param('wq')}/{param('wk')}/{param('wv')}), not both: with {param('x')}, Q, K and "
            "V are X W_Q, X W_K and X W_V."
        )
    if "X" not in inputs and len(given) < len(QKV):
        missing = [CARD.param(name) for name in QKV if name not in inputs]
        raise UserError(
            f"the backward needs {' and '.join(missing)} as well (Q, K and V), or {param('x')} "
            "in their place."
        )


def _projected_shapes(tokens: dict[str, np.ndarray]) -> dict[str, tuple[int, int]]:
    """The shapes of Q, K, V = X W_Q, X W_K, X W_V (each W the identity where not given)."""
    weights, _ = selfattn.projection_weights(tokens)
    n = tokens["X"].shape[0]
    return {name: (n, weights[f"W_{name}"].shape[1]) for name in QKV}


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Q, K, V as scaled draws them (sizes of the card), and dO of the output's shape."""
    shapes = scaled.random_shapes(sizes)
    (m, _), (_, d_v) = shapes["Q"], shapes["V"]
    return {**shapes, "dO": (m, d_v)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    if "X" in shapes:  # tokens X (n × d) and its weights: Q, K, V and their gradients too
        n, d = shapes["X"]
        m, d_k, d_v = n, max(shapes.get(w, (d, d))[1] for w in WEIGHT_NAMES), d
        d_v = max(d_v, shapes.get("W_V", (d, d))[1])
        widths = 12 * (n + d) * max(d, d_k, d_v)  # the above, dW_Q, dW_K, dW_V, dX, paths
    else:
        (m, d_k), (n, _), (_, d_v) = shapes["Q"], shapes["K"], shapes["V"]
        widths = 6 * (m + n) * max(d_k, d_v)  # Q, K, V, dO, O, dV, dQ, dK
    vanishing = 0
    if options.get("vanishing"):
        t = VANISHING_TOKENS
        vanishing = 2 * (2 * t * max(VANISHING_WIDTHS) + _SCORE_MATRICES * t * t)
    return (_SCORE_MATRICES * m * n + n * n + widths + vanishing) * itemsize


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    tokens = "X" in run.inputs
    if tokens:
        weights_given, _ = selfattn.projection_weights(run.inputs)
        x = backend.asarray(run.inputs["X"])
        projections = tuple(backend.asarray(weights_given[name]) for name in WEIGHT_NAMES)
        shapes = _projected_shapes(run.inputs)
        (m, d_k), n, d_v = shapes["Q"], shapes["K"][0], shapes["V"][1]
    else:
        q, k, v = (backend.asarray(run.inputs[name]) for name in QKV)
        (m, d_k), n, d_v = q.shape, k.shape[0], v.shape[1]
    given_d_out = run.inputs.get("dO")
    if given_d_out is None:
        d_out_source, given_d_out = "ones", np.ones((m, d_v))
    else:
        d_out_source = "drawn" if "dO" in run.drawn else "given"
    d_out = backend.asarray(given_d_out)
    use_scale = bool(run.options.get("scale", True))
    causal = bool(run.options.get("causal"))
    if tokens:
        queries = keys = row_names(run, "tokens", n, "t", "the lesson file")
    else:
        queries = row_names(run, "queries", m, "q", "the lesson file")
        keys = row_names(run, "keys", n, "k", "the lesson file")
    context: dict[str, Any] = {"m": m, "n": n, "dk": d_k, "dv": d_v, "sqrt_dk": math.sqrt(d_k)}
    context["logits"] = "S / √d_k" if use_scale else "S"
    context["first"] = queries[0]
    record = StepRecorder(run)
    grid = Grid(queries, keys, context)
    values = Grid(keys, context=context)
    rows = Grid(queries, context=context)

    # The forward, as the backward needs it: A (or L, from which A is recomputed) and O.
    if tokens:
        q = record.compute("Q", lambda: project(x, projections[0]), grid=rows)
        k = record.compute("K", lambda: project(x, projections[1]), grid=values)
        v = record.compute("V", lambda: project(x, projections[2]), grid=values)
    scores = record.compute("scores", lambda: mech.scores(q, k), grid=grid)
    logits = scores
    if use_scale:
        logits = record.compute("scaled", lambda: mech.scale(scores, d_k), grid=grid)
    if causal:
        unmasked = logits
        mask = record.compute("mask", lambda: masks.causal_additive(unmasked), grid=grid)
        logits = record.compute("masked", lambda: unmasked + mask, grid=grid)
    weights = record.softmax("weights", logits, grid=grid)
    lse = record.compute(
        "lse", lambda: grad.log_sum_exp(logits), grid=Grid(queries, ("L",), context)
    )
    output = record.compute("output", lambda: mech.weighted_sum(weights, v), grid=rows)

    # The backward, from dO to every input.
    v_grad = record.compute("d_v", lambda: grad.value_gradient(weights, d_out), grid=values)
    d_weights = record.compute("d_weights", lambda: grad.weight_gradient(d_out, v), grid=grid)
    a = record.shown("weights")
    if n <= JACOBIAN_MOST_KEYS:
        record.compute(
            "jacobian",
            lambda: grad.softmax_jacobian(weights[0]),
            grid=Grid(keys, keys, context),
            notes=(_jacobian_note(record, np.asarray(a[0], dtype=np.float64), keys),),
        )
    row_dots = record.compute(
        "row_dot",
        lambda: grad.row_dot(d_weights, weights),
        grid=Grid(queries, ("D",), context),
        notes_of=lambda d: (_same_d_note(record, d, output, d_out),),
    )
    d_logits = record.compute(
        "d_logits",
        lambda: grad.logit_gradient(weights, d_weights, row_dots),
        grid=grid,
        text="d_logits_scaled" if use_scale else "d_logits",
        notes_of=lambda d_z: _d_logits_notes(record, d_z, causal),
    )
    d_scores = d_logits
    if use_scale:
        d_scores = record.compute("d_scores", lambda: grad.score_gradient(d_logits, d_k), grid=grid)
    q_grad = record.compute("d_q", lambda: grad.query_gradient(d_scores, k), grid=rows)
    k_grad = record.compute("d_k", lambda: grad.key_gradient(d_scores, q), grid=values)
    grads = (q_grad, k_grad, v_grad)
    block = run.options.get("block")
    if block is not None:
        plain = dict(zip(("dQ", "dK", "dV"), grads, strict=True))
        _tiled(record, (q, k, v, output, lse, d_out), plain, int(block), use_scale, causal)
    result = q_grad
    if tokens:
        result = _projections_backward(record, x, projections, grads, keys, context)
    notes: tuple[Note, ...] = ()
    if not use_scale:
        notes += (record.note("no_scale"),)
    if run.options.get("vanishing"):
        notes += _vanishing(record, run.seed)
    return record.walkthrough(
        result,
        notes=notes,
        inputs=_labelled_inputs(run, queries, keys, given_d_out, d_out_source),
        meta={"upstream": d_out_source},
    )


def _span(names: tuple[str, ...], start: int, stop: int) -> str:
    return names[start] if stop - start == 1 else f"{names[start]}–{names[stop - 1]}"


def _tiled(
    record: StepRecorder,
    arrays: tuple[Any, Any, Any, Any, Any, Any],
    plain: dict[str, Any],
    block: int,
    use_scale: bool,
    causal: bool,
) -> None:
    """FlashAttention-2's backward from O and L: its first tile in full, every tile against the
    plain backward's A and dZ, its dQ, dK, dV against the plain ones, and the numbers each
    holds."""
    q, k, v, output, lse, d_out = arrays
    steps = {step.key: step for step in record.steps}
    queries, keys = steps["weights"].row_labels or (), steps["weights"].col_labels or ()
    found = grad.tiled_backward(
        q, k, v, output, lse, d_out, block=block, use_scale=use_scale, causal=causal
    )
    first = found.tiles[0]
    (r0, r1), (c0, c1) = first.rows, first.cols
    context = {**steps["weights"].context, "block": block}
    context.update(rows=_span(queries, r0, r1), cols=_span(keys, c0, c1))
    record.add(
        "tile",
        first.p,
        grid=Grid(queries[r0:r1], keys[c0:c1], context),
        parts=(Part("dP = dO_i V_jᵀ", first.d_p), Part("dS = P ∘ (dP − D_i)", first.d_s)),
    )
    a, d_z = np.asarray(steps["weights"].value), np.asarray(steps["d_logits"].value)
    rows = []
    for tile in found.tiles:
        (i0, i1), (j0, j1) = tile.rows, tile.cols
        rows.append(
            {
                "queries": _span(queries, i0, i1),
                "keys": _span(keys, j0, j1),
                "p_vs_a": float(np.max(np.abs(_host(record, tile.p) - a[i0:i1, j0:j1]))),
                "ds_vs_dz": float(np.max(np.abs(_host(record, tile.d_s) - d_z[i0:i1, j0:j1]))),
            }
        )
    m, n = a.shape
    skipped = -(-m // block) * -(-n // block) - len(found.tiles)
    record.add(
        "tiles",
        rows,
        kind="records",
        grid=Grid(
            context={**context, "tiles": counted(len(found.tiles), "tile"), "skipped": skipped}
        ),
        text="tiles_skipping" if skipped else None,
    )
    tiled = {"dQ": found.d_q, "dK": found.d_k, "dV": found.d_v}
    check = [
        {
            "gradient": name,
            "largest_difference": float(
                np.max(np.abs(_host(record, tiled[name]) - _host(record, plain[name])))
            ),
        }
        for name in ("dQ", "dK", "dV")
    ]
    gap = max(row["largest_difference"] for row in check)
    record.add(
        "tiled_check",
        check,
        kind="records",
        grid=Grid(context=context),
        notes=(record.note("tiled_equal", gap=gap),),
    )
    tile_numbers = 3 * min(block, m) * min(block, n)
    held = [
        {"backward": "plain", "what": "A, dA and dZ, each m × n", "numbers": 3 * m * n},
        {"backward": "tiled", "what": "L and D, each m × 1", "numbers": 2 * m},
        {"backward": "tiled", "what": "one tile's P, dP and dS", "numbers": tile_numbers},
    ]
    record.add(
        "tiled_memory",
        held,
        kind="records",
        grid=Grid(context=context),
        notes=(
            record.note(
                "tiled_memory",
                plain=3 * m * n,
                tiled=2 * m + tile_numbers,
            ),
        ),
    )


def _projections_backward(
    record: StepRecorder,
    x: Any,
    projections: tuple[Any, Any, Any],
    grads: tuple[Any, Any, Any],
    tokens: tuple[str, ...],
    context: dict[str, Any],
) -> Any:
    """dW_Q, dW_K, dW_V and dX: the gradients that reach the weights and the tokens."""
    found = grad.projection_gradients(x, projections, grads)
    features = Grid(context=context)
    record.add("d_w_q", found.d_w_q, grid=features)
    record.add("d_w_k", found.d_w_k, grid=features)
    record.add("d_w_v", found.d_w_v, grid=features)
    record.add("d_x", found.d_x, grid=Grid(tokens, context=context))
    return found.d_x


def _host(record: StepRecorder, value: Any) -> np.ndarray:
    return np.asarray(record.to_numpy(value), dtype=np.float64)


def _jacobian_note(record: StepRecorder, a: np.ndarray, keys: tuple[str, ...]) -> Note:
    """The diagonal of row 1's Jacobian is the lectures' w_i (1 − w_i): its largest entry."""
    diagonal = a * (1.0 - a)
    top = int(np.argmax(diagonal))
    return record.note(
        "jacobian_diagonal", name=keys[top], weight=float(a[top]), slope=float(diagonal[top])
    )


def _same_d_note(record: StepRecorder, d: np.ndarray, output: Any, d_out: Any) -> Note:
    """D computed the FlashAttention-2 way, from O and dO (no n × n matrix), and how far from
    the D shown."""
    other = np.sum(_host(record, d_out) * _host(record, output), axis=-1, keepdims=True)
    return record.note("d_from_output", gap=float(np.max(np.abs(other - d))))


def _d_logits_notes(record: StepRecorder, d_z: np.ndarray, causal: bool) -> tuple[Note, ...]:
    """Of dZ as shown: its largest row sum (0 up to rounding), and with the causal mask the
    masked entries that are exactly 0."""
    drift = float(np.max(np.abs(np.sum(d_z, axis=-1))))
    notes: tuple[Note, ...] = (record.note("rows_sum_to_zero", drift=drift),)
    if causal:
        hidden = np.triu(np.ones(d_z.shape, dtype=bool), k=1)
        zeros = int(np.count_nonzero(d_z[hidden] == 0.0))
        notes += (record.note("masked_zero", zeros=zeros, masked=int(np.count_nonzero(hidden))),)
    return notes


def _vanishing(record: StepRecorder, seed: int) -> tuple[Note, ...]:
    """The gradient that reaches the softmax's input, at each width, scaled and not, on one draw
    per width of Q, K, V and dO (every entry standard normal): a typical row's largest weight
    and gradient (the medians over rows: a mean would be carried by the few rows that are not
    one-hot) and the share of rows that get almost none."""
    backend = record.run.backend
    rng = np.random.default_rng(seed)
    t = VANISHING_TOKENS
    table: list[dict[str, Any]] = []
    for d_k in VANISHING_WIDTHS:
        widths = (d_k, d_k, VANISHING_VALUE_WIDTH, VANISHING_VALUE_WIDTH)
        drawn = [rng.standard_normal((t, width)) for width in widths]
        q, k, v, d_out = (backend.asarray(x) for x in drawn)
        for use_scale in (False, True):
            g = grad.attention_backward(q, k, v, d_out, use_scale=use_scale)
            a, d_z = _host(record, g.weights), _host(record, g.d_logits)
            logits = _host(record, mech.scores(q, k)) / (math.sqrt(d_k) if use_scale else 1.0)
            norms = np.linalg.norm(d_z, axis=-1)  # (t,) each row's gradient
            table.append(
                {
                    "dk": d_k,
                    "scaled": "÷ √d_k" if use_scale else "not scaled",
                    "logit_std": float(np.std(logits)),
                    "largest_weight": float(np.median(np.max(a, axis=-1))),
                    "row_gradient": float(np.median(norms)),
                    "stalled": float(np.mean(norms < STALLED)),
                }
            )
    record.add("vanishing", table, kind="records", grid=Grid(context={"tokens": t}))
    plain = [row for row in table if row["scaled"] == "not scaled"]
    divided = [row for row in table if row["scaled"] != "not scaled"]
    low, high = (f(row["row_gradient"] for row in divided) for f in (min, max))
    return (
        record.note(
            "vanishing",
            narrow=plain[0]["row_gradient"],
            wide=plain[-1]["row_gradient"],
            ratio=plain[0]["row_gradient"] / plain[-1]["row_gradient"],
            stalled=plain[-1]["stalled"],
            top=plain[-1]["largest_weight"],
            low=low,
            high=high,
        ),
    )


def _labelled_inputs(
    run: LessonRun,
    queries: tuple[str, ...],
    keys: tuple[str, ...],
    d_out: np.ndarray,
    source: str,
) -> tuple[InputValue, ...]:
    descriptions = {spec.name: spec.description for spec in CARD.inputs}
    described = {
        "given": descriptions["dO"],
        "drawn": f"{descriptions['dO']} (drawn)",
        "ones": f"{descriptions['dO']}: all ones (L = Σ O)",
    }
    upstream = InputValue("dO", d_out, row_labels=queries, description=described[source])
    if "X" not in run.inputs:
        return (*scaled.labelled_inputs(run, queries, keys), upstream)
    weights, defaulted = selfattn.projection_weights(run.inputs)
    x = InputValue("X", run.inputs["X"], row_labels=queries, description=descriptions["X"])
    projections = tuple(
        InputValue(
            name,
            weights[name],
            description=(
                "weights (identity: not given)" if name in defaulted else descriptions[name]
            ),
        )
        for name in WEIGHT_NAMES
    )
    return (x, *projections, upstream)


# --- the claims: each note's words checked against the steps it describes ---------------------


def _tolerance(walkthrough: Walkthrough, terms: int) -> float:
    return 8 * max(terms, 1) * EPSILON.get(walkthrough.dtype, 2.0**-7)


def _step_value(walkthrough: Walkthrough, key: str) -> np.ndarray | None:
    try:
        return np.asarray(walkthrough.step(key), dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return None


def jacobian_diagonal(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The named key's entry on the Jacobian's diagonal is w (1 − w) of its weight in row 1,
    the largest of the diagonal, and the Jacobian is diag(a) − a aᵀ of row 1's weights."""
    jacobian, weights = _step_value(walkthrough, "jacobian"), _step_value(walkthrough, "weights")
    if jacobian is None or weights is None:
        return False
    a = weights[0]
    tolerance = _tolerance(walkthrough, a.size)
    expected = np.diag(a) - np.outer(a, a)
    top = int(np.argmax(np.diag(jacobian)))
    return bool(
        np.allclose(jacobian, expected, rtol=0, atol=tolerance)
        and abs(values["weight"] - a[top]) <= tolerance
        and abs(values["slope"] - jacobian[top, top]) <= tolerance
    )


def d_from_output(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """rowsum(dO ∘ O) equals the D shown, within the gap stated and the dtype's rounding."""
    d = _step_value(walkthrough, "row_dot")
    d_out = {item.name: item.value for item in walkthrough.inputs}.get("dO")
    if d is None or d_out is None:
        return False
    output = np.asarray(walkthrough.step("output"), dtype=np.float64)
    other = np.sum(np.asarray(d_out, dtype=np.float64) * output, axis=-1, keepdims=True)
    gap = float(np.max(np.abs(other - d)))
    scale = 1.0 + float(np.max(np.abs(other)))
    return abs(gap - values["gap"]) <= _tolerance(walkthrough, output.shape[-1]) * scale


def rows_sum_to_zero(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every row of dZ sums to 0 up to rounding in the run's dtype."""
    d_z = _step_value(walkthrough, "d_logits")
    if d_z is None or not np.isfinite(d_z).all():
        return False
    scale = 1.0 + float(np.max(np.abs(d_z)))
    return float(values["drift"]) <= _tolerance(walkthrough, d_z.shape[-1]) * scale


def masked_zero(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The count of masked entries (above the diagonal) whose dZ is exactly 0, as stated, and
    every one of them."""
    d_z = _step_value(walkthrough, "d_logits")
    if d_z is None:
        return False
    hidden = np.triu(np.ones(d_z.shape, dtype=bool), k=1)
    zeros = int(np.count_nonzero(d_z[hidden] == 0.0))
    return values["zeros"] == zeros == values["masked"] == int(np.count_nonzero(hidden))


def tiled_equal(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The largest difference stated is the check table's, and within the dtype's rounding of
    sums of n terms (scaled by the largest gradient)."""
    table = walkthrough.step("tiled_check")
    gap = max(row["largest_difference"] for row in table)
    largest = max(
        float(np.max(np.abs(np.asarray(walkthrough.step(key), dtype=np.float64))))
        for key in ("d_q", "d_k", "d_v")
    )
    n = int(np.shape(walkthrough.step("weights"))[-1])
    return values["gap"] == gap <= _tolerance(walkthrough, n) * (1.0 + largest)


def tiled_memory(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The counts stated are the table's: the plain row, and the tiled rows added up."""
    table = walkthrough.step("tiled_memory")
    plain = sum(row["numbers"] for row in table if row["backward"] == "plain")
    tiled = sum(row["numbers"] for row in table if row["backward"] == "tiled")
    return (values["plain"], values["tiled"]) == (plain, tiled)


def vanishes(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """As the table shows: unscaled, a typical row's gradient at the widest d_k is several
    times smaller than at the narrowest (the ratio stated, at least 4), and its largest weight
    near 1 (0.9 or more); scaled, every width's within the range stated, which varies less than
    the unscaled fall."""
    table = walkthrough.step("vanishing")
    plain = [row for row in table if row["scaled"] == "not scaled"]
    divided = [row for row in table if row["scaled"] != "not scaled"]
    gradients = [row["row_gradient"] for row in divided]
    if plain[-1]["row_gradient"] <= 0 or min(gradients) <= 0:
        return False
    ratio = plain[0]["row_gradient"] / plain[-1]["row_gradient"]
    return (
        values["narrow"] == plain[0]["row_gradient"]
        and values["wide"] == plain[-1]["row_gradient"]
        and values["ratio"] == ratio >= 4
        and values["stalled"] == plain[-1]["stalled"]
        and values["top"] == plain[-1]["largest_weight"] >= 0.9
        and (values["low"], values["high"]) == (min(gradients), max(gradients))
        and max(gradients) / min(gradients) < ratio
    )


SIZES = (*scaled.SIZES, "logits", "first")
TEXTS = Texts(
    steps={
        **dict.fromkeys(("Q", "K", "V"), SIZES),  # with tokens X
        **dict.fromkeys(("scores", "scaled", "mask", "masked", "weights", "lse", "output"), SIZES),
        **dict.fromkeys(("d_v", "d_weights", "jacobian", "row_dot"), SIZES),
        **dict.fromkeys(("d_logits", "d_logits_scaled", "d_scores", "d_q", "d_k"), SIZES),
        # --block: FlashAttention-2's backward in tiles
        "tile": (*SIZES, "block", "rows", "cols"),
        "tiles": (*SIZES, "block", "rows", "cols", "tiles", "skipped"),
        "tiles_skipping": (*SIZES, "block", "rows", "cols", "tiles", "skipped"),
        **dict.fromkeys(("tiled_check", "tiled_memory"), (*SIZES, "block", "rows", "cols")),
        **dict.fromkeys(("d_w_q", "d_w_k", "d_w_v", "d_x"), SIZES),  # with tokens X
        "vanishing": ("tokens",),
    },
    notes={
        "no_scale": (),
        "jacobian_diagonal": ("name", "weight", "slope"),
        "d_from_output": ("gap",),
        "rows_sum_to_zero": ("drift",),
        "masked_zero": ("zeros", "masked"),
        "tiled_equal": ("gap",),
        "tiled_memory": ("plain", "tiled"),
        "vanishing": ("narrow", "wide", "ratio", "stalled", "top", "low", "high"),
    },
    claims={
        "jacobian_diagonal": jacobian_diagonal,
        "d_from_output": d_from_output,
        "rows_sum_to_zero": rows_sum_to_zero,
        "masked_zero": masked_zero,
        "tiled_equal": tiled_equal,
        "tiled_memory": tiled_memory,
        "vanishing": vanishes,
    },
    general=("no_scale",),
)

LESSON = Lesson(
    card=CARD,
    labels=("queries", "keys", "tokens"),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
)
