"""The Bahdanau lesson over decoder steps (``attn bahdanau --steps T``): why attention was invented.

T steps over the same encoder states, as Bahdanau et al. write them: step t scores every h_i
against the previous decoder state s_{t−1}, takes its own context c_t, then a tanh RNN cell
updates s_t = tanh(W_s s_{t−1} + W_y y_{t−1} + W_c c_t). Beside it, the fixed-vector
encoder-decoder (Seq2Seq) runs the same cell with the same c = h_n at every step: the
bottleneck. --s is s_0, so step 1 scores exactly as the one-step lesson does.

The decoder's weights and previous outputs not given are drawn from --seed, each from its own
child of numpy's default_rng(seed), so giving one changes none of the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from attn_cli.core.backend import Array, namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import InputValue, Note, Part, Walkthrough
from attn_cli.course import dropout
from attn_cli.course.bahdanau.card import CARD
from attn_cli.course.checks import whole_at_least
from attn_cli.course.lesson import LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import attention as attn
from attn_cli.mechanisms import bahdanau as mech

# The decoder's own inputs, in the order they are drawn (each from its own child stream).
DECODER_INPUTS = ("W_s", "W_y", "W_c", "Y")
# Two contexts closer than this (relative to the largest entry) are the same vector here; a
# weight this close to its row's largest ties with it.
_SAME = 1e-12
# The contexts of at most this many steps are compared pair by pair (for the notes).
_PAIRED = 2000


def steps_of(options: Mapping[str, Any]) -> int | None:
    """--steps T: None (one decoder step, the lesson as it was) or a whole number ≥ 1."""
    steps = options.get("steps")
    if steps is None:
        return None
    return whole_at_least(steps, param("steps"), 1, "decoder steps")


def validate(inputs: Mapping[str, np.ndarray], options: Mapping[str, Any]) -> int | None:
    """The decoder's inputs and options; T, or None without --steps."""
    steps = steps_of(options)
    given = [name for name in DECODER_INPUTS if name in inputs]
    if steps is None:
        if given:
            flags = ", ".join(CARD.param(name) for name in given)
            raise UserError(
                f"{flags}: the decoder's inputs are read only over decoder steps; add {param('steps', 'T')} "
                f"(e.g. {param('steps', 3)}), or leave them out."
            )
        return None
    if "values" in inputs:
        raise UserError(
            f"{param('values')} with {param('steps')}: the decoder over time averages the encoder states "
            f"themselves (c_t = Σ α_t,i h_i, beside the fixed c = h_n); leave out {param('values')}."
        )
    if dropout.probability(options.get("dropout")) is not None:
        raise UserError(
            f"{param('dropout')} with {param('steps')}: dropout is shown on one decoder step's weights; leave out "
            f"{param('dropout')}, or {param('steps')}."
        )
    d_s, d_h = inputs["s_t"].shape[0], inputs["H"].shape[1]
    _check_shape(inputs, "W_s", (d_s, d_s), "W_s s_{t−1} needs W_s to be d_s × d_s")
    _check_shape(inputs, "W_c", (d_s, d_h), "W_c c_t needs W_c to be d_s × d_h")
    if "W_y" in inputs and inputs["W_y"].shape[0] != d_s:
        raise UserError(
            f"{param('wy')} has {inputs['W_y'].shape[0]} rows but {param('s')} has {d_s} entries: W_y y_{{t−1}} "
            f"is added to W_s s_{{t−1}}, so W_y needs d_s = {d_s} rows."
        )
    if "Y" in inputs and inputs["Y"].shape[0] != steps:
        raise UserError(
            f"{param('y')} has {inputs['Y'].shape[0]} rows but {param('steps')} is {steps}: give one previous "
            f"output per step (row t is y_{{t−1}}), or another {param('steps')}."
        )
    if "W_y" in inputs and "Y" in inputs and inputs["W_y"].shape[1] != inputs["Y"].shape[1]:
        d_y = inputs["Y"].shape[1]
        raise UserError(
            f"{param('wy')} has {inputs['W_y'].shape[1]} columns but each row of {param('y')} has {d_y} entries: "
            f"W_y y_{{t−1}} needs W_y to have d_y = {d_y} columns."
        )
    return steps


