"""--plot: time and peak memory against n on log-log axes (matplotlib, an optional extra)."""

from __future__ import annotations

import io
import math
import statistics
from pathlib import Path
from typing import Any

from attn_cli.bench.config import BenchResult, Row
from attn_cli.core.errors import UserError
from attn_cli.core.outputs import check_writable, require_matplotlib, write_bytes

# Formats matplotlib writes with its own backends and Pillow, chosen by the file's suffix. Listed
# here so that a bad --plot is refused before the sweep without importing matplotlib. pgf is left
# out: it needs a TeX installation, and would fail only after the sweep.
PLOT_FORMATS = ("png", "pdf", "svg", "svgz", "jpg", "jpeg", "eps", "ps", "tif", "tiff", "webp")


def check_plot_path(path: Path) -> None:
    """Refuse, before the sweep, a --plot path that matplotlib could not write."""
    suffix = path.suffix.lower().removeprefix(".")
    if suffix not in PLOT_FORMATS:
        formats = ", ".join(f".{name}" for name in PLOT_FORMATS)
        raise UserError(
            f"--plot {path}: the file name must end in one of {formats} (it picks the format); "
            "e.g. --plot bench.png."
        )
    check_writable(path, "--plot")


# Lines that coincide (sdpa under sdpa-flash, tiled under tiled-numpy) must stay apart: each
# implementation has its own marker and dash pattern, hollow markers show a line beneath.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h")
DASHES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))


def line_style(index: int) -> dict[str, Any]:
    """The marker and dash pattern of the index-th implementation (no two alike up to 18)."""
    return {
        "marker": MARKERS[index % len(MARKERS)],
        "linestyle": DASHES[index % len(DASHES)],
        "markerfacecolor": "none",
        "markersize": 7 + 2 * (index % 3),  # a smaller marker sits inside a larger one
        "linewidth": 1.6,
    }


def reference_slopes(rows: list[Row], time: bool) -> list[tuple[str, list[int], list[float]]]:
    """The n and n² guide lines: (label, ns, values), through the median value at the
    smallest n (so they start among the data), over the sizes measured."""
    values: list[tuple[int, float]] = []
    for row in rows:
        value = row.ms_median if time else (row.peak_mem_bytes or 0) / 2**20
        if value:  # not measured (None) or nothing to draw on a log axis (0)
            values.append((row.n, value))
    if len({n for n, _ in values}) < 2:
        return []
    ns = sorted({n for n, _ in values})
    start = ns[0]
    anchor = statistics.median(value for n, value in values if n == start)
    return [
        (label, ns, [anchor * (n / start) ** power for n in ns])
        for label, power in (("∝ n", 1), ("∝ n²", 2))
    ]


def draw_reference_slopes(axis: Any, rows: list[Row], time: bool) -> None:
    lines = reference_slopes(rows, time)
    if not lines:
        return
    for (label, ns, values), dash in zip(lines, (":", "--"), strict=True):
        axis.plot(ns, values, color="grey", linestyle=dash, linewidth=1, alpha=0.7, label=label)


def write_plot(result: BenchResult, path: Path) -> None:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = bench_figure(result)
    buffer = io.BytesIO()  # drawn whole in memory, then written in place of the file
    try:
        figure.savefig(buffer, format=path.suffix.lower().removeprefix("."), dpi=120)
    except ValueError as error:  # a format this matplotlib does not know
        raise UserError(f"--plot {path}: {error}.") from None
    finally:
        plt.close(figure)
    write_bytes(path, buffer.getvalue(), "--plot")


def literal(text: Any) -> str:
    """Text drawn as written: matplotlib reads what lies between two $ as mathtext, and a sweep
    read with --from names its implementations and machine itself ("$\\frac{$" would fail
    to parse, in a traceback)."""
    return str(text).replace("$", r"\$")


def bench_figure(result: BenchResult) -> Any:
    """The matplotlib figure: time and memory against n, log-log, with n and n² guides."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    figure, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(11, 4.5))
    for index, impl in enumerate(result.config.impls):
        rows = [row for row in result.rows if row.impl == impl and row.status == "ok"]
        if not rows:
            continue
        ns = [row.n for row in rows]
        style = line_style(index)
        label = literal(impl)
        time_axis.plot(ns, [row.ms_median for row in rows], label=label, **style)
        memory = [math.nan if b is None else b / 2**20 for b in (r.peak_mem_bytes for r in rows)]
        memory_axis.plot(ns, memory, label=label, **style)
    config = result.config
    for axis in (time_axis, memory_axis):
        draw_reference_slopes(
            axis, [row for row in result.rows if row.status == "ok"], axis is time_axis
        )
    for axis, label in ((time_axis, "time (ms, median)"), (memory_axis, "peak memory (MiB)")):
        axis.set_xscale("log", base=2)
        axis.set_xticks(list(config.sizes), labels=[str(n) for n in config.sizes])
        axis.xaxis.set_minor_locator(NullLocator())
        axis.set_yscale("log")
        axis.set_xlabel("sequence length n")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
    time_axis.legend(fontsize="small")
    memory_axis.legend(fontsize="small")
    figure.suptitle(
        literal(
            f"{result.device_info.get('name', config.device)} · {config.dtype} · batch "
            f"{config.batch} · heads {config.heads} · d {config.d}"
            + (" · causal" if config.causal else "")
            + (" · forward + backward" if config.backward else "")
        )
    )
    figure.tight_layout()
    return figure
