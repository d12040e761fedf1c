"""attn learn induction: an induction head forms in a two-layer attention-only Transformer.

Both models (two attention layers, and one, the control) start from weights drawn from the seed
and train on the same batches of repeated sequences (attn_cli/learn/induction_data.py) with the
same budget (attn_cli/learn/induction_model.py). Then, on held-out sequences only:

* accuracy on the predictable tokens (the second half, whose next token is the one that followed
  the current token's first occurrence);
* each head's previous-token score and prefix-matching score, beside an even spread's;
* every head's attention on one held-out sequence, before and after training.

A sentence about what a head does is a claim (attn_cli/lessonfiles/texts.py): printed only when
its score shows it. ``--weights FILE`` evaluates a file written by ``--save`` instead of training.
Declared at the bottom (``TASK``, attn_cli.learn.common.Task): :func:`run` and :func:`program`
(the text of attn_cli.learn.induction_program).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.core import weights_file
from attn_cli.core.errors import UserError, param
from attn_cli.course.recorder import Grid
from attn_cli.learn import common
from attn_cli.learn import induction_data as data
from attn_cli.learn import induction_model as model
from attn_cli.learn.common import Task, curve_quantities
from attn_cli.learn.figures import induction_figure
from attn_cli.lessonfiles.texts import Texts

if TYPE_CHECKING:
    from attn_cli.core.model import Note, Walkthrough
    from attn_cli.course.recorder import StepRecorder
    from attn_cli.learn.common import LearnOptions, Progress

NAME = "induction"

STEPS = 400  # the default budget: seconds on a laptop CPU
HIDDEN = 32  # d_model
MAX_LEN = 10  # the longest repeated half: sequences of 8 … 20 tokens
HELD_OUT = 256  # sequences evaluated on, never trained on
MIN_STEPS = 20  # fewer steps than this say nothing (the error "too small to say anything")
# The widest model trained or read (--hidden, --weights): as attn learn translate's, wider trains
# for long on a CPU without showing more (and --hidden 100000 would ask for 75 GiB).
MOST_HIDDEN = 256
# Training steps a second, one model at --hidden 32 (HIDDEN), an evaluation every 50 steps
# included: 13 ms a step measured on a loaded 2-core machine (26 ms at --hidden 128: the
# matrices are small, so the time grows as the square root of the width). The work guard
# (attn_cli.core.work) refuses a budget that would take over three minutes, saying how long.
STEPS_PER_SECOND = 75.0
WRITTEN_BY = "attn learn induction --save FILE"
THREADS = 1  # tiny matrices: 2 threads were no faster, and far slower on a loaded machine

# What the claims need to see: a head that puts at least half its weight on the token after the
# current token's first occurrence is an induction head; at least 40 % on the previous token, a
# previous-token head (2.4 times an even spread's share at the default lengths; the note says
# the ratio it measured).
INDUCTION_MIN = 0.5
PREVIOUS_MIN = 0.4
# The circuit is said to be the heads named only when zeroing them costs the model at least this
# much of its held-out accuracy (ablation: the note states the drops it measured).
ABLATION_MIN = 0.2

# The two models: their key in the saved file and the steps, and their name as printed.
MODELS = {"two": (2, "two layers"), "one": (1, "one layer (control)")}

HEAD_NAMES = ("model", "layer", "head", "previous", "prefix")
TEXTS = Texts(
    steps={
        "task": ("vocab", "min_len", "max_len", "held_out", "shown"),
        "models": ("steps", "batch", "learning_rate"),
        "loaded": ("file", "seed", "steps"),
        "curve": ("every",),
        "accuracy": ("guess",),
        "scores": ("previous_chance", "prefix_chance", "held_out"),
        "ablation": ("accuracy", "held_out"),
        "ablation_each": ("accuracy", "held_out"),
        "head_before": HEAD_NAMES,
        "head_after": HEAD_NAMES,
    },
    notes={
        "previous_token": ("score", "chance", "times"),
        "induction_head": ("score", "chance", "times"),
        "induction_formed": ("layer", "head", "score", "chance", "accuracy"),
        "not_formed": ("score", "steps", "threshold"),
        "circuit": (
            "previous_head",
            "induction_heads",
            "accuracy",
            "without_previous",
            "without_other",
            "other_head",
            "without_induction",
        ),
        "control": ("score", "accuracy", "two_accuracy"),
    },
    claims={
        "previous_token": lambda w, v: _measured(w, "previous_token", v["score"], PREVIOUS_MIN),
        "induction_head": lambda w, v: _measured(w, "prefix_matching", v["score"], INDUCTION_MIN),
        "induction_formed": lambda w, v: _formed(w, v),
        "not_formed": lambda w, v: _best_last(w, "two") == v["score"] < INDUCTION_MIN,
        "circuit": lambda w, v: _circuit(w, v),
        "control": lambda w, v: _control(w, v),
    },
)


# --- the claims, checked against the scores the walkthrough carries (meta["models"]) -----------


def _scores(walkthrough: Walkthrough, model: str, kind: str) -> np.ndarray:
    """(layers, heads): a model's held-out scores of one kind, "previous_token" or
    "prefix_matching"."""
    return np.asarray(walkthrough.meta["models"][model][kind])


def _measured(walkthrough: Walkthrough, kind: str, score: float, least: float) -> bool:
    """``score`` is one of the walkthrough's head scores of ``kind``, and at least ``least``."""
    found = any(np.any(_scores(walkthrough, m, kind) == score) for m in walkthrough.meta["models"])
    return bool(found) and score >= least


