"""The induction task's data and scores (numpy only: tested without torch).

A sequence is a segment of L distinct tokens followed by the same segment again: x_{L+j} = x_j
for j = 0 … L-1, 2L tokens in all. L varies from sequence to sequence (MIN_LEN … max_len), so
that the position of a token does not say where its first occurrence was: a model that predicts
the second half must find the current token earlier in the sequence and copy the one after it,
what an induction head does (Olsson et al., 2022, "In-context learning and induction heads").

Sequences of one batch share the array shape (count, 2 max_len): positions from 2L on are
padding (token 0). A causal model never reads them from an earlier position, and the loss and
every score leave them out.

The scores read attention weights (count, heads, T, T), rows = queries, causal:

* previous-token score of a head: the mean weight from position t to t-1, over t = 1 … 2L-1;
* prefix-matching score: the mean weight from the second occurrence of a token (t = L … 2L-1)
  to the token after its first occurrence (t - L + 1);
* chance: the same mean for a head that spreads each row evenly over the keys it may see,
  1 / (t + 1) at query t; for an even spread over all T keys, 1 / T.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VOCAB = 24  # tokens, written a … x; a segment's tokens are distinct, so max_len <= VOCAB
MIN_LEN = 4  # the shortest segment: 3 predictable tokens, and 8 tokens fit one heatmap
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Sequences:
    """Sequences and their segment lengths: tokens[i, L:2L] == tokens[i, :L], L = lengths[i]."""

    tokens: np.ndarray  # (count, 2 max_len) int64, padding (0) from 2L on
    lengths: np.ndarray  # (count,) int64, L of each sequence

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def real(self) -> np.ndarray:
        """(count, T) bool: True at the 2L positions of each sequence, False on its padding."""
        positions = np.arange(self.tokens.shape[1])  # (T,)
        return positions[None, :] < 2 * self.lengths[:, None]  # (count, T)

    def predictable(self) -> np.ndarray:
        """(count, T) bool: True at the positions t = L … 2L-2 whose next token is determined
        (the second occurrence of x_{t-L}, followed by x_{t-L+1})."""
        positions = np.arange(self.tokens.shape[1])[None, :]  # (1, T)
        lengths = self.lengths[:, None]  # (count, 1)
        return (positions >= lengths) & (positions <= 2 * lengths - 2)  # (count, T)

    def identities(self) -> list[bytes]:
        """Each sequence as bytes (its 2L tokens): equal sequences, equal keys."""
        return [row[: 2 * n].tobytes() for row, n in zip(self.tokens, self.lengths, strict=True)]

    def take(self, index: np.ndarray | slice) -> Sequences:
        return Sequences(self.tokens[index], self.lengths[index])


def draw(
    rng: np.random.Generator, count: int, max_len: int, vocab: int = VOCAB, min_len: int = MIN_LEN
) -> Sequences:
    """``count`` sequences: L uniform on min_len … max_len, a segment of L distinct tokens (the
    first L of a random permutation of the vocabulary), then the segment again."""
    lengths = rng.integers(min_len, max_len + 1, size=count)  # (count,)
    order = np.argsort(rng.random((count, vocab)), axis=1)[:, :max_len]  # (count, max_len)
    positions = np.arange(2 * max_len)  # (T,)
    source = np.where(
        positions[None, :] < lengths[:, None],
        positions[None, :],
        positions[None, :] - lengths[:, None],
    )  # (count, T): j for x_j, j - L for the repeat x_{L+j} = x_j
    source = np.clip(source, 0, max_len - 1)  # padding reads some token: set to 0 below
    tokens = np.take_along_axis(order, source, axis=1)  # (count, T)
    tokens = np.where(positions[None, :] < 2 * lengths[:, None], tokens, 0)  # (count, T)
    return Sequences(tokens.astype(np.int64), lengths.astype(np.int64))


def draw_excluding(
    rng: np.random.Generator, count: int, max_len: int, excluded: set[bytes], vocab: int = VOCAB
) -> Sequences:
    """``count`` sequences none of which is in ``excluded`` (keys of :meth:`Sequences.identities`):
    those that are drawn again until none is."""
    drawn = draw(rng, count, max_len, vocab)
    while True:
        clash = np.array([key in excluded for key in drawn.identities()], dtype=bool)  # (count,)
        if not clash.any():
            return drawn
        again = draw(rng, int(clash.sum()), max_len, vocab)
        drawn.tokens[clash] = again.tokens
        drawn.lengths[clash] = again.lengths


@dataclass(frozen=True)
class Split:
    """The held-out sequences (evaluation only) and the training batches, none of which holds a
    held-out sequence. Both models train on these same batches, in this order."""

    held_out: Sequences
    batches: tuple[Sequences, ...]


def split(seed: int, steps: int, batch: int, held_out: int, max_len: int) -> Split:
    """Held-out sequences, then ``steps`` batches of ``batch`` that avoid them, all from the seed
    (one numpy stream for each, so the batches do not depend on how many were held out)."""
    evaluation, training = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    kept = draw(evaluation, held_out, max_len)
    excluded = set(kept.identities())
    batches = tuple(draw_excluding(training, batch, max_len, excluded) for _ in range(steps))
    return Split(kept, batches)


def show(tokens: np.ndarray) -> list[str]:
    """Tokens as letters (0 -> a)."""
    return [LETTERS[int(token)] for token in tokens]


def text(sequences: Sequences, index: int) -> str:
    """Sequence ``index`` as letters, its two halves separated by " | "."""
    n = int(sequences.lengths[index])
    letters = show(sequences.tokens[index, : 2 * n])
    return " ".join(letters[:n]) + " | " + " ".join(letters[n:])


# --- the scores ------------------------------------------------------------------------------


def _queries_and_keys(lengths: np.ndarray, offset: str) -> tuple[np.ndarray, ...]:
    """Index arrays (sequence, query, key) of every scored entry.

    ``offset`` "previous": query t = 1 … 2L-1, key t-1; "prefix": query t = L … 2L-1, key t-L+1.
    """
    which: list[np.ndarray] = []
    queries: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    for i, n in enumerate(lengths.tolist()):
        if offset == "previous":
            t = np.arange(1, 2 * n)  # (2L - 1,)
            key = t - 1
        else:
            t = np.arange(n, 2 * n)  # (L,)
            key = t - n + 1
        which.append(np.full(t.shape, i))
        queries.append(t)
        keys.append(key)
    return np.concatenate(which), np.concatenate(queries), np.concatenate(keys)


def score(weights: np.ndarray, lengths: np.ndarray, offset: str) -> np.ndarray:
    """(heads,): each head's mean weight on the scored entries of every sequence.

    ``weights`` (count, heads, T, T) with T >= 2 max(lengths); ``offset`` "previous" or
    "prefix" (see :func:`_queries_and_keys`)."""
    which, queries, keys = _queries_and_keys(lengths, offset)
    picked = weights[which, :, queries, keys]  # (entries, heads)
    return picked.mean(axis=0)  # (heads,)


def chance(lengths: np.ndarray, offset: str) -> float:
    """The score of a head that spreads each causal row evenly: mean of 1 / (t + 1)."""
    _which, queries, _keys = _queries_and_keys(lengths, offset)
    return float(np.mean(1.0 / (queries + 1)))


def prefix_matching(weights: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(heads,): mean weight from a token's second occurrence to the token after its first."""
    return score(weights, lengths, "prefix")


def previous_token(weights: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(heads,): mean weight from each token to the one before it."""
    return score(weights, lengths, "previous")


def accuracy(predicted: np.ndarray, sequences: Sequences) -> float:
    """Share of the predictable positions (t = L … 2L-2) where ``predicted`` (count, T), the
    model's guess of token t+1 at position t, is right."""
    target = np.roll(sequences.tokens, -1, axis=1)  # (count, T): x_{t+1} at t
    where = sequences.predictable()  # (count, T)
    return float(np.mean(predicted[where] == target[where]))
