"""Telling a student what went wrong (issue 56): the mistake their numbers show, and whether a
step follows correctly from their own earlier answer (error carried forward, as examiners mark).

A lesson declares, in its folder's ``mistakes.py`` (``STEPS``: step key -> :class:`StepMistakes`),
for each step a student works: the step it is computed from (``after``), the step as the
student's own answer to that one gives it (``follows``), and the mistakes students make there,
each a function of the step's inputs (attn_cli.mechanisms.mistakes) with what it is in plain
words. A key may stand for every step of a repeated kind, its number written ``*``
(``head*.output`` for head1.output, head2.output, ...). A mistake is named only when the
student's numbers match its result to the student's own decimals, and never for a right answer.

The quiz asks row by row (attn_cli.run.quiz); :func:`mark` marks a whole working at once, for
``attn check`` on a homework file and the Python API (``attn.mark``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from attn_cli.core.model import Walkthrough
from attn_cli.core.numbers import format_number
from attn_cli.core.rounding import Rounded
from attn_cli.mechanisms import mistakes as made


@dataclass(frozen=True)
class Given:
    """What a step is computed from: the walkthrough (its inputs and steps, exact) and the value
    of the step before it (``before``: exact, or the student's own answer)."""

    walkthrough: Walkthrough
    before: Any  # (m, n) float64 or None for the first step
    key: str = ""  # the step's own key: head2.output

    def input(self, name: str) -> np.ndarray:
        (value,) = [
            np.asarray(i.value, dtype=np.float64) for i in self.walkthrough.inputs if i.name == name
        ]
        return value

    def step(self, key: str) -> np.ndarray:
        return np.asarray(self.walkthrough.find(key).value, dtype=np.float64)

    def sibling(self, name: str) -> np.ndarray:
        """The step ``name`` of this step's own group: for head2.output, "Q" is head2.Q."""
        prefix = self.key.rpartition(".")[0]
        return self.step(f"{prefix}.{name}" if prefix else name)

    def option(self, name: str) -> Any:
        """What the walkthrough says of a setting (its ``meta``), e.g. block's eps."""
        return self.walkthrough.meta.get(name, self.walkthrough.meta.get("options", {}).get(name))


Words = str | Callable[[Given], str]


@dataclass(frozen=True)
class Mistake:
    """A mistake at a step: what it is (words, or a function of the step's inputs that writes
    them with its numbers) and what a student who made it writes (None: not at these shapes)."""

    says: Words
    made: Callable[[Given], np.ndarray | None]

    def words(self, given: Given) -> str:
        return self.says if isinstance(self.says, str) else self.says(given)


@dataclass(frozen=True)
class StepMistakes:
    """A step's mistakes, and the step computed right from its previous step's value (None:
    the first step, computed from the inputs alone)."""

    follows: Callable[[Given, np.ndarray], np.ndarray] | None
    mistakes: tuple[Mistake, ...]
    # The step it is computed from, as written here (head*.weights: the same head's); "" for
    # the step before it in the walkthrough, None for none (computed from the inputs alone).
    after: str | None = ""


# --- the mistakes of the steps every scaled dot-product attention has ---------------------------
# Shared by the lessons that compute them (scaled, selfattn, window, causal, graph, multihead):
# each takes the step's own reading of d_k and of the scores it scales or normalises.


def root_of(d_k: int) -> str:
    return f"√d_k = √{d_k} = {format_number(math.sqrt(d_k), 4)}"


def score_mistakes(
    q: Callable[[Given], np.ndarray], k: Callable[[Given], np.ndarray]
) -> tuple[Mistake, ...]:
    """S = Q Kᵀ's: K not transposed, the scores transposed."""
    return (
        Mistake(
            "these are Q K, with K not transposed: each entry a row of Q times a column of K",
            lambda g: made.k_not_transposed(q(g), k(g)),
        ),
        Mistake(
            "these are the scores transposed (Kᵀ Q's entries): row j is key j against each "
            "query, where row i should be query i against each key",
            lambda g: made.keys_times_queries(q(g), k(g)),
        ),
    )


def scale_mistakes(d_k: Callable[[Given], int]) -> tuple[Mistake, ...]:
    """S / √d_k's, from the scores before (``Given.before``): the scale forgotten, divided by
    d_k, multiplied by √d_k."""
    return (
        Mistake(
            lambda g: f"these are the scores before dividing by {root_of(d_k(g))}",
            lambda g: made.not_scaled(g.before, d_k(g)),
        ),
        Mistake(
            lambda g: (
                f"these are the scores divided by d_k = {d_k(g)}, where the scale is {root_of(d_k(g))}"
            ),
            lambda g: made.divided_by_d_k(g.before, d_k(g)),
        ),
        Mistake(
            lambda g: (
                f"these are the scores multiplied by {root_of(d_k(g))}, where they are divided by it"
            ),
            lambda g: made.multiplied_by_root(g.before, d_k(g)),
        ),
    )


# The softmax along the rows, from the scores before it (Given.before).
SOFTMAX_MISTAKES: tuple[Mistake, ...] = (
    Mistake(
        "this is the softmax down each column; each row (one query's scores) is the "
        "distribution, so each row of weights sums to 1",
        lambda g: made.softmax_down_columns(g.before),
    ),
    Mistake(
        "these are the scores divided by their row's sum; softmax divides e^s by Σ e^s",
        lambda g: made.normalised_by_the_sum(g.before),
    ),
    Mistake(
        "these are e^s, not yet divided by the row's sum Σ e^s",
        lambda g: made.not_normalised(g.before),
    ),
)


def softmax_follows(g: Given, s: np.ndarray) -> np.ndarray:
    return made.softmax_rows(s)


def attention_mistakes(
    q: Callable[[Given], np.ndarray],
    k: Callable[[Given], np.ndarray],
    v: Callable[[Given], np.ndarray],
) -> dict[str, StepMistakes]:
    """The steps of softmax(Q Kᵀ / √d_k) V, ``scores``, ``scaled``, ``weights`` and
    ``output``, with Q, K and V read by ``q``, ``k`` and ``v`` (a lesson's inputs, or its own
    projection steps)."""

    def d_k(given: Given) -> int:
        return q(given).shape[1]

    return {
        "scores": StepMistakes(follows=None, mistakes=score_mistakes(q, k), after=None),
        "scaled": StepMistakes(
            follows=lambda g, s: s / math.sqrt(d_k(g)),
            mistakes=scale_mistakes(d_k),
            after="scores",
        ),
        "weights": StepMistakes(
            follows=softmax_follows,
            mistakes=(
                *SOFTMAX_MISTAKES,
                Mistake(
                    lambda g: (
                        f"this is the softmax of the scores before dividing by {root_of(d_k(g))}"
                    ),
                    lambda g: made.softmax_rows(g.step("scores")),
                ),
            ),
        ),
        "output": StepMistakes(
            follows=lambda g, a: a @ v(g),
            mistakes=(
                Mistake(
                    "these are the scaled scores times V; the output is the weights times V",
                    lambda g: made.scores_times_values(g.step("scaled"), v(g)),
                ),
            ),
        ),
    }


def mask_mistakes(scores: str, mask: str, blocked: str) -> dict[str, StepMistakes]:
    """The mask (0 and −∞), the masked scores and their softmax, of a lesson that adds a mask
    (step ``mask``) to its scores (step ``scores``); ``blocked``: the keys it blocks, in words
    ("the keys outside the window")."""
    zeros = (
        f"the masked entries are 0, where the mask makes them −∞: a score of 0 still has weight "
        f"e⁰ = 1, so {blocked} keep weight"
    )
    return {
        mask: StepMistakes(
            follows=None,
            mistakes=(
                Mistake(
                    f"a mask of 0s masks nothing: {blocked} need −∞",
                    lambda g: np.zeros_like(g.step(mask)),
                ),
                Mistake(
                    "this mask writes 1 for a blocked key; the mask adds −∞ there and 0 elsewhere",
                    lambda g: np.isneginf(g.step(mask)).astype(np.float64),
                ),
            ),
            after=None,
        ),
        "masked": StepMistakes(
            follows=lambda g, m: g.step(scores) + m,
            mistakes=(
                Mistake(
                    f"these are the scores unmasked: {blocked} need −∞ (adding 0 masks nothing)",
                    lambda g: g.step(scores),
                ),
                Mistake(zeros, lambda g: made.masked_with_zeros(g.step(scores), g.step(mask))),
            ),
        ),
        "weights": StepMistakes(
            follows=softmax_follows,
            mistakes=(
                *SOFTMAX_MISTAKES,
                Mistake(
                    f"this is the softmax of the unmasked scores: {blocked} keep weight",
                    lambda g: made.softmax_rows(g.step(scores)),
                ),
                Mistake(
                    zeros, lambda g: made.softmax_masked_with_zeros(g.step(scores), g.step(mask))
                ),
            ),
        ),
    }


# A repeated step's number in a declared key: head*.output stands for head1.output, head2.output.
_NUMBER = re.compile(r"\d+")


def declared_for(steps: Mapping[str, StepMistakes], key: str) -> StepMistakes | None:
    """The mistakes ``steps`` declares for step ``key``, by its own key or its kind's."""
    return steps.get(key) or steps.get(_NUMBER.sub("*", key))


def before_key(steps: Mapping[str, StepMistakes], walkthrough: Walkthrough, key: str) -> str | None:
    """The step that step ``key`` is computed from (None: the inputs alone)."""
    declared = declared_for(steps, key)
    keys = [step.key for step in walkthrough.steps]
    if declared is None or declared.after == "":
        position = keys.index(key)
        return keys[position - 1] if position > 0 else None
    if declared.after is None:
        return None
    numbers = _NUMBER.findall(key)
    named = declared.after.replace("*", numbers[0]) if numbers else declared.after
    return named if named in keys else None


def agrees(answer: list[Rounded], row: np.ndarray, decimals: int) -> bool:
    """Whether a typed row is ``row`` to the decimals each number was typed with (a whole
    number: whole to ``decimals``, those the lesson shows)."""
    row = np.asarray(row, dtype=np.float64).reshape(-1)
    return (
        len(answer) == row.size
        and not bool(np.any(np.isnan(row)))  # a mistake's 0/0; −∞ (a mask) is a number typed
        and all(number.says(float(v), decimals) for number, v in zip(answer, row, strict=True))
    )


def diagnosis(
    steps: Mapping[str, StepMistakes],
    walkthrough: Walkthrough,
    key: str,
    row: int,
    answer: list[Rounded],
    previous: np.ndarray | None,
    decimals: int = 4,
    whole: Sequence[list[Rounded] | None] | None = None,
) -> tuple[str, str] | None:
    """What a wrong ``answer`` (row ``row`` of step ``key``) shows, as (kind, words): "follows"
    when it is right for the student's own ``previous`` step (their answer to the step before,
    when wrong), "mistake" when it is a named mistake's result (from the exact previous step,
    or from the student's own; every mistake that gives those numbers, or with the student's
    ``whole`` answer to the step, those of them that give every row of it, where some do);
    None when neither."""
    declared = declared_for(steps, key)
    if declared is None:
        return None
    after = before_key(steps, walkthrough, key)
    exact_before = None if after is None else Given(walkthrough, None).step(after)
    if previous is not None and declared.follows is not None:
        with np.errstate(all="ignore"):
            followed = declared.follows(Given(walkthrough, previous, key), previous)
        if agrees(answer, np.reshape(followed, (-1, np.shape(followed)[-1]))[row], decimals):
            return "follows", f"right for your {after} step"
    for before in (exact_before, previous):
        if before is None and after is not None:
            continue
        given = Given(walkthrough, before, key)
        carried = "" if before is exact_before else f" (from your {after} step)"
        found = []
        for mistake in declared.mistakes:
            try:
                with np.errstate(all="ignore"):
                    result = mistake.made(given)
            except KeyError:  # about a step this run has not (the scaled scores of --no-scale)
                continue
            if result is not None and np.ndim(result) < 2:
                result = np.reshape(result, (1, -1))  # a vector step is one row
            if result is not None and row < len(result) and agrees(answer, result[row], decimals):
                found.append((mistake.words(given) + carried, _gives(result, whole, decimals)))
        if any(everywhere for _, everywhere in found):  # the mistake of the whole working
            found = [(words, True) for words, everywhere in found if everywhere]
        if found:  # several mistakes can give the same numbers (Q K and K Qᵀ where Q = I)
            return "mistake", "; or ".join(words for words, _ in found)
    return None


def _gives(result: np.ndarray, whole: Sequence[list[Rounded] | None] | None, decimals: int) -> bool:
    """Whether a mistake's ``result`` gives every row the student wrote of ``whole`` (None: a
    row not written)."""
    if whole is None or len(whole) != len(result):
        return False
    return all(
        row is None or agrees(row, result[index], decimals) for index, row in enumerate(whole)
    )


Verdict = Literal["right", "follows", "mistake", "wrong"]


@dataclass(frozen=True)
class RowMark:
    """One row of a student's working, marked: right, right for their own earlier answer
    ("follows"), a named mistake, or wrong with no mistake we know; ``words`` says which."""

    step: str
    row: int  # 1-based, as the tables number rows
    verdict: Verdict
    words: str = ""

    def __str__(self) -> str:
        said = {"right": "right", "follows": "follows", "mistake": "✗", "wrong": "✗ not right"}
        line = f"{self.step} row {self.row}: {said[self.verdict]}"
        return f"{line}: {self.words}" if self.words else line


@dataclass(frozen=True)
class Marking:
    """A student's working marked row by row, as an examiner marks it (error carried forward)."""

    rows: tuple[RowMark, ...]

    def count(self, verdict: Verdict) -> int:
        return sum(row.verdict == verdict for row in self.rows)

    @property
    def right(self) -> int:
        return self.count("right")

    @property
    def followed(self) -> int:
        return self.count("follows")

    def summary(self) -> str:
        """ "5 of 8 rows right; 2 more right for your own earlier answers"."""
        line = f"{self.right} of {len(self.rows)} rows right"
        if self.followed:
            line += f"; {self.followed} more right for your own earlier answers"
        return line

    def __str__(self) -> str:
        return "\n".join([*(str(row) for row in self.rows), self.summary() + "."])


def mark(
    steps: Mapping[str, StepMistakes],
    walkthrough: Walkthrough,
    answers: Mapping[str, Sequence[list[Rounded] | None]],
    decimals: int,
) -> Marking:
    """Mark a student's ``answers`` (step key -> its rows, each number as written; None for a
    row not given) against ``walkthrough``, in the walkthrough's order: each wrong row diagnosed
    (:func:`diagnosis`) from the exact step before it and from the student's own, where they
    gave it wrong (and whole)."""
    marked: list[RowMark] = []
    slipped: set[str] = set()
    for step in walkthrough.steps:
        rows = answers.get(step.key)
        if rows is None:
            continue
        exact = np.asarray(step.value, dtype=np.float64)
        exact = exact.reshape(1, -1) if exact.ndim < 2 else exact
        after = before_key(steps, walkthrough, step.key)
        own = answers.get(after) if after in slipped else None
        # The student's own step before, where they gave every row of it.
        whole = None if own is None or None in own else [row for row in own if row is not None]
        previous = None if whole is None else _values(whole)
        for index, answer in enumerate(rows):
            if answer is None:
                continue
            if agrees(answer, exact[index], decimals):
                marked.append(RowMark(step.key, index + 1, "right"))
                continue
            slipped.add(step.key)
            found = diagnosis(
                steps, walkthrough, step.key, index, answer, previous, decimals, whole=rows
            )
            verdict: Verdict = "wrong" if found is None else found[0]  # type: ignore[assignment]
            marked.append(RowMark(step.key, index + 1, verdict, "" if found is None else found[1]))
    return Marking(tuple(marked))


def _values(rows: list[list[Rounded]]) -> np.ndarray:
    return np.array([[number.value for number in row] for row in rows], dtype=np.float64)
