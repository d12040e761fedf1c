"""The self-attention lesson: Q, K and V projected from one sequence, which attends to itself."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core.backend import EPSILON, Array
from attn_cli.core.errors import UserError, param
from attn_cli.core.matrices import parse_int_list
from attn_cli.core.model import InputValue, Note, Walkthrough
from attn_cli.course import dropout
from attn_cli.course.checks import is_whole, row_names
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder, on_an_example
from attn_cli.course.selfattn.card import CARD
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import selfattn as proj

# Each weight: its name, its parameter's keyword (for messages) and the letter it projects to.
_WEIGHTS = (("W_Q", "wq", "Q"), ("W_K", "wk", "K"), ("W_V", "wv", "V"))
# Matrices of n × n entries alive at once: scores, scaled, exp by hand, shifted, exp, weights.
_SCORE_MATRICES = 6


# Machine epsilon of each dtype: a permuted output that differs by a few of these is rounding.
def projection_weights(inputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[str]]:
    """W_Q, W_K, W_V as given, the d × d identity for each one not given (and their names)."""
    d = inputs["X"].shape[1]
    weights = {name: inputs[name] if name in inputs else np.eye(d) for name, _, _ in _WEIGHTS}
    return weights, [name for name, _, _ in _WEIGHTS if name not in inputs]


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    n, d = inputs["X"].shape
    for name, keyword, _ in _WEIGHTS:
        if name in inputs and inputs[name].shape[0] != d:
            raise UserError(
                f"{param(keyword)} has {inputs[name].shape[0]} rows but {param('x')} has {d} columns: X {name} "
                f"needs {name} to have d = {d} rows (one per column of X)."
            )
    weights, defaulted = projection_weights(inputs)
    d_q, d_k = weights["W_Q"].shape[1], weights["W_K"].shape[1]
    if d_q != d_k:
        hint = ""
        for name, keyword, _ in _WEIGHTS[:2]:
            if name in defaulted:
                other = d_k if name == "W_Q" else d_q
                hint = (
                    f"; {param(keyword)} was not given, so it is the {d} × {d} identity: give it as a "
                    f"{d} × {other} matrix"
                )
        raise UserError(
            f"W_Q has {d_q} columns but W_K has {d_k}: queries and keys must share d_k (each "
            f"score is a dot product q_i · k_j){hint}."
        )
    check_permutation(options.get("permute"), n)
    if dropout.probability(options.get("dropout")) is not None and options.get("permute"):
        raise UserError(
            f"{param('permute')} shows that reordering the tokens only reorders the output, which a random "
            f"dropout mask (drawn per position) would hide; leave out {param('dropout')} or {param('permute')}."
        )


def permutation(value: Any) -> Any:
    """--permute as the list it names: text from the command line ("2,0,1") parsed; a lesson
    file's list (or anything else, for check_permutation to refuse) as given."""
    return parse_int_list(value, param("permute")) if isinstance(value, str) else value


