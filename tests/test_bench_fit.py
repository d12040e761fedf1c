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
    left_out_readings,
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


def test_fit_rows_uses_only_successful_rows_past_the_floor():
    """A row enters a fit when its value is at least 3 × the implementation's least: the
    smallest n of a doubling sweep never does, an n² time from the next n on, an n memory from
    two sizes up."""
    rows = [
        _row("naive", 128, 1.0, 128**2),
        _row("naive", 256, 4.0, 256**2),
        _row("naive", 512, 16.0, 512**2),
        _row("naive", 1024, None, None, status="oom"),
        _row("tiled", 128, 2.0, 128 * 64),
        _row("tiled", 256, 8.0, 256 * 64),
        _row("tiled", 512, 32.0, 512 * 64),
        _row("tiled", 1024, 128.0, 1024 * 64),
        _row("numpy", 128, None, None, status="unsupported"),
    ]
    fits = fit_rows(rows)
    naive, tiled = fits["naive"], fits["tiled"]
    assert naive.time_exponent == pytest.approx(2.0) and naive.memory_exponent == pytest.approx(2)
    assert (naive.time_sizes, naive.time_left_out) == ((256, 512), (128,))  # 1024: oom, in none
    assert (naive.memory_sizes, naive.memory_left_out) == ((256, 512), (128,))
    assert naive.fastest_ms == 1.0 and naive.time_cutoff_ms == 3.0
    assert naive.smallest_bytes == 128**2 and naive.memory_cutoff_bytes == 3 * 128**2
    assert naive.time_exponent_max == pytest.approx(math.log2(15 / 3))  # 4 − 1, 16 − 1
    assert tiled.time_exponent == pytest.approx(2.0) and tiled.time_sizes == (256, 512, 1024)
    assert tiled.memory_exponent == pytest.approx(1.0) and tiled.memory_sizes == (512, 1024)
    assert tiled.memory_left_out == (128, 256)  # 2 × the least: the fixed part could be half
    assert fits["numpy"] == Fit(None, None)
    assert not fits["numpy"].readable and naive.readable


def test_one_size_has_no_floor_and_nothing_to_read():
    fit = fit_rows([_row("sdpa", 16384, 0.93, 2**25)])["sdpa"]
    assert fit.time_sizes == (16384,) and fit.time_left_out == () and fit.fastest_ms is None
    assert fit.time_exponent is None and not fit.readable


def test_a_d_sweep_fits_every_row():
    """At one n the n² softmax is part of every call: over d nothing is a floor."""
    rows = [
        Row.for_run(BenchConfig(d=d), "numpy", 2048, ms_median=ms, peak_mem_bytes=2**20)
        for d, ms in ((16, 41.4), (32, 45.1), (64, 48.3))
    ]
    fit = fit_rows(rows, "d")["numpy"]
    assert fit.time_sizes == (16, 32, 64) and fit.time_left_out == ()
    assert fit.time_exponent == pytest.approx(loglog_slope([16, 32, 64], [41.4, 45.1, 48.3]))


def test_reading_names_the_exponents():
    assert reading("naive", Fit(2.0, 2.0)) == (
        "naive: memory grows as n^2.0 (it holds n × n scores); time as n^2.0 (the n² work "
        "dominates)."
    )
    text = reading("tiled", Fit(1.95, 1.02))
    assert "memory grows as n^1.0 (the n × n matrix never exists)" in text
    assert "time as n^1.9" in text
    # Below n²: whether a fixed cost per call (at most the fastest median) can account for it.
    bent = Fit(1.2, 1.0, fastest_ms=0.05, time_exponent_max=1.9)
    assert (
        "time as n^1.2 (below n², which a fixed cost per call, at most the fastest median "
        "(0.05 ms), can account for at these sizes)" in reading("sdpa", bent)
    )
    other = Fit(1.2, 1.0, fastest_ms=1.14, time_exponent_max=1.34)
    assert (
        "below n², by more than a fixed cost per call (up to 1.14 ms, the fastest median) can "
        "account for: a cost that grows slower than n² weighs" in reading("sdpa", other)
    )
    assert "no exponent" in reading("numpy", Fit(None, None))
    # A slope of 8.7 (a busy 2-core machine, n 256..512) is not the n² work dominating.
    assert "time as n^8.7 (steeper than the n² work alone: something else grows faster" in (
        reading("tiled-numpy", Fit(8.74, 1.0))
    )


