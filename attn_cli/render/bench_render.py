"""Lay out a bench result: a rich table with exponents, JSON, or CSV. Nothing is computed here.

The fits are computed by the caller (attn_cli.bench.fit) and handed in with the result.
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, fields
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attn_cli.bench.config import BenchConfig, BenchResult, Row, is_unstable
from attn_cli.bench.devices import CpuOps
from attn_cli.bench.fit import (
    COMPLEXITY_SOURCE,
    Fit,
    complexity_rows,
    contrast,
    diagnosis,
    fitted_sizes,
    left_out_readings,
    reading,
    table_verdict,
)
from attn_cli.bench.impls import LINEAR_IMPLS, WINDOW_IMPLS
from attn_cli.core.backend import format_bytes
from attn_cli.render.json_render import dumps, envelope, plain
from attn_cli.render.options import RenderOptions
from attn_cli.render.rich_render import records_table

ROW_KEYS = tuple(field.name for field in fields(Row))
# The CSV's last columns: whether each row entered the time and the memory fit ("fitted"), or
# was left out below the floor ("below floor"; see attn_cli.bench.fit); empty where no fit went
# through it (the row did not run, or fewer than two rows of its implementation passed the floor).
FIT_KEYS = ("time_fit", "memory_fit")
CSV_KEYS = ROW_KEYS + FIT_KEYS
MEMORY_METHODS = {
    "tracemalloc": "trace",
    "torch profiler": "prof",
    "cuda allocator": "cuda",
    "estimate": "est",
}


def significant(value: float | None, digits: int) -> str:
    """A few significant digits, never in exponent notation above 1: 0.0123, 4.5, 1234."""
    if value is None:
        return "—"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def opening(fmt: str, config: BenchConfig, ops: CpuOps) -> str:
    """What the output starts with, known before the sweep: the rich title line, the CSV
    header, or the JSON envelope (the text of to_json and to_csv starts with it)."""
    if fmt == "csv":
        return ",".join(CSV_KEYS) + "\n"
    if fmt == "json":
        frame = dumps({**envelope("bench"), "device": None})
        return frame[: frame.index('"device"')]
    return title(config, ops.describe(config.dtype)).plain + "\n"  # printed as rich text


def title(config: BenchConfig, info: dict[str, Any]) -> Text:
    """attn bench · AMD EPYC: the first line of the rich output."""
    return Text(f"attn bench · {info.get('name', config.device)}", style="bold")


def bench_renderable(
    result: BenchResult, fits: dict[str, Fit], with_title: bool = True, source: str | None = None
) -> RenderableType:
    """Header, one row per (implementation, n), notes, then the exponents and their reading
    (without the title line when it was written before the sweep). ``source``: where a saved
    sweep was read from, said under the title."""
    notes: dict[tuple[str, str], list[int]] = {}  # (impl, note) -> the swept values it applies to
    rows = sorted_rows(result)
    swept = result.config.variable  # n, or d with --dims
    for row in rows:
        if row.note:
            notes.setdefault((row.impl, row.note), []).append(row.d if swept == "d" else row.n)
    markers = {key: index for index, key in enumerate(notes, 1)}
    parts: list[RenderableType] = [
        _header(result, with_title, source),
        _rows_table(result, rows, markers),
    ]
    for (impl, note), index in markers.items():
        sizes = notes[(impl, note)]
        every = len(sizes) == _count(rows, impl)
        where = f"every {swept}" if every else f"{swept}=" + ",".join(map(str, sizes))
        parts.append(Text(f"[{index}] {impl} ({where}): {note}", style="yellow"))
    parts.append(Text(legend(result.config), style="dim"))
    fitted = {impl: fit for impl, fit in fits.items() if fit.readable}
    variable = result.config.variable
    if fitted:
        title = f"How time and memory grow with {variable} (log-log slope)"
        if variable == "n":
            title = "How time and memory grow with n (log-log slope over the rows past the floor)"
        parts += [Text(""), Text(title, style="bold")]
        headings = {"time_over": f"over {variable}", "memory_over": f"over {variable}"}
        parts.append(records_table(_fit_records(fitted), RenderOptions(precision=2), headings))
        parts.extend(
            Text(sentence) for sentence in growth_readings(fitted, variable, result.config.block)
        )
        verdicts = table_verdicts(fitted, variable)
        if verdicts:  # the table the verdicts read, shown where they refer to it
            parts += [Text(""), Text(COMPLEXITY_TITLE, style="bold")]
            parts.append(records_table(complexity_rows(), RenderOptions(precision=2)))
            parts.extend(Text(sentence) for sentence in verdicts)
    warnings = diagnosis(result, fitted)
    if warnings:
        parts.append(Text(""))
        parts.extend(Text(line, style="yellow") for line in warnings)
    if result.interrupted:
        parts.append(Text("Interrupted: only the rows finished so far are shown.", style="red"))
    return Group(*parts)


def legend(config: BenchConfig) -> str:
    """The key to the table's columns; its FLOP count is the one each implementation's TFLOP/s
    divides by (impls.work_flops): the causal mask's half, a window's band, linear's order."""
    if config.backward:
        call, inputs = "forward and backward", "inputs and dO excluded, dQ, dK, dV included"
        err = "max |dQ, dK, dV − float64 reference| on sampled query and key rows"
    else:
        call, inputs = "call", "inputs excluded"
        err = "max |output − float64 reference| on sampled rows"
    return (
        f"ms: median time of one {call}, ± the spread of the middle half of the runs (yellow: "
        f"above a tenth of the median) · TFLOP/s: the attention's floating-point operations "
        f"({_flops_counted(config)}) per second, in trillions · mem: peak bytes allocated by one "
        f"{call}, {inputs}, measured by (trace) Python's tracemalloc, (prof) the torch "
        f"profiler, (cuda) the CUDA allocator, or (est) estimated · err: {err}"
    )


