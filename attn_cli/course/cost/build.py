"""The cost lesson: the lectures' complexity arguments, evaluated at the sizes given.

No inputs and nothing random: each step is a table of the lectures with every formula evaluated
at n, d, w, r, the heads, the layers and the dtype given, and each row names the command that
shows it measured or computed. The layer types of the Transformer paper, the four attention
variants, what doubling n does, the scores behind one output word, and the bytes of the n × n
score matrix (the lecture's 64 MB and 500 GB, checked by ``attn check``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core import variants as names
from attn_cli.core.backend import ITEMSIZE
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Note, Walkthrough
from attn_cli.course.checks import counted, whole_at_least
from attn_cli.course.cost.card import CARD
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import cost

# Memory of one GPU, for the note on the score matrices training keeps (an 80 GB H100 or A100).
GPU_BYTES = 80 * cost.GB


@dataclass(frozen=True)
class RowText:
    """How a table prints one row of the mechanism's: its name, its two formulas in the
    lessons' letters (k = min(2w + 1, n)), and the command that shows it measured or computed
    (None: no lesson of this tool has it)."""

    name: str
    first: str  # the operations (layer types) or the time (variants)
    second: str  # the path length (layer types) or the memory (variants)
    measured_by: str | None


LAYER_TEXTS = {
    "self-attention": RowText("self-attention", "n²·d", "1", "attn bench"),
    "recurrent": RowText("recurrent", "n·d²", "n", None),
    "convolutional": RowText("convolutional", "k·n·d²", "⌈log_k n⌉", None),
    "restricted self-attention": RowText(
        "restricted self-attention", "k·n·d", "⌈n/k⌉", "attn window"
    ),
}
VARIANT_TEXTS = {
    "vanilla": RowText("Vanilla", "n²·d", "n²", "attn bench --impl numpy"),
    "flash": RowText("FlashAttention", "n²·d", "n", "attn flash; attn bench --impl tiled-numpy"),
    "linear": RowText(
        "Linear attention", "n·r·d", "n·d", "attn linear; attn bench --impl linear-numpy"
    ),
    "window": RowText(
        "Sliding window", "n·k·d", "n·k", "attn window; attn bench --impl window-numpy"
    ),
}


@dataclass(frozen=True)
class Settings:
    n: int
    d: int
    window: int  # w: query i sees key j when |i − j| ≤ w
    features: int  # r of linear attention
    heads: int
    layers: int
    dtype: str  # what each number is stored in, for the bytes

    @property
    def keys(self) -> int:
        """k: the keys a query of the window sees (2w + 1, at most n)."""
        return cost.window_keys(self.n, self.window)


def settings(options: dict[str, Any]) -> Settings:
    """The lesson options, checked: every problem names the option and the fix."""
    n = whole_at_least(options["n"], param("n"), meaning="tokens in the sequence")
    d = whole_at_least(options["d"], param("d"), meaning="width of the queries and keys")
    window = whole_at_least(
        options["window"],
        param("window"),
        meaning="half-width w: a window of 0 links no two tokens",
    )
    given = options.get("features")
    features = (
        d if given is None else whole_at_least(given, param("features"), meaning="features r")
    )
    heads = whole_at_least(options["heads"], param("heads"), meaning="heads per layer")
    layers = whole_at_least(options["layers"], param("layers"), meaning="layers")
    dtype = options["memory_dtype"]
    if dtype not in names.DTYPES:
        raise UserError(
            f"{param('memory_dtype', repr(dtype))}: choose one of {', '.join(names.DTYPES)}."
        )
    return Settings(n, d, window, features, heads, layers, dtype)


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    settings(options)


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    return {}  # nothing is drawn: the sizes are the options


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    settings(options)
    return 4096  # a few small tables, whatever the sizes they describe


def build(run: LessonRun) -> Walkthrough:
    s = settings(run.options)
    record = StepRecorder(run)
    context = {
        "n": s.n,
        "d": s.d,
        "w": s.window,
        "width": 2 * s.window + 1,
        "k": s.keys,
        "r": s.features,
        "heads": s.heads,
        "layers": s.layers,
        "dtype": s.dtype,
        "itemsize": ITEMSIZE[s.dtype],
        "n2": 2 * s.n,
    }
    grid = Grid(context=context)
    timed = run.timed

    def add_table(
        key: str, make: Callable[[], Any], notes: Callable[[Any], tuple[Note, ...]] = lambda _: ()
    ) -> Any:
        """Time ``make`` and record its table as a step, with the notes it leads to."""
        table, seconds = timed(make)
        record.add(key, table, kind="records", grid=grid, seconds=seconds, notes=notes(table))
        return table

    add_table("layer_types", lambda: layer_table(s), lambda _: _layer_notes(record, s))
    output = add_table("variants", lambda: variant_table(s), lambda _: _variant_notes(record, s))
    add_table("doubling", lambda: doubling_table(s), lambda table: _doubling_notes(record, table))
    add_table("one_word", lambda: one_word_table(s))
    matrix, took = timed(lambda: score_matrix(s))
    total = int(s.n * s.n * s.heads * s.layers * ITEMSIZE[s.dtype])
    record.add(
        "score_matrix",
        matrix,
        grid=Grid(wall_rows(s), WALL_COLUMNS, context),
        seconds=took,
        quantities=(),  # entries, bytes, MiB and GB: each column its own number format
        notes=tuple(
            record.note(
                key,
                heads=counted(s.heads, "head"),
                layers=counted(s.layers, "layer"),
                gb=total / cost.GB,
                gpu=GPU_BYTES / cost.GB,
            )
            for key in ("beyond_gpu", "within_gpu")
        ),
    )
    return record.walkthrough(output, meta={"options": _plain(s)})


def _plain(s: Settings) -> dict[str, Any]:
    """The options as the lesson read them (--features filled in)."""
    return {
        "n": s.n,
        "d": s.d,
        "window": s.window,
        "features": s.features,
        "heads": s.heads,
        "layers": s.layers,
        "memory_dtype": s.dtype,
    }


# --- the tables --------------------------------------------------------------------------------


def layer_table(s: Settings) -> list[dict[str, Any]]:
    """The Transformer paper's comparison of layer types, evaluated."""
    return [
        {
            "layer": row.name,
            "ops_formula": LAYER_TEXTS[row.name].first,
            "ops": row.ops,
            "sequential": row.sequential,
            "path_formula": LAYER_TEXTS[row.name].second,
            "path": row.path,
            "measured_by": LAYER_TEXTS[row.name].measured_by,
        }
        for row in cost.layer_types(s.n, s.d, s.keys)
    ]


