"""The generated language of `attn learn grammar`, from the seed (numpy only).

The lectures open on the self-attention heatmap of "the cat sat on the soft red mat", where
*soft* and *red* attend to *mat*, and *cat* to *sat*. This language makes those words depend on
each other: it has the English words of that sentence (and a few more), in English order, but
like many languages it marks each word with an ending that another word decides:

- a determiner, an adjective and a verb agree with a noun: each noun is of one of three classes
  (I, II, III, as a gender), and *the* and *soft* and *red* take the class of the noun they go
  with, the verb the class of its subject ("the·II cat sat·II", "the·I soft·I red·I mat");
- a subject's case is decided by its verb (an ergative language): the subject of a verb that
  takes an object (saw, chased) is ergative, ERG; of one that takes none (sat, slept),
  absolutive, ABS;
- the noun after a preposition takes the case the preposition governs: LOC after *on* and
  *under*, INS after *with*, DAT after *to* ("on the soft red mat·LOC").

The word whose ending a word takes is its **head** here (the word it depends on); an object
and a preposition have none. The task hides every ending (a sentence is its bare words) and asks
for the ending of each word that has a head: the words themselves never say it (every
determiner, adjective and verb goes with every class; a noun's case is not in the noun), so it
cannot be known without reading the head word.

Sentences: ``NP [prep NP] verb [NP] [prep NP]`` with ``NP = det adj{0,2} noun``, a subject
modified by a prepositional phrase now and then ("the cat on the mat sat·II": the verb agrees
with *cat*, not with the nearer *mat*), an object only after a verb that takes one (and not
always). Lengths from 3 words ("the cat sat") to 19.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

# The lectures' sentence, a sentence of this language; never trained on.
LECTURE = "the cat sat on the soft red mat"
# The order of words in a sentence, as the errors say it.
GRAMMAR = "NP [prep NP] verb [NP] [prep NP], NP = det adj{0,2} noun"

# Each noun with its class.
NOUNS: dict[str, str] = {
    "cat": "II",
    "dog": "I",
    "bird": "III",
    "mat": "I",
    "rug": "II",
    "box": "III",
    "hat": "I",
    "girl": "II",
    "boy": "III",
    "tree": "I",
    "house": "II",
    "fish": "III",
}
# Each verb with the case of its subject: ABS when it takes no object, ERG when it does.
VERBS: dict[str, str] = {
    "sat": "ABS",
    "slept": "ABS",
    "ran": "ABS",
    "waited": "ABS",
    "saw": "ERG",
    "chased": "ERG",
    "liked": "ERG",
    "found": "ERG",
}
# Each preposition with the case it governs.
PREPOSITIONS: dict[str, str] = {"on": "LOC", "under": "LOC", "with": "INS", "to": "DAT"}
WORDS: dict[str, tuple[str, ...]] = {
    "det": ("the", "a"),
    "adj": ("soft", "red", "big", "old", "small", "black", "green", "warm"),
    "noun": tuple(NOUNS),
    "verb": tuple(VERBS),
    "prep": tuple(PREPOSITIONS),
}
CLASSES: tuple[str, ...] = tuple(WORDS)
# The word classes as the output names them.
CLASS_NAMES = {
    "det": "determiner",
    "adj": "adjective",
    "noun": "noun",
    "verb": "verb",
    "prep": "preposition",
}

VOCABULARY: tuple[str, ...] = tuple(word for name in CLASSES for word in WORDS[name])
TOKEN = {word: index for index, word in enumerate(VOCABULARY)}
CLASS_OF = {word: name for name in CLASSES for word in WORDS[name]}

# The endings a word may take: the three noun classes, then the cases.
ENDINGS: tuple[str, ...] = ("I", "II", "III", "ABS", "ERG", "LOC", "INS", "DAT")
ENDING = {name: index for index, name in enumerate(ENDINGS)}
NONE = -1  # no ending asked (a word without a head): left out of the loss and the scores

# Why a word depends on its head, by the pair of classes (dependent, head).
RELATIONS: dict[tuple[str, str], str] = {
    ("det", "noun"): "a determiner agrees with its noun",
    ("adj", "noun"): "an adjective agrees with its noun",
    ("verb", "noun"): "a verb agrees with its subject",
    ("noun", "verb"): "a subject's case is set by its verb",
    ("noun", "prep"): "a preposition sets its noun's case",
}

MIN_LENGTH = 3  # "the cat sat"
MOST_ADJECTIVES = 2


@dataclass(frozen=True)
class Structure:
    """A sentence's shape: each word's class and each word's head (its index; NONE for a word
    without one)."""

    classes: tuple[str, ...]
    heads: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.classes)


@dataclass(frozen=True)
class Sentence:
    """A sentence: its words (token ids), each word's head (NONE: none) and the ending it takes
    (NONE where it has no head)."""

    tokens: tuple[int, ...]
    heads: tuple[int, ...]
    endings: tuple[int, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(VOCABULARY[token] for token in self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def rendering(self) -> str:
        """The sentence as the language writes it, each ending after its word (·): an
        absolutive, like a word without a head, has none to show."""
        return " ".join(
            word if ending in (NONE, ENDING["ABS"]) else f"{word}·{ENDINGS[ending]}"
            for word, ending in zip(self.words, self.endings, strict=True)
        )


def _noun_phrase(adjectives: int) -> tuple[str, ...]:
    return ("det", *("adj",) * adjectives, "noun")


def _phrase_heads(start: int, adjectives: int) -> tuple[int, ...]:
    """A noun phrase at ``start``: the determiner and each adjective point at the noun (the
    noun's own head is set by the clause)."""
    noun = start + adjectives + 1
    return (*(noun,) * (adjectives + 1), NONE)


class _Builder:
    """A sentence's structure as it is laid out, word by word."""

    def __init__(self) -> None:
        self.classes: list[str] = []
        self.heads: list[int] = []

    def phrase(self, adjectives: int, preposition: bool) -> int:
        """Append a noun phrase (after a preposition if asked); the noun's index."""
        if preposition:
            self.classes.append("prep")
            self.heads.append(NONE)
        start = len(self.classes)
        self.classes.extend(_noun_phrase(adjectives))
        self.heads.extend(_phrase_heads(start, adjectives))
        noun = start + adjectives + 1
        if preposition:
            self.heads[noun] = start - 1  # the preposition sets its case
        return noun

    def verb(self, transitive: bool, subject: int) -> None:
        """Append the verb: it agrees with its subject, whose case it sets."""
        self.classes.append("verb_t" if transitive else "verb_i")
        self.heads.append(subject)
        self.heads[subject] = len(self.classes) - 1

    def structure(self) -> Structure:
        return Structure(tuple(self.classes), tuple(self.heads))


@functools.cache
def structures() -> dict[int, tuple[Structure, ...]]:
    """Every structure the grammar makes, by length."""
    found: list[Structure] = []
    sizes = range(MOST_ADJECTIVES + 1)
    optional = (None, *sizes)  # an optional noun phrase: absent, or with 0 … 2 adjectives
    for subject, modifier, transitive, obj, place in itertools.product(
        sizes, optional, (False, True), optional, optional
    ):
        if obj is not None and not transitive:
            continue
        sentence = _Builder()
        subject_noun = sentence.phrase(subject, False)
        if modifier is not None:
            sentence.phrase(modifier, True)
        sentence.verb(transitive, subject_noun)
        if obj is not None:
            sentence.phrase(obj, False)  # an object: no ending asked of it
        if place is not None:
            sentence.phrase(place, True)
        found.append(sentence.structure())
    by_length: dict[int, list[Structure]] = {}
    for structure in found:
        by_length.setdefault(len(structure), []).append(structure)
    return {length: tuple(shapes) for length, shapes in sorted(by_length.items())}


# A verb's slot in a structure says which verbs fit it.
_SLOT_WORDS: dict[str, tuple[str, ...]] = {
    **WORDS,
    "verb_i": tuple(verb for verb, case in VERBS.items() if case == "ABS"),
    "verb_t": tuple(verb for verb, case in VERBS.items() if case == "ERG"),
}


def endings(tokens: Sequence[int], heads: Sequence[int]) -> tuple[int, ...]:
    """Each word's ending, read off its head: the class of a noun head, the case a verb or a
    preposition head sets (NONE for a word without a head)."""
    words = [VOCABULARY[token] for token in tokens]
    found = []
    for head in heads:
        if head == NONE:
            found.append(NONE)
            continue
        word = words[head]
        kind = CLASS_OF[word]
        if kind == "noun":
            found.append(ENDING[NOUNS[word]])
        elif kind == "verb":
            found.append(ENDING[VERBS[word]])
        else:
            found.append(ENDING[PREPOSITIONS[word]])
    return tuple(found)


def draw(rng: np.random.Generator, length: int, count: int) -> list[Sentence]:
    """``count`` sentences of ``length`` words: a structure of that length, each equally likely,
    then each word of its slot, each equally likely."""
    shapes = structures().get(length)
    if not shapes:
        raise ValueError(f"the grammar makes no sentence of {length} words")
    chosen = rng.integers(len(shapes), size=count)
    draws = rng.random((count, length))
    sentences = []
    for index, row in zip(chosen, draws, strict=True):
        shape = shapes[int(index)]
        tokens = tuple(
            TOKEN[_SLOT_WORDS[slot][int(draw * len(_SLOT_WORDS[slot]))]]
            for slot, draw in zip(shape.classes, row, strict=True)
        )
        sentences.append(Sentence(tokens, shape.heads, endings(tokens, shape.heads)))
    return sentences


def _clipped(word: str) -> str:
    """A word as an error quotes it: its first 40 characters (a 40,000-character "word" is
    never echoed whole). Here, not imported: --code prints this module as a program."""
    return word if len(word) <= 40 else f"{word[:40]}…"


class GrammarError(ValueError):
    """A sentence this language does not make, with what is wrong in words."""


def parse(text: str) -> Sentence:
    """A sentence typed in, as the grammar reads it (its heads and endings); a GrammarError
    naming the first word that does not fit."""
    words = text.split()
    if not words:
        raise GrammarError("the sentence is empty")
    unknown = [word for word in words if word not in TOKEN]
    if unknown:
        raise GrammarError(f"{_clipped(unknown[0])!r} is not a word of the language")
    tokens = tuple(TOKEN[word] for word in words)
    kinds = tuple(CLASS_OF[word] for word in words)
    for shapes in structures().values():
        for shape in shapes:
            if len(shape) == len(words) and all(
                kind == slot.split("_")[0] and word in _SLOT_WORDS[slot]
                for kind, slot, word in zip(kinds, shape.classes, words, strict=True)
            ):
                return Sentence(tokens, shape.heads, endings(tokens, shape.heads))
    raise GrammarError(_why_not(words))


def _why_not(words: Sequence[str]) -> str:
    """The longest start of ``words`` that some sentence begins with, and the word after it."""
    starts = {
        shape.classes[:k] for shapes in structures().values() for shape in shapes for k in
        range(len(shape) + 1)
    }  # fmt: skip
    slots: list[tuple[str, ...]] = [()]
    for position, word in enumerate(words):
        grown = [
            (*prefix, slot)
            for prefix in slots
            for slot in ("det", "adj", "noun", "verb_i", "verb_t", "prep")
            if word in _SLOT_WORDS[slot] and (*prefix, slot) in starts
        ]
        if not grown and position == 0:
            return f"{word!r} cannot start a sentence of this language"
        if not grown:
            return f"{word!r} cannot come after {' '.join(words[:position])!r} in this language"
        slots = grown
    return f"{' '.join(words)!r} stops before the sentence is complete"


@dataclass(frozen=True)
class Corpus:
    """The held-out sentences (``per_length`` of each length, the lectures' sentence among them;
    never trained on) and the training batches (each of one length)."""

    max_len: int
    held_out: dict[int, tuple[Sentence, ...]]
    seed: int

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(self.held_out)

    def sentences(self) -> list[Sentence]:
        """Every held-out sentence, the shortest first."""
        return [sentence for found in self.held_out.values() for sentence in found]

    def held_out_tokens(self) -> frozenset[tuple[int, ...]]:
        return frozenset(s.tokens for found in self.held_out.values() for s in found)

    def batches(self, size: int) -> Iterator[list[Sentence]]:
        """Training batches without end: a length drawn uniformly, then ``size`` sentences of
        it, none of them a held-out one (such a draw is drawn again)."""
        rng = np.random.default_rng([self.seed, 1])
        avoid = self.held_out_tokens()
        while True:
            length = self.lengths[int(rng.integers(len(self.lengths)))]
            batch: list[Sentence] = []
            while len(batch) < size:
                drawn = draw(rng, length, size - len(batch))
                batch += [sentence for sentence in drawn if sentence.tokens not in avoid]
            yield batch


def lecture_sentence() -> Sentence:
    return parse(LECTURE)


def corpus(seed: int, max_len: int, per_length: int) -> Corpus:
    """``per_length`` distinct held-out sentences of each length from MIN_LENGTH to
    ``max_len`` (fewer where the grammar has fewer), the lectures' sentence added to its
    length's (from their own stream: the training batches never change them)."""
    rng = np.random.default_rng([seed, 0])
    lecture = lecture_sentence()
    held_out: dict[int, tuple[Sentence, ...]] = {}
    for length in range(MIN_LENGTH, max_len + 1):
        seen: dict[tuple[int, ...], Sentence] = {}
        if length == len(lecture):
            seen[lecture.tokens] = lecture
        for _ in range(20):  # a short length has few distinct sentences
            for sentence in draw(rng, length, per_length):
                seen.setdefault(sentence.tokens, sentence)
            if len(seen) >= per_length:
                break
        held_out[length] = tuple(list(seen.values())[:per_length])
    return Corpus(max_len=max_len, held_out=held_out, seed=seed)


# --- what a word's head decides, and the scores ----------------------------------------------


def relation(sentence: Sentence, word: int) -> str | None:
    """Why word ``word`` depends on its head (a RELATIONS value); None for a word without one."""
    head = sentence.heads[word]
    if head == NONE:
        return None
    words = sentence.words
    return RELATIONS[(CLASS_OF[words[word]], CLASS_OF[words[head]])]


def _ending_from(word: str, dependent: str) -> int | None:
    """The ending ``word`` would give a word of class ``dependent`` that took it as its head
    (None where it could not be its head)."""
    kind = CLASS_OF[word]
    if dependent in ("det", "adj", "verb"):
        return ENDING[NOUNS[word]] if kind == "noun" else None
    if dependent == "noun" and kind == "verb":
        return ENDING[VERBS[word]]
    if dependent == "noun" and kind == "prep":
        return ENDING[PREPOSITIONS[word]]
    return None


def competing(sentence: Sentence) -> tuple[bool, ...]:
    """For each word with a head: whether another word of the sentence, of a kind that could be
    its head, would give it another ending (a second noun of another class, a preposition
    beside the verb): the words whose ending cannot be told without finding which word is the
    head. False for a word without a head."""
    words = sentence.words
    found = []
    for i, (head, ending) in enumerate(zip(sentence.heads, sentence.endings, strict=True)):
        if head == NONE:
            found.append(False)
            continue
        dependent = CLASS_OF[words[i]]
        others = (
            _ending_from(word, dependent) for j, word in enumerate(words) if j not in (i, head)
        )
        found.append(any(other is not None and other != ending for other in others))
    return tuple(found)


def head_scores(
    patterns: Sequence[Sequence[np.ndarray]], sentences: Sequence[Sentence]
) -> tuple[np.ndarray, np.ndarray]:
    """Each head's alignment with the grammar: (layers, heads) each, over every word with a head
    in ``sentences`` (``patterns[s][l]``: sentence s's layer l weights, (heads, n, n)):

    * the share whose head gets more weight than any other word (a tie, as an even spread's,
      is no hit);
    * the mean weight on the head (an even spread's: the mean of 1/n)."""
    hits: np.ndarray | None = None
    weight: np.ndarray | None = None
    count = 0
    for sentence, layers in zip(sentences, patterns, strict=True):
        heads = np.array(sentence.heads)
        asked = np.flatnonzero(heads != NONE)  # (k,) the words with a head
        stacked = np.stack(list(layers))  # (layers, heads, n, n)
        rows = stacked[:, :, asked, :]  # (layers, heads, k, n)
        on_head = rows[..., np.arange(len(asked)), heads[asked]]  # (layers, heads, k)
        others = rows.copy()
        others[..., np.arange(len(asked)), heads[asked]] = -np.inf
        found = np.sum(on_head > others.max(axis=-1), axis=-1)  # (layers, heads)
        total = np.sum(on_head, axis=-1)
        hits = found if hits is None else hits + found
        weight = total if weight is None else weight + total
        count += len(asked)
    assert hits is not None and weight is not None
    return hits / count, weight / count