def check_permutation(value: Any, n: int) -> None:
    """A --permute value must list each position 0..n-1 exactly once."""
    order = permutation(value)
    if order is None:
        return
    hint = f"e.g. {','.join(str(i) for i in reversed(range(n)))}" if n <= 10 else "e.g. 1,0,2,…"
    if not isinstance(order, list | tuple) or not all(is_whole(i) for i in order):
        raise UserError(
            f"{param('permute')} must be whole numbers separated by commas, {hint} (in a lesson file, a "
            f"list: permute = [{', '.join(str(i) for i in reversed(range(min(n, 10))))}])."
        )
    if len(order) != n:
        raise UserError(
            f"{param('permute')} has {len(order)} entries but there are {n} tokens: give each position "
            f"0..{n - 1} once, {hint}."
        )
    for index in order:
        if not 0 <= index < n:
            raise UserError(
                f"{param('permute')}: {index} is not a position of the {n} tokens; positions count from "
                f"0 to {n - 1}, {hint}."
            )
    repeated = sorted({index for index in order if list(order).count(index) > 1})
    if repeated:
        raise UserError(
            f"{param('permute')} repeats {repeated[0]}: give each position 0..{n - 1} exactly once, {hint}."
        )


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """X (n × d), W_Q and W_K (d × d_k), W_V (d × d_v); d_k is d and d_v is d_k unless given."""
    n, d = sizes["n"], sizes["d"]
    d_k = sizes.get("dk") or d
    d_v = sizes.get("dv") or d_k
    return {"X": (n, d), "W_Q": (d, d_k), "W_K": (d, d_k), "W_V": (d, d_v)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    n, d = shapes["X"]
    d_k = shapes.get("W_Q", (d, d))[1]
    d_v = shapes.get("W_V", (d, d))[1]
    once = _SCORE_MATRICES * n * n + n * (2 * d_k + 2 * d_v)
    extra = dropout.dropout_bytes(options, n * n, itemsize)
    return once * (2 if options.get("permute") is not None else 1) * itemsize + extra


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    weights_given, defaulted = projection_weights(run.inputs)
    n, d = run.inputs["X"].shape
    x = backend.asarray(run.inputs["X"])
    wq, wk, wv = (backend.asarray(weights_given[name]) for name, _, _ in _WEIGHTS)
    d_k, d_v = wq.shape[1], wv.shape[1]
    use_scale = bool(run.options.get("scale", True))
    tokens = row_names(run, "tokens", n, "x", param("tokens"))
    context = {"n": n, "d": d, "dk": d_k, "dv": d_v, "sqrt_dk": math.sqrt(d_k)}
    record = StepRecorder(run)
    rows = Grid(tokens, context=context)
    grid = Grid(tokens, tokens, context)

    q = record.compute("Q", lambda: proj.project(x, wq), grid=rows)
    k = record.compute("K", lambda: proj.project(x, wk), grid=rows)
    same = np.array_equal(weights_given["W_K"], weights_given["W_V"])
    v = record.compute(
        "V",
        lambda: proj.project(x, wv),
        grid=rows,
        notes=(record.note("values_are_keys"),) if same else (),
    )
    scores = record.compute("scores", lambda: mech.scores(q, k), grid=grid)
    logits = scores
    if use_scale:
        logits = record.compute("scaled", lambda: mech.scale(scores, d_k), grid=grid)
    weights = record.softmax("weights", logits, grid=grid)
    p = dropout.probability(run.options.get("dropout"))
    used = weights if p is None else dropout.record_dropout(record, weights, p, grid)
    output = record.compute(
        "output", lambda: mech.weighted_sum(used, v), text=dropout.output_text(p), grid=rows
    )

    notes = _default_notes(record, defaulted, d)
    if n == 1:
        notes.append(record.note("one_token"))
    if not use_scale:
        notes.append(record.note("no_scale"))
    notes.extend(_symmetry_notes(record, record.shown("scores"), record.shown("weights"), tokens))
    order = permutation(run.options.get("permute"))
    if order is not None:
        notes.extend(_permuted(record, run, list(order), tokens, output, (wq, wk, wv), context))
    inputs = (
        InputValue("X", run.inputs["X"], row_labels=tokens, description=CARD.inputs[0].description),
        *(
            InputValue(spec.name, weights_given[spec.name], description=spec.description)
            for spec in CARD.inputs[1:]
        ),
    )
    return record.walkthrough(output, inputs=inputs, notes=tuple(notes), meta=dropout.meta(run, p))


def _default_notes(record: StepRecorder, defaulted: list[str], d: int) -> list[Note]:
    if not defaulted:
        return []
    results = " = ".join(letter for name, _, letter in _WEIGHTS if name in defaulted)
    if len(defaulted) == 1:
        return [record.note("identity_one", name=defaulted[0], d=d, results=results)]
    return [
        record.note(
            "identity_several",
            names=", ".join(defaulted[:-1]),
            last=defaulted[-1],
            d=d,
            results=results,
        )
    ]


def _symmetry_notes(
    record: StepRecorder, s: np.ndarray, a: np.ndarray, tokens: tuple[str, ...]
) -> list[Note]:
    """With Q = K the scores ``s`` are symmetric, but the weights ``a`` are not: say so with
    numbers (both as recorded, on the host)."""
    if len(tokens) < 2 or not np.array_equal(s, s.T):
        return []
    gap = np.abs(a - a.T)
    i, j = (int(index) for index in np.unravel_index(np.argmax(gap), gap.shape))
    if gap[i, j] == 0:
        return [record.note("both_symmetric")]
    pair = {
        "row": tokens[i],
        "col": tokens[j],
        "weight": float(a[i, j]),
        "mirrored": float(a[j, i]),
    }
    # The slide's erratum is recorded too; its claim keeps it for an example with one projection.
    return [record.note("weights_asymmetric", **pair), record.note("slide_symmetric", **pair)]


def _same(walkthrough: Walkthrough, *keys: str) -> bool:
    """Whether the steps ``keys`` hold the same matrix."""
    first, *others = (np.asarray(walkthrough.step(key)) for key in keys)
    return all(first.shape == other.shape and np.array_equal(first, other) for other in others)


def values_are_keys(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``values_are_keys``: V = K."""
    return _same(walkthrough, "K", "V")


def weights_not_symmetric(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``slide_symmetric``: a lesson file's example (a slide) whose queries, keys and
    values are the same matrix, and whose weights are not symmetric."""
    if not on_an_example(walkthrough, values) or not _same(walkthrough, "Q", "K", "V"):
        return False
    weights = np.asarray(walkthrough.step("weights"), dtype=np.float64)
    return bool(weights.ndim == 2 and not np.array_equal(weights, weights.T))


def _permuted(
    record: StepRecorder,
    run: LessonRun,
    order: list[int],
    tokens: tuple[str, ...],
    output: Array,
    weights: tuple[Array, Array, Array],
    context: dict[str, Any],
) -> list[Note]:
    """Run the same attention on the reordered tokens and measure against the reordered output."""
    backend = run.backend
    moved = tuple(tokens[i] for i in order)
    shown = order if len(order) <= 12 else [*order[:8], "…"]
    context = {**context, "order": ",".join(str(i) for i in shown)}
    x_moved = run.inputs["X"][order]  # row p is the token that was at position order[p]
    record.add(
        "permuted.X",
        x_moved,
        grid=Grid(moved, context=context),
    )
    use_scale = bool(run.options.get("scale", True))
    result, seconds = run.timed(
        lambda: proj.self_attention(backend.asarray(x_moved), *weights, use_scale=use_scale)
    )
    grid = Grid(moved, moved, context)
    record.add(
        "permuted.weights", result.attention.weights, kind="weights", row_sums=True, grid=grid
    )
    record.add(
        "permuted.output",
        result.attention.output,
        grid=Grid(moved, context=context),
        seconds=seconds,
    )
    expected = record.to_numpy(output)[order]
    difference = float(np.max(np.abs(record.to_numpy(result.attention.output) - expected)))
    tolerance = rounding_tolerance(backend.dtype, expected)
    if difference == 0:
        verdict = record.note("permuted_exact")
    elif difference <= tolerance:
        verdict = record.note("permuted_rounding", difference=difference)
    else:
        verdict = record.note("permuted_wrong", difference=difference)
    record.add(
        "permuted.difference",
        difference,
        kind="scalar",
        grid=Grid(context=context),
        notes=(verdict,),
    )
    if len(tokens) <= 8:
        return [
            record.note(
                "word_order_tokens",
                order=context["order"],
                moved=" ".join(moved),
                tokens=" ".join(tokens),
            )
        ]
    return [record.note("word_order", order=context["order"])]


# What every step's text reads: the sizes; --permute's steps add the order.
SIZES = ("n", "d", "dk", "dv", "sqrt_dk")
PERMUTED = (*SIZES, "order")


def rounding_tolerance(dtype: str, output: np.ndarray) -> float:
    """How far two orders of the same sums may differ: 64 · ε of the dtype · max(1, max |out|)."""
    return 64 * EPSILON[dtype] * max(1.0, float(np.max(np.abs(output))))


def one_token(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``one_token``: one token, whose one weight is exactly 1."""
    weights = np.asarray(walkthrough.step("weights"), dtype=np.float64)
    return bool(weights.shape == (1, 1) and weights[0, 0] == 1.0)


def _symmetric(walkthrough: Walkthrough, key: str) -> bool:
    matrix = np.asarray(walkthrough.step(key), dtype=np.float64)
    return bool(matrix.ndim == 2 and np.array_equal(matrix, matrix.T))


def both_symmetric(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``both_symmetric``: the scores and the weights equal their transposes."""
    return _symmetric(walkthrough, "scores") and _symmetric(walkthrough, "weights")


def weights_asymmetric(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``weights_asymmetric``: the scores equal their transpose, the weights do not,
    and the pair quoted is one where they differ."""
    return (
        _symmetric(walkthrough, "scores")
        and not _symmetric(walkthrough, "weights")
        and values["weight"] != values["mirrored"]
    )


def _permuted_gap(walkthrough: Walkthrough) -> float:
    return float(np.max(np.abs(np.asarray(walkthrough.step("permuted.difference")))))


def permuted_exact(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``permuted_exact``: every permuted output row equals its token's, bit for bit."""
    return _permuted_gap(walkthrough) == 0.0


def permuted_rounding(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``permuted_rounding``: the rows differ, by no more than rounding does
    (:func:`rounding_tolerance`, the bound the lesson chose the note by)."""
    output = np.asarray(walkthrough.output, dtype=np.float64)
    gap = _permuted_gap(walkthrough)
    return 0.0 < gap <= rounding_tolerance(walkthrough.dtype, output)


TEXTS = Texts(
    steps={
        **dict.fromkeys(("Q", "K", "V", "scores", "scaled", "weights", "output"), SIZES),
        "dropout": (*SIZES, *dropout.STEP_NAMES),
        "output_dropout": SIZES,
        **dict.fromkeys(
            ("permuted.X", "permuted.weights", "permuted.output", "permuted.difference"), PERMUTED
        ),
    },
    notes={
        "identity_one": ("name", "d", "results"),
        "identity_several": ("names", "last", "d", "results"),
        "one_token": (),
        "no_scale": (),
        "both_symmetric": (),
        "weights_asymmetric": ("row", "col", "weight", "mirrored"),
        "values_are_keys": (),
        "slide_symmetric": ("row", "col", "weight", "mirrored"),
        "permuted_exact": (),
        "permuted_rounding": ("difference",),
        "permuted_wrong": ("difference",),
        "word_order_tokens": ("order", "moved", "tokens"),
        "word_order": ("order",),
        **dropout.NOTES,
    },
    claims={
        "one_token": one_token,
        "both_symmetric": both_symmetric,
        "weights_asymmetric": weights_asymmetric,
        "permuted_exact": permuted_exact,
        "permuted_rounding": permuted_rounding,
        **dropout.CLAIMS,
        "values_are_keys": values_are_keys,
        "slide_symmetric": weights_not_symmetric,
    },
    measured=(
        "permuted_wrong",
        *dropout.MEASURED,
    ),
    general=(
        "identity_one",
        "identity_several",
        "no_scale",
        "word_order_tokens",
        "word_order",
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
    # Projections may be given on top of a lecture example's X (to try other weights on it).
    example_overrides=frozenset(("W_Q", "W_K", "W_V")),
    texts=TEXTS,
)
