"""attn bench --backward: the forward and the backward timed as one call, their gradients checked."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attn_cli.bench import backward as backward_registry
from attn_cli.bench import impls as registry
from attn_cli.bench.config import BenchConfig
from attn_cli.bench.devices import CpuOps
from attn_cli.bench.sweep import run_sweep
from tests.conftest import assert_user_error

pytest.importorskip("torch")

SMALL = {"sizes": (16, 40), "d": 8, "heads": 2, "batch": 1, "repeats": 2, "block": 8}
TIMED = ("naive", "sdpa", "sdpa-flash", "sdpa-math", "numpy")
LEFT_OUT = ("tiled", "triton-flash", "tiled-numpy", "window", "linear")
FAST = ("--sizes", "16,32", "--d", "8", "--heads", "2", "--repeats", "2", "--block", "8")


def sweep(**changes):
    return run_sweep(BenchConfig(**{**SMALL, "backward": True, **changes}), CpuOps())


@pytest.mark.parametrize(("dtype", "tolerance"), [("float64", 1e-12), ("float32", 1e-5)])
@pytest.mark.parametrize("causal", [False, True])
def test_every_backward_agrees_with_the_float64_gradients(dtype, tolerance, causal):
    """dQ, dK, dV of every implementation that has a backward, on sampled rows, against the
    float64 gradients; the others are rows that say why they have none."""
    result = sweep(dtype=dtype, causal=causal, impls=(*TIMED, *LEFT_OUT))
    assert [(row.impl, row.n) for row in result.rows] == [
        (impl, n) for n in (16, 40) for impl in (*TIMED, *LEFT_OUT)
    ]
    for row in result.rows:
        assert row.backward is True
        if row.impl not in TIMED:
            assert row.status == "unsupported" and row.ms_median is None, row.impl
            continue
        assert row.status == "ok", (row.impl, row.note)
        assert row.max_abs_err < tolerance, (row.impl, row.n, row.max_abs_err)
        assert row.ms_median > 0 and row.peak_mem_bytes > 0 and row.repeats == 2
        # forward and backward: six products of 2·n²·d per head, half of them causal
        flops = 12 * 2 * row.n**2 * 8 / (2 if causal else 1)
        assert row.tflops == pytest.approx(flops / (row.ms_median / 1e3) / 1e12)
    notes = {row.impl: row.note for row in result.rows}
    assert notes["tiled"].startswith("no backward of its own")
    assert notes["window"] == backward_registry.NO_BACKWARD
    assert notes["triton-flash"].startswith("Triton kernels need a CUDA GPU")
    assert notes["numpy"].startswith("the lesson's forward, then its backward by hand")


def test_the_reference_gradients_are_autograds(torch):
    """The check's float64 dQ, dK, dV at sampled rows equal torch.autograd's of the explicit
    softmax(Q Kᵀ / √d) V, on random shapes, causal and not, within 1e-12."""
    rng = np.random.default_rng(58)
    for n, d, causal in [(1, 3, False), (5, 4, True), (17, 6, False), (33, 8, True)]:
        q, k, v, d_out = (rng.standard_normal((1, 3, n, d)) for _ in range(4))
        inputs = registry.Inputs(q, k, v, d_out)
        rows = registry.reference_rows(n, count=5)
        got = backward_registry.reference_gradients(inputs, rows, causal)
        leaves = [torch.from_numpy(x[0]).requires_grad_() for x in (q, k, v)]
        scores = leaves[0] @ leaves[1].transpose(-2, -1) / np.sqrt(d)
        if causal:
            scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -np.inf)
        (torch.softmax(scores, dim=-1) @ leaves[2]).backward(torch.from_numpy(d_out[0]))
        expected = np.stack([leaf.grad.numpy()[:, rows] for leaf in leaves])
        assert got.shape == (3, 3, len(rows), d)
        assert np.abs(got - expected).max() < 1e-12, (n, d, causal)


def test_a_wrong_backward_shows_in_the_error(monkeypatch):
    """The check reads the gradients a run returns: dK and dV swapped is a large error."""
    real = backward_registry.make_runner

    def swapped(impl, config, inputs):
        run = real(impl, config, inputs)

        def wrong():
            d_q, d_k, d_v = run()
            return d_q, d_v, d_k

        return wrong

    monkeypatch.setattr(backward_registry, "make_runner", swapped)
    result = sweep(impls=("naive",), sizes=(16,), dtype="float64")
    assert result.rows[0].status == "ok" and result.rows[0].max_abs_err > 0.1


def test_estimates_are_not_below_measured_peaks():
    for causal in (False, True):
        result = sweep(
            sizes=(64, 128), impls=("naive", "sdpa-math", "sdpa", "numpy"), causal=causal
        )
        for row in result.rows:
            dispatched = "flash" if row.impl == "sdpa" else None
            estimate = backward_registry.estimate_bytes(
                row.impl, result.config, row.n, 4, dispatched
            )
            assert row.peak_mem_bytes <= estimate, (row.impl, row.n, row.peak_mem_bytes, estimate)


def test_the_kernel_has_a_backward_in_every_dtype_and_the_defaults_have_one(monkeypatch):
    monkeypatch.setattr(registry, "has_triton", lambda: True)
    for dtype in ("bfloat16", "float16", "float32"):
        assert backward_registry.backward_problem("triton-flash", "cuda", dtype, 128) is None
    assert backward_registry.backward_problem("triton-flash", "cpu", "float32", 128) is not None
    assert backward_registry.default_impls("cpu") == TIMED
    cuda = backward_registry.default_impls("cuda")
    assert cuda == ("naive", "sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "triton-flash")  # fmt: skip
    assert backward_registry.default_impls("cpu", with_torch=False) == ("numpy",)


def test_json_of_a_backward_sweep(invoke):
    from tests.test_json_contract import VALIDATOR

    result = invoke("bench", *FAST, "--backward", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    VALIDATOR.validate(doc)
    assert doc["config"]["backward"] is True and doc["config"]["impls"] == list(TIMED)
    assert [(row["impl"], row["n"]) for row in doc["rows"]] == [
        (impl, n) for impl in TIMED for n in (16, 32)
    ]
    for row in doc["rows"]:
        assert row["backward"] is True and row["status"] == "ok" and row["max_abs_err"] < 1e-5
    assert set(doc["fit"]) == set(TIMED)  # the fit of time and memory against n still applies


def test_the_table_says_what_was_timed(invoke):
    result = invoke("bench", *FAST, "--backward", "--impl", "naive,tiled")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "· forward + backward" in text
    assert "ms: median time of one forward and backward" in text
    assert "12·n²·d per head (a recomputed Q Kᵀ not counted)" in text
    assert "err: max |dQ, dK, dV − float64 reference| on sampled query and key rows" in text
    assert "tiled (every n): no backward of its own" in text
    forward = " ".join(invoke("bench", *FAST, "--impl", "naive").stdout.split())
    assert "forward + backward" not in forward and "(Q Kᵀ and A V, 4·n²·d per head)" in forward


def test_a_saved_backward_sweep_reads_back_as_one(invoke, tmp_path):
    result = invoke("bench", *FAST, "--backward", "--impl", "naive", "--format", "json")
    assert result.exit_code == 0, result.output
    path = tmp_path / "backward.json"
    path.write_text(result.stdout, encoding="utf-8")
    again = invoke("bench", "--from", str(path))
    assert again.exit_code == 0, again.output
    assert "forward + backward" in " ".join(again.stdout.split())


def test_from_refuses_backward(invoke, tmp_path):
    path = tmp_path / "none.json"
    path.write_text("{}", encoding="utf-8")
    assert_user_error(invoke("bench", "--from", str(path), "--backward"), "--backward")


def test_the_plot_of_a_backward_sweep_says_so(mpl):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attn_cli.bench.config import BenchResult, Row
    from attn_cli.render.bench_plot import bench_figure

    config = BenchConfig(sizes=(16, 32), impls=("naive",), backward=True)
    rows = [Row.for_run(config, "naive", n, ms_median=1.0, peak_mem_bytes=2**20) for n in (16, 32)]
    figure = bench_figure(BenchResult(config, {"name": "test CPU"}, rows))
    try:
        assert figure.get_suptitle().endswith(" · forward + backward")
    finally:
        plt.close(figure)
