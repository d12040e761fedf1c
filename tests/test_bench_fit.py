"""The log-log fit on synthetic timings, and the sentence that reads it."""

from __future__ import annotations

import math

import pytest

from attn_cli.bench import sweep
from attn_cli.bench.config import (
    UNSTABLE_SPREAD,
    BenchConfig,
    BenchResult,
    Row,
    is_unstable,
    spread_ratio,
)
from attn_cli.bench.fit import (
    COMPLEXITY_TABLE,
    IMPL_ROWS,
    Fit,
    contrast,
    diagnosis,
    fit_rows,
    judge,
    loglog_slope,
    reading,
    table_verdict,
)
from attn_cli.bench.machine import Load, busy
from attn_cli.render.bench_render import bench_renderable, to_document


def test_slope_of_exact_power_laws():
    ns = [128, 256, 512, 1024]
    assert loglog_slope(ns, [3.0 * n**2 for n in ns]) == pytest.approx(2.0, abs=1e-12)
    assert loglog_slope(ns, [0.5 * n for n in ns]) == pytest.approx(1.0, abs=1e-12)
    assert loglog_slope(ns, [7.0 for _ in ns]) == pytest.approx(0.0, abs=1e-12)


def test_slope_is_least_squares_through_noisy_points():
    ns = [1, 2, 4, 8]
    values = [1.0, 4.0 * 1.1, 16.0, 64.0 / 1.1]
    # By hand: x = log n, y = log v; slope = Σ(x − x̄)(y − ȳ) / Σ(x − x̄)².
    x = [math.log(n) for n in ns]
    y = [math.log(v) for v in values]
    x_bar, y_bar = sum(x) / 4, sum(y) / 4
    expected = sum((a - x_bar) * (b - y_bar) for a, b in zip(x, y, strict=True)) / sum(
        (a - x_bar) ** 2 for a in x
    )
    assert loglog_slope(ns, values) == pytest.approx(expected, rel=1e-12)


def test_slope_needs_two_sizes_and_positive_values():
    assert loglog_slope([512], [3.0]) is None
    assert loglog_slope([512, 512], [3.0, 4.0]) is None
    assert loglog_slope([256, 512], [None, 4.0]) is None
    assert loglog_slope([256, 512, 1024], [0.0, 4.0, 16.0]) == pytest.approx(2.0)


def _row(impl, n, ms, mem, status="ok"):
    return Row.for_run(BenchConfig(), impl, n, ms_median=ms, peak_mem_bytes=mem, status=status)


def test_fit_rows_uses_only_successful_rows():
    rows = [
        _row("naive", 128, 1.0, 128**2),
        _row("naive", 256, 4.0, 256**2),
        _row("naive", 512, None, None, status="oom"),
        _row("tiled", 128, 2.0, 128 * 64),
        _row("tiled", 256, 8.0, 256 * 64),
        _row("tiled", 512, 32.0, 512 * 64),
        _row("numpy", 128, None, None, status="unsupported"),
    ]
    fits = fit_rows(rows)
    assert fits["naive"] == Fit(pytest.approx(2.0), pytest.approx(2.0))
    assert fits["tiled"] == Fit(pytest.approx(2.0), pytest.approx(1.0))
    assert fits["numpy"] == Fit(None, None)


def test_reading_names_the_exponents():
    assert reading("naive", Fit(2.0, 2.0)) == (
        "naive: memory grows as n^2.0 (it holds n × n scores); time as n^2.0 (the n² work "
        "dominates)."
    )
    text = reading("tiled", Fit(1.95, 1.02))
    assert "memory grows as n^1.0 (the n × n matrix never exists)" in text
    assert "time as n^1.9" in text
    assert "flat: not measuring the n² work" in reading("sdpa", Fit(0.4, 1.0))
    assert "fixed costs still weigh" in reading("sdpa", Fit(1.2, 1.0))
    assert "no exponent" in reading("numpy", Fit(None, None))


def test_contrast_of_steepest_and_flattest_memory():
    fits = {"naive": Fit(2.0, 1.98), "tiled": Fit(2.0, 1.01), "sdpa": Fit(1.5, 1.2)}
    assert contrast(fits) == "naive memory grows as n^2.0; tiled as n^1.0."
    assert contrast({"naive": Fit(2.0, 2.0)}) is None
    assert contrast({"naive": Fit(2.0, None), "tiled": Fit(1.0, None)}) is None


# --- when the timings cannot be trusted (synthetic rows: no clock is read) -----------------


