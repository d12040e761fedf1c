"""attn learn grammar: the lectures' opening heatmap, learned from data.

The lectures open on the self-attention map of "the cat sat on the soft red mat", where *soft*
and *red* attend to *mat* and *cat* to *sat*, patterns that "emerge from training". Here a
small encoder (attn_cli/learn/grammar_model.py) learns a generated language whose words take
endings that other words decide (attn_cli/learn/grammar_data.py: a determiner and an adjective
agree with their noun, a verb with its subject, a subject takes its case from its verb, a noun
from its preposition), asked for each word's ending with the endings hidden; beside it, trained
on the same batches, a control whose attention is frozen even. Then, on held-out sentences only:

* the accuracy of both, by the kind of dependency, and where another word of the sentence would
  decide the ending otherwise (where reading the right word is the whole task);
* the self-attention map of the lectures' sentence (or ``--sentence``) before and after
  training, words on both axes, beside the grammar's heads and the control's map;
* each layer's and head's score against the grammar's heads (the share of words whose largest
  weight is on their head, and the mean weight there).

``--weights FILE`` evaluates a file written by ``--save`` instead of training. Declared at the
bottom (``TASK``, attn_cli.learn.common.Task).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.core import weights_file
from attn_cli.core.errors import UserError, param
from attn_cli.course.recorder import Grid
from attn_cli.learn import common
from attn_cli.learn import grammar_data as data
from attn_cli.learn import grammar_model as model
from attn_cli.learn.common import Task
from attn_cli.learn.figures import grammar_figure
from attn_cli.lessonfiles.texts import Texts

if TYPE_CHECKING:
    from attn_cli.core.model import Note, Walkthrough
    from attn_cli.course.recorder import StepRecorder
    from attn_cli.learn.common import LearnOptions, Progress

NAME = "grammar"

STEPS = 600  # the default budget: a few seconds on a laptop CPU
HIDDEN = 32  # d_model
MAX_LEN = 12  # the longest sentence trained on
HELD_OUT_PER_LENGTH = 50  # sentences of each length evaluated on, never trained on
MIN_STEPS = 20  # fewer steps than this say nothing
MOST_STEPS = 20_000
MOST_HIDDEN = 256
WRITTEN_BY = "attn learn grammar --save FILE"

# A map whose largest weights are on the heads of at least this share of the words is said to
# have learned the grammar's heads.
LEARNED_MIN = 0.9

# The two models: their key in the saved file, whether their attention is frozen even, their
# name as printed.
MODELS = {"model": (False, "attention"), "control": (True, "control")}
# The two rows of the competition table: the words only their head could decide, and the others.
SINGLE = "only its head could decide it"
COMPETING = "another word would decide it otherwise"

HEAD_NAMES = ("layer", "head", "share", "weight")
TEXTS = Texts(
    steps={
        "language": ("nouns", "vocabulary"),
        "examples": ("shown",),
        "models": ("d_model", "layers", "heads", "steps", "batch", "learning_rate"),
        "loaded": ("file", "seed", "steps"),
        "curve": ("every",),
        "accuracy": ("held_out", "sentences"),
        "competition": (),
        "sentence": ("sentence", "rendering", "status"),
        "heads": (),
        "before": HEAD_NAMES,
        "after": HEAD_NAMES,
        "control_map": ("n",),
        "scores": ("words", "even"),
    },
    notes={
        "lecture_map": ("red", "soft", "cat", "sat"),
        "on_heads": ("hits", "words"),
        "learned": ("before", "after", "layer", "head", "weight"),
        "control_even": ("n", "weight"),
        "control_fails": ("single", "competing", "model_competing", "control", "model"),
        "sentence_wrong": ("word", "predicted", "ending"),
    },
    claims={
        "lecture_map": lambda w, v: _lecture_map(w, v),
        "on_heads": lambda w, v: _on_heads(w, v),
        "learned": lambda w, v: _learned(w, v),
        "control_even": lambda w, v: _control_even(w, v),
        "control_fails": lambda w, v: _control_fails(w, v),
        "sentence_wrong": lambda w, v: _sentence_wrong(w, v),
    },
)


# --- the claims, checked against the walkthrough's numbers -----------------------------------


def _after_map(walkthrough: Walkthrough) -> np.ndarray:
    """The shown sentence's map after training, of the best head (the ``after`` step)."""
    return np.asarray(walkthrough.step("after"))


