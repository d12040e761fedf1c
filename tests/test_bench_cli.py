"""attn bench through the real Typer app: formats, user errors, Ctrl-C, start-up cost."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys

import pytest

from attn_cli.bench import impls as registry
from attn_cli.bench.config import BenchConfig, BenchResult, Row
from attn_cli.bench.fit import fit_rows
from attn_cli.core.errors import UserError
from attn_cli.render.bench_plot import PLOT_FORMATS, check_plot_path, write_plot
from attn_cli.render.bench_render import bench_renderable
from tests.conftest import assert_user_error, render_plain

FAST = ("--sizes", "16,32", "--d", "8", "--heads", "2", "--repeats", "2", "--block", "8")
# Four sizes: the smallest is the floor, and the memory of three rows past it has a slope.
FOUR = (*FAST, "--sizes", "16..128")
ROW_KEYS = {
    "impl",
    "n",
    "d",
    "heads",
    "batch",
    "dtype",
    "causal",
    "ms_median",
    "ms_spread",
    "tflops",
    "peak_fraction",
    "peak_mem_bytes",
    "max_abs_err",
    "status",
    "note",
}


@pytest.fixture(autouse=True)
def _needs_torch(torch):
    return torch


def test_json_rows_fit_and_device(invoke, torch):
    result = invoke("bench", *FOUR, "--impl", "naive,tiled-numpy", "--causal", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(row["impl"], row["n"]) for row in doc["rows"]] == [
        (impl, n) for impl in ("naive", "tiled-numpy") for n in (16, 32, 64, 128)
    ]
    for row in doc["rows"]:
        assert set(row) >= ROW_KEYS
        assert row["status"] == "ok" and row["causal"] is True and row["dtype"] == "float32"
        assert row["max_abs_err"] < 2e-6 and row["peak_fraction"] is None
    assert set(doc["fit"]) == {"naive", "tiled-numpy"}
    assert set(doc["fit"]["naive"]) == {
        "time_exponent",
        "memory_exponent",
        "time_reliable",
        "unstable_sizes",
        "time_sizes",
        "memory_sizes",
        "time_left_out",
        "memory_left_out",
        "fastest_ms",
        "smallest_bytes",
        "time_exponent_max",
        "block_step_ms",
    }
    naive = doc["fit"]["naive"]
    assert 16 in naive["memory_left_out"] and 128 in naive["memory_sizes"]  # 16: the floor
    assert sorted(naive["time_sizes"] + naive["time_left_out"]) == [16, 32, 64, 128]
    assert doc["reading"][0].startswith("naive memory grows as n^")  # the contrast line
    assert doc["kind"] == "bench" and doc["device"] == "cpu" and doc["dtype"] == "float32"
    assert doc["machine"]["device"] == "cpu" and doc["machine"]["cores"] >= 1
    assert doc["machine"]["torch"] == torch.__version__
    threads = doc["machine"]["threads"]
    assert threads["torch"] == torch.get_num_threads() and threads["numpy"] >= 1
    assert doc["machine"]["load"]["cores"] == doc["machine"]["cores"]
    assert all(row["unstable"] in (True, False) for row in doc["rows"])
    assert doc["config"]["sizes"] == [16, 32, 64, 128] and doc["interrupted"] is False


def test_csv_rows(invoke):
    result = invoke("bench", *FAST, "--impl", "sdpa,numpy", "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 4
    assert set(rows[0]) >= ROW_KEYS | {"time_fit", "memory_fit"}
    assert {row["status"] for row in rows} == {"ok"}
    assert rows[0]["note"].startswith("dispatched to")
    # Two sizes: the smaller is below the floor, and one row past it is no fit.
    assert {row["time_fit"] for row in rows} <= {"below floor", ""}
    assert "fitted" not in {row["memory_fit"] for row in rows}


def test_rich_table_with_notes_and_exponents(invoke, torch):
    result = invoke("bench", *FOUR, "--impl", "naive,sdpa-efficient,tiled")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "attn bench" in out and "float32" in out
    # The marker's number depends on which timed rows came out unstable before it.
    marker = re.search(r"unsupported \[(\d)\]", out)
    assert "sdpa-efficient" in out and marker
    assert f"[{marker[1]}] sdpa-efficient (every n): efficient is a CUDA-only kernel" in out
    assert "How time and memory grow with n" in out
    assert "naive: memory grows as n^" in out
    # The threads a run uses and the load, in the header (they used to go unsaid).
    assert f"threads torch {torch.get_num_threads()} · " in out
    assert " cores" in out


def test_the_help_gives_the_defaults_of_each_device(invoke):
    text = " ".join(invoke("bench", "--help").stdout.replace("│", " ").split())
    assert "Head dimension. [default: 64 on cpu, 128 on cuda, 64 on mps]" in text
    assert "[default: 128..2048 on cpu, 2048..32768 on cuda, 512..8192 on mps]" in text


def test_rich_rendering_of_every_status():
    config = BenchConfig(sizes=(128, 256), impls=("naive", "tiled"))
    common = {"ms_spread": 0.1, "max_abs_err": 1e-7, "memory_method": "torch profiler"}
    rows = [
        Row.for_run(config, "naive", 128, ms_median=1.0, peak_mem_bytes=2**20, **common),
        Row.for_run(config, "naive", 256, status="oom", note="out of memory"),
        Row.for_run(config, "tiled", 128, ms_median=2.0, peak_mem_bytes=2**16, **common),
        Row.for_run(
            config,
            "tiled",
            256,
            status="skipped",
            note="needs more",
            peak_mem_bytes=10 * 2**30,
            memory_method="estimate",
        ),
    ]
    result = BenchResult(config, {"name": "Test CPU"}, rows, interrupted=True)
    text = render_plain(bench_renderable(result, fit_rows(rows)))
    assert "oom [1]" in text and "skipped [2]" in text
    assert "≈10 GiB" in text and "1 MiB" in text
    assert "[1] naive (n=256): out of memory" in text
    assert "Interrupted" in text
    assert "How time and memory grow" not in text  # one size each: no exponent


def test_cuda_absent_is_a_user_error(invoke, torch):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert_user_error(invoke("bench", "--device", "cuda"), "--device cuda", "CUDA is not available")


def test_a_torch_impl_without_torch_is_a_user_error(invoke, monkeypatch):
    # None in sys.modules: importing the torch backend raises ImportError.
    monkeypatch.setitem(sys.modules, "attn_cli.core.torch_backend", None)
    result = invoke("bench", *FAST, "--impl", "naive,tiled-numpy")
    assert_user_error(result, "--impl naive needs PyTorch", "pip install 'attn-cli[torch]'")


def test_another_device_without_torch_is_a_user_error(invoke, monkeypatch):
    monkeypatch.setitem(sys.modules, "attn_cli.core.torch_backend", None)
    result = invoke("bench", *FAST, "--device", "mps")
    assert_user_error(result, "--device mps needs PyTorch", "pip install 'attn-cli[torch]'")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--sizes", "12,abc"), "--sizes"),
        (("--sizes", "64..32"), "--sizes"),
        (("--impl", "naive,flash9"), "unknown implementation 'flash9'"),
    ],
)
def test_bad_options_are_user_errors(invoke, args, fragment):
    assert_user_error(invoke("bench", *args), fragment)


def test_plot_without_matplotlib_says_how_to_install(invoke, monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )
    result = invoke("bench", *FAST, "--plot", str(tmp_path / "bench.png"))
    assert_user_error(result, "--plot needs matplotlib", "pip install 'attn-cli[plot]'")


def test_plot_is_written(invoke, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "bench.png"
    result = invoke(
        "bench", *FAST, "--impl", "naive,tiled", "--format", "csv", "--plot", str(target)
    )
    assert result.exit_code == 0, result.output
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {target}" in result.stderr


@pytest.fixture
def no_sweep(monkeypatch):
    """The sweep must not start: a bad --plot is refused before minutes of timing."""
    from attn_cli.bench import sweep

    def refuse(*args, **kwargs):
        raise AssertionError("the sweep ran")

    monkeypatch.setattr(sweep, "run_sweep", refuse)


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("bench.txt", ("--plot", "must end in one of .png, .pdf, .svg", "e.g. --plot bench.png")),
        ("bench", ("must end in one of",)),
        ("bench.pgf", ("must end in one of",)),  # needs TeX: it would fail after the sweep
        ("missing/bench.png", ("the folder", "missing does not exist")),
        ("a-file/bench.png", ("a-file is not a folder",)),
    ],
)
def test_bad_plot_path_is_refused_before_the_sweep(invoke, no_sweep, tmp_path, name, fragments):
    (tmp_path / "a-file").write_text("")
    result = invoke("bench", *FAST, "--plot", str(tmp_path / name))
    assert_user_error(result, *fragments)


def test_unwritable_plot_folder_is_refused_before_the_sweep(
    invoke, no_sweep, tmp_path, monkeypatch
):
    import os

    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as for a read-only folder
    result = invoke("bench", *FAST, "--plot", str(tmp_path / "bench.png"))
    assert_user_error(result, "cannot write there")


def test_plot_formats_are_ones_matplotlib_writes(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.backend_bases import FigureCanvasBase

    assert set(PLOT_FORMATS) <= set(FigureCanvasBase.get_supported_filetypes())
    check_plot_path(tmp_path / "BENCH.PNG")  # the suffix in any case, as matplotlib reads it


def test_write_plot_turns_an_unknown_format_into_a_user_error(tmp_path):
    pytest.importorskip("matplotlib")
    config = BenchConfig(sizes=(16,), impls=("naive",))
    row = Row.for_run(config, "naive", 16, ms_median=1.0, peak_mem_bytes=2**20)
    with pytest.raises(UserError, match=r"--plot .*bench\.txt: Format 'txt' is not supported"):
        write_plot(BenchResult(config, {"name": "Test CPU"}, [row]), tmp_path / "bench.txt")


def test_ctrl_c_prints_the_finished_rows(invoke, monkeypatch):
    real = registry.make_runner

    def make_runner(impl, config, inputs):
        if impl == "tiled":
            raise KeyboardInterrupt
        return real(impl, config, inputs)

    monkeypatch.setattr(registry, "make_runner", make_runner)
    result = invoke("bench", *FAST, "--impl", "naive,tiled", "--format", "json")
    assert result.exit_code == 130
    doc = json.loads(result.stdout)
    assert doc["interrupted"] is True
    assert [(row["impl"], row["n"]) for row in doc["rows"]] == [("naive", 16)]
    assert "interrupted after 1 row." in result.stderr


@pytest.mark.slow
def test_startup_of_other_commands_does_not_import_torch_or_the_bench():
    code = (
        "import sys, attn_cli.cli.app; "
        "print(sorted(m for m in ('torch', 'attn_cli.bench.sweep', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_coinciding_lines_stay_apart_and_n_and_n2_guides_are_drawn():
    """sdpa under sdpa-flash, tiled under tiled-numpy used to hide each other."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from attn_cli.render.bench_plot import bench_figure

    impls = ("sdpa", "sdpa-flash", "tiled", "tiled-numpy")
    config = BenchConfig(sizes=(256, 512, 1024), impls=impls)
    rows = [  # the same numbers for every implementation: the lines coincide exactly
        Row.for_run(config, impl, n, ms_median=1e-4 * n * n, peak_mem_bytes=1024 * n)
        for impl in impls
        for n in config.sizes
    ]
    figure = bench_figure(BenchResult(config, {"name": "test CPU"}, rows))
    try:
        for axis in figure.axes:
            lines = {line.get_label(): line for line in axis.get_lines()}
            drawn = [lines[impl] for impl in impls]
            styles = {(line.get_marker(), str(line.get_linestyle())) for line in drawn}
            assert len(styles) == len(impls)  # marker and dash pattern differ for each
            assert all(line.get_markerfacecolor() == "none" for line in drawn)  # hollow
            for label, power in (("∝ n", 1), ("∝ n²", 2)):
                x, y = (np.asarray(values, float) for values in lines[label].get_data())
                assert np.allclose(np.diff(np.log(y)) / np.diff(np.log(x)), power)
                assert y[0] == pytest.approx(np.asarray(drawn[0].get_data()[1])[0])
    finally:
        plt.close(figure)