def test_a_row_is_unstable_when_its_spread_exceeds_a_tenth_of_its_median():
    """The rule of torch.utils.benchmark's Measurement: IQR / median > 0.1 warns."""
    assert UNSTABLE_SPREAD == 0.1
    assert spread_ratio(40.0, 2.0) == pytest.approx(0.05)
    assert not is_unstable(40.0, 4.0)  # exactly a tenth: still stable
    assert is_unstable(40.0, 4.4)
    assert is_unstable(43.4, 165.0)  # the tiled row: 43.4 ± 165 ms
    assert not is_unstable(None, None) and not is_unstable(0.0, 1.0)


def test_an_unstable_batch_is_timed_once_more_and_the_quieter_kept():
    batches = iter([[10.0, 10.0, 30.0, 30.0], [10.0, 10.1, 10.2, 10.3], [99.0] * 4])
    median, spread, unstable = sweep.timed(lambda: next(batches))
    assert (median, unstable) == (pytest.approx(10.15), False)
    assert spread == pytest.approx(10.225 - 10.075)
    assert next(batches) == [99.0] * 4  # two batches, no more

    noisy = iter([[10.0, 10.0, 30.0, 30.0], [5.0, 5.0, 20.0, 20.0], [1.0] * 4])
    median, spread, unstable = sweep.timed(lambda: next(noisy))
    assert unstable and (median, spread) == (20.0, 20.0)  # IQR/median 1.0 beats 15/12.5
    assert next(noisy) == [1.0] * 4  # re-measured once only

    steady = iter([[10.0, 10.0, 10.1, 10.1], [1.0] * 4])
    assert sweep.timed(lambda: next(steady))[2] is False
    assert next(steady) == [1.0] * 4  # a stable batch is not re-measured


def _timed_row(impl, n, ms, mem, unstable=False):
    return Row.for_run(
        BenchConfig(),
        impl,
        n,
        ms_median=ms,
        ms_spread=0.01 * ms,
        peak_mem_bytes=mem,
        unstable=unstable,
    )


def _result(rows, load=None):
    config = BenchConfig(sizes=(256, 512, 1024, 2048), impls=("naive", "sdpa", "tiled"))
    return BenchResult(config, {"device": "cpu", "name": "test CPU"}, rows, load=load)


IDLE = Load(cores=2, threads={"torch": 2}, before=0.1, during=[0.9, 1.2])


def test_a_fit_through_an_unstable_row_is_unreliable_and_says_so():
    rows = [
        _timed_row("tiled", 256, 43.4, 256 * 64, unstable=True),
        _timed_row("tiled", 512, 30.0, 512 * 64),
        _timed_row("tiled", 1024, 120.0, 1024 * 64),
    ]
    fit = fit_rows(rows)["tiled"]
    assert not fit.time_reliable and fit.unstable_sizes == (256,)
    text = reading("tiled", fit)
    assert "unreliable: unstable timings at n=256" in text
    assert "overheads" not in text
    lines = diagnosis(_result(rows, IDLE), {"tiled": fit})
    assert len(lines) == 1 and "Time slopes of tiled are unreliable" in lines[0]


def test_the_busy_machine_is_named_before_and_during_the_sweep():
    assert busy(others=0.2, threads=2, cores=2) is False  # an idle laptop
    assert busy(others=1.0, threads=2, cores=2) is True  # one other program
    assert busy(others=1.0, threads=1, cores=2) is False  # one thread leaves a core free
    assert not IDLE.busy
    before = Load(cores=2, threads={"numpy": 2}, before=2.1, during=[2.4])
    assert before.busy_before and before.busy
    text = diagnosis(_result([], before), {})[0]
    assert text.startswith("The machine is busy: load average 2.1 before the sweep")
    assert "2 cores" in text and "2 threads (numpy 2)" in text
    assert "OMP_NUM_THREADS=1" in text
    during = Load(cores=2, threads={"torch": 2}, before=0.3, during=[1.1, 3.4, 2.0])
    assert not during.busy_before and during.busy_during
    assert "up to 3.4 during it" in diagnosis(_result([], during), {})[0]
    assert diagnosis(_result([], Load(2, {"numpy": 2}, None)), {}) == []  # no load average


def test_times_flat_while_memory_grows_as_n_squared_are_not_the_algorithm():
    """The issue's second run: naive 32.0, 33.2, 36.0, 95.9 ms; sdpa 7.99 ms at every n but
    the last; memory as n²."""
    ns = (256, 512, 1024, 2048)
    naive = zip(ns, (32.0, 33.2, 36.0, 95.9), strict=True)
    sdpa = zip(ns, (7.99, 7.99, 8.0, 30.9), strict=True)
    rows = [_timed_row("naive", n, ms, 12 * n * n) for n, ms in naive]
    rows += [_timed_row("sdpa", n, ms, 8 * n * 64) for n, ms in sdpa]
    fits = fit_rows(rows)
    assert fits["naive"].time_exponent == pytest.approx(0.49, abs=0.01)
    assert fits["naive"].memory_exponent == pytest.approx(2.0)
    lines = diagnosis(_result(rows, IDLE), fits)
    assert len(lines) == 1
    assert lines[0].startswith("naive: memory grows as n² but the time barely moves")
    assert "not measuring the algorithm" in lines[0]
    assert "flat: not measuring the n² work" in reading("sdpa", fits["sdpa"])
    # The same lines reach the JSON reading, and the machine object carries the threads.
    document = to_document(_result(rows, IDLE), fits)
    assert document["reading"][-1] == lines[0]
    assert document["machine"]["threads"] == {"torch": 2}
    assert document["machine"]["load"] == {
        "cores": 2,
        "before": 0.1,
        "during_max": 1.2,
        "busy": False,
    }
    assert document["fit"]["naive"]["time_reliable"] is True


