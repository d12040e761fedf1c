"""attn learn translate: the lectures' notebook as a command.

A toy translation task from the seed (attn_cli.learn.translate_data), two encoder-decoders
trained on the same batches with the same budget (attn_cli.learn.translate_model: the
fixed-vector one, c = hₙ, and Bahdanau's), then, on held-out sentences only: accuracy by source
length for both, the attention heatmap of one sentence before and after training, the alignment
score against the true alignment, and one decoder step of the trained model as `attn
bahdanau`'s worked example, whose recomputed row equals the model's own.

Declared at the bottom (``TASK``, attn_cli.learn.common.Task): :func:`run` and :func:`program`
(the text of attn_cli.learn.translate_program).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Note, Part, Walkthrough
from attn_cli.core.weights_file import save_arrays
from attn_cli.course.recorder import Grid
from attn_cli.learn import translate_data as data
from attn_cli.learn.common import (
    THREADS,
    LearnOptions,
    Progress,
    Task,
    curve_quantities,
    quoted_sentence,
    recorder,
    reproducibility,
    reproducibility_note,
    seeded,
    too_small,
)
from attn_cli.learn.figures import translate_figure
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as attn
from attn_cli.mechanisms import bahdanau as mech

if TYPE_CHECKING:  # torch is imported when a model trains: --code needs none
    import torch

    from attn_cli.course.recorder import StepRecorder
    from attn_cli.learn.translate_model import Seq2Seq

NAME = "translate"
# The defaults: about 40 s on a 2-core laptop CPU (docs/learn.md has the measured figures).
STEPS = 700
HIDDEN = 64
MAX_LEN = 12
BATCH = 64
LEARNING_RATE = 0.005
CLIP = 1.0  # gradients clipped to this norm, both models
HELD_OUT_PER_LENGTH = 50
EVAL_EVERY = 50  # held-out word accuracy on the way (the progress bar and the curve)
EVAL_SAMPLE = 8  # held-out sentences per length for that running figure
# Below this share of held-out words right, the attention model has not learned enough to show.
LEAST_ACCURACY = 0.5
MIN_MAX_LEN = 5
MOST_HIDDEN = 256
MOST_STEPS = 20_000
# The recomputed row and the model's own (both float64) agree to this.
TOLERANCE = 1e-12
MODELS = ("fixed", "attention")


@dataclass(frozen=True)
class Evaluation:
    """Held-out figures of one model: by source length, exact-match and word accuracy."""

    exact: dict[int, float]
    words: dict[int, float]


def check_options(options: LearnOptions) -> None:
    """Sizes that do not fit, refused before anything is generated."""
    assert options.max_len is not None and options.hidden is not None and options.steps is not None
    if not MIN_MAX_LEN <= options.max_len <= data.MAX_LENGTH:
        raise UserError(
            f"{param('max_len', options.max_len)}: the toy language's sentences have {data.MIN_LENGTH} to "
            f"{data.MAX_LENGTH} words and the comparison needs lengths {data.MIN_LENGTH} to at "
            f"least {MIN_MAX_LEN}; give {MIN_MAX_LEN} to {data.MAX_LENGTH}."
        )
    if options.hidden > MOST_HIDDEN:
        raise UserError(
            f"{param('hidden', options.hidden)}: at most {MOST_HIDDEN} (wider trains for long on a CPU "
            "without showing more)."
        )
    if options.steps > MOST_STEPS:
        raise UserError(f"{param('steps', options.steps)}: at most {MOST_STEPS:,} on a CPU.")
    if options.sentence is not None:
        sentence_pair(options.sentence, options.max_len)


def sentence_pair(text: str, max_len: int) -> data.Pair:
    """--sentence: a source sentence of the toy language with its translation and true
    alignment; a UserError naming what does not fit (a word it does not have, an order its
    grammar does not make, more words than the models train on)."""
    try:
        pair = data.parse(text)
    except data.GrammarError as error:
        vocabulary = "; ".join(
            f"{name} {', '.join(source for source, _ in pairs)}"
            for name, pairs in data.WORDS.items()
        )
        raise UserError(
            f"{param('sentence', quoted_sentence(text))}: {error}; its words are {vocabulary}, in the order "
            f"{data.GRAMMAR} (e.g. {param('sentence', repr('the red cat sees a dog'))})."
        ) from None
    if len(pair.source) > max_len:
        raise UserError(
            f"{param('sentence', quoted_sentence(text))}: {len(pair.source)} words, but the models train on sentences "
            f"of {data.MIN_LENGTH} to {max_len}; give a shorter one, or train on longer ones "
            f"with {param('max_len', len(pair.source))}."
        )
    return pair


def run(options: LearnOptions, progress: Progress | None = None) -> Walkthrough:
    """Generate, train both models, evaluate on held-out sentences, and lay it all out; with
    --save, write the trained attention model."""
    options = options.resolved(steps=STEPS, hidden=HIDDEN, max_len=MAX_LEN)
    check_options(options)
    assert options.steps is not None and options.max_len is not None
    record = recorder(NAME, TEXTS, options_used(options))
    corpus = data.corpus(options.seed, options.max_len, HELD_OUT_PER_LENGTH)
    seeded(options.seed)
    trained = train_both(options, corpus, progress)
    shown = None if options.sentence is None else sentence_pair(options.sentence, options.max_len)
    measured = measure(trained, corpus, options.steps, shown)
    walkthrough = record_walkthrough(record, options, corpus, trained, measured)
    if options.save is not None:
        attention = trained.models["attention"]
        save_arrays(options.save, saved_arrays(attention, measured.pair, measured.after))
    return walkthrough


def options_used(options: LearnOptions) -> dict[str, Any]:
    """The options of the run as its walkthrough states them (meta["options"])."""
    return {
        "seed": options.seed,
        "steps": options.steps,
        "hidden": options.hidden,
        "max_len": options.max_len,
        "batch": BATCH,
        "learning_rate": LEARNING_RATE,
    }


# --- training --------------------------------------------------------------------------------


def tensors(pairs: Sequence[data.Pair]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Source (B, n), reference with the end token (B, n + 1), and the decoder's inputs y_0 ..
    y_n (the start token, then the reference's words) (B, n + 1)."""
    import torch

    source = torch.tensor([pair.source for pair in pairs])
    target = torch.tensor([(*pair.target, data.EOS) for pair in pairs])
    previous = torch.cat([torch.full((len(pairs), 1), data.BOS), target[:, :-1]], dim=1)
    return source, target, previous


