"""Why attention divides by sqrt(d_k), measured on random vectors.

For a query q and a key k with i.i.d. N(0, 1) entries, q.k = Σ q_a k_a is a sum of d_k
independent terms of mean 0 and variance 1: mean 0, variance d_k. Dividing by sqrt(d_k) brings
the variance back to 1 for every d_k. The experiment draws, per sample, one query and n keys,
scores them raw and scaled, and summarises the softmax over the n scores. The samples are drawn
in chunks of bounded size; a chunk's tally is sums and counts, so the chunks add up.

Shapes: C samples per chunk, n keys per sample, d = d_k.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from attn_cli.core.backend import Array, namespace_of
from attn_cli.mechanisms import attention

Draw = Callable[[tuple[int, ...]], Array]  # shape -> array of i.i.d. N(0, 1) entries
# Streams(chunk, vector): in each chunk of samples the queries (vector 0) and each key j (vector
# j, 1 to n) come from a stream of their own. So the chunks can be drawn in any order, at once on
# several threads, and a key's scores reused when n changes, and the numbers stay the same.
Streams = Callable[[int, int], Draw]

# The sums kept per chunk, in this order (everything else is derived from them).
SUMS = (
    "raw",
    "raw_sq",
    "scaled",
    "scaled_sq",
    "max_weight_raw",
    "max_weight_scaled",
    "entropy_raw",
    "entropy_scaled",
    "grad_raw",
    "grad_scaled",
)


@dataclass(frozen=True)
class SoftmaxSummary:
    max_weight: Array  # (C,) the largest weight of each row
    entropy: Array  # (C,) -Σ w log w: log n when uniform, 0 when one-hot
    gradient: Array  # (C,) w_max (1 - w_max) = d w_max / d s_max: 0 when one-hot


def softmax_summary(logits: Array) -> SoftmaxSummary:
    """How peaked each row's softmax is: its largest weight, entropy and gradient."""
    xp = namespace_of(logits)
    parts = attention.softmax_parts(logits)  # rows of (C, n)
    log_weights = parts.shifted - xp.log(parts.row_sum)  # (C, n): log w, finite even if w = 0
    max_weight = xp.max(parts.weights, axis=-1)  # (C,)
    entropy = -xp.sum(parts.weights * log_weights, axis=-1)  # (C,)
    return SoftmaxSummary(max_weight, entropy, max_weight * (1 - max_weight))


def sample_scores(streams: Streams, chunk: int, rows: int, keys: int, d_k: int) -> Array:
    """Raw scores q.k_j of ``rows`` fresh queries, each against its own ``keys`` keys."""
    q = query_rows(streams(chunk, 0), rows, d_k)  # (C, d): one query per sample
    columns = [key_scores(q, streams(chunk, j)) for j in range(1, keys + 1)]  # n of (C,)
    return namespace_of(q).stack(columns, axis=-1)  # (C, n)


def query_rows(draw: Draw, rows: int, d_k: int) -> Array:
    return draw((rows, d_k))  # (C, d)


def key_scores(q: Array, draw: Draw) -> Array:
    """q.k of each query (row of q) with a key of its own, drawn from ``draw``."""
    k = draw(tuple(q.shape))  # (C, d): the key of each sample
    return namespace_of(q).vecdot(q, k)  # (C,)


def chunk_sums(raw: Array, d_k: int) -> Array:
    """The SUMS of one chunk of raw scores (C, n), as one array of len(SUMS) numbers."""
    xp = namespace_of(raw)
    scaled = attention.scale(raw, d_k)  # (C, n)
    raw_rows, scaled_rows = softmax_summary(raw), softmax_summary(scaled)
    values = (
        raw,
        raw * raw,
        scaled,
        scaled * scaled,
        raw_rows.max_weight,
        scaled_rows.max_weight,
        raw_rows.entropy,
        scaled_rows.entropy,
        raw_rows.gradient,
        scaled_rows.gradient,
    )
    return xp.stack([xp.sum(_wide(xp, value)) for value in values])  # (len(SUMS),)


def histogram_counts(values: Array, edges: tuple[float, ...]) -> Array:
    """Counts of ``values`` in each bin [e_b, e_b+1) of ``edges``: B + 1 edges -> (B,) counts.

    Works on every array library: the number of values >= each edge, differenced, one edge at
    a time (B + 1 passes, no (values × edges) temporary). Values outside [e_0, e_B) are left out.
    """
    xp = namespace_of(values)
    at_least = xp.stack(
        [xp.sum(xp.astype(values >= edge, xp.int64)) for edge in edges]
    )  # (B + 1,): how many values are >= each edge
    return at_least[:-1] - at_least[1:]  # (B,)


@dataclass(frozen=True)
class Estimates:
    """Sample means over samples (rows) and, for the moments, over samples × keys scores."""

    dk: int
    samples: int
    keys: int
    mean_raw: float
    var_raw: float
    mean_scaled: float
    var_scaled: float
    max_weight_raw: float
    max_weight_scaled: float
    entropy_raw: float
    entropy_scaled: float
    grad_raw: float
    grad_scaled: float
    histogram: dict[str, list[int]] | None = None  # {"raw": counts, "scaled": counts}
    # With the histogram: how many scaled scores lie within ±3 (the raw ones within ±3√d_k).
    within_three: int | None = None


