"""--plot: time and peak memory against n on log-log axes (matplotlib, an optional extra)."""

from __future__ import annotations

from pathlib import Path

from attn_cli.bench.config import BenchResult
from attn_cli.errors import UserError
from attn_cli.outputs import check_writable, require_matplotlib

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


def write_plot(result: BenchResult, path: Path) -> None:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    figure, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(11, 4.5))
    for impl in result.config.impls:
        rows = [row for row in result.rows if row.impl == impl and row.status == "ok"]
        if not rows:
            continue
        ns = [row.n for row in rows]
        time_axis.plot(ns, [row.ms_median for row in rows], marker="o", label=impl)
        memory_axis.plot(ns, [row.peak_mem_bytes / 2**20 for row in rows], marker="o", label=impl)
    config = result.config
    for axis, label in ((time_axis, "time (ms, median)"), (memory_axis, "peak memory (MiB)")):
        axis.set_xscale("log", base=2)
        axis.set_xticks(list(config.sizes), labels=[str(n) for n in config.sizes])
        axis.xaxis.set_minor_locator(NullLocator())
        axis.set_yscale("log")
        axis.set_xlabel("sequence length n")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
    time_axis.legend(fontsize="small")
    figure.suptitle(
        f"{result.device_info.get('name', config.device)} · {config.dtype} · batch "
        f"{config.batch} · heads {config.heads} · d {config.d}"
        + (" · causal" if config.causal else "")
    )
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=120)
    except OSError as error:
        raise UserError(f"--plot {path}: cannot write it ({error.strerror}).") from None
    except ValueError as error:  # a format this matplotlib does not know
        raise UserError(f"--plot {path}: {error}.") from None
    finally:
        plt.close(figure)