def _flops_counted(config: BenchConfig) -> str:
    """What the FLOPs of the implementations run count, one phrase per kind of count."""
    banded = [impl for impl in config.impls if impl in WINDOW_IMPLS and impl != "sdpa-window"]
    linear = [impl for impl in config.impls if impl in LINEAR_IMPLS]
    dense = [impl for impl in config.impls if impl not in banded and impl not in linear]
    if config.backward:  # only softmax attention over every key runs a backward
        products = "Q Kᵀ, A V and the backward's dO Vᵀ, Aᵀ dO, dS K, dSᵀ Q"
        if config.causal:
            return (
                f"{products}, 6·n²·d per head: half of 12·n²·d, the causal mask's pairs (a "
                "recomputed Q Kᵀ not counted)"
            )
        return f"{products}, 12·n²·d per head (a recomputed Q Kᵀ not counted)"
    counts = []
    if dense:
        count = "Q Kᵀ and A V, 4·n²·d per head"
        if config.causal:
            count = "Q Kᵀ and A V, 2·n²·d per head: half of 4·n²·d, the causal mask's pairs"
        counts.append(count if not (banded or linear) else f"{', '.join(dense)}: {count}")
    if banded:
        pairs = "the pairs 0 ≤ i − j ≤ w" if config.causal else "the pairs |i − j| ≤ w"
        counts.append(f"{', '.join(banded)}: Q Kᵀ and A V over {pairs}, 4·d per pair and head")
    if linear:
        counts.append(f"{', '.join(linear)}: the linear order, 4·n·d·(d + 1) + n·d per head")
    return "; ".join(counts)


def sorted_rows(result: BenchResult) -> list[Row]:
    """Rows grouped by implementation (in the order asked for), then by n."""
    order = {impl: index for index, impl in enumerate(result.config.impls)}
    return sorted(result.rows, key=lambda row: (order.get(row.impl, len(order)), row.n))


def _count(rows: list[Row], impl: str) -> int:
    return sum(1 for row in rows if row.impl == impl)