def train(
    models: Mapping[str, Seq2Seq],
    corpus: data.Corpus,
    steps: int,
    progress: Progress | None,
    trained_on: set[tuple[int, ...]] | None = None,
) -> list[dict[str, Any]]:
    """Train every model on the same batches (each its own Adam); the curve every EVAL_EVERY
    steps: the last batch's loss and the held-out word accuracy of each model. Each source
    sentence trained on is added to ``trained_on``."""
    import torch

    optimisers = {
        name: torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
        for name, model in models.items()
    }
    batches = corpus.batches(BATCH)
    sample = {length: pairs[:EVAL_SAMPLE] for length, pairs in corpus.held_out.items()}
    curve: list[dict[str, Any]] = []
    for step in range(1, steps + 1):
        _, batch = next(batches)
        if trained_on is not None:
            trained_on.update(pair.source for pair in batch)
        source, target, previous = tensors(batch)
        losses = {}
        for name, model in models.items():
            model.train()
            logits, _, _ = model(source, previous)  # (B, T, V)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())
            optimisers[name].zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
            optimisers[name].step()
            losses[name] = loss.item()
        measured = step % EVAL_EVERY == 0 or step == steps
        accuracy = (
            {
                name: _overall(evaluate(model, None, sample).words, None, sample)
                for name, model in models.items()
            }
            if measured
            else {}
        )
        if measured:
            curve.append(
                {
                    "step": step,
                    **{f"{name}_loss": losses[name] for name in MODELS},
                    **{f"{name}_accuracy": accuracy[name] for name in MODELS},
                }
            )
        if progress is not None:
            for name in MODELS:
                progress(name, step, steps, losses[name], accuracy.get(name))
    return curve


@dataclass(frozen=True)
class Trained:
    """The two models after training, the attention model as it started, the curve (every
    EVAL_EVERY steps), the seconds training took and the source sentences trained on."""

    models: Mapping[str, Seq2Seq]
    initial: Seq2Seq
    curve: list[dict[str, Any]]
    seconds: float
    trained_on: frozenset[tuple[int, ...]]


def train_both(options: LearnOptions, corpus: data.Corpus, progress: Progress | None) -> Trained:
    """Both models, initialised from the (already seeded) generator in order, trained."""
    from attn_cli.learn.translate_model import Seq2Seq

    assert options.steps is not None and options.hidden is not None
    vocabulary = len(data.SOURCE_WORDS)
    models = {
        name: Seq2Seq(vocabulary, vocabulary, options.hidden, name == "attention")
        for name in MODELS
    }
    initial = copy.deepcopy(models["attention"])
    started = time.perf_counter()
    trained_on: set[tuple[int, ...]] = set()
    curve = train(models, corpus, options.steps, progress, trained_on)
    seconds = time.perf_counter() - started
    return Trained(models, initial, curve, seconds, frozenset(trained_on))


# --- evaluation, on held-out sentences only ---------------------------------------------------