def _check_shape(
    inputs: Mapping[str, np.ndarray], name: str, shape: tuple[int, int], needs: str
) -> None:
    if name in inputs and inputs[name].shape != shape:
        rows, cols = inputs[name].shape
        raise UserError(
            f"{CARD.param(name)} is {rows} × {cols} but {needs} = {shape[0]} × {shape[1]} "
            f"(d_s: entries of {param('s')}; d_h: entries of a row of {param('h')})."
        )


def estimate_bytes(shapes: Mapping[str, tuple[int, ...]], steps: int, itemsize: int) -> int:
    """Per step: scores, weights, W2 s_{t−1}, a context, the cell's terms and states of both
    decoders; the drawn weights and previous outputs."""
    (n, d_h), d_s, d_a = shapes["H"], shapes["s_t"][0], shapes["W1"][0]
    d_y = shapes["Y"][1] if "Y" in shapes else shapes["W_y"][1] if "W_y" in shapes else d_s
    per_step = 4 * n + n * d_a + 2 * d_a + 3 * d_h + 10 * d_s + d_y
    weights = d_s * (d_s + d_y + d_h) + n * d_a
    return (steps * per_step + weights) * itemsize


def decoder_inputs(
    run: LessonRun, d_s: int, d_h: int, steps: int
) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """W_s, W_y, W_c and Y as given, the others drawn from --seed; and the names drawn.

    Weights have N(0, 1/columns) entries (each term of the update keeps its input's scale),
    the previous outputs N(0, 1). d_y is W_y's or Y's width when one is given, else d_s.
    """
    given = run.inputs
    d_y = given["W_y"].shape[1] if "W_y" in given else given["Y"].shape[1] if "Y" in given else d_s
    shapes = {"W_s": (d_s, d_s), "W_y": (d_s, d_y), "W_c": (d_s, d_h), "Y": (steps, d_y)}
    children = np.random.default_rng(run.seed).spawn(len(shapes))
    chosen: dict[str, np.ndarray] = {}
    drawn = []
    for (name, shape), rng in zip(shapes.items(), children, strict=True):
        if name in given:
            chosen[name] = given[name]
            continue
        scale = 1.0 if name == "Y" else 1.0 / math.sqrt(shape[1])
        chosen[name] = rng.standard_normal(shape) * scale
        drawn.append(name)
    return chosen, tuple(drawn)


@dataclass(frozen=True)
class _Params:
    """What every step reads: the encoder states, their projection, and the weights."""

    h: Array  # (n, d_h)
    w1h: Array  # (n, d_a), W1 h_i once for every step
    w2: Array  # (d_a, d_s)
    v: Array  # (d_a,)
    w_s: Array  # (d_s, d_s)
    w_y: Array  # (d_s, d_y)
    w_c: Array  # (d_s, d_h)


@dataclass(frozen=True)
class _Decoded:
    """One decoder step: W2 s_{t−1}, the scores, weights and context, and the cell's update."""

    projected: Array  # (d_a,)
    scores: Array  # (n,)
    weights: Array  # (n,)
    context: Array  # (d_h,)
    cell: mech.CellTerms


def _decode_step(
    run: LessonRun, seconds: dict[str, float], p: _Params, s_prev: Array, y_prev: Array
) -> _Decoded:
    """Step t: score with s_{t−1}, softmax, read c_t, update s_t; with --time each part timed,
    its time added to its step's."""

    def timed(key: str, compute: Callable[[], Any]) -> Any:
        value, took = run.timed(compute)
        if took is not None:
            seconds[key] = seconds.get(key, 0.0) + took
        return value

    def score() -> tuple[Array, Array]:
        projected = mech.project_decoder(s_prev, p.w2)  # (d_a,)
        return projected, mech.step_scores(p.w1h, projected, p.v)  # (n,)

    projected, scores = timed("decoder.scores", score)
    weights = timed("decoder.alignment", lambda: attn.softmax(scores))  # (n,)
    context = timed("decoder.contexts", lambda: attn.weighted_sum(weights, p.h))  # (d_h,)
    cell = timed("decoder.states", lambda: mech.cell(s_prev, y_prev, context, p.w_s, p.w_y, p.w_c))
    return _Decoded(projected, scores, weights, context, cell)