def test_steady_quadratic_timings_raise_no_warning():
    ns = (256, 512, 1024, 2048)
    rows = [_timed_row("naive", n, 1e-5 * n * n, 12 * n * n) for n in ns]
    assert diagnosis(_result(rows, IDLE), fit_rows(rows)) == []


# --- the verdict against the lectures' complexity table (issue 22, 2): synthetic fits ---------


def test_a_time_slope_above_two_with_n_squared_memory_is_the_wall():
    # The run: time n^2.35, memory n^1.99, once read as "does not confirm ... Vanilla".
    text = table_verdict("numpy", Fit(2.35, 1.99))
    assert "does not confirm" not in text and "seed" not in text
    assert "numpy is the table's Vanilla row (O(n²d) time, O(n²) memory)." in text
    assert "Memory grew as n^1.99: the row's n²." in text
    assert "Time grew as n^2.35: at least the row's n², the quadratic wall" in text
    assert judge("time", 2.35, 2) == "at least" and judge("memory", 1.99, 2) == "matches"


@pytest.mark.parametrize(
    ("impl", "time", "memory", "time_judged", "memory_judged"),
    [
        ("numpy", 2.35, 1.99, "at least", "matches"),
        ("tiled-numpy", 1.95, 1.0, "matches", "matches"),
        ("numpy", 1.0, 1.0, "below", "below"),  # fixed costs; memory not n²: says so
        ("window-numpy", 1.0, 1.0, "matches", "matches"),
        ("linear-numpy", 2.35, 1.0, "above", "matches"),  # steeper than n is not the row
        ("tiled-numpy", 2.0, 2.0, "matches", "above"),  # n² memory is not FlashAttention's
    ],
)
def test_time_and_memory_are_judged_separately(impl, time, memory, time_judged, memory_judged):
    row = COMPLEXITY_TABLE[IMPL_ROWS[impl]]
    assert judge("time", time, row.n_exponents[0]) == time_judged
    assert judge("memory", memory, row.n_exponents[1]) == memory_judged
    text = table_verdict(impl, Fit(time, memory))
    words = {
        "matches": "the row's",
        "at least": "at least the row's",
        "above": "steeper than the row's",
        "below": "below the row's",
    }
    assert f"Time grew as n^{time:.2f}: {words[time_judged]}" in text
    assert f"Memory grew as n^{memory:.2f}: {words[memory_judged]}" in text
    assert "wall" not in text or time_judged == "at least"  # the wall is named only when seen


def test_an_unreliable_time_is_not_judged_but_memory_is():
    text = table_verdict("numpy", Fit(3.8, 2.0, time_reliable=False, unstable_sizes=(256,)))
    assert "Memory grew as n^2.00: the row's n²." in text
    assert "Time grew" not in text and "time slope is not read" in text
    assert table_verdict("numpy", Fit(None, None)) is None


def test_the_verdicts_come_under_the_complexity_table_they_read():
    from rich.console import Console

    config = BenchConfig(impls=("numpy",), sizes=(256, 512, 1024))
    rows = [
        Row.for_run(config, "numpy", n, ms_median=1e-6 * n**2.35, peak_mem_bytes=8 * n**2)
        for n in config.sizes
    ]
    result = BenchResult(config=config, device_info={"name": "cpu"}, rows=rows)
    console = Console(width=200, record=True)
    console.print(bench_renderable(result, fit_rows(rows)))
    shown = console.export_text()
    table = shown.index("the complexity table of the lecture note 'Attention is all you need'")
    for variant, time, memory in [
        ("Vanilla", "O(n²d)", "O(n²)"),
        ("FlashAttention", "O(n²d)", "O(n)"),
        ("Linear attention", "O(nd²)", "O(nd)"),
        ("Sliding window", "O(nwd)", "O(nw)"),
    ]:
        line = next(line for line in shown.splitlines() if f" {variant} " in line)
        assert time in line and memory in line
    assert shown.index("numpy is the table's Vanilla row") > table
    assert "Time grew as n^2.35: at least the row's n²" in shown
    assert "seed" not in shown and "does not confirm" not in shown