def evaluate(
    model: Seq2Seq,
    corpus: data.Corpus | None,
    held_out: Mapping[int, Sequence[data.Pair]] | None = None,
) -> Evaluation:
    """Greedy translations of the held-out sentences: per length, the share translated exactly
    (end included) and the share of target words right."""
    import torch

    sentences = corpus.held_out if corpus is not None else held_out
    assert sentences is not None
    exact, words = {}, {}
    model.eval()
    with torch.no_grad():
        for length, pairs in sentences.items():
            source, target, previous = tensors(pairs)
            logits, _, _ = model(source, previous, greedy=True)
            right = logits.argmax(dim=-1) == target  # (B, T)
            exact[length] = float(right.all(dim=1).double().mean())
            words[length] = float(right.double().mean())
    return Evaluation(exact, words)


def _overall(
    by_length: Mapping[int, float],
    corpus: data.Corpus | None,
    held_out: Mapping[int, Sequence[data.Pair]] | None = None,
) -> float:
    """Word accuracy over every held-out target word (each length weighted by its words)."""
    sentences = corpus.held_out if corpus is not None else held_out
    assert sentences is not None
    counts = {length: len(pairs) * (length + 1) for length, pairs in sentences.items()}
    return sum(by_length[length] * count for length, count in counts.items()) / sum(counts.values())


@dataclass(frozen=True)
class Score:
    """The alignment score: of ``words`` target words, the share whose largest weight is on the
    true source word, and the mean weight on it."""

    share: float
    weight: float
    words: int


def alignment_score(model: Seq2Seq, corpus: data.Corpus) -> Score:
    """The attention model's alignment score over every held-out sentence, with the reference's
    words fed in (teacher forcing); the end token, which has no source word, left out."""
    import torch

    hits, weight, count = 0.0, 0.0, 0
    model.eval()
    with torch.no_grad():
        for pairs in corpus.held_out.values():
            source, _, previous = tensors(pairs)
            _, weights, _ = model(source, previous)
            assert weights is not None
            rows = weights[:, :-1]  # (B, n, n): the end token's row left out
            true = torch.tensor([pair.alignment for pair in pairs]).unsqueeze(-1)  # (B, n, 1)
            hits += float((rows.argmax(dim=-1, keepdim=True) == true).sum())
            weight += float(rows.gather(2, true).sum())
            count += true.numel()
    return Score(hits / count, weight / count, count)


def shown_pair(corpus: data.Corpus) -> data.Pair:
    """The held-out sentence whose heatmap is shown: the longest length that has one showing
    both rules (an adjective after its noun, a time word moved to the end), its first such."""
    for length in reversed(corpus.lengths):
        for pair in corpus.held_out[length]:
            if pair.has_rule("adjective") and pair.has_rule("time"):
                return pair
    return corpus.held_out[corpus.lengths[-1]][0]


@dataclass(frozen=True)
class Rows:
    """One sentence through the attention model, in float64, reference words fed in: the weights
    (T, n) (row t: decoder step t, the end token's step last), the encoder states H (n, d_h), and
    the decoder state each step queried with (T, d_s)."""

    weights: np.ndarray
    states: np.ndarray
    queries: np.ndarray


def attention_rows(model: Seq2Seq, pair: data.Pair) -> Rows:
    """``pair`` through a float64 copy of ``model`` (the heatmap's numbers, and those the
    worked example recomputes)."""
    import torch

    exact = copy.deepcopy(model).double().eval()
    source, _, previous = tensors([pair])
    with torch.no_grad():
        states, _ = exact.encode(source)
        _, weights, queries = exact(source, previous)
    assert weights is not None
    return Rows(
        weights[0].numpy(),
        states[0].numpy(),
        torch.stack(queries, dim=1)[0].numpy(),
    )


@dataclass(frozen=True)
class Measured:
    """What the trained models do on held-out sentences: each one's accuracy by length, the
    attention model's alignment score before and after training, and the shown sentence
    through it before and after."""

    evaluations: Mapping[str, Evaluation]
    before_score: Score
    after_score: Score
    pair: data.Pair
    before: Rows
    after: Rows


def measure(
    trained: Trained, corpus: data.Corpus, steps: int, shown: data.Pair | None = None
) -> Measured:
    """Both models on the held-out sentences, and the sentence shown (``shown``: --sentence's;
    else a held-out one, :func:`shown_pair`); a UserError when the attention model gets too few
    words right for its attention to show what it learned."""
    evaluations = {name: evaluate(model, corpus) for name, model in trained.models.items()}
    accuracy = _overall(evaluations["attention"].words, corpus)
    if accuracy < LEAST_ACCURACY:
        raise too_small(
            NAME,
            f"after {steps} steps the attention model gets {accuracy:.0%} of held-out "
            "words right, so its attention shows noise, not what it learned",
            f"train longer ({param('steps', max(STEPS, 2 * steps))})",
        )
    initial, attention = trained.initial, trained.models["attention"]
    pair = shown_pair(corpus) if shown is None else shown
    return Measured(
        evaluations,
        alignment_score(initial, corpus),
        alignment_score(attention, corpus),
        pair,
        attention_rows(initial, pair),
        attention_rows(attention, pair),
    )