def variant_table(s: Settings) -> list[dict[str, Any]]:
    """The lecture's four attention variants: time and memory, evaluated, and the bytes."""
    return [
        {
            "variant": VARIANT_TEXTS[row.name].name,
            "time_formula": VARIANT_TEXTS[row.name].first,
            "time": row.time,
            "memory_formula": VARIANT_TEXTS[row.name].second,
            "memory": row.memory,
            "bytes": cost.bytes_of(row.memory, s.dtype),
            "measured_by": VARIANT_TEXTS[row.name].measured_by,
        }
        for row in cost.variants(s.n, s.d, s.keys, s.features)
    ]


def doubling_table(s: Settings) -> list[dict[str, Any]]:
    """Each variant at n and at 2n: how many times the time and the memory grow."""
    at_n = cost.variants(s.n, s.d, s.keys, s.features)
    at_2n = cost.variants(2 * s.n, s.d, cost.window_keys(2 * s.n, s.window), s.features)
    return [
        {
            "variant": VARIANT_TEXTS[one.name].name,
            "time_at_n": one.time,
            "time_at_2n": two.time,
            "time_ratio": two.time / one.time,
            "memory_ratio": two.memory / one.memory,
        }
        for one, two in zip(at_n, at_2n, strict=True)
    ]


def one_word_table(s: Settings) -> list[dict[str, Any]]:
    """Scores, and the multiply-adds of their dot products, behind one output word and all."""
    n, d, k = s.n, s.d, s.keys
    rows = (
        ("one word (a decoder step)", n, "attn bahdanau"),
        (f"all {counted(n, 'word')}", n * n, "attn selfattn"),
        ("one word, window", k, "attn window"),
        (f"all {counted(n, 'word')}, window", n * k, "attn window"),
    )
    return [
        {"case": case, "scores": scores, "multiply_adds": scores * d, "shown_by": command}
        for case, scores, command in rows
    ]


