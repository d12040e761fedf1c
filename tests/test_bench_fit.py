"""The log-log fit on synthetic timings, and the sentence that reads it."""

from __future__ import annotations

import math

import pytest

from attn_cli.bench.config import BenchConfig, Row
from attn_cli.bench.fit import Fit, contrast, fit_rows, loglog_slope, reading


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
    assert "overheads" in reading("sdpa", Fit(0.4, 1.0))
    assert "no exponent" in reading("numpy", Fit(None, None))


def test_contrast_of_steepest_and_flattest_memory():
    fits = {"naive": Fit(2.0, 1.98), "tiled": Fit(2.0, 1.01), "sdpa": Fit(1.5, 1.2)}
    assert contrast(fits) == "naive memory grows as n^2.0; tiled as n^1.0."
    assert contrast({"naive": Fit(2.0, 2.0)}) is None
    assert contrast({"naive": Fit(2.0, None), "tiled": Fit(1.0, None)}) is None