def example_step(pair: data.Pair) -> int:
    """The decoder step shown term by term (from 0): the time word moved to the end, or else an
    adjective after its noun, or else the last word."""
    words = pair.source_words
    times = {source for source, _ in data.WORDS["time"]}
    adjectives = {source for source, _ in data.WORDS["adj"]}
    for wanted in (times, adjectives):
        for t, i in enumerate(pair.alignment):
            if words[i] in wanted:
                return t
    return len(pair.alignment) - 1


def learned_weights(model: Seq2Seq) -> dict[str, np.ndarray]:
    """W1 (d_a × d_h), W2 (d_a × d_s) and v (d_a) of the attention, float64."""

    return {
        "W1": model.W1.weight.detach().double().numpy().copy(),
        "W2": model.W2.weight.detach().double().numpy().copy(),
        "v": model.v.weight.detach().double().numpy()[0].copy(),
    }


def saved_arrays(model: Seq2Seq, pair: data.Pair, rows: Rows) -> dict[str, np.ndarray]:
    """What --save writes: the inputs of `attn bahdanau` for the shown decoder step (s_t, the
    decoder state sₜ₋₁ it queries with; H, the sentence's encoder states; W1, W2, v; the source
    words as tokens; the model's own row as weights; the step's number), those of every step of
    the sentence (queries: each step's decoder state, T × d_s; all_weights: the model's rows,
    T × n; target: the reference's words, the end last), and every trained parameter as
    model.NAME."""

    t = example_step(pair)
    arrays: dict[str, np.ndarray] = {
        "s_t": rows.queries[t],
        "H": rows.states,
        **learned_weights(model),
        "tokens": np.array(pair.source_words),
        "weights": rows.weights[t],
        "step": np.array(t + 1),
        "queries": rows.queries,
        "all_weights": rows.weights,
        "target": np.array([*pair.target_words, "</s>"]),
    }
    for name, value in model.state_dict().items():
        arrays[f"model.{name}"] = value.detach().double().numpy()
    return arrays


# --- the walkthrough -------------------------------------------------------------------------


def sizes(hidden: int) -> dict[str, int]:
    """The widths --hidden sets: the encoder's states d_h (both directions), the decoder's d_s
    and the attention's d_a."""
    return {"d_h": 2 * hidden, "d_s": hidden, "d_a": hidden}


def record_walkthrough(
    record: StepRecorder,
    options: LearnOptions,
    corpus: data.Corpus,
    trained: Trained,
    measured: Measured,
) -> Walkthrough:
    """The task, the models, training, accuracy by length, the shown sentence (its true
    alignment, the attention before and after), the alignment score, and one decoder step of
    the trained model worked through."""
    from attn_cli.learn.translate_model import parameter_count

    assert options.steps is not None and options.hidden is not None
    widths = sizes(options.hidden)
    counts = {name: parameter_count(model) for name, model in trained.models.items()}
    record_examples(record, options.seed, corpus.lengths)
    record_models(record, counts, widths, options.steps)
    sample = sum(min(EVAL_SAMPLE, len(found)) for found in corpus.held_out.values())
    seconds = round(trained.seconds, 1)
    # every EVAL_EVERY steps and at the last; a shorter run is measured at its last alone
    context = {"every": min(EVAL_EVERY, options.steps), "sample": sample, "seconds": seconds}
    record.add(
        "training",
        trained.curve,
        kind="records",
        grid=Grid(context=context),
        quantities=curve_quantities(MODELS),
    )
    record_by_length(record, measured.evaluations, corpus)
    record_sentence(record, measured, options.steps, sentence_status(corpus, trained, measured))
    record_score(record, measured.before_score, measured.after_score)
    decoder_step(record, trained.models["attention"], measured.pair, measured.after, widths)
    meta = walkthrough_meta(counts, trained.seconds, measured)
    found = reproducibility()
    meta["reproducibility"] = found
    meta["sentence"]["status"] = sentence_status(corpus, trained, measured)
    notes = (reproducibility_note(found),)
    return record.walkthrough(measured.after.weights, notes=notes, meta=meta)