WALL_COLUMNS = ("entries", "bytes", "MiB", "GB")


def wall_rows(s: Settings) -> tuple[str, ...]:
    heads, layers = counted(s.heads, "head"), counted(s.layers, "layer")
    return ("1 head, 1 layer", f"{heads}, 1 layer", f"{heads}, {layers}")


def score_matrix(s: Settings) -> np.ndarray:
    """The n × n scores of one head and layer, of every head, and of every head and layer:
    entries, bytes, MiB (2²⁰ bytes) and GB (10⁹ bytes)."""
    entries = cost.score_matrix_entries(s.n)
    counts = (entries, entries * s.heads, entries * s.heads * s.layers)
    rows = []
    for count in counts:
        size = cost.bytes_of(count, s.dtype)
        rows.append((float(count), float(size), size / cost.MIB, size / cost.GB))
    return np.array(rows, dtype=np.float64)  # (3, 4)


# --- the notes and their claims ------------------------------------------------------------------


def _layer_notes(record: StepRecorder, s: Settings) -> tuple[Any, ...]:
    attention, recurrent = s.n * s.n * s.d, s.n * s.d * s.d
    return (
        record.note("attention_cheaper", n=s.n, d=s.d, ratio=recurrent / attention),
        record.note("attention_dearer", n=s.n, d=s.d, ratio=attention / recurrent),
    )


def _variant_notes(record: StepRecorder, s: Settings) -> tuple[Any, ...]:
    vanilla, flash, linear, window = cost.variants(s.n, s.d, s.keys, s.features)
    return (
        record.note("linear_cheaper", n=s.n, r=s.features, ratio=vanilla.time / linear.time),
        record.note("linear_not_cheaper", n=s.n, r=s.features),
        record.note("window_cheaper", n=s.n, k=s.keys, ratio=vanilla.time / window.time),
        record.note("window_everything", n=s.n, width=2 * s.window + 1),
        record.note("flash_memory", ratio=vanilla.memory / flash.memory),
    )


def _doubling_notes(record: StepRecorder, table: list[dict[str, Any]]) -> tuple[Any, ...]:
    vanilla = table[0]
    return (
        record.note("four_times", time=vanilla["time_ratio"], memory=vanilla["memory_ratio"]),
        record.note("linear_twice"),
        record.note("window_twice"),
    )


def _rows(walkthrough: Walkthrough, key: str, column: str) -> dict[str, dict[str, Any]]:
    """A records step's rows by their first column (empty when the step is not there)."""
    try:
        return {str(row[column]): row for row in walkthrough.step(key)}
    except (KeyError, TypeError):
        return {}


def _variant(walkthrough: Walkthrough, name: str, key: str = "variants") -> dict[str, Any]:
    return _rows(walkthrough, key, "variant").get(VARIANT_TEXTS[name].name, {})


def _times(walkthrough: Walkthrough, name: str) -> tuple[int, int] | None:
    """(this variant's time, vanilla's) from the variants table."""
    row, vanilla = _variant(walkthrough, name), _variant(walkthrough, "vanilla")
    if "time" not in row or "time" not in vanilla:
        return None
    return int(row["time"]), int(vanilla["time"])