def build(
    run: LessonRun, steps: int, states: tuple[str, ...], compare: bool, asked: bool
) -> Walkthrough:
    """The walkthrough of T decoder steps beside the fixed-vector encoder-decoder; ``compare``
    as resolved (for the options shown), ``asked``: whether to say that --all-scores is not run."""
    backend = run.backend
    s0, h, w1, w2, v = (backend.asarray(run.inputs[name]) for name in ("s_t", "H", "W1", "W2", "v"))
    n, d_h = h.shape
    d_s, d_a = s0.shape[0], w1.shape[0]
    chosen, drawn = decoder_inputs(run, d_s, d_h, steps)
    w_s, w_y, w_c, ys = (backend.asarray(chosen[name]) for name in DECODER_INPUTS)
    at = tuple(f"t={t}" for t in range(1, steps + 1))
    context = {
        **{"n": n, "d_h": d_h, "d_s": d_s, "d_a": d_a, "d_v": d_h},
        **{"T": steps, "d_y": ys.shape[1], "last": states[-1]},
    }
    record = StepRecorder(run)
    w1h = record.compute(
        "W1h", lambda: mech.project_states(h, w1), grid=Grid(states, context=context)
    )

    params = _Params(h, w1h, w2, v, w_s, w_y, w_c)
    seconds: dict[str, float] = {}  # with --time: each decoder step's, summed over t
    decoded: list[_Decoded] = []
    s_prev = s0
    for t in range(steps):
        decoded.append(_decode_step(run, seconds, params, s_prev, ys[t]))
        s_prev = decoded[-1].cell.state
    xp = namespace_of(s0)

    def stacked(pick: Any) -> Array:
        return xp.stack([pick(step) for step in decoded])  # (T, ...)

    by_step = Grid(at, states, context)
    record.add(
        "decoder.scores",
        stacked(lambda step: step.scores),
        grid=by_step,
        parts=(
            Part(
                "W2 sₜ₋₁",
                stacked(lambda step: step.projected),
                cols=tuple(str(j) for j in range(1, d_a + 1)),
            ),
        ),
        seconds=seconds.get("decoder.scores"),
    )
    alignment = record.to_numpy(stacked(lambda step: step.weights))  # (T, n)
    record.add(
        "decoder.alignment",
        alignment,
        kind="weights",
        row_sums=True,
        grid=by_step,
        notes=_focus_notes(record, alignment, states),
        seconds=seconds.get("decoder.alignment"),
    )
    contexts = stacked(lambda step: step.context)  # (T, d_h)
    rows = Grid(at, context=context)
    record.add("decoder.contexts", contexts, grid=rows, seconds=seconds.get("decoder.contexts"))
    record.add(
        "decoder.states",
        stacked(lambda step: step.cell.state),
        grid=rows,
        parts=(
            Part("W_s sₜ₋₁", stacked(lambda step: step.cell.recurrent)),
            Part("W_y yₜ₋₁", stacked(lambda step: step.cell.previous)),
            Part("W_c cₜ", stacked(lambda step: step.cell.read)),
        ),
        seconds=seconds.get("decoder.states"),
    )

    last = h[n - 1]  # (d_h,) the fixed vector c = h_n
    repeated = [last] * steps
    fixed = record.compute("fixed.contexts", lambda: xp.stack(repeated), grid=rows)  # (T, d_h)
    said = _context_notes(record, record.to_numpy(contexts), at, n)  # needs both contexts
    record.steps[-1] = replace(record.steps[-1], notes=(*record.steps[-1].notes, *said))

    def fixed_decoder() -> Array:
        state, out = s0, []
        for t in range(steps):
            state = mech.cell(state, ys[t], fixed[t], w_s, w_y, w_c).state  # (d_s,)
            out.append(state)
        return xp.stack(out)  # (T, d_s)

    record.compute("fixed.states", fixed_decoder, grid=rows)
    record.add(
        "bottleneck",
        _bottleneck(alignment, record.to_numpy(contexts), record.to_numpy(last), at, states),
        kind="records",
        grid=Grid(context=context),
    )

    notes: list[Note] = []  # under the walkthrough
    if drawn:
        names = ", ".join("y" if name == "Y" else name for name in drawn)
        notes.append(record.note("drawn_decoder", names=names, seed=run.seed))
    if asked:
        notes.append(record.note("compare_one_step"))
    return record.walkthrough(
        contexts,
        inputs=_shown_inputs(run, chosen, drawn, states, at),
        notes=tuple(notes),
        meta={
            "options": {**run.options, "all_scores": compare},
            "decoder": {
                "steps": steps,
                "score_reads": "s_{t-1}",
                "fixed_context": f"h_n ({states[-1]})",
                "drawn": list(drawn),
                "seed": run.seed,
            },
        },
    )