def test_fewer_than_two_rows_past_the_floor_read_no_exponent_and_say_so():
    fit = Fit(
        None,
        1.0,
        time_sizes=(131072,),
        time_left_out=(4096, 8192, 16384, 32768, 65536),
        fastest_ms=0.47,
        memory_sizes=(16384, 32768),
        memory_left_out=(4096, 8192),
    )
    assert reading("linear", fit) == (
        "linear: memory grows as n^1.0 (the n × n matrix never exists); time not read: only "
        "n=131072 reaches 3 × the fastest median (0.47 ms); larger --sizes show how time grows."
    )
    none = Fit(None, None, time_left_out=(256, 512), fastest_ms=7.99, smallest_bytes=2**20,
               memory_left_out=(256, 512))  # fmt: skip
    assert reading("sdpa", none) == (
        "sdpa: memory not read: no row reaches 3 × the smallest peak (1 MiB); larger --sizes "
        "show how memory grows; time not read: no row reaches 3 × the fastest median (7.99 ms); "
        "larger --sizes show how time grows."
    )
    verdict = table_verdict("linear", fit)
    assert verdict.endswith("Its time slope is not read (fewer than two rows past the floor).")


def test_the_rows_left_out_are_named_with_the_reason():
    fits = {
        "sdpa": Fit(2.0, 1.0, time_sizes=(4096, 8192, 16384), time_left_out=(512, 1024, 2048),
                    fastest_ms=0.025, memory_sizes=(2048, 4096), memory_left_out=(512, 1024),
                    smallest_bytes=2**19),
        "naive": Fit(2.0, 2.0, time_sizes=(1024, 4096), time_left_out=(512, 2048),
                     fastest_ms=0.06),
    }  # fmt: skip
    time, memory = left_out_readings(fits)
    assert time.startswith(
        "Left out of the time fits, as the floor of fixed costs: the rows faster than 3 × their "
        "implementation's fastest median (a fixed cost per call, such as a kernel launch or "
        "Python's overhead, is at most that median, so it could be more than a third of these "
        "rows' time): "
    )
    assert time.endswith("sdpa n=512..2048 (under 0.075 ms); naive n=512,2048 (under 0.18 ms).")
    assert memory.startswith("Left out of the memory fits likewise: the rows below 3 × ")
    assert memory.endswith("sdpa n=512,1024 (under 1.5 MiB).")
    assert left_out_readings({"naive": Fit(2.0, 2.0)}) == []


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
        _timed_row("tiled", 256, 10.0, 256 * 64),
        _timed_row("tiled", 512, 43.4, 512 * 64, unstable=True),
        _timed_row("tiled", 1024, 120.0, 1024 * 64),
        _timed_row("tiled", 2048, 480.0, 2048 * 64),
    ]
    fit = fit_rows(rows)["tiled"]
    assert fit.time_sizes == (512, 1024, 2048)
    assert not fit.time_reliable and fit.unstable_sizes == (512,)
    text = reading("tiled", fit)
    assert "unreliable: unstable timings at n=512" in text
    assert "overheads" not in text
    lines = diagnosis(_result(rows, IDLE), {"tiled": fit})
    assert len(lines) == 1 and "Time slopes of tiled are unreliable" in lines[0]
    assert "Its time slope is not read (unstable rows)." in table_verdict("tiled", fit)


def test_an_unstable_row_left_out_of_the_fit_leaves_it_reliable():
    """The H200's default sweep: n = 512 unstable at the launch floor made sdpa-flash's whole
    slope "unreliable"; left out of the fit, it says nothing about the slope."""
    rows = [
        _timed_row("sdpa-flash", 512, 0.0488, 2671616, unstable=True),
        _timed_row("sdpa-flash", 1024, 0.0513, 5342208),
        _timed_row("sdpa-flash", 4096, 0.119, 4326400),
        _timed_row("sdpa-flash", 8192, 0.455, 8651776),
        _timed_row("sdpa-flash", 16384, 1.91, 17302528),
    ]
    fit = fit_rows(rows)["sdpa-flash"]
    assert fit.time_reliable and fit.unstable_sizes == () and 512 in fit.time_left_out
    assert diagnosis(_result(rows, IDLE), {"sdpa-flash": fit}) == []


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
    # No median reaches 3 × the fastest (32 ms): every time row is on the floor.
    assert fits["naive"].time_exponent is None and fits["naive"].time_left_out == ns
    assert fits["naive"].memory_exponent == pytest.approx(2.0)
    lines = diagnosis(_result(rows, IDLE), fits)
    assert len(lines) == 1
    assert lines[0].startswith(
        "naive: memory grows as n² but no median reaches 3 × the fastest: these timings are "
        "not measuring the algorithm"
    )
    assert "time not read: only n=2048 reaches 3 × the fastest median (7.99 ms)" in reading(
        "sdpa", fits["sdpa"]
    )
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