def _lecture_map(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The shown sentence is the lectures', and the after map puts ``red`` of red's weight on
    mat, ``soft`` of soft's, ``cat`` of cat's on sat and ``sat`` of sat's on cat, each its
    largest."""
    words = walkthrough.find("after").row_labels or ()
    if " ".join(words) != data.LECTURE:
        return False
    weights = _after_map(walkthrough)
    index = {word: words.index(word) for word in ("cat", "sat", "red", "soft", "mat")}
    for word, head in (("red", "mat"), ("soft", "mat"), ("cat", "sat"), ("sat", "cat")):
        row = weights[index[word]]
        if row[index[head]] != values[word] or row.argmax() != index[head]:
            return False
    return True


def _on_heads(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """``hits`` of the ``words`` words with a head (all of them) have their largest weight on
    it in the after map, as the heads step marks them."""
    weights, heads = _after_map(walkthrough), np.asarray(walkthrough.step("heads"))
    asked = heads.any(axis=1)
    hits = int(np.sum(weights[asked].argmax(axis=1) == heads[asked].argmax(axis=1)))
    return hits == values["hits"] == values["words"] == int(asked.sum())


def _score_rows(walkthrough: Walkthrough) -> list[dict[str, Any]]:
    value = walkthrough.step("scores")
    return value if isinstance(value, list) else []


def _learned(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The scores table's before and after share of layer ``layer`` head ``head``, the best
    after training, at least LEARNED_MIN, above before, with mean weight ``weight``."""
    rows = {
        (row["model"], row["when"], row["layer"], row["head"]): row
        for row in _score_rows(walkthrough)
    }
    key = (values["layer"], values["head"])
    before = rows.get(("attention", "before training", *key))
    after = rows.get(("attention", "after training", *key))
    best = max(
        (row["share"] for row in _score_rows(walkthrough) if row["when"] == "after training"),
        default=-1.0,
    )
    return (
        before is not None
        and after is not None
        and before["share"] == values["before"]
        and after["share"] == values["after"] == best >= LEARNED_MIN
        and after["weight"] == values["weight"]
        and after["share"] > before["share"]
    )


def _control_even(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every weight of the control's map is 1/``n``, ``weight``."""
    weights = np.asarray(walkthrough.step("control_map"))
    n = weights.shape[1]
    return values["n"] == n and bool(np.allclose(weights, 1 / n, rtol=0, atol=1e-6))


def _competition(walkthrough: Walkthrough) -> dict[str, dict[str, Any]]:
    value = walkthrough.step("competition")
    return {row["case"]: row for row in value} if isinstance(value, list) else {}


def _control_fails(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The competition table's figures: the control is right on ``single`` of the words only
    one word could decide and ``competing`` of the others, lower by at least 0.1, where the
    model gets ``model_competing``; its whole accuracy ``control`` below the model's
    ``model``."""
    rows = _competition(walkthrough)
    single, competing = rows.get(SINGLE), rows.get(COMPETING)
    whole = walkthrough.meta.get("accuracy", {})
    return (
        single is not None
        and competing is not None
        and single["control"] == values["single"]
        and competing["control"] == values["competing"]
        and competing["attention"] == values["model_competing"]
        and values["competing"] <= values["single"] - 0.1
        and values["competing"] < values["model_competing"]
        and whole.get("control") == values["control"]
        and whole.get("attention") == values["model"]
        and values["control"] < values["model"]
    )


def _sentence_wrong(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """In the sentence table, the trained model gives ``word`` the ending ``predicted`` where
    the grammar has ``ending``."""
    rows = walkthrough.step("sentence")
    return isinstance(rows, list) and any(
        row["word"] == values["word"]
        and row["attention_says"] == values["predicted"]
        and row["ending"] == values["ending"]
        and values["predicted"] != values["ending"]
        for row in rows
    )


# --- options ---------------------------------------------------------------------------------


def _checked(options: LearnOptions, min_steps: int = MIN_STEPS) -> LearnOptions:
    """The options with the task's defaults, or a UserError for sizes that do not fit
    (``min_steps``: the fewest steps whose training says anything; --code prints any)."""
    resolved = common.sized(
        options, NAME, steps=STEPS, hidden=HIDDEN, max_len=MAX_LEN, min_steps=min_steps
    )
    if resolved.weights is not None:
        return resolved
    steps, hidden, max_len = resolved.sizes()
    if steps > MOST_STEPS:
        raise UserError(f"{param('steps', steps)}: at most {MOST_STEPS:,} on a CPU.")
    if hidden % model.HEADS or hidden < 2 * model.HEADS or hidden > MOST_HIDDEN:
        raise UserError(
            f"{param('hidden', hidden)}: the width of the words' vectors, {2 * model.HEADS} to "
            f"{MOST_HIDDEN}; e.g. {param('hidden', HIDDEN)}."
        )
    shortest, longest = len(data.lecture_sentence()), max(data.structures())
    if not shortest <= max_len <= longest:
        raise UserError(
            f"{param('max_len', max_len)}: the lectures' sentence has {shortest} words and the language's "
            f"longest {longest}; give {shortest} to {longest}."
        )
    return resolved


def shown_sentence(text: str | None, max_len: int) -> data.Sentence:
    """The sentence whose map is shown: ``--sentence``, checked against the language, or the
    lectures'."""
    if text is None:
        return data.lecture_sentence()
    try:
        sentence = data.parse(text)
    except data.GrammarError as error:
        raise UserError(
            f"{param('sentence', common.quoted_sentence(text))}: {error}; its words are {_vocabulary()}, in the order "
            f"'{data.GRAMMAR}' (e.g. {param('sentence', repr(data.LECTURE))})."
        ) from None
    if len(sentence) > max_len:
        raise UserError(
            f"{param('sentence', common.quoted_sentence(text))}: {len(sentence)} words, but the model learns sentences of at "
            f"most {max_len} (its positions stop there); give a shorter one, or train on longer "
            f"ones with {param('max_len', len(sentence))}."
        )
    return sentence


def _vocabulary() -> str:
    return "; ".join(
        f"{data.CLASS_NAMES[kind]}s {', '.join(data.WORDS[kind])}" for kind in data.CLASSES
    )


# --- run -------------------------------------------------------------------------------------


_Model = common.TrainedModel[model.Shape]


@dataclass(frozen=True)
class Trained:
    """Both models, trained here or read from a --save file, with the seed and steps they were
    trained with, that seed's held-out sentences, and the sentences trained on (none known for a
    loaded model)."""

    seed: int
    steps: int
    corpus: data.Corpus
    models: list[_Model]
    trained_on: frozenset[tuple[int, ...]]
    examples: tuple[data.Sentence, ...]


def run(options: LearnOptions, progress: Progress | None = None) -> Walkthrough:
    """Train both models from the seed (or load them), evaluate on held-out sentences, and
    return the walkthrough; with --save, write the trained weights."""
    options = _checked(options)
    loaded = None if options.weights is None else _load(options.weights)  # refused at once
    common.seeded(options.seed)  # torch's deterministic set-up: a second of imports
    trained = _train(options, progress) if loaded is None else loaded
    max_len = trained.models[0].shape.max_len
    sentence = shown_sentence(options.sentence, max_len)
    record = common.recorder(NAME, TEXTS, _options_used(trained, options.sentence))
    if options.save is not None:
        weights_file.save_arrays(
            options.save, common.saved_arrays(trained.seed, trained.steps, trained.models)
        )
    return _walkthrough(record, trained, sentence, options.weights)


def _train(options: LearnOptions, progress: Progress | None) -> Trained:
    """Both models from the same draw of the seed, trained on the same batches."""
    steps, hidden, max_len = options.sizes()
    corpus = data.corpus(options.seed, max_len, HELD_OUT_PER_LENGTH)
    stream = corpus.batches(model.BATCH)
    batches = [next(stream) for _ in range(steps)]
    held = corpus.sentences()
    models = []
    for key, (uniform, name) in MODELS.items():
        shape = model.Shape(hidden, max_len, uniform=uniform)
        start = model.initial_weights(shape, options.seed)
        report = common.reporter(progress, name, steps)
        found = model.train(shape, start, batches, held, report)
        models.append(_Model(key, name, shape, start, found.weights, found.curve))
    trained_on = frozenset(sentence.tokens for batch in batches for sentence in batch)
    return Trained(options.seed, steps, corpus, models, trained_on, _examples(batches))


def _examples(found: Sequence[Sequence[data.Sentence]]) -> tuple[data.Sentence, ...]:
    """The first sentence of the first batch of each of a few lengths: short, middling, long."""
    firsts: dict[int, data.Sentence] = {}
    for batch in found:
        firsts.setdefault(len(batch[0]), batch[0])
    lengths = sorted(firsts)
    picked = dict.fromkeys((lengths[len(lengths) // 4], lengths[len(lengths) // 2], lengths[-1]))
    return tuple(firsts[length] for length in picked)


def _options_used(trained: Trained, sentence: str | None) -> dict[str, Any]:
    """The options the models were trained with, as the walkthrough states them."""
    shape = trained.models[0].shape
    used: dict[str, Any] = {
        "seed": trained.seed,
        "steps": trained.steps,
        "hidden": shape.d_model,
        "max_len": shape.max_len,
        "sentence": sentence,
    }
    if trained.trained_on:
        used.update(batch=model.BATCH, learning_rate=model.LEARNING_RATE)
    return used


def _load(path: Path) -> Trained:
    """The seed, steps and models of a file written by --save, with the seed's held-out
    sentences; a UserError when it is not one."""
    vocab = len(data.VOCABULARY)

    def read(shapes: dict[str, tuple[int | None, ...]]) -> dict[str, np.ndarray]:
        return weights_file.load_arrays(
            path, shapes, "weights", largest=MOST_HIDDEN, written_by=WRITTEN_BY
        )

    counts = weights_file.load_wholes(path, ("seed", "steps"), "weights", written_by=WRITTEN_BY)
    seed, steps = counts["seed"], counts["steps"]
    d_model = read({"model.embed": (vocab, None)})["model.embed"].shape[1]
    positions = read({"model.position": (None, d_model)})
    max_len = positions["model.position"].shape[0]
    if not len(data.lecture_sentence()) <= max_len <= max(data.structures()) or d_model < 2:
        raise UserError(
            f"{param('weights', path)}: its sizes are not those of attn learn grammar --save."
        )
    models = []
    for key, (uniform, name) in MODELS.items():
        shape = model.Shape(d_model, max_len, uniform=uniform)
        arrays = read({f"{key}.{n}": s for n, s in shape.shapes().items()})
        weights = {n: arrays[f"{key}.{n}"] for n in shape.shapes()}
        common.check_float32(weights, key, f"{param('weights', path)}:", WRITTEN_BY)
        models.append(_Model(key, name, shape, None, weights, []))
    corpus = data.corpus(seed, max_len, HELD_OUT_PER_LENGTH)
    return Trained(
        seed, steps, corpus, models, frozenset(), _examples(list(corpus.held_out.values()))
    )


# --- the walkthrough -------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """Both models on the held-out sentences and on the shown one."""

    held: list[data.Sentence]
    evaluations: dict[str, model.Evaluation]  # on the held-out sentences, after training
    before: model.Evaluation | None  # the model's, before training (None: loaded)
    shown: dict[str, model.Evaluation]  # on the shown sentence, after training
    shown_before: model.Evaluation | None


def _measure(trained: Trained, sentence: data.Sentence) -> Measured:
    held = trained.corpus.sentences()
    first = trained.models[0]
    return Measured(
        held,
        {m.key: model.evaluate(m.after, m.shape, held) for m in trained.models},
        None if first.before is None else model.evaluate(first.before, first.shape, held),
        {m.key: model.evaluate(m.after, m.shape, [sentence]) for m in trained.models},
        None if first.before is None else model.evaluate(first.before, first.shape, [sentence]),
    )


def _walkthrough(
    record: StepRecorder, trained: Trained, sentence: data.Sentence, weights: Path | None
) -> Walkthrough:
    """The language, the models (and how they trained), accuracy, the shown sentence (its
    endings, its heads, the maps before and after and the control's), and the scores."""
    measured = _measure(trained, sentence)
    _record_language(record, trained)
    _record_models(record, trained, weights)
    accuracy = _record_accuracy(record, trained, measured)
    _record_sentence(record, trained, sentence, measured)
    best = _record_maps(record, trained, sentence, measured)
    scores = _record_scores(record, trained, measured)
    broken = [
        MODELS[key][1]
        for key, evaluation in measured.evaluations.items()
        if not all(np.isfinite(layer).all() for layers in evaluation.patterns for layer in layers)
    ]
    notes = (
        *common.overflow_note(broken, "sentences", NAME),
        *_notes(record, scores, best, measured, accuracy),
        common.reproducibility_note(common.reproducibility()),
    )
    meta = {
        "task": NAME,
        "seed": trained.seed,
        "steps": trained.steps,
        "weights": None if weights is None else str(weights),
        "sentence": list(sentence.words),
        "heads": list(sentence.heads),
        "accuracy": {row["model"]: row["accuracy"] for row in accuracy},
        "best": {"layer": best[0] + 1, "head": best[1] + 1},
        "curves": {
            m.key: {
                name: [point[name] for point in m.curve] for name in ("step", "loss", "accuracy")
            }
            for m in trained.models
        },
        "reproducibility": common.reproducibility(),
    }
    output = np.asarray(record.shown("after"))
    walkthrough = record.walkthrough(output, notes=notes, meta=meta)
    return replace(walkthrough, example_description=f"sentence: {' '.join(sentence.words)}")


def _record_language(record: StepRecorder, trained: Trained) -> None:
    """What each kind of word takes from which head; then a few sentences, bare and marked."""
    rows = [
        {"word": "determiner", "head_word": "its noun", "ending": "the noun's class"},
        {"word": "adjective", "head_word": "its noun", "ending": "the noun's class"},
        {"word": "verb", "head_word": "its subject", "ending": "the subject's class"},
        {"word": "subject", "head_word": "its verb", "ending": _cases(data.VERBS)},
        {"word": "noun after a preposition", "head_word": "the preposition",
         "ending": _cases(data.PREPOSITIONS)},
        {"word": "object, preposition", "head_word": "—", "ending": "none asked"},
    ]  # fmt: skip
    classes = {
        name: ", ".join(noun for noun, found in data.NOUNS.items() if found == name)
        for name in ("I", "II", "III")
    }
    context = {
        "nouns": "; ".join(f"{name}: {found}" for name, found in classes.items()),
        "vocabulary": _vocabulary(),
    }
    record.add("language", rows, kind="records", grid=Grid(context=context))
    table = [{"bare": " ".join(s.words), "marked": s.rendering()} for s in trained.examples]
    shown = (
        "the first training sentences of a few lengths"
        if trained.trained_on
        else "held-out sentences (a loaded model: its training sentences are not in the file)"
    )
    record.add("examples", table, kind="records", grid=Grid(context={"shown": shown}))


def _cases(setters: Mapping[str, str]) -> str:
    by_case: dict[str, list[str]] = {}
    for word, case in setters.items():
        by_case.setdefault(case, []).append(word)
    return "; ".join(f"{case} after {', '.join(words)}" for case, words in by_case.items())


def _record_models(record: StepRecorder, trained: Trained, weights: Path | None) -> None:
    """The two models' sizes; how they trained, or the file they were read from."""
    table = [
        {
            "model": m.name,
            "weights": "frozen: every score 0, every weight 1/n"
            if m.shape.uniform
            else "learned from W_Q and W_K",
            "parameters": m.shape.parameters(),
        }
        for m in trained.models
    ]
    shape = trained.models[0].shape
    if weights is not None:
        read = {"file": str(weights), "seed": trained.seed, "steps": trained.steps}
        record.add("loaded", table, kind="records", grid=Grid(context=read))
        return
    budget = {
        "d_model": shape.d_model,
        "layers": shape.layers,
        "heads": shape.heads,
        "steps": trained.steps,
        "batch": model.BATCH,
        "learning_rate": model.LEARNING_RATE,
    }
    record.add("models", table, kind="records", grid=Grid(context=budget))
    rows: dict[int, dict[str, Any]] = {}
    for m in trained.models:
        for point in m.curve:
            row = rows.setdefault(int(point["step"]), {"step": int(point["step"])})
            row[f"{m.key}_loss"] = point["loss"]
            row[f"{m.key}_accuracy"] = point["accuracy"]
    curve = [rows[step] for step in sorted(rows)]
    # every EVALUATE_EVERY steps and at the last; a shorter run is measured at its last alone
    every = min(model.EVALUATE_EVERY, curve[-1]["step"]) if curve else model.EVALUATE_EVERY
    record.add("curve", curve, kind="records", grid=Grid(context={"every": every}))


def _right(evaluation: model.Evaluation, held: Sequence[data.Sentence]) -> list[np.ndarray]:
    """Per sentence, (n,) bool: the word's ending predicted right (False where none is asked)."""
    return [
        (predicted == np.array(s.endings)) & (np.array(s.endings) != data.NONE)
        for s, predicted in zip(held, evaluation.predicted, strict=True)
    ]


def _record_accuracy(
    record: StepRecorder, trained: Trained, measured: Measured
) -> list[dict[str, Any]]:
    """Held-out accuracy by dependency, both models; then split by whether another word of the
    sentence would decide the ending otherwise. Returns each model's whole accuracy."""
    held = measured.held
    right = {key: _right(found, held) for key, found in measured.evaluations.items()}
    kinds: dict[str, list[tuple[int, int]]] = {}
    competing: dict[bool, list[tuple[int, int]]] = {False: [], True: []}
    for s_index, sentence in enumerate(held):
        rivals = data.competing(sentence)
        for word in range(len(sentence)):
            relation = data.relation(sentence, word)
            if relation is None:
                continue
            kinds.setdefault(relation, []).append((s_index, word))
            competing[rivals[word]].append((s_index, word))

    def share(key: str, where: list[tuple[int, int]]) -> float:
        return float(np.mean([right[key][s][w] for s, w in where]))

    names = {m.key: m.name for m in trained.models}
    table = [
        {
            "dependency": relation,
            "words": len(where),
            "attention": share("model", where),
            "control": share("control", where),
        }
        for relation, where in kinds.items()
    ]
    everything = [pair for where in kinds.values() for pair in where]
    table.append(
        {
            "dependency": "all",
            "words": len(everything),
            "attention": share("model", everything),
            "control": share("control", everything),
        }
    )
    context = {"held_out": len(everything), "sentences": len(held)}
    record.add("accuracy", table, kind="records", grid=Grid(context=context))
    rows = [
        {
            "case": COMPETING if rival else SINGLE,
            "words": len(competing[rival]),
            "attention": share("model", competing[rival]) if competing[rival] else None,
            "control": share("control", competing[rival]) if competing[rival] else None,
        }
        for rival in (False, True)
    ]
    record.add("competition", rows, kind="records")
    return [
        {"model": names[key], "accuracy": share(key, everything)} for key in ("model", "control")
    ]


def _status(trained: Trained, sentence: data.Sentence) -> str:
    """Whether the shown sentence was trained on."""
    if sentence.tokens in trained.corpus.held_out_tokens():
        return "held out, never trained on"
    if not trained.trained_on:
        return "the file does not say whether it was trained on"
    if sentence.tokens in trained.trained_on:
        return "one of the training sentences"
    return "not among the training sentences"


def _record_sentence(
    record: StepRecorder, trained: Trained, sentence: data.Sentence, measured: Measured
) -> None:
    """The shown sentence word by word: its head, the ending the grammar gives it, and what each
    model predicts; then the grammar's heads as a map (a 1 at each word's head)."""
    words = sentence.words
    model_says, control_says = (measured.shown[key].predicted[0] for key in ("model", "control"))
    rows = []
    for i, word in enumerate(words):
        head, ending = sentence.heads[i], sentence.endings[i]
        asked = ending != data.NONE
        rows.append(
            {
                "word": word,
                "head_word": words[head] if head != data.NONE else "—",
                "ending": data.ENDINGS[ending] if asked else "—",
                "attention_says": data.ENDINGS[int(model_says[i])] if asked else "—",
                "control_says": data.ENDINGS[int(control_says[i])] if asked else "—",
            }
        )
    context = {
        "sentence": " ".join(words),
        "rendering": sentence.rendering(),
        "status": _status(trained, sentence),
    }
    wrong = [
        record.note(
            "sentence_wrong",
            word=row["word"],
            predicted=row["attention_says"],
            ending=row["ending"],
        )
        for row in rows
        if row["attention_says"] != row["ending"]
    ]
    record.add("sentence", rows, kind="records", grid=Grid(context=context), notes=tuple(wrong))
    n = len(words)
    heads = np.zeros((n, n))
    for i, head in enumerate(sentence.heads):
        if head != data.NONE:
            heads[i, head] = 1.0
    record.add("heads", heads, kind="weights", grid=Grid(words, words), fit=True)


def _best(scores: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """The layer and head (0-based) whose share after training is the highest (the first)."""
    after = [
        row for row in scores if row["model"] == "attention" and row["when"] == "after training"
    ]
    top = max(after, key=lambda row: row["share"])
    return top["layer"] - 1, top["head"] - 1


def _record_maps(
    record: StepRecorder, trained: Trained, sentence: data.Sentence, measured: Measured
) -> tuple[int, int]:
    """The shown sentence's map before and after training, of the head that scores best on the
    held-out sentences (each head's in the scores), and the control's."""
    held = measured.held
    share, weight = data.head_scores(measured.evaluations["model"].patterns, held)
    layer, head = np.unravel_index(int(np.argmax(share)), share.shape)
    words = sentence.words
    shown = {"layer": int(layer) + 1, "head": int(head) + 1}
    if measured.shown_before is not None and measured.before is not None:
        before_share, before_weight = data.head_scores(measured.before.patterns, held)
        context = {
            **shown,
            "share": float(before_share[layer, head]),
            "weight": float(before_weight[layer, head]),
        }
        pattern = measured.shown_before.patterns[0][layer][head]
        grid = Grid(words, words, context)
        record.add("before", pattern, kind="weights", grid=grid, row_sums=True, fit=True)
    context = {**shown, "share": float(share[layer, head]), "weight": float(weight[layer, head])}
    after = measured.shown["model"].patterns[0][layer][head]
    lecture = {}
    if " ".join(words) == data.LECTURE:
        index = {word: words.index(word) for word in ("cat", "sat", "red", "soft", "mat")}
        lecture = {
            "red": float(after[index["red"], index["mat"]]),
            "soft": float(after[index["soft"], index["mat"]]),
            "cat": float(after[index["cat"], index["sat"]]),
            "sat": float(after[index["sat"], index["cat"]]),
        }
    asked = [i for i, h in enumerate(sentence.heads) if h != data.NONE]
    hits = sum(int(np.argmax(after[i]) == sentence.heads[i]) for i in asked)
    notes = (
        *((record.note("lecture_map", **lecture),) if lecture else ()),
        record.note("on_heads", hits=hits, words=len(asked)),
    )
    grid = Grid(words, words, context)
    record.add("after", after, kind="weights", grid=grid, row_sums=True, notes=notes, fit=True)
    control = measured.shown["control"].patterns[0][layer][head]
    even = record.note("control_even", n=len(words), weight=1 / len(words))
    grid = Grid(words, words, {"n": len(words)})
    record.add(
        "control_map", control, kind="weights", grid=grid, row_sums=True, notes=(even,), fit=True
    )
    return int(layer), int(head)


def _record_scores(
    record: StepRecorder, trained: Trained, measured: Measured
) -> list[dict[str, Any]]:
    """Every layer's and head's score against the grammar's heads on the held-out sentences:
    before training, after, and the control's; an even spread's mean weight beside them."""
    held = measured.held
    found: list[tuple[str, str, model.Evaluation]] = []
    if measured.before is not None:
        found.append(("attention", "before training", measured.before))
    found.append(("attention", "after training", measured.evaluations["model"]))
    found.append(("control", "after training", measured.evaluations["control"]))
    rows = []
    for name, when, evaluation in found:
        share, weight = data.head_scores(evaluation.patterns, held)
        for layer in range(share.shape[0]):
            for head in range(share.shape[1]):
                rows.append(
                    {
                        "model": name,
                        "when": when,
                        "layer": layer + 1,
                        "head": head + 1,
                        "share": float(share[layer, head]),
                        "weight": float(weight[layer, head]),
                    }
                )
    words = sum(1 for s in held for h in s.heads if h != data.NONE)
    even = float(np.mean([1 / len(s) for s in held for h in s.heads if h != data.NONE]))
    record.add("scores", rows, kind="records", grid=Grid(context={"words": words, "even": even}))
    return rows


def _notes(
    record: StepRecorder,
    scores: Sequence[dict[str, Any]],
    best: tuple[int, int],
    measured: Measured,
    accuracy: Sequence[dict[str, Any]],
) -> tuple[Note, ...]:
    """What was learned (the best head's share before and after) and how the control fails."""
    layer, head = best[0] + 1, best[1] + 1
    rows = {(row["model"], row["when"], row["layer"], row["head"]): row for row in scores}
    after = rows[("attention", "after training", layer, head)]
    before = rows.get(("attention", "before training", layer, head), {"share": -1.0})
    competition = {row["case"]: row for row in record.shown("competition")}
    whole = {row["model"]: row["accuracy"] for row in accuracy}
    return (
        record.note(
            "learned",
            before=before["share"],
            after=after["share"],
            layer=layer,
            head=head,
            weight=after["weight"],
        ),
        record.note(
            "control_fails",
            single=competition[SINGLE]["control"],
            competing=competition[COMPETING]["control"],
            model_competing=competition[COMPETING]["attention"],
            control=whole["control"],
            model=whole["attention"],
        ),
    )


# --- --code, and the declaration -------------------------------------------------------------


def program(options: LearnOptions) -> str:
    """The training program of --code, with the options written in."""
    from attn_cli.learn.grammar_program import program_text

    # The command refuses --code --weights. A short run is a program like any other: printing
    # it says nothing about what it would learn (induction's and translate's --code agree).
    steps, hidden, max_len = _checked(replace(options, weights=None), min_steps=1).sizes()
    return program_text(
        seed=options.seed,
        steps=steps,
        hidden=hidden,
        max_len=max_len,
        per_length=HELD_OUT_PER_LENGTH,
        threads=common.THREADS,
    )


TASK = Task(
    NAME,
    TEXTS,
    run,
    program,
    figure=grammar_figure,
    reads_weights=True,
    reads_sentence=True,
)