def sentence_status(corpus: data.Corpus, trained: Trained, measured: Measured) -> str:
    """Whether the sentence shown was trained on."""
    source = measured.pair.source
    if source in corpus.held_out_sources():
        return "held out, never trained on"
    if source in trained.trained_on:
        return "one of the training sentences"
    return "not among the training sentences"


def record_examples(record: StepRecorder, seed: int, lengths: Sequence[int]) -> None:
    """A few training-like pairs (their own seeded stream), each with its true alignment."""
    rng = np.random.default_rng([seed, 2])
    picked = [lengths[1], (lengths[1] + lengths[-1]) // 2, lengths[-1]]
    pairs = data.examples(rng, picked)
    rows = [
        {
            "source": " ".join(pair.source_words),
            "target": " ".join(pair.target_words),
            "alignment": " ".join(
                f"{target}←{pair.source_words[i]}"
                for target, i in zip(pair.target_words, pair.alignment, strict=True)
            ),
        }
        for pair in pairs
    ]
    context = {"pairs": len(pairs), "shortest": lengths[0], "longest": lengths[-1]}
    record.add("examples", rows, kind="records", grid=Grid(context=context))


def record_models(
    record: StepRecorder, counts: Mapping[str, int], widths: Mapping[str, int], steps: int
) -> None:
    """The two models side by side, with their parameter counts."""
    rows = [
        {"model": "fixed vector", "context": "c = hₙ at every step", "parameters": counts["fixed"]},
        {"model": "attention", "context": "cₜ = Σᵢ α_{t,i} hᵢ", "parameters": counts["attention"]},
    ]
    parameters = record.note(
        "parameters",
        extra=counts["attention"] - counts["fixed"],
        attention=counts["attention"],
        fixed=counts["fixed"],
        d_a=widths["d_a"],
        d_h=widths["d_h"],
        d_s=widths["d_s"],
    )
    context = {**widths, "rate": LEARNING_RATE, "steps": steps, "batch": BATCH}
    record.add("models", rows, kind="records", notes=(parameters,), grid=Grid(context=context))


def record_by_length(
    record: StepRecorder, evaluations: Mapping[str, Evaluation], corpus: data.Corpus
) -> None:
    """Exact-match and word accuracy by source length, both models, with the notes on how the
    fixed vector falls and attention holds."""
    fixed, attention = evaluations["fixed"], evaluations["attention"]
    lengths = corpus.lengths
    table = [
        {
            "length": length,
            "sentences": len(corpus.held_out[length]),
            "fixed_exact": fixed.exact[length],
            "attention_exact": attention.exact[length],
            "fixed_words": fixed.words[length],
            "attention_words": attention.words[length],
        }
        for length in lengths
    ]
    longest, shortest = lengths[-1], lengths[0]
    notes = (
        record.note(
            "attention_ahead_longest",
            longest=longest,
            attention=attention.exact[longest],
            fixed=fixed.exact[longest],
        ),
        record.note(
            "fixed_falls",
            short=fixed.exact[shortest],
            shortest=shortest,
            long=fixed.exact[longest],
            longest=longest,
        ),
        record.note("attention_holds", lowest=min(attention.exact.values())),
        record.note("paper_shape"),
    )
    context = {"per_length": HELD_OUT_PER_LENGTH}
    record.add("by_length", table, kind="records", notes=notes, grid=Grid(context=context))


def record_sentence(record: StepRecorder, measured: Measured, steps: int, status: str) -> None:
    """The shown sentence (``status``: whether it was trained on): its true alignment, and the
    attention on it before and after."""
    pair, before, after = measured.pair, measured.before, measured.after
    words = Grid(rows=(*pair.target_words, "</s>"), cols=pair.source_words)
    n = len(pair.source_words)
    truth = np.vstack([data.alignment_matrix(pair), np.zeros((1, n))])  # (T, n)
    shown = Grid(words.rows, words.cols, {"status": status})
    record.add("truth", truth, kind="weights", grid=shown, notes=rule_notes(record, pair), fit=True)
    largest = float(before.weights.max())
    flat = record.note("before_flat", largest=largest, n=n, uniform=1 / n)
    record.add(
        "before", before.weights, kind="weights", grid=words, row_sums=True, notes=(flat,), fit=True
    )
    true = list(pair.alignment)
    hits = int(np.sum(after.weights[:-1].argmax(axis=1) == true))
    # "the reordered ones included" only where some target word's source is out of order.
    in_order = list(true) == list(range(len(true)))
    found = record.note(
        "after_true_in_order" if in_order else "after_true", hits=hits, rows=len(true)
    )
    trained = Grid(words.rows, words.cols, {"steps": steps})
    record.add(
        "after",
        after.weights,
        kind="weights",
        grid=trained,
        row_sums=True,
        notes=(found,),
        fit=True,
    )


def record_score(record: StepRecorder, before: Score, after: Score) -> None:
    """The alignment score before and after training."""
    rows = [
        {"when": "before training", "share": before.share, "weight": before.weight},
        {"when": "after training", "share": after.share, "weight": after.weight},
    ]
    notes = (
        record.note(
            "learned",
            before=before.share,
            after=after.share,
            before_weight=before.weight,
            after_weight=after.weight,
        ),
        record.note("aligned", after=after.share),
    )
    context = {"words": after.words}
    record.add("score", rows, kind="records", notes=notes, grid=Grid(context=context))


def walkthrough_meta(
    counts: Mapping[str, int], seconds: float, measured: Measured
) -> dict[str, Any]:
    """What a machine reader needs beyond the steps (meta, JSON only)."""
    import torch

    before, after, pair = measured.before_score, measured.after_score, measured.pair
    return {
        "parameters": dict(counts),
        "training_seconds": seconds,
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "alignment_score": {
            "before": {"share": before.share, "weight": before.weight},
            "after": {"share": after.share, "weight": after.weight},
            "words": after.words,
        },
        "by_length": {
            name: {
                "exact": {str(k): v for k, v in found.exact.items()},
                "words": {str(k): v for k, v in found.words.items()},
            }
            for name, found in measured.evaluations.items()
        },
        "sentence": {
            "source": list(pair.source_words),
            "target": list(pair.target_words),
            "true_alignment": list(pair.alignment),
            "step": example_step(pair) + 1,
        },
    }


def rule_notes(record: StepRecorder, pair: data.Pair) -> tuple[Note, ...]:
    """The notes that point at the two rules in the shown sentence's true alignment: where a
    noun and its adjective swap places (their rows cross), and where a moved time word lands."""
    notes = []
    alignment, classes = pair.alignment, pair.source_classes
    swapped = next(
        (
            t
            for t in range(len(alignment) - 1)
            if classes[alignment[t + 1]] == "adj" and alignment[t] == alignment[t + 1] + 1
        ),
        None,
    )  # target t is the noun, t + 1 its adjective
    if swapped is not None:
        notes.append(record.note("adjective_swapped", first=swapped + 1, second=swapped + 2))
    last = len(alignment) - 1
    if classes[alignment[last]] == "time":
        notes.append(
            record.note("time_moved", column=alignment[last] + 1, distance=last - alignment[last])
        )
    return tuple(notes)


def decoder_step(
    record: StepRecorder, model: Seq2Seq, pair: data.Pair, rows: Rows, widths: Mapping[str, int]
) -> None:
    """One decoder step of the trained model as `attn bahdanau` computes it, every term, in
    float64, from the learned W1, W2, v, the sentence's encoder states and the decoder state;
    then the recomputed row against the model's own."""
    t = example_step(pair)
    learned = learned_weights(model)
    h, s = rows.states, rows.queries[t]  # (n, d_h), (d_s,)
    w1, w2, v = learned["W1"], learned["W2"], learned["v"]
    sources = pair.source_words
    n, d_h, d_s, d_a = len(sources), widths["d_h"], widths["d_s"], widths["d_a"]
    word = pair.target_words[t]
    named = {"t": t + 1, "word": word, "source": sources[pair.alignment[t]], "n": n, **widths}
    over_sources = Grid(rows=sources)
    record.add("step.H", h, grid=Grid(sources, None, {"n": n, "d_h": d_h}))
    record.add("step.s", s, grid=Grid(("sₜ₋₁",), None, {"t": t + 1, "d_s": d_s}))
    w1h = mech.project_states(h, w1)  # (n, d_a)
    record.add("step.W1h", w1h, parts=(Part("W1", w1),), grid=Grid(sources, None, named))
    w2s = mech.project_decoder(s, w2)  # (d_a,)
    query = Grid(("W2 sₜ₋₁",), None, {"t": t + 1, "d_a": d_a, "d_s": d_s})
    record.add("step.W2s", w2s, parts=(Part("W2", w2),), grid=query)
    summed = mech.combine(w1h, w2s)  # (n, d_a)
    record.add("step.sum", summed, grid=over_sources)
    activated = mech.squash(summed)  # (n, d_a)
    record.add("step.tanh", activated, grid=over_sources)
    scores = mech.additive_scores(activated, v)  # (n,)
    scored = Grid((f"e_{t + 1}",), sources, {"d_a": d_a})
    record.add("step.scores", scores, parts=(Part("v", v),), grid=scored)
    alpha = attn.softmax(scores[None, :])[0]  # (n,)
    weighted = Grid((f"α_{t + 1}",), sources, {"t": t + 1})
    record.add("step.weights", alpha[None, :], kind="weights", grid=weighted, row_sums=True)
    c = attn.weighted_sum(alpha[None, :], h)[0]  # (d_h,)
    summed_states = Grid((f"c_{t + 1}",), None, {"t": t + 1, "d_h": d_h, "word": word})
    record.add("step.context", c, grid=summed_states)
    difference = float(np.max(np.abs(alpha - rows.weights[t])))
    equal = record.note("equal", tolerance=TOLERANCE)
    checked = Grid(context={"t": t + 1})
    record.add("step.check", difference, kind="scalar", grid=checked, notes=(equal,))


# --- claims: each sentence about the numbers, checked against them ----------------------------


def _records(walkthrough: Walkthrough, key: str) -> list[dict[str, Any]]:
    value = walkthrough.step(key)
    return value if isinstance(value, list) else []


def parameters_differ(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The table's counts differ by ``extra`` = d_a (d_h + d_s + 1), W1, W2 and v."""
    rows = {row["model"]: row["parameters"] for row in _records(walkthrough, "models")}
    d_a, d_h, d_s = values.get("d_a"), values.get("d_h"), values.get("d_s")
    if not all(isinstance(x, int) for x in (d_a, d_h, d_s)):
        return False
    extra = rows.get("attention", 0) - rows.get("fixed vector", 0)
    return extra == values.get("extra") == d_a * (d_h + d_s + 1)  # type: ignore[operator]


def _by_length(walkthrough: Walkthrough) -> dict[int, dict[str, Any]]:
    return {row["length"]: row for row in _records(walkthrough, "by_length")}


def attention_ahead(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """On the longest length the table's attention exact-match is above the fixed vector's."""
    table = _by_length(walkthrough)
    row = table.get(values.get("longest", -1))
    return (
        row is not None
        and values.get("longest") == max(table)
        and row["attention_exact"] == values.get("attention")
        and row["fixed_exact"] == values.get("fixed")
        and row["attention_exact"] > row["fixed_exact"]
    )


def fixed_falls(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The fixed vector's exact-match is lower on the longest length than on the shortest."""
    table = _by_length(walkthrough)
    if not table:
        return False
    short, long = table[min(table)]["fixed_exact"], table[max(table)]["fixed_exact"]
    return short == values.get("short") and long == values.get("long") and long < short


def _attention_lowest_if_it_holds(walkthrough: Walkthrough) -> float | None:
    """The attention model's lowest exact-match over the lengths, if it is at least 0.9 and the
    fixed vector falls below it somewhere (otherwise "holds" contrasts with nothing); else None."""
    rows = list(_by_length(walkthrough).values())
    lowest = min((row["attention_exact"] for row in rows), default=-1.0)
    fixed_lowest = min((row["fixed_exact"] for row in rows), default=2.0)
    return lowest if lowest >= 0.9 and fixed_lowest < lowest else None


def attention_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The attention model holds (see above), and its lowest exact-match is ``lowest``."""
    lowest = _attention_lowest_if_it_holds(walkthrough)
    return lowest is not None and lowest == values.get("lowest")


def paper_shape(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Both halves of the paper's figure: the fixed vector falls from the shortest length to
    the longest, and the attention model holds."""
    table = _by_length(walkthrough)
    if not table or _attention_lowest_if_it_holds(walkthrough) is None:
        return False
    return table[max(table)]["fixed_exact"] < table[min(table)]["fixed_exact"]


def _truth_columns(walkthrough: Walkthrough) -> list[int]:
    """Each target word's true source word (0-based), read off the truth step, end left out."""
    truth = np.asarray(walkthrough.step("truth"))[:-1]
    return [int(column) for column in truth.argmax(axis=1)]


def adjective_swapped(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Rows ``first`` and ``second`` (1-based, adjacent) take adjacent source words in the
    opposite order: their marks cross."""
    columns = _truth_columns(walkthrough)
    first, second = values.get("first"), values.get("second")
    if not isinstance(first, int) or second != first + 1 or not 1 <= first < len(columns):
        return False
    return columns[first - 1] == columns[second - 1] + 1


def time_moved(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The last word's true source word is ``column`` (1-based), ``distance`` >= 1 columns left
    of the diagonal."""
    columns = _truth_columns(walkthrough)
    last = len(columns) - 1
    return (
        bool(columns)
        and columns[last] + 1 == values.get("column")
        and last - columns[last] == values.get("distance")
        and last - columns[last] >= 1
    )


def before_flat(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Before training the largest weight is ``largest``, under twice the even spread's 1/n."""
    weights = np.asarray(walkthrough.step("before"))
    n = weights.shape[1]
    largest = float(weights.max())
    return largest == values.get("largest") and values.get("n") == n and largest < 2 / n


def after_true(walkthrough: Walkthrough, values: Mapping[str, Any], reordered: bool = True) -> bool:
    """``hits`` of the ``rows`` target words have their argmax on the true source word (the
    truth step's 1), and that is every one of them; ``reordered``: some target word's true
    source is not the source word of its own position (the note says "the reordered ones
    included"), else none is."""
    weights = np.asarray(walkthrough.step("after"))[:-1]
    truth = np.asarray(walkthrough.step("truth"))[:-1]
    sources = truth.argmax(axis=1)
    hits = int(np.sum(weights.argmax(axis=1) == sources))
    moved = bool(np.any(sources != np.arange(len(sources))))
    every = hits == values.get("hits") and values.get("rows") == len(truth) == hits
    return every and moved == reordered


def _scores(walkthrough: Walkthrough) -> dict[str, dict[str, Any]]:
    return {row["when"]: row for row in _records(walkthrough, "score")}


def learned(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The score table's before and after, and training raised both the share and the weight."""
    rows = _scores(walkthrough)
    before, after = rows.get("before training"), rows.get("after training")
    return (
        before is not None
        and after is not None
        and (before["share"], after["share"]) == (values.get("before"), values.get("after"))
        and (before["weight"], after["weight"])
        == (values.get("before_weight"), values.get("after_weight"))
        and after["share"] > before["share"]
        and after["weight"] > before["weight"]
    )


def aligned(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The after share is the table's, and at least 0.9: a claim of alignment, not of noise."""
    after = _scores(walkthrough).get("after training")
    return after is not None and after["share"] == values.get("after") and after["share"] >= 0.9


def rows_equal(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The recomputed row and the model's differ by at most ``tolerance``."""
    difference = walkthrough.step("step.check")
    tolerance = values.get("tolerance")
    return (
        isinstance(tolerance, float) and isinstance(difference, float) and difference <= tolerance
    )


STEP_NAMES = ("t", "word", "source", "n", "d_h", "d_s", "d_a")
TEXTS = Texts(
    steps={
        "examples": ("pairs", "shortest", "longest"),
        "models": ("d_h", "d_s", "d_a", "rate", "steps", "batch"),
        "training": ("every", "sample", "seconds"),
        "by_length": ("per_length",),
        "truth": ("status",),
        "before": (),
        "after": ("steps",),
        "score": ("words",),
        "step.H": ("n", "d_h"),
        "step.s": ("t", "d_s"),
        "step.W1h": STEP_NAMES,
        "step.W2s": ("t", "d_a", "d_s"),
        "step.sum": (),
        "step.tanh": (),
        "step.scores": ("d_a",),
        "step.weights": ("t",),
        "step.context": ("t", "d_h", "word"),
        "step.check": ("t",),
    },
    notes={
        "parameters": ("extra", "attention", "fixed", "d_a", "d_h", "d_s"),
        "attention_ahead_longest": ("longest", "attention", "fixed"),
        "fixed_falls": ("short", "shortest", "long", "longest"),
        "attention_holds": ("lowest",),
        "paper_shape": (),
        "adjective_swapped": ("first", "second"),
        "time_moved": ("column", "distance"),
        "before_flat": ("largest", "n", "uniform"),
        "after_true": ("hits", "rows"),
        "after_true_in_order": ("hits", "rows"),
        "learned": ("before", "after", "before_weight", "after_weight"),
        "aligned": ("after",),
        "equal": ("tolerance",),
    },
    claims={
        "parameters": parameters_differ,
        "attention_ahead_longest": attention_ahead,
        "fixed_falls": fixed_falls,
        "attention_holds": attention_holds,
        "paper_shape": paper_shape,
        "adjective_swapped": adjective_swapped,
        "time_moved": time_moved,
        "before_flat": before_flat,
        "after_true": after_true,
        "after_true_in_order": lambda w, v: after_true(w, v, reordered=False),
        "learned": learned,
        "aligned": aligned,
        "equal": rows_equal,
    },
)


# --- --code, and the declaration -------------------------------------------------------------


def program(options: LearnOptions) -> str:
    """The training program of --code, with these options written in (refused where they do
    not fit, as a run would refuse them)."""
    from attn_cli.learn.translate_program import program_text

    options = options.resolved(steps=STEPS, hidden=HIDDEN, max_len=MAX_LEN)
    check_options(options)
    assert options.steps is not None and options.hidden is not None and options.max_len is not None
    return program_text(
        seed=options.seed,
        steps=options.steps,
        hidden=options.hidden,
        max_len=options.max_len,
        batch=BATCH,
        rate=LEARNING_RATE,
        clip=CLIP,
        per_length=HELD_OUT_PER_LENGTH,
        threads=THREADS,
    )


TASK = Task(NAME, TEXTS, run, program, figure=translate_figure, reads_sentence=True)
