"""The variance lesson: why scores are divided by √d_k, measured, then the lecture's numerics."""

from __future__ import annotations

import concurrent.futures
import contextvars
import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from attn_cli.core import work
from attn_cli.core.backend import Backend, namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.kept import Kept
from attn_cli.core.matrices import parse_int_list
from attn_cli.core.model import Part, Walkthrough
from attn_cli.course.checks import is_whole, labels, whole_option
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.variance.card import CARD
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention
from attn_cli.mechanisms import variance as mech

DEFAULT_SAMPLES = CARD.defaults["samples"]  # why this many: see the card
# Entries of the arrays one chunk of samples holds at once (bounded, whatever --samples is). A
# fixed chunk keeps the draws, and so the estimates, the same for a seed on every machine.
CHUNK_ENTRIES = 1 << 19
# Per score: raw, scaled, their squares, and each softmax's shifted, exp, weights, log-weights.
_PER_SCORE = 16
HISTOGRAM_BINS = 20
HISTOGRAM_SIGMAS = 5.0  # bins cover ±5 standard deviations of the raw scores


@dataclass(frozen=True)
class Settings:
    dks: tuple[int, ...]
    samples: int
    keys: int
    spiky_scores: tuple[float, ...]
    spiky_dk: int
    logits: tuple[float, ...]
    temperatures: tuple[float, ...]


def settings(options: dict[str, Any]) -> Settings:
    """The lesson options, checked: every problem names the option and the fix."""
    dks = _dk_list(options["dk"])
    for dk in dks:
        if dk < 1:
            raise UserError(
                f"{param('dk')}: {dk} is not a width; every d_k must be a whole number of at least 1, "
                f'e.g. {param("dk", 64)} or {param("dk")} "1,4,16,64".'
            )
    samples = whole_option(options["samples"], "samples")
    if samples < 2:
        raise UserError(
            f"{param('samples', samples)}: a variance needs at least 2 samples; try 3000."
        )
    keys = whole_option(options["keys"], "keys")
    if keys < 2:
        raise UserError(
            f"{param('keys', keys)}: a softmax over fewer than 2 keys is always [1], so there is nothing "
            f"to compare; give {param('keys', 2)} or more (the default is 8)."
        )
    check_work(samples, keys, dks)
    spiky_dk = whole_option(options["spiky_dk"], "spiky_dk")
    if spiky_dk < 1:
        raise UserError(f"spiky_dk {spiky_dk}: d_k must be at least 1.")
    temperatures = _numbers(options["temperatures"], "temperatures")
    if any(t <= 0 for t in temperatures):
        raise UserError("temperatures: every temperature must be greater than 0.")
    return Settings(
        dks,
        samples,
        keys,
        _numbers(options["spiky_scores"], "spiky_scores"),
        spiky_dk,
        _numbers(options["logits"], "logits"),
        temperatures,
    )


# The work guard: numbers drawn per second (a query and its keys, every width), by the chunks
# drawn at once, measured with `attn variance --samples 30000` (30,000 × 9 × 1,365 = 369 M
# numbers: 3.2 s one chunk at a time, 1.8 s two at once; 2-core machine, 2026-11). More cores
# are counted as two (not measured). A run may draw about three minutes of it. The memory guard
# does not see this: the lesson works in chunks of bounded size, however many samples it draws.
DRAWN_PER_SECOND = {1: 1.15e8, 2: 2.0e8}


def drawn_per_second() -> float:
    return DRAWN_PER_SECOND[min(_cores(), 2)]


def max_drawn() -> int:
    """The most numbers a run may draw here."""
    return int(work.MAX_SECONDS * drawn_per_second())


def check_work(samples: int, keys: int, dks: tuple[int, ...]) -> None:
    """Refuse, before drawing anything, a run that would take more than about three minutes."""
    drawn = samples * (keys + 1) * sum(dks)  # per sample: one query and `keys` keys, each width
    work.check_work(
        drawn,
        drawn_per_second(),
        f"{param('samples', f'{samples:,}')} with {param('keys', keys)} and d_k up to "
        f"{max(dks):,} draws {drawn:.2g} numbers",
        f"fewer {param('samples')} (the default is {CARD.defaults['samples']:,}), fewer "
        f"{param('keys')} or smaller {param('dk')}",
    )