def _header(
    result: BenchResult, with_title: bool = True, source: str | None = None
) -> RenderableType:
    config, info = result.config, result.device_info
    shape = f"d {config.d}" if not config.dims else f"d swept at n {_joined(config.sizes)}"
    details = (
        f"device {config.device} · {config.dtype} · batch {config.batch} · heads "
        f"{config.heads} · {shape} · {'causal' if config.causal else 'not causal'} · "
        f"block {config.block}"
    )
    if config.backward:
        details += " · forward + backward"
    if any(impl in WINDOW_IMPLS for impl in config.impls):
        details += f" · window w {config.window}"
    if info.get("peak_tflops"):
        details += f" · dense peak {info['peak_tflops']:g} TFLOP/s ({info.get('peak_label')})"
    lines = [title(config, info)] if with_title else []
    if source is not None:
        lines.append(Text(source, style="dim"))
    lines.append(Text(details, style="dim"))
    if result.load is not None:
        lines.append(Text(_load_line(result), style="dim"))
    return Group(*lines)


def _joined(values: tuple[int, ...]) -> str:
    return ",".join(str(value) for value in values)


def _load_line(result: BenchResult) -> str:
    """threads numpy 2, torch 2 · 2 cores · load average 0.31 before, up to 1.9 during"""
    load = result.load
    assert load is not None
    threads = ", ".join(f"{name} {count}" for name, count in load.threads.items()) or "—"
    line = f"threads {threads}"
    if load.on_gpu:  # the GPU does the arithmetic
        line += " (one launches the kernels)"
    line += f" · {load.cores} cores"
    if load.before is not None:
        line += f" · load average {load.before:.2f} before"
        if load.during_max is not None:
            line += f", up to {load.during_max:.2f} during"
    return line


def _rows_table(result: BenchResult, rows: list[Row], markers: dict[tuple[str, str], int]) -> Table:
    with_peak = bool(result.device_info.get("peak_tflops"))
    table = Table(
        box=None,
        header_style="bold underline",
        pad_edge=False,
        collapse_padding=True,
        show_edge=False,
    )
    swept = result.config.variable
    columns = [
        "impl",
        swept,
        *(["n"] if swept == "d" else []),
        "ms",
        "±",
        "TFLOP/s",
        *(["% peak"] if with_peak else []),
        "mem",
        "by",
    ]
    for column in [*columns, "err"]:
        table.add_column(column, justify="left" if column == "impl" else "right", no_wrap=True)
    table.add_column("status")  # the only column that may wrap on a narrow terminal
    previous = None
    for row in rows:
        ok = row.status == "ok"
        cells = [
            row.impl if row.impl != previous else "",
            *([str(row.d), str(row.n)] if swept == "d" else [str(row.n)]),
            significant(row.ms_median, 3) if ok else "—",
            _spread(row) if ok else "",
            significant(row.tflops, 3) if ok else "—",
        ]
        if with_peak:
            fraction = row.peak_fraction
            cells.append(f"{100 * fraction:.1f}" if fraction is not None else "—")
        cells += [*_memory(row), f"{row.max_abs_err:.1e}" if row.max_abs_err is not None else "—"]
        marker = markers.get((row.impl, row.note))
        status = Text(row.status, style=STATUS_STYLES.get(row.status, ""))
        if marker:
            status.append(f" [{marker}]", style="yellow")
        # Text, not markup: a sweep read with --from names its implementations itself, and
        # "[link=...]" in one must be shown as written, not made a hyperlink.
        table.add_row(*(Text(cell) if isinstance(cell, str) else cell for cell in cells), status)
        previous = row.impl
    return table


def _spread(row: Row) -> Text:
    """The ± cell, yellow when it is above a tenth of the median (as torch.utils.benchmark)."""
    noisy = is_unstable(row.ms_median, row.ms_spread)
    return Text(significant(row.ms_spread, 2), style="yellow" if noisy else "")


STATUS_STYLES = {
    "ok": "green",
    "skipped": "yellow",
    "oom": "red",
    "unsupported": "magenta",
    "error": "red",
}


def _memory(row: Row) -> tuple[str, str]:
    if row.peak_mem_bytes is None:
        return "—", ""
    text = format_bytes(row.peak_mem_bytes, significant=3)
    if row.status == "skipped":
        text = "≈" + text
    return text, MEMORY_METHODS.get(row.memory_method or "", row.memory_method or "")


# The heading over the complexity table the verdicts are read against.
COMPLEXITY_TITLE = (
    f"What the lectures predict: the complexity table of {COMPLEXITY_SOURCE} (n tokens, d the "
    "width of a head, w the window)"
)


