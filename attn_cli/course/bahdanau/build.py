"""The Bahdanau lesson: additive attention for one decoder step, optionally beside Luong's."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.backend import Array
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import InputValue, Note, Walkthrough
from attn_cli.course import dropout, padding
from attn_cli.course.bahdanau import steps as bahdanau_steps
from attn_cli.course.bahdanau.card import CARD
from attn_cli.course.checks import row_names
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as attn
from attn_cli.mechanisms import bahdanau as mech

# all_scores: None (not set) means on exactly when W_a is given, since only Luong's general
# score (--all-scores) uses W_a.
# From |u| = 2 on, tanh(u) is within 4% of ±1 and its slope 1 − tanh² is below 0.071.
_SATURATION = 2.0
_DECODER = ("s_t",)
_CONTEXT = ("c_t",)


def compares(inputs: dict[str, Any], options: dict[str, Any]) -> bool:
    """Whether Luong's scores are added: --all-scores as given, else whether W_a is given."""
    compare = options.get("all_scores")
    if compare is not None and not isinstance(compare, bool):
        raise UserError(f"options.all_scores must be true or false, not {compare!r}.")
    return "W_a" in inputs if compare is None else compare


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    steps = bahdanau_steps.validate(inputs, options)  # --steps T and the decoder's inputs
    s, h, w1, w2, v = (inputs[name] for name in ("s_t", "H", "W1", "W2", "v"))
    d_s, d_h = s.shape[0], h.shape[1]
    if w1.shape[1] != d_h:
        raise UserError(
            f"{param('w1')} has {w1.shape[1]} columns but each encoder state (row of {param('h')}) has {d_h} "
            f"entries: W1 h_i needs W1 to have d_h = {d_h} columns."
        )
    if w2.shape[1] != d_s:
        raise UserError(
            f"{param('w2')} has {w2.shape[1]} columns but {param('s')} has {d_s} entries: W2 s_t needs W2 to have "
            f"d_s = {d_s} columns."
        )
    if w1.shape[0] != w2.shape[0]:
        raise UserError(
            f"{param('w1')} has {w1.shape[0]} rows but {param('w2')} has {w2.shape[0]}: W1 h_i and W2 s_t are "
            "added, so both must have d_a rows (the attention width)."
        )
    d_a = w1.shape[0]
    if v.shape[0] != d_a:
        raise UserError(
            f"{param('v')} has {v.shape[0]} entries but {param('w1')} and {param('w2')} have {d_a} rows: v must have "
            f"d_a = {d_a} entries (the score is vᵀ tanh(W1 h_i + W2 s_t))."
        )
    if "W_a" in inputs and inputs["W_a"].shape != (d_s, d_h):
        rows, cols = inputs["W_a"].shape
        raise UserError(
            f"{param('wa')} is {rows} × {cols} but the general score s_tᵀ W_a h_i needs W_a to be "
            f"d_s × d_h = {d_s} × {d_h} (entries of {param('s')} × entries of a row of {param('h')})."
        )
    if "values" in inputs and inputs["values"].shape[0] != h.shape[0]:
        rows, n = inputs["values"].shape[0], h.shape[0]
        raise UserError(
            f"{param('values')} has {rows} rows but {param('h')} has {n}: give one value row per encoder state "
            f"(n = {n}), as AdditiveAttention(queries, keys, values) pairs value i with key i."
        )
    dropout.probability(options.get("dropout"))
    _valid_length(options, h.shape[0])
    if steps is not None and options.get("valid_len") is not None:
        raise UserError(
            f"{param('valid_len')} is for one decoder step: with {param('steps')} the fixed-vector decoder's "
            "c = h_n would have to become the last valid state; leave out one of the two."
        )
    # Over decoder steps --all-scores is not run (a note says so): no common width needed.
    if steps is None and compares(inputs, options) and d_s != d_h:
        asked = options.get("all_scores")
        cause = (
            param("all_scores", True) if asked else f"{param('wa')} turns on {param('all_scores')}"
        )
        fix = " and ".join(
            param(keyword) for keyword, on in (("all_scores", asked), ("wa", "W_a" in inputs)) if on
        )
        raise UserError(
            f"{cause}: {param('s')} has {d_s} entries but each row of {param('h')} has {d_h}: Luong's dot score "
            f"s_t · h_i needs them to have the same width; leave out {fix}."
        )