def _dk_list(value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        return tuple(parse_int_list(value, param("dk")))
    if is_whole(value):
        return (value,)
    if isinstance(value, list) and value and all(is_whole(v) for v in value):
        return tuple(value)
    raise UserError(f'{param("dk", repr(value))}: give whole numbers, e.g. 64 or "1,4,16,64".')


def _numbers(value: Any, name: str) -> tuple[float, ...]:
    if not isinstance(value, list) or not value or not all(_is_number(v) for v in value):
        raise UserError(f"{name}: give a list of numbers, e.g. [2.0, 1.0, 0.5].")
    return tuple(float(v) for v in value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    settings(options)


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    return {}  # the lesson draws its own vectors, chunk by chunk (see chunk_rows)


def chunk_rows(samples: int, keys: int, dk: int) -> int:
    """Samples per chunk: as many as CHUNK_ENTRIES allows (at least 1, at most all), for at least
    KEYS_ROOM keys: up to that many, the chunks of a width are the same for any --keys."""
    return min(samples, max(1, CHUNK_ENTRIES // _row_entries(max(keys, KEYS_ROOM), dk)))


KEYS_ROOM = 32


def _row_entries(keys: int, dk: int) -> int:
    # The query and one key at a time; the key's scores, and them stacked; the scores' arrays.
    return 2 * dk + (2 + _PER_SCORE) * keys


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    """The chunks drawn at once, of the width that needs most (one d_k is processed at a time):
    bounded, however many samples."""
    s = settings(options)

    def at_once(dk: int) -> int:
        rows = chunk_rows(s.samples, s.keys, dk)
        chunks = len(mech.chunk_sizes(s.samples, rows))
        return min(_cores(), chunks) * rows * _row_entries(s.keys, dk) * itemsize

    return max(at_once(dk) for dk in s.dks)


def build(run: LessonRun) -> Walkthrough:
    s = settings(run.options)
    largest = max(s.dks)
    sigma = math.sqrt(largest)
    edges = histogram_edges(sigma)
    results, seconds = _measure(run, s, edges)

    record = StepRecorder(run)
    n = s.keys
    scores = s.samples * n
    context = {
        "samples": s.samples,
        "keys": n,
        "scores": scores,
        "uniform": 1 / n,
        "log_n": math.log(n),
        "uniform_grad": (1 / n) * (1 - 1 / n),
        "largest": largest,
        "sqrt_largest": sigma,
        "three_sigma": 3 * sigma,
        "seed": run.seed,
    }
    record.add(
        "moments",
        _moments_table(results),
        kind="records",
        grid=Grid(context=context),
        seconds=None if None in seconds else sum(t for t in seconds if t is not None),
    )
    record.add("softmax", _softmax_table(results), kind="records", grid=Grid(context=context))
    record.add("gradient", _gradient_table(results), kind="records", grid=Grid(context=context))
    histogram = next(result.histogram for result in results if result.histogram is not None)
    largest = max(s.dks)  # the d_k whose scores the histogram counts
    outside = {name: scores - sum(counts) for name, counts in histogram.items()}
    inside = next(result.within_three for result in results if result.within_three is not None)
    record.add(
        "histogram",
        # Each on its own bins (issue 57): the scaled scores' are the raw ones' ÷ √d_k.
        {
            "edges": list(edges),
            "series": histogram,
            "edges_of": {"scaled": list(mech.scaled_edges(edges, largest))},
        },
        kind="histogram",
        grid=Grid(
            context={
                **context,
                "bin_width": edges[1] - edges[0],
                "scaled_bin_width": (edges[1] - edges[0]) / math.sqrt(largest),
            }
        ),
        notes=(
            *(
                record.note("outside_histogram", count=count, series=name, sigmas=HISTOGRAM_SIGMAS)
                for name, count in outside.items()
                if count
            ),
            # Both recorded: the claims keep "nearly all" or "fewer" by the share.
            *(
                record.note(
                    key,
                    inside=inside,
                    scores=scores,
                    share=inside / scores,
                    bound=3 * sigma,
                )
                for key in ("within_three", "beyond_three")
            ),
            record.note("same_bars", dk=largest),  # where its claim holds (same_bars)
        ),
    )
    _spiky_step(record, s, run)
    _temperature_step(record, s, run)
    output = [_output_record(result, took) for result, took in zip(results, seconds, strict=True)]
    return record.walkthrough(
        output,
        meta={"options": _plain_settings(s), "seed": run.seed},
    )


def histogram_edges(sigma: float) -> tuple[float, ...]:
    """HISTOGRAM_BINS equal bins over ±HISTOGRAM_SIGMAS standard deviations of the raw scores."""
    width = 2 * HISTOGRAM_SIGMAS * sigma / HISTOGRAM_BINS
    return tuple(-HISTOGRAM_SIGMAS * sigma + b * width for b in range(HISTOGRAM_BINS + 1))


def _measure(
    run: LessonRun, s: Settings, edges: tuple[float, ...]
) -> tuple[list[mech.Estimates], list[float | None]]:
    """Estimates for each d_k, with the histogram for the largest.

    In chunk i of width d_k, the queries and each key j come from random streams of their own,
    seeded from (--seed, d_k, i, 0) and (--seed, d_k, i, j): a width's row is the same whether
    it is run alone or in a list; the chunks of a width are drawn at once on the cores there are
    (numpy draws and multiplies without holding Python's lock); and, when the run asks to keep
    what it draws (the explorer), the queries and keys' scores drawn by an earlier run with the
    same settings are taken as they were (KEPT_QUERIES, KEPT_SCORES): when --samples grows, what
    is drawn is the last chunk of each width and the new ones; when --keys grows, the new keys.
    """
    with_histogram = s.dks.index(max(s.dks))  # its first occurrence
    keep = run.keep
    results: list[mech.Estimates] = []
    seconds: list[float | None] = []  # with --time
    with concurrent.futures.ThreadPoolExecutor(_workers(run.backend)) as pool:
        for index, dk in enumerate(s.dks):
            chunks = mech.chunk_sizes(s.samples, chunk_rows(s.samples, s.keys, dk))
            counted = edges if index == with_histogram else None

            def tallies(dk: int = dk, chunks: list[int] = chunks, counted: Any = counted) -> Any:
                jobs = [
                    # Each job in a copy of this context: numpy's error state (an overflow is
                    # noted, see runner) holds in the worker threads too.
                    pool.submit(
                        contextvars.copy_context().run,
                        _chunk_tally,
                        run.backend,
                        run.seed,
                        dk,
                        s.keys,
                        rows,
                        chunk,
                        counted,
                        keep,
                    )
                    for chunk, rows in enumerate(chunks)
                ]
                return [job.result() for job in jobs]  # in the chunks' order

            parts, took = run.timed(tallies)
            results.append(mech.combine(parts, dk, s.keys, s.samples))
            seconds.append(took)
    return results, seconds


# Chunks tallied at once: one per core, at most this many (numpy only: the torch backend runs
# its own threads, or a device).
MAX_WORKERS = 4


def _workers(backend: Backend) -> int:
    return _cores() if backend.name == "numpy" else 1


def _cores() -> int:
    """The cores this process may run on, at most MAX_WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def stream_seed(seed: int, dk: int, chunk: int, vector: int) -> int:
    """The seed of the queries (``vector`` 0) or key ``vector`` in chunk ``chunk`` of width
    ``dk`` under --seed ``seed``."""
    return int(np.random.SeedSequence([seed, dk, chunk, vector]).generate_state(1)[0])


def streams(backend: Backend, seed: int, dk: int) -> mech.Streams:
    """The lesson's random streams for width ``dk``, drawn where ``backend`` computes."""
    return lambda chunk, vector: backend.normal_sampler(stream_seed(seed, dk, chunk, vector))


# What runs that keep what they draw keep. The default example: 33 MB of queries (3000 samples
# × 1,365 entries, float64, for the six widths), 1.1 MB of scores (6 widths × 3000 samples × 8
# keys) and the tallies of its 40 chunks (a few hundred bytes each).
KEPT_QUERIES = Kept(limit=128 * 2**20)
KEPT_SCORES = Kept(limit=32 * 2**20)
KEPT_TALLIES = Kept(limit=4 * 2**20)


# A run that does not keep: a store of no bytes, which takes nothing and finds nothing.
NOTHING_KEPT = Kept(limit=0)


def forget_kept() -> None:
    """Forget every query, score and tally kept: the next run draws everything."""
    for kept in (KEPT_QUERIES, KEPT_SCORES, KEPT_TALLIES):
        kept.clear()


def _chunk_tally(
    backend: Backend,
    seed: int,
    dk: int,
    keys: int,
    rows: int,
    chunk: int,
    edges: tuple[float, ...] | None,
    keep: bool,
) -> mech.Tally:
    """Draw one chunk's scores and tally them; with ``keep``, take what is kept (its tally, or
    its queries and some of its keys' scores) and keep what is drawn."""
    drawn = streams(backend, seed, dk)
    tallies, scores, queries = (
        (KEPT_TALLIES, KEPT_SCORES, KEPT_QUERIES) if keep else (NOTHING_KEPT,) * 3
    )
    chunk_name = (backend, seed, dk, rows, chunk)
    tally_name = (*chunk_name, keys, edges)
    kept_tally = tallies.get(tally_name)
    if kept_tally is not None:
        return cast(mech.Tally, kept_tally)
    names = [(*chunk_name, key) for key in range(1, keys + 1)]
    columns = [scores.get(name) for name in names]
    if any(column is None for column in columns):
        q = queries.get(chunk_name)  # (C, d)
        if q is None:
            q = mech.query_rows(drawn(chunk, 0), rows, dk)
            queries.put(chunk_name, q, rows * dk * backend.itemsize)
        for key, name in enumerate(names, 1):
            if columns[key - 1] is None:
                columns[key - 1] = mech.key_scores(q, drawn(chunk, key))  # (C,)
                scores.put(name, columns[key - 1], rows * backend.itemsize)
    raw = namespace_of(columns[0]).stack(columns, axis=-1)  # (C, n)
    result = mech.tally(raw, dk, edges)
    sums = len(mech.SUMS) + (2 * HISTOGRAM_BINS if edges is not None else 0)
    tallies.put(tally_name, result, sums * 8)
    return result


def _moments_table(results: list[mech.Estimates]) -> list[dict[str, Any]]:
    return [
        {
            "d_k": result.dk,
            "mean_raw": result.mean_raw,
            "var_raw": result.var_raw,
            "std_raw": math.sqrt(result.var_raw),
            "mean_scaled": result.mean_scaled,
            "var_scaled": result.var_scaled,
            "var_scaled_se": mech.variance_standard_error(result.dk, result.keys, result.samples),
        }
        for result in results
    ]


def _softmax_table(results: list[mech.Estimates]) -> list[dict[str, Any]]:
    return [
        {
            "d_k": result.dk,
            "max_weight_raw": result.max_weight_raw,
            "max_weight_scaled": result.max_weight_scaled,
            "entropy_raw": result.entropy_raw,
            "entropy_scaled": result.entropy_scaled,
        }
        for result in results
    ]


def _gradient_table(results: list[mech.Estimates]) -> list[dict[str, Any]]:
    return [
        {
            "d_k": result.dk,
            "grad_raw": result.grad_raw,
            "grad_scaled": result.grad_scaled,
            "grad_ratio": result.grad_scaled / result.grad_raw if result.grad_raw else math.inf,
        }
        for result in results
    ]


def _output_record(result: mech.Estimates, took: float | None) -> dict[str, Any]:
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    del fields["histogram"], fields["within_three"]  # the histogram step's, and its note's
    fields["var_scaled_se"] = mech.variance_standard_error(result.dk, result.keys, result.samples)
    if took is not None:  # --time
        fields["seconds"] = took
    return fields


def _spiky_step(record: StepRecorder, s: Settings, run: LessonRun) -> None:
    backend = run.backend
    root = math.sqrt(s.spiky_dk)

    def compute() -> tuple[Any, Any, Any]:
        raw = backend.asarray(np.asarray([s.spiky_scores]))  # (1, n)
        scaled = attention.scale(raw, s.spiky_dk)  # (1, n)
        logits = namespace_of(raw).concat((raw, scaled), axis=0)  # (2, n): raw, then scaled
        weights = attention.softmax(logits)  # (2, n)
        return logits, weights, mech.softmax_summary(logits).gradient  # (2,) w_max (1 - w_max)

    (logits, weights, gradient), took = run.timed(compute)
    top = np.max(backend.to_numpy(weights).astype(np.float64), axis=-1)  # (2,)
    grads = backend.to_numpy(gradient).astype(np.float64)  # (2,)
    rows = ("s", f"s / {root:g}")  # the scores of each row, then their softmax
    compared = {
        "root": root,
        "top_raw": float(top[0]),
        "top_scaled": float(top[1]),
        "grad_raw": float(grads[0]),
        "grad_scaled": float(grads[1]),
    }
    record.add(
        "spiky",
        weights,
        kind="weights",
        row_sums=True,
        grid=Grid(
            rows,
            labels("k", len(s.spiky_scores)),
            context={
                "dk": s.spiky_dk,
                "scores": _numbers_text(s.spiky_scores),
                **compared,
                "gain": float(grads[1] / grads[0]) if grads[0] else math.inf,
            },
        ),
        parts=(
            Part("scores", logits),
            Part("w_max (1 − w_max)", namespace_of(gradient).reshape(gradient, (2, 1))),
        ),
        seconds=took,
        # Both recorded: the claims keep the one that describes these two rows.
        notes=(
            record.note(
                "spiky_peaked",
                **compared,
                gain=float(grads[1] / grads[0]) if grads[0] else math.inf,
            ),
            record.note("spiky_mild", **compared),
        ),
    )


def _temperature_step(record: StepRecorder, s: Settings, run: LessonRun) -> None:
    backend = run.backend

    def compute() -> tuple[Any, Any, Any]:
        logits = backend.asarray(np.asarray([s.logits]))  # (1, n)
        below = logits - max(s.logits)  # (1, n) s − max s, at most 0
        divisors = backend.asarray(np.asarray([[t] for t in s.temperatures]))  # (T, 1)
        tempered = logits / divisors  # (T, n): s / T, one temperature per row
        # softmax(s / T) = softmax((s − max s) / T): at T = 1e-320, s / T is beyond float64
        # (∞ − ∞ in the softmax) while (s − max s) / T is 0 or −∞, the limit, a hardmax.
        shifted = below / divisors  # (T, n)
        weights = attention.softmax(shifted)  # (T, n)
        return tempered, weights, mech.softmax_summary(shifted).gradient  # (T,)

    (tempered, weights, gradient), took = run.timed(compute)
    record.add(
        "temperature",
        weights,
        kind="weights",
        row_sums=True,
        grid=Grid(
            tuple(_temperature_label(t) for t in s.temperatures),
            labels("s", len(s.logits)),
            context={
                "largest": max(s.dks),
                "root": math.sqrt(max(s.dks)),
                "logits": _numbers_text(s.logits),
                "temperatures": ", ".join(f"{t:g}" for t in s.temperatures),
            },
        ),
        parts=(
            Part("s / T", tempered),
            Part(
                "w_max (1 − w_max)",
                namespace_of(gradient).reshape(gradient, (len(s.temperatures), 1)),
            ),
        ),
        seconds=took,
    )


def _numbers_text(numbers: tuple[float, ...]) -> str:
    """[15.5, −16.1, 2.3]: a short list as a title writes it."""
    return "[" + ", ".join(f"{number:g}".replace("-", "−") for number in numbers) + "]"


def _temperature_label(temperature: float) -> str:
    """/1, /4, ×10: dividing by T, or multiplying by 1/T when T < 1."""
    if temperature >= 1 or math.isinf(1 / temperature):  # 1 / 1e-320 is beyond float64
        return f"s / {temperature:g}"
    return f"s × {1 / temperature:g}"


def _plain_settings(s: Settings) -> dict[str, Any]:
    return {
        "dk": list(s.dks),
        "samples": s.samples,
        "keys": s.keys,
        "spiky_scores": list(s.spiky_scores),
        "spiky_dk": s.spiky_dk,
        "logits": list(s.logits),
        "temperatures": list(s.temperatures),
    }


# What the texts of the measured steps read; the lecture's numerics have their own.
MEASURED = (
    *("samples", "keys", "scores", "uniform", "log_n", "uniform_grad"),
    *("largest", "sqrt_largest", "three_sigma", "seed"),
)
# "Nearly all" scaled scores lie within ±3 when at least this share does (a normal
# distribution has 99.73% within three standard deviations).
NEARLY_ALL = 0.99


# The unscaled softmax is "nearly one-hot" when its largest weight is at least this.
NEARLY_ONE_HOT = 0.99


def _spiky_tops(walkthrough: Walkthrough) -> tuple[float, float]:
    """The largest weight of the spiky step's raw row and of its scaled row (NaN if absent)."""
    weights = np.asarray(walkthrough.step("spiky"), dtype=np.float64)
    if weights.ndim != 2 or weights.shape[0] != 2 or weights.shape[1] == 0:
        return math.nan, math.nan
    with np.errstate(invalid="ignore"):
        raw, scaled = np.max(weights, axis=1)
    return float(raw), float(scaled)


def spiky_is_peaked(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``spiky_peaked``: the raw row is nearly one-hot, the scaled one softer, and the
    gradient of the largest weight larger once scaled."""
    raw, scaled = _spiky_tops(walkthrough)
    gain = values.get("grad_scaled", math.nan) > values.get("grad_raw", math.nan)
    return bool(raw >= NEARLY_ONE_HOT and scaled < raw and gain)


def spiky_is_mild(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``spiky_mild``: the raw row is not nearly one-hot."""
    raw, _ = _spiky_tops(walkthrough)
    return bool(raw < NEARLY_ONE_HOT)


def _share_within_three(values: Mapping[str, Any]) -> float:
    inside, scores = values.get("inside"), values.get("scores")
    if not isinstance(inside, int) or not isinstance(scores, int) or scores <= 0:
        return math.nan
    return inside / scores


def nearly_all_within_three(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``within_three``: at least NEARLY_ALL of the scaled scores lie within ±3."""
    return bool(_share_within_three(values) >= NEARLY_ALL)


def same_bars(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``same_bars``: the scaled scores, on the raw bins ÷ √d_k, are counted as the raw
    ones bin for bin (a score on a bin's very edge may round into the next)."""
    series = walkthrough.find("histogram").value["series"]
    return bool(list(series["raw"]) == list(series["scaled"]))


def fewer_within_three(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of ``beyond_three``: fewer than NEARLY_ALL of them do."""
    return bool(_share_within_three(values) < NEARLY_ALL)


TEXTS = Texts(
    steps={
        **dict.fromkeys(("moments", "softmax", "gradient"), MEASURED),
        "histogram": (*MEASURED, "bin_width", "scaled_bin_width"),
        "spiky": (
            *("dk", "root", "scores"),
            *("top_raw", "top_scaled", "grad_raw", "grad_scaled", "gain"),
        ),
        "temperature": ("largest", "root", "logits", "temperatures"),
    },
    notes={
        "outside_histogram": ("count", "series", "sigmas"),
        "within_three": ("inside", "scores", "share", "bound"),
        "beyond_three": ("inside", "scores", "share", "bound"),
        "same_bars": ("dk",),
        "spiky_peaked": ("root", "top_raw", "top_scaled", "grad_raw", "grad_scaled", "gain"),
        "spiky_mild": ("root", "top_raw", "top_scaled", "grad_raw", "grad_scaled"),
    },
    claims={
        "within_three": nearly_all_within_three,
        "beyond_three": fewer_within_three,
        "same_bars": same_bars,
        "spiky_peaked": spiky_is_peaked,
        "spiky_mild": spiky_is_mild,
    },
    measured=("outside_histogram",),
)

LESSON = Lesson(
    card=CARD,
    labels=(),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    memory_fix=f"lower {param('samples')}, {param('keys')} or the largest {param('dk')}",
    texts=TEXTS,
)