def _shown_inputs(
    run: LessonRun,
    chosen: Mapping[str, np.ndarray],
    drawn: tuple[str, ...],
    states: tuple[str, ...],
    at: tuple[str, ...],
) -> tuple[InputValue, ...]:
    """s_0, the encoder states and weights, then the decoder's (drawn ones said so)."""
    described = {spec.name: spec.description for spec in CARD.inputs}
    shown = [
        InputValue("s_t", run.inputs["s_t"], row_labels=("s_0",), description="decoder state s_0"),
        InputValue("H", run.inputs["H"], row_labels=states, description=described["H"]),
        *(
            InputValue(name, run.inputs[name], description=described[name])
            for name in ("W1", "W2", "v")
        ),
    ]
    if "W_a" in run.inputs:
        shown.append(InputValue("W_a", run.inputs["W_a"], description=described["W_a"]))
    for name in DECODER_INPUTS:
        description = described[name] + (
            f" (drawn, random seed {run.seed})" if name in drawn else ""
        )
        labels = tuple(f"y_{t}" for t in range(len(at))) if name == "Y" else None
        shown.append(InputValue(name, chosen[name], row_labels=labels, description=description))
    return tuple(shown)


def _bottleneck(
    alignment: np.ndarray,
    contexts: np.ndarray,
    last: np.ndarray,
    at: tuple[str, ...],
    states: tuple[str, ...],
) -> list[dict[str, Any]]:
    """Per step: where attention looks, how far its context moved, and how far from c = h_n."""
    table = []
    for t, label in enumerate(at):
        row = alignment[t]
        top = float(np.max(row))
        favourites = [states[i] for i in range(len(row)) if row[i] >= top - _SAME]
        moved = None if t == 0 else _distance(contexts[t], contexts[t - 1])
        table.append(
            {
                "step": label,
                "attends_to": " = ".join(favourites),
                "top_weight": top,
                "attention_moves": moved,
                "fixed_moves": None if t == 0 else 0.0,
                "from_fixed": _distance(contexts[t], last),
            }
        )
    return table


# --- notes and their claims -------------------------------------------------------------------


def _favourites(alignment: np.ndarray) -> list[int] | None:
    """Each row's most-weighted state, or None when a row ties for it (or is not finite)."""
    if alignment.ndim != 2 or alignment.shape[1] < 2 or not np.all(np.isfinite(alignment)):
        return None
    picks = []
    for row in alignment:
        best = int(np.argmax(row))
        rest = np.delete(row, best)
        if not float(row[best]) > float(np.max(rest)) + _SAME:
            return None
        picks.append(best)
    return picks


def _focus_notes(
    record: StepRecorder, alignment: np.ndarray, states: tuple[str, ...]
) -> tuple[Note, ...]:
    """Whether the most-weighted state moves over the steps (two steps or more, no ties)."""
    picks = _favourites(alignment)
    if picks is None or len(picks) < 2:
        return ()
    if len(set(picks)) == 1:
        return (record.note("focus_stays", state=states[picks[0]], steps=len(picks)),)
    path = " → ".join(states[i] for i in picks)
    return (record.note("focus_moves", path=path),)


def _context_notes(
    record: StepRecorder, contexts: np.ndarray, at: tuple[str, ...], n: int
) -> tuple[Note, ...]:
    """One encoder state, or the closest two steps' contexts: the same vector, or not."""
    if n == 1:
        return (record.note("single_state_steps"),)
    pair = _closest(contexts)
    if pair is None:
        return ()
    a, b, gap = pair
    key = "contexts_repeat" if gap <= _tolerance(contexts) else "contexts_differ"
    return (record.note(key, steps=len(at), first=at[a], second=at[b], gap=gap),)


def _closest(contexts: np.ndarray) -> tuple[int, int, float] | None:
    """The two steps whose contexts are closest (Euclidean), and their distance; None for one
    step, more than _PAIRED, or numbers that are not finite."""
    count = contexts.shape[0] if contexts.ndim == 2 else 0
    if not 2 <= count <= _PAIRED or not np.all(np.isfinite(contexts)):
        return None
    best: tuple[int, int, float] | None = None
    for a in range(count - 1):
        gaps = np.linalg.norm(contexts[a + 1 :] - contexts[a], axis=-1)  # (T − a − 1,)
        b = int(np.argmin(gaps))
        if best is None or float(gaps[b]) < best[2]:
            best = (a, a + 1 + b, float(gaps[b]))
    if best is None:
        return None
    a, b, _ = best
    return a, b, _distance(contexts[a], contexts[b])  # as the claims measure it


