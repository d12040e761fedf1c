"""attn bench: time and memory of attention implementations against sequence length.

Parsing and dispatch only; the sweep lives in attn_cli.bench, the layout in
attn_cli.render.bench_render. Nothing heavy (torch, the bench package) is imported until the
command runs, so the start-up of every other command is unaffected.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from attn_cli.cli.options import (
    FLAG,
    OUTPUT_PANEL,
    DeviceName,
    DtypeName,
    help_text,
    metavar_of,
)
from attn_cli.cli.parsing import in_range
from attn_cli.core.variants import BENCH_HEAD_WIDTH, BENCH_SIZES

if TYPE_CHECKING:
    from attn_cli.bench.config import BenchConfig, BenchResult, Row
    from attn_cli.bench.devices import CpuOps
    from attn_cli.bench.fit import Fit

RUN_PANEL = "What to run"
SHAPE_PANEL = "Shape"
# The options --from allows: the rest measure, and a saved sweep is not measured again.
WITH_SAVED = ("fmt", "plot", "saved")


def per_device(values: dict[str, object]) -> str:
    """A per-device default as the help says it: "64 on cpu, 128 on cuda, 64 on mps"."""
    return ", ".join(f"{value} on {device}" for device, value in values.items())


SIZES_DEFAULTS = per_device(
    {device: f"{low}..{high}" for device, (low, high) in BENCH_SIZES.items()}
)


class BenchFormat(StrEnum):
    rich = "rich"
    json = "json"
    csv = "csv"


# The options of attn bench, each declared once (the command below takes them all).
DeviceOpt = Annotated[
    DeviceName,
    typer.Option(
        "--device",
        metavar=metavar_of(DeviceName),
        help="Where to run: the CPU, or a GPU (cuda: NVIDIA's; mps: Apple's; both need PyTorch).",
        rich_help_panel=RUN_PANEL,
    ),
]

SizesOpt = Annotated[
    str | None,
    typer.Option(
        "--sizes",
        metavar="LENGTHS",
        help=help_text(
            "Sequence lengths n: '512,1024,4096' or a doubling range '128..2048' "
            f"(default: {SIZES_DEFAULTS})."
        ),
        rich_help_panel=RUN_PANEL,
        show_default=False,
    ),
]

ImplOpt = Annotated[
    str | None,
    typer.Option(
        "--impl",
        metavar="NAMES",
        help=help_text(
            "Comma-separated: naive (softmax(Q Kᵀ / √d) V, the n × n weights formed), sdpa "
            "(PyTorch's scaled_dot_product_attention, its fastest kernel for the device), "
            "sdpa-flash, sdpa-efficient, sdpa-cudnn, sdpa-math (sdpa held to one of its "
            "kernels: FlashAttention; the memory-efficient one; cuDNN's, NVIDIA's library of "
            "neural-network kernels; the plain math), tiled (the flash lesson's loop over key "
            "blocks), triton-flash (the flash lesson as a Triton kernel, its tile sizes tuned "
            "on the GPU for each shape; CUDA only, needs Triton: the kernel extra), "
            "numpy, tiled-numpy. Beyond the n² wall, never run unless named: window, "
            "window-numpy (the band |i − j| ≤ w, every block of queries at once with its "
            "nearby keys), sdpa-window (sdpa with the dense band mask), flex-window "
            "(FlexAttention's block mask, compiled), linear, linear-numpy (linear attention "
            "with the feature map φ(x) = elu(x) + 1, positive for every x: elu(x) is x for "
            "x > 0 and eˣ − 1 below). (default: every one of the first list that the device "
            "supports; numpy,tiled-numpy when PyTorch is not installed; with --backward, "
            "those of them that have a backward)."
        ),
        rich_help_panel=RUN_PANEL,
        show_default=False,
    ),
]

RepeatsOpt = Annotated[
    int | None,
    typer.Option(
        "--repeats",
        metavar="N",
        callback=in_range(1),
        help=help_text("Timed runs per row (default: about 0.5 s worth, 5 to 50)."),
        rich_help_panel=RUN_PANEL,
        show_default=False,
    ),
]

BlockOpt = Annotated[
    int,
    typer.Option(
        "--block",
        metavar="N",
        callback=in_range(1),
        help="Key block size of tiled.",
        rich_help_panel=RUN_PANEL,
    ),
]

SeedOpt = Annotated[
    int,
    typer.Option(
        "--seed",
        metavar="N",
        callback=in_range(0),
        help="Seed of the random inputs.",
        rich_help_panel=RUN_PANEL,
    ),
]

WindowOpt = Annotated[
    int,
    typer.Option(
        "--window",
        metavar="N",
        callback=in_range(0),
        help="Window w of the window implementations: query i sees key j when |i − j| ≤ w "
        "(with --causal, 0 ≤ i − j ≤ w).",
        rich_help_panel=RUN_PANEL,
    ),
]

DimsOpt = Annotated[
    str | None,
    typer.Option(
        "--dims",
        metavar="WIDTHS",
        help="Sweep the head dimension d instead of n, at the one n of --sizes: "
        "'16,32,64' or a doubling range '16..256' (shows linear attention's d² term).",
        rich_help_panel=RUN_PANEL,
        show_default=False,
    ),
]

HeadWidthOpt = Annotated[
    int | None,
    typer.Option(
        "--d",
        metavar="N",
        callback=in_range(1),
        help=help_text(f"Head dimension (default: {per_device(BENCH_HEAD_WIDTH)})."),
        rich_help_panel=SHAPE_PANEL,
        show_default=False,
    ),
]

HeadsOpt = Annotated[
    int,
    typer.Option(
        "--heads",
        metavar="N",
        callback=in_range(1),
        help="Attention heads.",
        rich_help_panel=SHAPE_PANEL,
    ),
]

BatchOpt = Annotated[
    int,
    typer.Option(
        "--batch",
        metavar="N",
        callback=in_range(1),
        help="Batch size.",
        rich_help_panel=SHAPE_PANEL,
    ),
]

DtypeOpt = Annotated[
    DtypeName | None,
    typer.Option(
        "--dtype",
        metavar=metavar_of(DtypeName),
        help=help_text(
            "Floating-point type of Q, K and V and of the computation (default: "
            "bfloat16 on cuda, float32 otherwise)."
        ),
        rich_help_panel=SHAPE_PANEL,
        show_default=False,
    ),
]

CausalOpt = Annotated[
    bool,
    typer.Option(
        "--causal", metavar=FLAG, help="Causal mask (half the FLOPs).", rich_help_panel=SHAPE_PANEL
    ),
]

BackwardOpt = Annotated[
    bool,
    typer.Option(
        "--backward",
        metavar=FLAG,
        help=help_text(
            "Time the forward and the backward together: dQ, dK, dV for a fixed upstream "
            "gradient dO, by autograd (naive, sdpa*), by the Triton backward kernel "
            "(triton-flash: CUDA) or by hand (numpy: attn backward's code); the "
            "others have no backward here and their rows say why. FLOPs: 12·n²·d per head, "
            "three times the forward's; err: the largest of dQ, dK and dV's against float64."
        ),
        rich_help_panel=RUN_PANEL,
    ),
]

BenchFormatOpt = Annotated[
    BenchFormat,
    typer.Option(
        "--format",
        "-f",
        metavar=metavar_of(BenchFormat),
        help="Output format.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]

PlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        metavar="FILE",
        help="Also write a log-log plot of time and memory to this file; its suffix picks "
        "the format: .png, .pdf, .svg, ... (needs matplotlib).",
        rich_help_panel=OUTPUT_PANEL,
        dir_okay=False,
        show_default=False,
    ),
]

FromOpt = Annotated[
    Path | None,
    typer.Option(
        "--from",
        metavar="FILE",
        help="Show a sweep saved with --format json again, without measuring: its table, "
        "its fits and their reading, by this attn's rules (measure on a GPU, show it on a "
        "laptop). Goes with --format and --plot only; needs no PyTorch.",
        rich_help_panel=RUN_PANEL,
        show_default=False,
    ),
]


def bench(
    ctx: typer.Context,
    device: DeviceOpt = DeviceName("cpu"),
    sizes: SizesOpt = None,
    impl: ImplOpt = None,
    repeats: RepeatsOpt = None,
    block: BlockOpt = 128,
    seed: SeedOpt = 0,
    window: WindowOpt = 64,
    dims: DimsOpt = None,
    d: HeadWidthOpt = None,
    heads: HeadsOpt = 8,
    batch: BatchOpt = 1,
    dtype: DtypeOpt = None,
    causal: CausalOpt = False,
    backward: BackwardOpt = False,
    fmt: BenchFormatOpt = BenchFormat.rich,
    plot: PlotOpt = None,
    saved: FromOpt = None,
) -> None:
    """Time and memory of attention against sequence length n: the O(n²) wall, measured.

    Runs every implementation at every n and reports the median time, the speed in TFLOP/s
    (10¹² floating-point operations a second; attention's FLOPs per head are 4·n²·d: 2·n²·d
    for Q Kᵀ and as many for A V, half that with --causal), its % of the GPU's dense peak, peak memory and the max error against a
    float64 reference, then fits how
    time and memory grow with n over the rows past the floor of fixed costs (a row enters
    when it takes 3 × its implementation's fastest). See `attn flash` for the tiled algorithm
    step by step.
    """
    from attn_cli.cli.commands.streams import start_up_done
    from attn_cli.render.bench_plot import check_plot_path, require_matplotlib

    start_up_done()

    if saved is not None:
        refuse_measuring_options(ctx)
        show_saved(saved, fmt, plot)
        return
    if plot is not None and dims is not None:
        from attn_cli.core.errors import UserError

        raise UserError(
            "--plot draws time and memory against n, but --dims sweeps d; leave out one of them."
        )
    if plot is not None:  # before the sweep, which can take minutes
        check_plot_path(plot)
        require_matplotlib()
    config = bench_config(
        device,
        sizes,
        impl,
        repeats,
        block,
        seed,
        d,
        heads,
        batch,
        dtype,
        causal,
        window,
        dims,
        backward,
    )
    measure_and_show(config, fmt, plot)


def measure_and_show(config: BenchConfig, fmt: BenchFormat, plot: Path | None) -> None:
    """The sweep, measured and shown in ``fmt`` (and drawn to ``plot``)."""
    from attn_cli.bench.devices import device_ops
    from attn_cli.bench.sweep import check_sweep_work
    from attn_cli.cli.commands.streams import stdout_console
    from attn_cli.render import bench_render
    from attn_cli.render.bench_plot import write_plot

    console = stdout_console()
    # What the output starts with is written before the sweep, which can take minutes: a
    # reader such as `head -1` has its line at once, closes the pipe, and the sweep stops at
    # the next row (measure checks between rows) instead of running to the end.
    ops = device_ops(config.device)
    check_sweep_work(config, ops)  # hours of rows: refused before the first
    started = bench_render.opening(fmt.value, config, ops)
    if fmt is BenchFormat.rich:
        console.print(bench_render.title(config, ops.describe(config.dtype)))
    else:
        console.file.write(started)
        console.file.flush()
    result, fits = measure(config)
    if fmt is BenchFormat.rich:
        console.print(bench_render.bench_renderable(result, fits, with_title=False))
    else:
        text = (
            bench_render.to_json(result, fits)
            if fmt is BenchFormat.json
            else bench_render.to_csv(result, fits)
        )
        console.out(
            text[len(started) :], highlight=False, end="" if fmt is BenchFormat.csv else "\n"
        )
    if plot is not None and result.rows:
        write_plot(result, plot)
        _stderr().print(f"plot written to {plot}", markup=False)
    if result.interrupted:
        count = len(result.rows)
        _stderr().print(
            f"attn: interrupted after {count} row{'' if count == 1 else 's'}.", markup=False
        )
        raise typer.Exit(code=130)


def refuse_measuring_options(ctx: typer.Context) -> None:
    """--from shows a saved sweep: an option that would measure is a user error, named."""
    from attn_cli.core.errors import UserError

    for param in ctx.command.params:
        if param.name in WITH_SAVED or param.name is None:
            continue
        source = ctx.get_parameter_source(param.name)
        if source is not None and source.name == "COMMANDLINE":
            raise UserError(
                f"--from shows a saved sweep without measuring, and {param.opts[0]} is an "
                "option of a measurement; leave it out (--from goes with --format and --plot)."
            )


def show_saved(path: Path, fmt: BenchFormat, plot: Path | None) -> None:
    """attn bench --from FILE: the saved sweep's table, fits and reading, fitted again."""
    from attn_cli.bench.fit import fit_sweep
    from attn_cli.bench.saved import load_sweep
    from attn_cli.cli.commands.streams import stdout_console
    from attn_cli.core.errors import UserError
    from attn_cli.render import bench_render
    from attn_cli.render.bench_plot import check_plot_path, require_matplotlib, write_plot

    if plot is not None:
        check_plot_path(plot)
        require_matplotlib()
    sweep = load_sweep(path)
    result = sweep.result
    if plot is not None and result.config.dims:
        raise UserError(
            f"--plot draws time and memory against n, but the sweep in {path} varies d; leave "
            "out --plot."
        )
    fits = fit_sweep(result)
    if plot is not None and result.rows:  # written whole before anything is printed
        write_plot(result, plot)
        _stderr().print(f"plot written to {plot}", markup=False)
    console = stdout_console()
    if fmt is BenchFormat.rich:
        console.print(bench_render.bench_renderable(result, fits, source=sweep.describe(path)))
    elif fmt is BenchFormat.json:
        console.out(bench_render.to_json(result, fits), highlight=False)
    else:
        console.out(bench_render.to_csv(result, fits), highlight=False, end="")


def bench_config(
    device: DeviceName,
    sizes: str | None,
    impl: str | None,
    repeats: int | None,
    block: int,
    seed: int,
    d: int | None,
    heads: int,
    batch: int,
    dtype: DtypeName | None,
    causal: bool,
    window: int = 64,
    dims: str | None = None,
    backward: bool = False,
) -> BenchConfig:
    """The sweep the options ask for, checked (a user error before anything runs)."""
    from attn_cli.bench.config import (
        DEFAULT_D,
        DEFAULT_DTYPE,
        BenchConfig,
        parse_impls,
        parse_sizes,
    )
    from attn_cli.bench.devices import device_ops, torch_available
    from attn_cli.bench.impls import default_impls, require_torch
    from attn_cli.core.errors import UserError
    from attn_cli.core.whole import check_whole_size

    numbers = {"repeats": repeats, "block": block, "seed": seed, "d": d}
    numbers.update({"heads": heads, "batch": batch, "window": window})
    for keyword, value in numbers.items():
        check_whole_size(value, keyword)
    chosen = parse_impls(impl, ()) if impl is not None else ()  # checked before torch loads
    grid = parse_sizes(sizes, device.value)
    swept = parse_sizes(dims, device.value, "--dims") if dims is not None else ()
    if swept and len(grid) != 1:
        raise UserError(
            f"--dims sweeps d at one n, but --sizes gives {len(grid)}; give one, e.g. "
            "--sizes 2048 --dims 16..256."
        )
    device_ops(device.value)  # a user error off the CPU without torch
    with_torch = torch_available()
    if backward:
        from attn_cli.bench import backward as backward_registry

        defaults = backward_registry.default_impls(device.value, with_torch)
    else:
        defaults = default_impls(device.value, with_torch)
    impls = chosen or defaults  # numpy ones only without torch
    require_torch(impls, with_torch)
    return BenchConfig(
        device=device.value,
        sizes=grid,
        d=d if d is not None else DEFAULT_D[device.value],
        heads=heads,
        batch=batch,
        dtype=dtype.value if dtype else DEFAULT_DTYPE[device.value],
        causal=causal,
        impls=impls,
        repeats=repeats,
        block=block,
        seed=seed,
        window=window,
        dims=swept,
        backward=backward,
    )


def measure(config: BenchConfig) -> tuple[BenchResult, dict[str, Fit]]:
    """Run the sweep (a progress bar on stderr) and fit how time and memory grow with n."""
    from attn_cli.bench.devices import device_ops
    from attn_cli.bench.fit import fit_sweep

    result = _run_with_progress(config, device_ops(config.device))
    return result, fit_sweep(result)


def _stderr() -> Console:
    from attn_cli.cli.commands.streams import stderr_console

    return stderr_console()


def _run_with_progress(config: BenchConfig, ops: CpuOps) -> BenchResult:
    """The sweep, with a progress bar on stderr (gone when it finishes)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from attn_cli.bench.sweep import run_sweep
    from attn_cli.cli.commands.streams import reader_gone, stdout_closed

    total = len(config.sizes) * len(config.impls)
    stderr = _stderr()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
        disable=not stderr.is_terminal,  # off a terminal a bar is only a stray newline
    ) as progress:
        task = progress.add_task("bench", total=total)

        def started(impl: str, n: int) -> None:
            progress.update(task, description=f"{impl:<14} n={n:<6}")

        def finished(_row: Row) -> None:
            progress.advance(task)
            if reader_gone():  # nobody reads on: stop here, quietly
                stdout_closed()

        return run_sweep(config, ops, on_start=started, on_row=finished)