def _valid_length(options: Mapping[str, Any], n: int) -> int | None:
    """--valid-len L (one decoder state, so one length), 1 ≤ L ≤ n; None when not given."""
    lengths = padding.valid_lengths(options.get("valid_len"), 1, n)
    return None if lengths is None else lengths[0]


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """n encoder states of width d, a decoder state of width d, d_a = d unless given."""
    n, d = sizes["n"], sizes["d"]
    d_a = sizes.get("da") or d
    return {"s_t": (d,), "H": (n, d), "W1": (d_a, d), "W2": (d_a, d), "v": (d_a,)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    (n, d_h), d_a = shapes["H"], shapes["W1"][0]
    steps = bahdanau_steps.steps_of(options)
    if steps is not None:
        return bahdanau_steps.estimate_bytes(shapes, steps, itemsize)
    # W1h, sum and tanh are n × d_a; scores, softmax parts and weights are a few n-vectors.
    d_v = shapes["values"][1] if "values" in shapes else d_h
    compare = 2 * (4 * n + d_v) if compares(shapes, options) else 0
    extra = dropout.dropout_bytes(options, n, itemsize)
    return (3 * n * d_a + 8 * n + d_a + d_v + compare) * itemsize + extra  # 8 n: e^s by hand too


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    s, h, w1, w2, v = (backend.asarray(run.inputs[name]) for name in ("s_t", "H", "W1", "W2", "v"))
    n, d_h = h.shape
    d_s, d_a = s.shape[0], w1.shape[0]
    given_values = "values" in run.inputs
    values = backend.asarray(run.inputs["values"]) if given_values else h  # (n, d_v)
    states = row_names(run, "states", n, "h", param("tokens"))
    steps = bahdanau_steps.steps_of(run.options)
    if steps is not None:
        # A note says --compare is not run, unless the example itself compares.
        compare, example = compares(run.inputs, run.options), run.example
        asked = compare and not (example and compares(example.inputs, example.options))
        return bahdanau_steps.build(run, steps, states, compare, asked)
    context = {"n": n, "d_h": d_h, "d_s": d_s, "d_a": d_a, "d_v": values.shape[1]}
    record = StepRecorder(run)
    by_state = Grid(states, context=context)
    grid = Grid(_DECODER, states, context)

    w1h = record.compute("W1h", lambda: mech.project_states(h, w1), grid=by_state)
    w2s = record.compute(
        "W2s",
        lambda: mech.project_decoder(s, w2),
        grid=Grid(_DECODER, context=context),
    )
    summed = record.compute("sum", lambda: mech.combine(w1h, w2s), grid=by_state)
    activated, seconds = run.timed(lambda: mech.squash(summed))
    record.add(
        "tanh",
        activated,
        seconds=seconds,
        notes=_saturation_notes(record, record.to_numpy(summed)),
        grid=by_state,
    )
    scores = record.compute("scores", lambda: mech.additive_scores(activated, v), grid=grid)
    length = _valid_length(run.options, n)
    pad = None
    if length is not None:
        pad = mech.padding_mask(scores, length)  # (n,) 0, then −∞ from position L on
        padded = {"length": length, "padded": n - length, "first": states[min(length, n - 1)]}
        note = record.note("padded", **padded) if length < n else record.note("no_padding", n=n)
        scores = record.compute(
            "masked",
            lambda: scores + pad,
            grid=Grid(_DECODER, states, {**context, "length": length}),
            notes=(note,),
        )
    weights = record.softmax("weights", scores, grid=grid)
    p = dropout.probability(run.options.get("dropout"))
    used = weights if p is None else dropout.record_dropout(record, weights, p, grid)
    output = record.compute(
        "context",
        lambda: attn.weighted_sum(used, values),
        grid=Grid(_CONTEXT, context=context),
        text=dropout.output_text(p, "context_values" if given_values else "context"),
    )

    notes: list[Note] = []
    if n == 1:
        row = f"v_1, the row of {run.door.words(param('values'))}," if given_values else "h_1"
        before = "" if p is None else " before dropout"
        notes.append(record.note("single_state", row=row, before_dropout=before))
    shown = [
        InputValue(
            "s_t", run.inputs["s_t"], row_labels=_DECODER, description=CARD.inputs[0].description
        ),
        InputValue("H", run.inputs["H"], row_labels=states, description=CARD.inputs[1].description),
        *(
            InputValue(spec.name, run.inputs[spec.name], description=spec.description)
            for spec in CARD.inputs[2:5]
        ),
    ]
    if given_values:
        shown.append(
            InputValue(
                "values",
                run.inputs["values"],
                row_labels=states,
                description=CARD.inputs[6].description,
            )
        )
    compare = compares(run.inputs, run.options)
    if compare:
        wa = run.inputs.get("W_a")
        if wa is None:
            wa = np.eye(d_s, d_h)
            notes.append(record.note("wa_identity", d_s=d_s, d_h=d_h))
        shown.append(InputValue("W_a", wa, description=CARD.inputs[5].description))
        # The scores are compared as scores: with the weights and context before dropout.
        before = output if p is None else attn.weighted_sum(weights, values)
        if p is not None:
            notes.append(record.note("compare_before_dropout"))
        additive = _Scored("additive", scores, weights, before)
        compared = _compare(
            record, run, additive, s, h, values, backend.asarray(wa), states, context, pad
        )
        notes.extend(compared)
        if given_values:
            notes.append(record.note("compare_values"))
    return record.walkthrough(
        output,
        inputs=tuple(shown),
        notes=tuple(notes),
        # all_scores as resolved from W_a; steps (None: this one step) only when given
        meta={"options": {**_one_step(run.options), "all_scores": compare}, **dropout.meta(run, p)},
    )


def _one_step(options: dict[str, Any]) -> dict[str, Any]:
    """The options of one decoder step as they were before --steps: without steps = None."""
    return {key: value for key, value in options.items() if key != "steps" or value is not None}


@dataclass(frozen=True)
class _Scored:
    """One score form's results, for the side-by-side tables."""

    name: str
    scores: Array  # (n,)
    weights: Array  # (n,)
    context: Array  # (d_h,)


def _luong(
    record: StepRecorder,
    name: str,
    score: Callable[[], Array],
    values: Array,
    states: tuple[str, ...],
    context: dict[str, Any],
) -> _Scored:
    """Record one of Luong's score forms: scores, weights and context."""
    grid = Grid(_DECODER, states, context)
    scores = record.compute(f"{name}.scores", score, grid=grid)
    weights = record.compute(
        f"{name}.weights", lambda: attn.softmax(scores), kind="weights", row_sums=True, grid=grid
    )
    output = record.compute(
        f"{name}.context",
        lambda: attn.weighted_sum(weights, values),
        grid=Grid(_CONTEXT, context=context),
    )
    return _Scored(name, scores, weights, output)


def _compare(
    record: StepRecorder,
    run: LessonRun,
    additive: _Scored,
    s: Array,
    h: Array,
    values: Array,
    wa: Array,
    states: tuple[str, ...],
    context: dict[str, Any],
    pad: Array | None,
) -> list[Note]:
    """Luong's dot and general scores for the same s_t and h_i (with --valid-len, the same
    padding mask added), then the three side by side."""

    def padded(score: Callable[[], Array]) -> Callable[[], Array]:
        return score if pad is None else lambda: score() + pad

    dot = padded(lambda: mech.dot_scores(s, h))
    general = padded(lambda: mech.general_scores(s, h, wa))
    forms = (
        additive,
        _luong(record, "dot", dot, values, states, context),
        _luong(record, "general", general, values, states, context),
    )
    values = {
        form.name: [record.to_numpy(x) for x in (form.scores, form.weights, form.context)]
        for form in forms
    }
    table = []
    for i, state in enumerate(states):
        row: dict[str, Any] = {"state": state}
        for name, (scores, weights, _) in values.items():
            row[f"{name}_e"] = float(scores[i])
            row[f"{name}_alpha"] = float(weights[i])
        table.append(row)
    record.add("compare.table", table, kind="records", grid=Grid(context=context))
    record.add(
        "compare.contexts",
        np.stack([values[name][2] for name in values]),
        grid=Grid(tuple(values), context=context),
    )
    record.add("compare.cost", _costs(context), kind="records", grid=Grid(context=context))
    if len(states) == 1:
        return []
    favourites = {name: states[int(np.argmax(weights))] for name, (_, weights, _) in values.items()}
    if len(set(favourites.values())) == 1:
        return [record.note("scores_agree", state=next(iter(favourites.values())))]
    picks = ", ".join(f"{name} → {state}" for name, state in favourites.items())
    return [record.note("scores_disagree", picks=picks)]


def _costs(context: dict[str, Any]) -> list[dict[str, Any]]:
    """Parameters and work of one decoder step for each score, at these sizes."""
    n, d_h, d_s, d_a = (context[key] for key in ("n", "d_h", "d_s", "d_a"))
    return [
        {
            "score": "additive",
            "formula": "vᵀ tanh(W1 hᵢ + W2 sₜ)",
            "parameters": d_a * (d_h + d_s + 1),
            "multiply_adds": n * d_a * d_h + d_a * d_s + n * d_a,
            "tanh": n * d_a,
        },
        {
            "score": "dot",
            "formula": "sₜ · hᵢ",
            "parameters": 0,
            "multiply_adds": n * d_h,
            "tanh": 0,
        },
        {
            "score": "general",
            "formula": "sₜᵀ Wₐ hᵢ",
            "parameters": d_s * d_h,
            "multiply_adds": d_s * d_h + n * d_h,
            "tanh": 0,
        },
    ]


def _saturation_notes(record: StepRecorder, summed: np.ndarray) -> tuple[Note, ...]:
    """Say how many entries of U sit where tanh is flat (little gradient passes there)."""
    flat = int(np.sum(np.abs(summed) >= _SATURATION))
    if not flat:
        return ()
    note = record.note(
        "saturated",
        flat=flat,
        entries=int(summed.size),
        bound=_SATURATION,
        gap=1 - math.tanh(_SATURATION),  # how far tanh is from ±1 there
        slope=1 - math.tanh(_SATURATION) ** 2,
    )
    return (note,)


def has_saturated_entries(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``saturated``: ``flat`` entries of U (the sum step) have |U| ≥ ``bound``."""
    summed = np.asarray(walkthrough.step("sum"), dtype=np.float64)
    flat, bound = values.get("flat"), values.get("bound")
    if not isinstance(flat, int) or not isinstance(bound, float) or flat < 1:
        return False
    return int(np.sum(np.abs(summed) >= bound)) == flat


def padding_has_no_weight(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``padded``: the encoder states from position ``length`` on (``padded`` of them,
    the first named ``first``) have −∞ scores and weight exactly 0."""
    masked = np.asarray(walkthrough.step("masked"), dtype=np.float64).reshape(-1)
    weights = np.asarray(walkthrough.step("weights"), dtype=np.float64).reshape(-1)
    length, padded = values.get("length"), values.get("padded")
    if not isinstance(length, int) or not isinstance(padded, int) or padded < 1:
        return False
    labels = walkthrough.find("masked").col_labels or ()
    return (
        len(masked) - length == padded
        and len(labels) > length
        and labels[length] == values.get("first")
        and bool(np.all(masked[length:] == -np.inf))
        and bool(np.all(weights[length:] == 0.0))
    )


# What every step's text reads: the sizes.
SIZES = ("n", "d_h", "d_s", "d_a", "d_v")


def one_state(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``single_state``: the softmax has one entry, and its weight is exactly 1; said
    without "before dropout", the context shown is the row it names (the values' or h_1)."""
    weights = np.asarray(walkthrough.step("weights"), dtype=np.float64)
    if not (weights.size == 1 and np.all(weights == 1.0)):
        return False
    if values.get("before_dropout"):
        return True
    inputs = {item.name: item.value for item in walkthrough.inputs}
    row = inputs["values"] if "values" in inputs else inputs["H"]
    context = np.asarray(walkthrough.step("context"), dtype=np.float64)
    return bool(np.array_equal(context.ravel(), np.asarray(row, dtype=np.float64).ravel()))


def _favourites(walkthrough: Walkthrough) -> list[int] | None:
    """The encoder state each of the three scores weights most (None without --compare)."""
    keys = ("weights", "dot.weights", "general.weights")
    if not all(any(step.key == key for step in walkthrough.steps) for key in keys):
        return None
    return [int(np.argmax(np.asarray(walkthrough.step(key)))) for key in keys]


def scores_agree(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``scores_agree``: additive, dot and general scores weight one state most."""
    picks = _favourites(walkthrough)
    return picks is not None and len(set(picks)) == 1


def scores_disagree(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``scores_disagree``: the three scores do not weight the same state most."""
    picks = _favourites(walkthrough)
    return picks is not None and len(set(picks)) > 1


TEXTS = Texts(
    steps={
        **dict.fromkeys(("W1h", "W2s", "sum", "tanh", "scores"), SIZES),
        "masked": (*SIZES, "length"),  # --valid-len L
        "weights": SIZES,
        # The context: of H, or of --values; with --dropout, of the dropped weights.
        **dict.fromkeys(("context", "context_values"), SIZES),
        "dropout": (*SIZES, *dropout.STEP_NAMES),
        **dict.fromkeys(("context_dropout", "context_values_dropout"), SIZES),
        # --compare: Luong's dot and general scores, then the three side by side.
        **dict.fromkeys(("dot.scores", "dot.weights", "dot.context"), SIZES),
        **dict.fromkeys(("general.scores", "general.weights", "general.context"), SIZES),
        **dict.fromkeys(("compare.table", "compare.contexts", "compare.cost"), SIZES),
        # --steps T: the decoder over time, beside the fixed-vector encoder-decoder.
        **dict.fromkeys(bahdanau_steps.STEP_TEXTS, (*SIZES, *bahdanau_steps.STEP_NAMES)),
    },
    notes={
        "saturated": ("flat", "entries", "bound", "gap", "slope"),
        "single_state": ("row", "before_dropout"),
        "padded": ("length", "padded", "first"),
        "no_padding": ("n",),
        "wa_identity": ("d_s", "d_h"),
        "compare_before_dropout": (),
        "compare_values": (),
        "scores_agree": ("state",),
        "scores_disagree": ("picks",),
        # One decoder step: the dropped weights are one row, whose sums never differ.
        **{key: dropout.NOTES[key] for key in ("dropout_none", "dropout_sums_equal")},
        **bahdanau_steps.NOTES,
    },
    claims={
        "single_state": one_state,
        "scores_agree": scores_agree,
        "scores_disagree": scores_disagree,
        **dropout.CLAIMS,
        "saturated": has_saturated_entries,
        "padded": padding_has_no_weight,
        **bahdanau_steps.CLAIMS,
    },
    general=(
        "no_padding",
        "wa_identity",
        "compare_before_dropout",
        "compare_values",
        "drawn_decoder",
        "compare_one_step",
        *dropout.GENERAL,
    ),
)

LESSON = Lesson(
    card=CARD,
    labels=("states",),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    # --wa and --values may be given on top of a lecture example (another W_a with --all-scores;
    # values that differ from the keys H), and so may the decoder's own inputs (--steps T).
    example_overrides=frozenset(("W_a", "values", *bahdanau_steps.DECODER_INPUTS)),
    texts=TEXTS,
)