@dataclass(frozen=True)
class Tally:
    """What one chunk of samples adds to the estimates: everything in it is a sum or a count."""

    sums: Array  # (len(SUMS),)
    histogram: tuple[Array, Array] | None = None  # (B,) counts of the raw and the scaled scores
    within_three: int | None = None


def scaled_edges(edges: tuple[float, ...], d_k: int) -> tuple[float, ...]:
    """The raw scores' bin edges on the scaled scores' scale: each ÷ √d_k, so that a scaled
    score falls in the bin of its raw score (up to rounding at a bin's edge)."""
    root = math.sqrt(d_k)
    return tuple(edge / root for edge in edges)


def tally(raw: Array, d_k: int, edges: tuple[float, ...] | None) -> Tally:
    """The sums (and, with ``edges``, the counts: the raw scores on ``edges``, the scaled ones
    on :func:`scaled_edges`) of one chunk of raw scores (C, n)."""
    if edges is None:
        return Tally(chunk_sums(raw, d_k))
    scaled = attention.scale(raw, d_k)
    counts = (histogram_counts(raw, edges), histogram_counts(scaled, scaled_edges(edges, d_k)))
    return Tally(chunk_sums(raw, d_k), counts, count_within_three(raw, d_k))


def chunk_sizes(samples: int, chunk: int) -> list[int]:
    """Rows of each chunk when ``samples`` rows are drawn ``chunk`` at a time (the last: fewer)."""
    return [min(chunk, samples - done) for done in range(0, samples, chunk)]


def estimate(
    streams: Streams,
    d_k: int,
    keys: int,
    samples: int,
    chunk: int,
    edges: tuple[float, ...] | None = None,
) -> Estimates:
    """Draw ``samples`` rows ``chunk`` at a time (memory stays bounded) and summarise them."""
    tallies = [
        tally(sample_scores(streams, index, rows, keys, d_k), d_k, edges)
        for index, rows in enumerate(chunk_sizes(samples, chunk))
    ]
    return combine(tallies, d_k, keys, samples)


def combine(tallies: Sequence[Tally], d_k: int, keys: int, samples: int) -> Estimates:
    """The estimates from the tallies of every chunk, added in their order."""
    assert tallies, "samples must be at least 1"
    totals = functools.reduce(operator.add, (part.sums for part in tallies))  # (len(SUMS),)
    total = dict(zip(SUMS, totals.tolist(), strict=True))  # one transfer off the device
    scores = samples * keys
    mean_raw, mean_scaled = total["raw"] / scores, total["scaled"] / scores
    # Unbiased sample variance from the sums; no cancellation to fear since the mean is ~0.
    var_raw = (total["raw_sq"] - scores * mean_raw**2) / (scores - 1)
    var_scaled = (total["scaled_sq"] - scores * mean_scaled**2) / (scores - 1)
    histogram, within_three = None, None
    counted = [part for part in tallies if part.histogram is not None]
    if counted:
        histogram = {
            name: functools.reduce(
                operator.add, (part.histogram[side] for part in counted if part.histogram)
            ).tolist()
            for side, name in enumerate(("raw", "scaled"))
        }
        within_three = sum(part.within_three or 0 for part in counted)
    means = {name: total[name] / samples for name in SUMS[4:]}  # per sample (softmax row)
    return Estimates(
        dk=d_k,
        samples=samples,
        keys=keys,
        mean_raw=mean_raw,
        var_raw=var_raw,
        mean_scaled=mean_scaled,
        var_scaled=var_scaled,
        **means,
        histogram=histogram,
        within_three=within_three,
    )


def count_within_three(raw: Array, d_k: int) -> int:
    """How many scaled scores raw / √d_k lie within ±3 (so raw ones within ±3√d_k): three
    standard deviations, if the entries are independent with mean 0 and variance 1."""
    xp = namespace_of(raw)
    return int(xp.sum(xp.astype(xp.abs(attention.scale(raw, d_k)) <= 3, xp.int64)))


def _wide(xp: Any, value: Array) -> Array:
    """Sums of half-precision numbers overflow (65504 in float16): add them in float32."""
    if xp.finfo(value.dtype).bits < 32:
        return xp.astype(value, xp.float32)
    return value


def variance_standard_error(d_k: int, keys: int, samples: int) -> float:
    """Standard error of the estimated variance of the scaled scores (whose true value is 1).

    With X_j = q.k_j (n keys sharing one query): E X^4 = 3 d^2 + 6 d, so Var(X^2) = 2 d^2 + 6 d,
    and Cov(X_1^2, X_2^2) = Var(|q|^2) = 2 d (the keys share q). The mean of X^2 over S samples
    of n scores then has variance (2 d^2 + 6 d + 2 d (n - 1)) / (S n) = 2 d (d + n + 2) / (S n);
    divided by d^2 for the scaled scores. Largest at d_k = 1 (heavy tails of a product).
    """
    return math.sqrt(2 * (d_k + keys + 2) / (d_k * samples * keys))