def _distance(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.linalg.norm(x - y))


def _tolerance(contexts: np.ndarray) -> float:
    return _SAME * float(np.max(np.abs(contexts), initial=0.0))


def _contexts_and_steps(walkthrough: Walkthrough) -> tuple[np.ndarray, tuple[str, ...]]:
    step = walkthrough.find("decoder.contexts")
    return np.asarray(step.value, dtype=np.float64), tuple(step.row_labels or ())


def contexts_all_differ(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``contexts_differ``: no two steps' contexts are the same vector, the named two
    are the closest, and the fixed contexts are one vector repeated."""
    try:
        contexts, at = _contexts_and_steps(walkthrough)
        fixed = np.asarray(walkthrough.step("fixed.contexts"), dtype=np.float64)
        pair = _closest(contexts)
        a, b = at.index(values["first"]), at.index(values["second"])
    except (KeyError, ValueError, TypeError):
        return False
    if pair is None or not np.all(fixed == fixed[:1]):
        return False
    gap = _distance(contexts[a], contexts[b])
    return pair[2] > _tolerance(contexts) and gap <= pair[2] and len(at) == values.get("steps")


def contexts_repeat(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``contexts_repeat``: the named two steps' contexts are the same vector."""
    try:
        contexts, at = _contexts_and_steps(walkthrough)
        a, b = at.index(values["first"]), at.index(values["second"])
    except (KeyError, ValueError, TypeError):
        return False
    if not np.all(np.isfinite(contexts)):
        return False
    return _distance(contexts[a], contexts[b]) <= _tolerance(contexts)


def one_encoder_state(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``single_state_steps``: one encoder state, so every weight is 1 and every
    context is h_1 = h_n, the fixed vector."""
    try:
        alignment = np.asarray(walkthrough.step("decoder.alignment"), dtype=np.float64)
        contexts, _ = _contexts_and_steps(walkthrough)
        fixed = np.asarray(walkthrough.step("fixed.contexts"), dtype=np.float64)
    except (KeyError, ValueError, TypeError):
        return False
    return alignment.shape[-1] == 1 and bool(np.all(alignment == 1.0) and np.all(contexts == fixed))


def _picked(walkthrough: Walkthrough) -> tuple[list[str], int] | None:
    """The most-weighted state's name at each step (None on a tie), and the number of steps."""
    try:
        step = walkthrough.find("decoder.alignment")
    except KeyError:
        return None
    picks = _favourites(np.asarray(step.value, dtype=np.float64))
    names = step.col_labels or ()
    if picks is None or len(names) <= max(picks, default=0):
        return None
    return [names[i] for i in picks], len(picks)


def focus_moves(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``focus_moves``: the path is each step's most-weighted state, not all the same."""
    picked = _picked(walkthrough)
    if picked is None:
        return False
    names, _ = picked
    return len(set(names)) > 1 and " → ".join(names) == values.get("path")


def focus_stays(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``focus_stays``: every step (two or more) weighs the named state most."""
    picked = _picked(walkthrough)
    if picked is None:
        return False
    names, steps = picked
    return steps >= 2 and steps == values.get("steps") and set(names) == {values.get("state")}


# What every step text over decoder steps reads: the one-step sizes, T, d_y and h_n's name.
STEP_NAMES = ("T", "d_y", "last")
STEP_TEXTS = (
    "decoder.scores",
    "decoder.alignment",
    "decoder.contexts",
    "decoder.states",
    "fixed.contexts",
    "fixed.states",
    "bottleneck",
)
NOTES: dict[str, tuple[str, ...]] = {
    "focus_moves": ("path",),
    "focus_stays": ("state", "steps"),
    "contexts_differ": ("steps", "first", "second", "gap"),
    "contexts_repeat": ("steps", "first", "second", "gap"),
    "single_state_steps": (),
    "drawn_decoder": ("names", "seed"),
    "compare_one_step": (),
}
CLAIMS = {
    "focus_moves": focus_moves,
    "focus_stays": focus_stays,
    "contexts_differ": contexts_all_differ,
    "contexts_repeat": contexts_repeat,
    "single_state_steps": one_encoder_state,
}