def readings(fits: dict[str, Fit], variable: str = "n", block: int | None = None) -> list[str]:
    """The growth readings, then the verdicts against the complexity table."""
    return growth_readings(fits, variable, block) + table_verdicts(fits, variable)


def growth_readings(
    fits: dict[str, Fit], variable: str = "n", block: int | None = None
) -> list[str]:
    """The contrast line first (when there is one), one sentence per implementation, then the
    rows left out of the fits; none over d (--dims). ``block``: the sweep's key block."""
    if variable == "d":
        return []
    first = contrast(fits)
    per_impl = [reading(impl, fit, block) for impl, fit in fits.items()]
    return ([first] if first else []) + per_impl + left_out_readings(fits)


def table_verdicts(fits: dict[str, Fit], variable: str = "n") -> list[str]:
    """For each implementation with a row in the complexity table: its time and memory
    exponents, each judged against that row."""
    verdicts = [table_verdict(impl, fit, variable) for impl, fit in fits.items()]
    return [verdict for verdict in verdicts if verdict]


def _fit_records(fits: dict[str, Fit]) -> list[dict[str, Any]]:
    """Each exponent, then the sizes it was fitted over (time_over, memory_over)."""
    return [
        {
            "impl": impl,
            "time exponent": _time_exponent(fit),
            "time_over": fitted_sizes(fit, "time") if fit.time_exponent is not None else None,
            "memory exponent": _exponent(fit.memory_exponent, fit.memory_left_out),
            "memory_over": (
                fitted_sizes(fit, "memory") if fit.memory_exponent is not None else None
            ),
        }
        for impl, fit in fits.items()
    ]


def _time_exponent(fit: Fit) -> str | None:
    text = _exponent(fit.time_exponent, fit.time_left_out)
    return text if fit.time_exponent is None or fit.time_reliable else f"{text} (noisy)"


def _exponent(value: float | None, left_out: tuple[int, ...] = ()) -> str | None:
    """The exponent to two decimals; "not read" where rows were left out and too few remain."""
    if value is None:
        return "not read" if left_out else None
    return f"{value:.2f}"


def to_json(result: BenchResult, fits: dict[str, Fit]) -> str:
    return dumps(to_document(result, fits))


def to_document(result: BenchResult, fits: dict[str, Fit]) -> dict[str, Any]:
    """The bench as JSON data: the envelope, where it ran, the config, rows and fits."""
    config = result.config
    return {
        **envelope("bench"),
        "device": config.device,
        "dtype": config.dtype,
        "machine": plain(result.machine()),
        "config": plain(asdict(config)),
        "rows": [plain(row.as_dict()) for row in sorted_rows(result)],
        "fit": {impl: plain(fit.as_dict()) for impl, fit in fits.items()},
        "reading": _all_readings(result, fits),
        "interrupted": result.interrupted,
    }


def _all_readings(result: BenchResult, fits: dict[str, Fit]) -> list[str]:
    """The sentences under the rich table, in order: the readings, then the warnings."""
    fitted = {impl: fit for impl, fit in fits.items() if fit.readable}
    config = result.config
    return readings(fitted, config.variable, config.block) + diagnosis(result, fitted)


def to_csv(result: BenchResult, fits: dict[str, Fit] | None = None) -> str:
    """The rows, each with whether it entered the time and the memory fit (FIT_KEYS)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_KEYS, lineterminator="\n")
    writer.writeheader()
    for row in sorted_rows(result):
        record = {key: "" if value is None else value for key, value in row.as_dict().items()}
        fit = (fits or {}).get(row.impl)
        size = getattr(row, result.config.variable)
        record["time_fit"] = _fit_cell(size, fit, "time")
        record["memory_fit"] = _fit_cell(size, fit, "memory")
        writer.writerow(record)
    return buffer.getvalue()


def _fit_cell(size: int, fit: Fit | None, what: str) -> str:
    """ "fitted", "below floor", or "" (the row is in no fit: it did not run, or too few rows
    of its implementation did)."""
    if fit is None:
        return ""
    fitted, left_out = (
        (fit.time_sizes, fit.time_left_out)
        if what == "time"
        else (fit.memory_sizes, fit.memory_left_out)
    )
    if size in left_out:
        return "below floor"
    return "fitted" if size in fitted and len(fitted) >= 2 else ""