def attention_cheaper(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Self-attention's per-layer operations are fewer than recurrence's (n < d)."""
    rows = _rows(walkthrough, "layer_types", "layer")
    try:
        return bool(rows["self-attention"]["ops"] < rows["recurrent"]["ops"])
    except KeyError:
        return False


def attention_dearer(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Self-attention's per-layer operations are more than recurrence's (n > d)."""
    rows = _rows(walkthrough, "layer_types", "layer")
    try:
        return bool(rows["self-attention"]["ops"] > rows["recurrent"]["ops"])
    except KeyError:
        return False


def linear_cheaper(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Linear attention's time is below vanilla's (r < n)."""
    times = _times(walkthrough, "linear")
    return times is not None and times[0] < times[1]


def linear_not_cheaper(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Linear attention's time is at least vanilla's (r ≥ n)."""
    times = _times(walkthrough, "linear")
    return times is not None and times[0] >= times[1]


def window_cheaper(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The window's time is below vanilla's (2w + 1 < n)."""
    times = _times(walkthrough, "window")
    return times is not None and times[0] < times[1]


def window_everything(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The window holds every key (2w + 1 ≥ n): its time and memory are vanilla's."""
    row, vanilla = _variant(walkthrough, "window"), _variant(walkthrough, "vanilla")
    return bool(row) and bool(vanilla) and row["memory"] == vanilla["memory"]


def flash_memory(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """FlashAttention holds fewer numbers than vanilla, for the same time (n > 1)."""
    flash, vanilla = _variant(walkthrough, "flash"), _variant(walkthrough, "vanilla")
    if not flash or not vanilla:
        return False
    return flash["time"] == vanilla["time"] and flash["memory"] < vanilla["memory"]


def _ratios(walkthrough: Walkthrough, name: str) -> tuple[float, float] | None:
    row = _variant(walkthrough, name, "doubling")
    if "time_ratio" not in row:
        return None
    return float(row["time_ratio"]), float(row["memory_ratio"])


def four_times(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Doubling n multiplies vanilla's time and memory by exactly 4."""
    return _ratios(walkthrough, "vanilla") == (4.0, 4.0)


def linear_twice(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Doubling n multiplies linear attention's time and memory by exactly 2."""
    return _ratios(walkthrough, "linear") == (2.0, 2.0)


def window_twice(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Doubling n multiplies the window's time and memory by exactly 2 (2w + 1 ≤ n)."""
    return _ratios(walkthrough, "window") == (2.0, 2.0)


def _total_bytes(walkthrough: Walkthrough) -> float | None:
    """Bytes of the scores of every head and layer, from the score matrix step."""
    try:
        return float(np.asarray(walkthrough.step("score_matrix"))[2, 1])
    except (KeyError, IndexError):
        return None


def beyond_gpu(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every layer's scores together are more than one GPU's memory."""
    total = _total_bytes(walkthrough)
    return total is not None and total > GPU_BYTES


def within_gpu(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every layer's scores together fit in one GPU's memory."""
    total = _total_bytes(walkthrough)
    return total is not None and total <= GPU_BYTES


# The values every step text of this lesson may read.
CONTEXT = ("n", "d", "w", "width", "k", "r", "heads", "layers", "dtype", "itemsize", "n2")

TEXTS = Texts(
    steps={
        "layer_types": CONTEXT,
        "variants": CONTEXT,
        "doubling": CONTEXT,
        "one_word": CONTEXT,
        "score_matrix": CONTEXT,
    },
    notes={
        "attention_cheaper": ("n", "d", "ratio"),
        "attention_dearer": ("n", "d", "ratio"),
        "linear_cheaper": ("n", "r", "ratio"),
        "linear_not_cheaper": ("n", "r"),
        "window_cheaper": ("n", "k", "ratio"),
        "window_everything": ("n", "width"),
        "flash_memory": ("ratio",),
        "four_times": ("time", "memory"),
        "linear_twice": (),
        "window_twice": (),
        "beyond_gpu": ("heads", "layers", "gb", "gpu"),
        "within_gpu": ("heads", "layers", "gb", "gpu"),
    },
    claims={
        "attention_cheaper": attention_cheaper,
        "attention_dearer": attention_dearer,
        "linear_cheaper": linear_cheaper,
        "linear_not_cheaper": linear_not_cheaper,
        "window_cheaper": window_cheaper,
        "window_everything": window_everything,
        "flash_memory": flash_memory,
        "four_times": four_times,
        "linear_twice": linear_twice,
        "window_twice": window_twice,
        "beyond_gpu": beyond_gpu,
        "within_gpu": within_gpu,
    },
)

LESSON = Lesson(
    card=CARD,
    labels=(),  # lesson files' labels = {...} it reads
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    memory_fix="nothing here grows with the sizes",
    texts=TEXTS,
)