def _best_last(walkthrough: Walkthrough, model: str) -> float:
    """The best prefix-matching score of ``model``'s last layer."""
    return float(_scores(walkthrough, model, "prefix_matching")[-1].max())


def _formed(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Head ``head`` of layer ``layer`` (the last) scores ``score``, at least INDUCTION_MIN,
    and ``accuracy`` is the two-layer model's."""
    prefix = _scores(walkthrough, "two", "prefix_matching")
    layer, head = values["layer"], values["head"]
    return (
        layer == len(prefix)
        and float(prefix[layer - 1][head - 1]) == values["score"] >= INDUCTION_MIN
        and walkthrough.meta["models"]["two"]["accuracy"] == values["accuracy"]
    )


def _ablated(walkthrough: Walkthrough) -> dict[str, float]:
    """The ablation table: what was zeroed -> the held-out accuracy without it."""
    rows = walkthrough.step("ablation")
    return {row["zeroed"]: row["accuracy"] for row in rows} if isinstance(rows, list) else {}


def _circuit(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """In a model of two layers, layer 1's best previous-token head (``previous_head``, at least
    PREVIOUS_MIN) and the last layer's induction heads (``induction_heads``, every head of
    prefix-matching at least INDUCTION_MIN) are the circuit by ablation: zeroing the first costs
    at least ABLATION_MIN of the accuracy and more than zeroing ``other_head``, the layer-1 head
    whose loss costs most of the others, and zeroing the induction heads together costs at least
    ABLATION_MIN; every figure the ablation table's."""
    previous = _scores(walkthrough, "two", "previous_token")
    prefix = _scores(walkthrough, "two", "prefix_matching")
    if len(prefix) != 2:
        return False
    head = int(np.argmax(previous[0])) + 1
    inductions = [int(h) + 1 for h in np.flatnonzero(prefix[-1] >= INDUCTION_MIN)]
    ablated = _ablated(walkthrough)
    accuracy = walkthrough.meta["models"]["two"]["accuracy"]
    others = {h: ablated.get(_zeroed(1, [h])) for h in range(1, len(previous[0]) + 1) if h != head}
    if not inductions or None in others.values():
        return False
    other = min(others, key=lambda h: others[h])  # type: ignore[arg-type, return-value]
    without = (
        ablated.get(_zeroed(1, [head])),
        ablated.get(_zeroed(2, inductions)),
    )
    return (
        values["previous_head"] == head
        and previous[0].max() >= PREVIOUS_MIN
        and values["induction_heads"] == _heads_text(inductions)
        and values["accuracy"] == accuracy
        and values["without_previous"] == without[0]
        and values["without_induction"] == without[1]
        and values["other_head"] == other
        and values["without_other"] == others[other]
        and without[0] is not None
        and without[1] is not None
        and accuracy - without[0] >= ABLATION_MIN
        and without[0] < others[other]  # type: ignore[operator]
        and accuracy - without[1] >= ABLATION_MIN
    )


def _zeroed(layer: int, heads: Sequence[int]) -> str:
    """The ablation table's name of what was zeroed."""
    named = "head" if len(heads) == 1 else "heads"
    return f"layer {layer}, {named} {_heads_text(heads)}"


def _heads_text(heads: Sequence[int]) -> str:
    """1 / 1 and 2 / 1, 2 and 3."""
    words = [str(h) for h in heads]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _control(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The one-layer model's best prefix-matching is ``score``, under INDUCTION_MIN, and its
    accuracy ``accuracy`` is below the two-layer model's ``two_accuracy``."""
    models = walkthrough.meta["models"]
    return (
        _best_last(walkthrough, "one") == values["score"] < INDUCTION_MIN
        and models["one"]["accuracy"] == values["accuracy"]
        and models["two"]["accuracy"] == values["two_accuracy"]
        and values["accuracy"] < values["two_accuracy"]
    )


# --- options ---------------------------------------------------------------------------------


def _checked(options: LearnOptions) -> LearnOptions:
    """The options with the task's defaults, or a UserError for sizes that do not fit."""
    resolved = common.sized(
        options, NAME, steps=STEPS, hidden=HIDDEN, max_len=MAX_LEN, min_steps=MIN_STEPS
    )
    if resolved.weights is not None:
        return resolved
    steps, hidden, max_len = resolved.sizes()
    if hidden > MOST_HIDDEN:
        raise UserError(
            f"{param('hidden', format(hidden, ','))}: at most {MOST_HIDDEN} (wider trains for long on a CPU without "
            "showing more)."
        )
    check_steps(steps, hidden)
    if hidden % model.HEADS or hidden < 2 * model.HEADS:
        raise UserError(
            f"{param('hidden', hidden)}: the width is split between {model.HEADS} heads per layer, so it "
            f"must be an even number, at least {2 * model.HEADS}; e.g. {param('hidden', HIDDEN)}."
        )
    if not data.MIN_LEN < max_len <= data.VOCAB:
        raise UserError(
            f"{param('max_len', max_len)}: the repeated half is {data.MIN_LEN} … N distinct tokens of "
            f"{data.VOCAB}, so that its length varies: N from {data.MIN_LEN + 1} to {data.VOCAB}; "
            f"e.g. {param('max_len', MAX_LEN)}."
        )
    return resolved


def check_steps(steps: int, hidden: int) -> None:
    """Refuse a budget that would train for more than a few minutes here, with how long."""
    from attn_cli.core.work import check_work

    per_step = len(MODELS) * math.sqrt(max(hidden, HIDDEN) / HIDDEN)  # HIDDEN-wide model steps
    check_work(
        steps * per_step,
        STEPS_PER_SECOND,
        f"{param('steps', f'{steps:,}')} trains {len(MODELS)} models of width {hidden}",
        f"fewer {param('steps')} (the default is {STEPS})",
    )


# --- run -------------------------------------------------------------------------------------


_Model = common.TrainedModel[model.Shape]


@dataclass(frozen=True)
class Trained:
    """Both models, trained here or read from a --save file, with the seed and steps they were
    trained with and that seed's sequences (a loaded model's: the held-out ones alone)."""

    seed: int
    steps: int
    split: data.Split
    models: list[_Model]


def run(options: LearnOptions, progress: Progress | None = None) -> Walkthrough:
    """Train both models from the seed (or load them), evaluate on held-out sequences, and
    return the walkthrough; with --save, write the trained weights."""
    import torch

    options = _checked(options)
    loaded = None if options.weights is None else _load(options.weights)  # refused at once
    common.seeded(options.seed)  # torch's deterministic set-up: a second of imports
    torch.set_num_threads(THREADS)
    trained = _train(options, progress) if loaded is None else loaded
    record = common.recorder(NAME, TEXTS, _options_used(trained))
    if options.save is not None:
        weights_file.save_arrays(
            options.save, common.saved_arrays(trained.seed, trained.steps, trained.models)
        )
    return _walkthrough(record, trained, options.weights)


def _train(options: LearnOptions, progress: Progress | None) -> Trained:
    """Both models from weights drawn from the seed, trained on the seed's batches."""
    steps, hidden, max_len = options.sizes()
    split = data.split(options.seed, steps, model.BATCH, HELD_OUT, max_len)
    models = []
    for key, (layers, name) in MODELS.items():
        shape = model.Shape(layers, hidden, max_len)
        start = model.initial_weights(shape, options.seed)
        report = common.reporter(progress, name, steps)
        trained = model.train(shape, start, split, report)
        models.append(_Model(key, name, shape, start, trained.weights, trained.curve))
    return Trained(options.seed, steps, split, models)


def _options_used(trained: Trained) -> dict[str, Any]:
    """The options the models were trained with, as the walkthrough states them
    (meta["options"]); of a loaded model, those its file holds (not the batch size or the
    learning rate)."""
    shape = trained.models[0].shape
    used: dict[str, Any] = {
        "seed": trained.seed,
        "steps": trained.steps,
        "hidden": shape.d_model,
        "max_len": shape.max_len,
    }
    if trained.split.batches:
        used.update(batch=model.BATCH, learning_rate=model.LEARNING_RATE)
    return used


def _load(path: Path) -> Trained:
    """The seed, steps and models of a file written by --save, with the seed's held-out
    sequences; a UserError when it is not one. Every array is judged from its header before
    it is read: a model at most MOST_HIDDEN wide, as training makes."""
    flag = f"{param('weights', path)}:"

    def read(shapes: Mapping[str, tuple[int | None, ...]]) -> dict[str, np.ndarray]:
        return weights_file.load_arrays(
            path, shapes, "weights", largest=MOST_HIDDEN, written_by=WRITTEN_BY
        )

    counts = weights_file.load_wholes(path, ("seed", "steps"), "weights", written_by=WRITTEN_BY)
    seed, steps = counts["seed"], counts["steps"]
    found = read({"two.embed": (data.VOCAB, None)})
    d_model = found["two.embed"].shape[1]
    position = read({"two.position": (None, d_model)})
    positions = position["two.position"].shape[0]
    max_len = positions // 2
    if positions % 2 or not data.MIN_LEN < max_len <= data.VOCAB or d_model % model.HEADS:
        raise UserError(f"{flag} its sizes are not those of {WRITTEN_BY}.")
    models = []
    for key, (layers, name) in MODELS.items():
        shape = model.Shape(layers, d_model, max_len)
        arrays = read({f"{key}.{n}": s for n, s in shape.shapes().items()})
        weights = {n: arrays[f"{key}.{n}"] for n in shape.shapes()}
        common.check_float32(weights, key, flag, WRITTEN_BY)
        models.append(_Model(key, name, shape, None, weights, []))
    split = data.split(seed, 0, model.BATCH, HELD_OUT, max_len)
    return Trained(seed, steps, split, models)


def _overflow_note(after: Mapping[str, model.Evaluation]) -> tuple[Note, ...]:
    """common.overflow_note for the models whose attention on the held-out sequences is not
    finite."""
    broken = [
        MODELS[key][1]
        for key, evaluation in after.items()
        if not all(np.isfinite(pattern).all() for pattern in evaluation.patterns)
    ]
    return common.overflow_note(broken, "sequences", NAME)


# --- the walkthrough -------------------------------------------------------------------------

# A layer's heads' scores on the held-out sequences: (previous-token, prefix-matching), each
# (heads,).
LayerScores = tuple[np.ndarray, np.ndarray]


def _walkthrough(record: StepRecorder, trained: Trained, weights: Path | None) -> Walkthrough:
    """The task, the models (and how they trained), accuracy, every head's scores, every head's
    attention on one held-out sequence before and after training, and what formed."""
    held = trained.split.held_out
    chances = {
        "previous": data.chance(held.lengths, "previous"),
        "prefix": data.chance(held.lengths, "prefix"),
    }
    _record_task(record, trained)
    _record_models(record, trained, weights)
    after = {m.key: model.evaluate(m.after, m.shape, held) for m in trained.models}
    scores = {m.key: _layer_scores(after[m.key], held) for m in trained.models}
    accuracy = [{"model": m.name, "accuracy": after[m.key].accuracy} for m in trained.models]
    guessed = Grid(context={"guess": 1 / data.VOCAB})
    record.add("accuracy", accuracy, kind="records", grid=guessed)
    _record_scores(record, trained.models, scores, chances, len(held))
    ablated = _record_ablation(record, trained.models[0], held, scores["two"], after["two"])
    shown = _shown(held)
    before = {m.key: model.evaluate(m.before, m.shape, held) for m in trained.models if m.before}
    for when in ("before", "after"):
        for m in trained.models:
            evaluation = after[m.key] if when == "after" else before.get(m.key)
            _record_heads(record, m, when, held, shown, evaluation, chances)
    found = common.reproducibility()
    notes = (
        *_overflow_note(after),
        *_formed_notes(record, trained.steps, scores, after, chances, ablated),
        common.reproducibility_note(found),
    )
    meta = _meta(trained, weights, shown, chances, after, scores)
    meta["reproducibility"] = found
    meta["figure"] = _figure_data(trained, held, after, before)
    output = [
        {
            "model": m.name,
            "accuracy": after[m.key].accuracy,
            "prefix_matching": float(scores[m.key][-1][1].max()),
        }
        for m in trained.models
    ]
    walkthrough = record.walkthrough(output, notes=notes, meta=meta)
    return replace(walkthrough, example_description=f"held-out sequence {data.text(held, shown)}")


def _record_ablation(
    record: StepRecorder,
    two: _Model,
    held: data.Sequences,
    scores: list[LayerScores],
    evaluation: model.Evaluation,
) -> dict[str, float]:
    """The two-layer model's held-out accuracy with each head zeroed in turn (its output taken
    out of the stream, every other weight kept), and with the last layer's induction heads
    zeroed together: which heads the accuracy needs. Returns the table as zeroed -> accuracy."""
    heads = two.shape.heads
    zeroed: list[tuple[int, list[int]]] = [
        (layer, [head]) for layer in range(1, two.shape.layers + 1) for head in range(1, heads + 1)
    ]
    inductions = [int(h) + 1 for h in np.flatnonzero(scores[-1][1] >= INDUCTION_MIN)]
    if len(inductions) > 1:
        zeroed.append((two.shape.layers, inductions))
    rows: list[dict[str, Any]] = []
    for layer, which in zeroed:
        ablated = model.without_heads(two.after, two.shape, [(layer, h) for h in which])
        accuracy = model.evaluate(ablated, two.shape, held).accuracy
        rows.append(
            {
                "zeroed": _zeroed(layer, which),
                "accuracy": accuracy,
                "drop": evaluation.accuracy - accuracy,
            }
        )
    context = {"accuracy": evaluation.accuracy, "held_out": len(held)}
    # The row of the induction heads together is there only where the last layer has two.
    text = "ablation" if len(inductions) > 1 else "ablation_each"
    record.add("ablation", rows, kind="records", grid=Grid(context=context), text=text)
    return {row["zeroed"]: row["accuracy"] for row in rows}


def _figure_data(
    trained: Trained,
    held: data.Sequences,
    after: Mapping[str, model.Evaluation],
    before: Mapping[str, model.Evaluation],
) -> dict[str, Any]:
    """What --plot draws (meta["figure"]): every head's weights, before and after training, on
    the first held-out sequence of the longest length (its induction stripe the longest), with
    each head's held-out scores and each model's accuracy."""
    index = int(np.argmax(held.lengths))
    n = 2 * int(held.lengths[index])
    heads: dict[str, dict[str, Any]] = {}
    for when, evaluations in (("before", before), ("after", after)):
        for m in trained.models:
            evaluation = evaluations.get(m.key)
            if evaluation is None:
                continue
            layers = zip(evaluation.patterns, _layer_scores(evaluation, held), strict=True)
            for layer, (pattern, (previous, prefix)) in enumerate(layers, start=1):
                for head in range(m.shape.heads):
                    heads[f"{m.key}.layer{layer}.head{head + 1}.{when}"] = {
                        "model": m.name,
                        "when": when,
                        "layer": layer,
                        "head": head + 1,
                        "previous": float(previous[head]),
                        "prefix": float(prefix[head]),
                        "weights": pattern[index, head, :n, :n],
                    }
    tokens = [f"{letter}{i + 1}" for i, letter in enumerate(data.show(held.tokens[index, :n]))]
    return {
        "tokens": tokens,
        "heads": heads,
        "accuracy": {m.name: after[m.key].accuracy for m in trained.models},
    }


def _record_task(record: StepRecorder, trained: Trained) -> None:
    """A few sequences of the task: training ones, or held-out ones for a loaded model."""
    split, held = trained.split, trained.split.held_out
    example = split.batches[0] if split.batches else held
    trained_count = sum(len(batch) for batch in split.batches)
    shown_from = (
        f"a few of the {trained_count} training sequences"
        if split.batches
        else "the first held-out sequences (a model loaded from its saved file: its training "
        "sequences are not in the file)"
    )
    rows = [
        {"sequence": data.text(example, i), "repeat": int(example.lengths[i])}
        for i in range(min(4, len(example)))
    ]
    context = {
        "vocab": data.VOCAB,
        "min_len": data.MIN_LEN,
        "max_len": trained.models[0].shape.max_len,
        "held_out": len(held),
        "shown": shown_from,
    }
    record.add("task", rows, kind="records", grid=Grid(context=context))


def _record_models(record: StepRecorder, trained: Trained, weights: Path | None) -> None:
    """The two models' sizes; how they trained, or the file they were read from."""
    table = [
        {
            "model": m.name,
            "layers": m.shape.layers,
            "heads_per_layer": m.shape.heads,
            "d_model": m.shape.d_model,
            "parameters": m.shape.parameters(),
        }
        for m in trained.models
    ]
    if weights is not None:
        read = {"file": str(weights), "seed": trained.seed, "steps": trained.steps}
        record.add("loaded", table, kind="records", grid=Grid(context=read))
        return
    budget = {"steps": trained.steps, "batch": model.BATCH, "learning_rate": model.LEARNING_RATE}
    record.add("models", table, kind="records", grid=Grid(context=budget))
    # every EVALUATE_EVERY steps and at the last; a shorter run is measured at its last alone
    every = Grid(context={"every": min(model.EVALUATE_EVERY, trained.steps)})
    record.add(
        "curve",
        _curve(trained.models),
        kind="records",
        grid=every,
        quantities=curve_quantities(m.key for m in trained.models),
    )


def _layer_scores(evaluation: model.Evaluation, held: data.Sequences) -> list[LayerScores]:
    """Each layer's heads' scores, layer 1 first."""
    lengths = held.lengths
    return [
        (data.previous_token(pattern, lengths), data.prefix_matching(pattern, lengths))
        for pattern in evaluation.patterns
    ]


def _record_scores(
    record: StepRecorder,
    models: list[_Model],
    scores: Mapping[str, list[LayerScores]],
    chances: Mapping[str, float],
    held_out: int,
) -> None:
    """Every head's previous-token and prefix-matching scores, and an even spread's."""
    rows: list[dict[str, Any]] = [
        {
            "model": m.name,
            "layer": layer,
            "head": head + 1,
            "previous_token": float(previous[head]),
            "prefix_matching": float(prefix[head]),
        }
        for m in models
        for layer, (previous, prefix) in enumerate(scores[m.key], start=1)
        for head in range(m.shape.heads)
    ]
    rows.append(
        {
            "model": "even spread (chance)",
            "layer": "",
            "head": "",
            "previous_token": chances["previous"],
            "prefix_matching": chances["prefix"],
        }
    )
    context = {
        "previous_chance": chances["previous"],
        "prefix_chance": chances["prefix"],
        "held_out": held_out,
    }
    record.add("scores", rows, kind="records", grid=Grid(context=context))


def _record_heads(
    record: StepRecorder,
    m: _Model,
    when: str,
    held: data.Sequences,
    shown: int,
    evaluation: model.Evaluation | None,
    chances: Mapping[str, float],
) -> None:
    """Each head's attention on held-out sequence ``shown``, ``when`` "before" or "after"
    training (``evaluation``: the model's then; None for a loaded model's before, which it has
    not); what a head does noted after training only."""
    if evaluation is None:  # a loaded model has no before
        return
    tokens = held.tokens[shown, : 2 * int(held.lengths[shown])]
    labels = tuple(f"{letter}{i + 1}" for i, letter in enumerate(data.show(tokens)))
    n = len(labels)
    layers = zip(evaluation.patterns, _layer_scores(evaluation, held), strict=True)
    for layer, (pattern, (previous, prefix)) in enumerate(layers, start=1):
        for head in range(m.shape.heads):
            scored = {"previous": float(previous[head]), "prefix": float(prefix[head])}
            notes = _head_notes(record, **scored, chances=chances) if when == "after" else ()
            context = {"model": m.name, "layer": layer, "head": head + 1, **scored}
            record.add(
                f"{m.key}.layer{layer}.head{head + 1}.{when}",
                pattern[shown, head, :n, :n],
                kind="weights",
                grid=Grid(labels, labels, context),
                notes=notes,
                text=f"head_{when}",
                fit=True,
            )


def _shown(held: data.Sequences) -> int:
    """The held-out sequence whose heatmaps are shown: the first of the shortest length (8 tokens
    by default, so that a terminal shows every row and column)."""
    return int(np.argmin(held.lengths))


def _head_notes(
    record: StepRecorder, previous: float, prefix: float, chances: Mapping[str, float]
) -> tuple[Note, ...]:
    return (
        record.note(
            "previous_token",
            score=previous,
            chance=chances["previous"],
            times=previous / chances["previous"],
        ),
        record.note(
            "induction_head",
            score=prefix,
            chance=chances["prefix"],
            times=prefix / chances["prefix"],
        ),
    )


def _formed_notes(
    record: StepRecorder,
    steps: int,
    scores: Mapping[str, list[LayerScores]],
    after: Mapping[str, model.Evaluation],
    chances: Mapping[str, float],
    ablated: Mapping[str, float],
) -> tuple[Note, ...]:
    """What formed: an induction head in the two-layer model's last layer (its best head), or
    none; the circuit of a previous-token head and the induction heads, as the ablation shows
    it; and the control."""
    two = scores["two"]
    best = int(np.argmax(two[-1][1]))
    best_score = float(two[-1][1][best])
    head = int(np.argmax(two[0][0])) + 1
    inductions = [int(h) + 1 for h in np.flatnonzero(two[-1][1] >= INDUCTION_MIN)] or [best + 1]
    others = {h: ablated[_zeroed(1, [h])] for h in range(1, len(two[0][0]) + 1) if h != head}
    other = min(others, key=lambda h: others[h]) if others else head
    return (
        record.note(
            "induction_formed",
            layer=len(two),
            head=best + 1,
            score=best_score,
            chance=chances["prefix"],
            accuracy=after["two"].accuracy,
        ),
        record.note("not_formed", score=best_score, steps=steps, threshold=INDUCTION_MIN),
        record.note(
            "circuit",
            previous_head=head,
            induction_heads=_heads_text(inductions),
            accuracy=after["two"].accuracy,
            without_previous=ablated[_zeroed(1, [head])],
            without_other=others.get(other, -1.0),
            other_head=other,
            without_induction=ablated.get(_zeroed(len(two), inductions), -1.0),
        ),
        record.note(
            "control",
            score=float(scores["one"][0][1].max()),
            accuracy=after["one"].accuracy,
            two_accuracy=after["two"].accuracy,
        ),
    )


def _meta(
    trained: Trained,
    weights: Path | None,
    shown: int,
    chances: dict[str, float],
    after: Mapping[str, model.Evaluation],
    scores: Mapping[str, list[LayerScores]],
) -> dict[str, Any]:
    """What a machine reader needs beyond the steps (meta, JSON only): the sizes, the shown
    sequence, chance, and each model's accuracy, head scores and training curve."""
    held = trained.split.held_out
    two = trained.models[0]
    return {
        "task": NAME,
        "seed": trained.seed,
        "steps": trained.steps,
        "weights": None if weights is None else str(weights),
        "vocab": data.VOCAB,
        "min_len": data.MIN_LEN,
        "max_len": two.shape.max_len,
        "d_model": two.shape.d_model,
        "held_out": len(held),
        "shown_sequence": data.show(held.tokens[shown, : 2 * int(held.lengths[shown])]),
        "chance": chances,
        "models": {
            m.key: {
                "name": m.name,
                "layers": m.shape.layers,
                "parameters": m.shape.parameters(),
                "accuracy": after[m.key].accuracy,
                # (layers, heads): row l - 1 is layer l's heads
                "previous_token": np.array([s[0] for s in scores[m.key]]),
                "prefix_matching": np.array([s[1] for s in scores[m.key]]),
                "curve": {
                    name: [point[name] for point in m.curve]
                    for name in ("step", "loss", "accuracy")
                },
            }
            for m in trained.models
        },
    }


def _curve(models: list[_Model]) -> list[dict[str, Any]]:
    """The training curves side by side: step, then each model's loss and held-out accuracy."""
    rows: dict[int, dict[str, Any]] = {}
    for m in models:
        for point in m.curve:
            row = rows.setdefault(int(point["step"]), {"step": int(point["step"])})
            row[f"{m.key}_loss"] = point["loss"]
            row[f"{m.key}_accuracy"] = point["accuracy"]
    return [rows[step] for step in sorted(rows)]


# --- --code, and the declaration -------------------------------------------------------------


def program(options: LearnOptions) -> str:
    """The training program of --code, with the options written in."""
    from attn_cli.learn.induction_program import program_text

    resolved = options.resolved(steps=STEPS, hidden=HIDDEN, max_len=MAX_LEN)
    return program_text(
        seed=options.seed,
        steps=resolved.steps or STEPS,
        hidden=resolved.hidden or HIDDEN,
        max_len=resolved.max_len or MAX_LEN,
        held_out=HELD_OUT,
        threads=THREADS,
    )


TASK = Task(NAME, TEXTS, run, program, figure=induction_figure, reads_weights=True)
