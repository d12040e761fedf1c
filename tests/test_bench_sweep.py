"""The sweep: accuracy of every implementation, and every failure turned into a row."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from attn_cli.bench import impls as registry
from attn_cli.bench.config import IMPLS, BenchConfig, parse_impls, parse_sizes
from attn_cli.bench.devices import CpuOps, CudaOps, auto_repeats, device_ops
from attn_cli.bench.peaks import dense_peak_tflops
from attn_cli.bench.sweep import MEMORY_HEADROOM, run_sweep
from attn_cli.cli import flags
from attn_cli.core.errors import UserError

pytest.importorskip("torch")

SMALL = {"sizes": (16, 48), "d": 8, "heads": 2, "batch": 1, "repeats": 2, "block": 8}


def sweep(monkeypatch=None, ops=None, **changes):
    config = BenchConfig(**{**SMALL, **changes})
    return run_sweep(config, ops or CpuOps())


def by_impl(result):
    rows = {}
    for row in result.rows:
        rows.setdefault(row.impl, []).append(row)
    return rows


@pytest.mark.parametrize(("dtype", "tolerance"), [("float64", 1e-12), ("float32", 2e-6)])
@pytest.mark.parametrize("causal", [False, True])
def test_every_implementation_agrees_with_the_float64_reference(dtype, tolerance, causal):
    impls = registry.default_impls("cpu")
    result = sweep(dtype=dtype, causal=causal, impls=impls)
    assert [row.impl for row in result.rows] == list(impls) * 2
    for row in result.rows:
        assert row.status == "ok", (row.impl, row.note)
        assert row.max_abs_err < tolerance, (row.impl, row.n, row.max_abs_err)
        assert row.ms_median > 0 and row.ms_spread >= 0 and row.repeats == 2
        assert row.peak_mem_bytes > 0
        assert row.memory_method == (
            "tracemalloc" if registry.family(row.impl) == "numpy" else "torch profiler"
        )
        expected_flops = 4 * 2 * row.n**2 * 8 / (2 if causal else 1)
        assert row.tflops == pytest.approx(expected_flops / (row.ms_median / 1e3) / 1e12)
        assert row.peak_fraction is None  # no published peak for a CPU


def test_reference_rows_include_first_and_last():
    assert list(registry.reference_rows(5)) == [0, 1, 2, 3, 4]
    rows = registry.reference_rows(1000)
    assert rows[0] == 0 and rows[-1] == 999 and len(rows) == 16


def test_estimates_are_not_below_measured_peaks():
    result = sweep(sizes=(64, 128), impls=("naive", "tiled", "numpy", "tiled-numpy"), causal=True)
    config = result.config
    for row in result.rows:
        estimate = registry.estimate_bytes(row.impl, config, row.n, 4)
        assert row.peak_mem_bytes <= estimate, (row.impl, row.n, row.peak_mem_bytes, estimate)


def test_memory_of_naive_grows_faster_than_tiled():
    result = sweep(sizes=(64, 128, 256), impls=("numpy", "tiled-numpy"), block=16)
    numpy_rows, tiled_rows = by_impl(result)["numpy"], by_impl(result)["tiled-numpy"]
    assert numpy_rows[-1].peak_mem_bytes / numpy_rows[0].peak_mem_bytes > 12  # ~16 = 4²
    assert tiled_rows[-1].peak_mem_bytes / tiled_rows[0].peak_mem_bytes < 6  # ~4


def test_skipped_when_the_estimate_does_not_fit(monkeypatch):
    config = BenchConfig(**{**SMALL, "sizes": (64,), "impls": ("naive", "tiled")})
    naive = registry.estimate_bytes("naive", config, 64, 4)
    tiled = registry.estimate_bytes("tiled", config, 64, 4)
    assert tiled < naive
    ops = CpuOps()
    limit = int((naive + tiled) / 2 / MEMORY_HEADROOM)
    monkeypatch.setattr(ops, "memory_limit", lambda: limit)
    result = run_sweep(config, ops)
    rows = by_impl(result)
    assert rows["naive"][0].status == "skipped"
    assert rows["naive"][0].peak_mem_bytes == naive
    assert rows["naive"][0].memory_method == "estimate"
    assert "needs ≈" in rows["naive"][0].note and "free" in rows["naive"][0].note
    assert rows["tiled"][0].status == "ok"


def test_skipped_when_the_inputs_do_not_fit(monkeypatch):
    ops = CpuOps()
    monkeypatch.setattr(ops, "memory_limit", lambda: 100)
    result = sweep(ops=ops, impls=("sdpa",))
    assert {row.status for row in result.rows} == {"skipped"}
    assert "the inputs alone" in result.rows[0].note


def _failing(impl_name, error_factory, real=registry.make_runner):
    def make_runner(impl, config, inputs):
        if impl != impl_name:
            return real(impl, config, inputs)

        def run():
            raise error_factory()

        return run

    return make_runner


def test_oom_row_and_the_sweep_goes_on(monkeypatch, torch):
    def oom():
        return torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB")

    monkeypatch.setattr(registry, "make_runner", _failing("naive", oom))
    ops = CpuOps()
    cleaned = []
    monkeypatch.setattr(ops, "after_oom", lambda: cleaned.append(True))
    result = sweep(ops=ops, impls=("naive", "tiled"), sizes=(16, 32, 48))
    rows = by_impl(result)
    assert [row.status for row in rows["naive"]] == ["oom", "skipped", "skipped"]
    assert "out of memory" in rows["naive"][0].note
    assert rows["naive"][1].note == "ran out of memory at n=16"
    assert [row.status for row in rows["tiled"]] == ["ok", "ok", "ok"]
    assert cleaned == [True]


def test_numpy_memory_error_is_an_oom_row(monkeypatch):
    monkeypatch.setattr(registry, "make_runner", _failing("numpy", MemoryError))
    result = sweep(impls=("numpy",), sizes=(16,))
    assert result.rows[0].status == "oom"


def test_forced_kernel_refusal_is_unsupported_with_the_reason(monkeypatch):
    def refuse():
        warnings.warn("Flash attention kernel not used because:", stacklevel=1)
        warnings.warn(
            "Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query "
            "dtype: float (Triggered internally at /pytorch/aten/sdp_utils.cpp:123.)",
            stacklevel=1,
        )
        return RuntimeError("No available kernel. Aborting execution.")

    monkeypatch.setattr(registry, "make_runner", _failing("sdpa-flash", refuse))
    result = sweep(impls=("sdpa-flash", "sdpa-math"), sizes=(16,))
    flash, math_row = result.rows
    assert flash.status == "unsupported"
    assert flash.note.startswith("Expected query, key and value to all be of dtype")
    assert "Triggered internally" not in flash.note
    assert math_row.status == "ok"


def test_static_unsupported_rows():
    result = sweep(impls=("sdpa-efficient", "sdpa-cudnn", "numpy"), dtype="bfloat16", sizes=(16,))
    notes = {row.impl: (row.status, row.note) for row in result.rows}
    assert notes["sdpa-efficient"] == (
        "unsupported",
        "efficient is a CUDA-only kernel (PyTorch has no CPU version)",
    )
    assert notes["sdpa-cudnn"][0] == "unsupported"
    assert notes["numpy"] == ("unsupported", "numpy has no bfloat16; use float32")


def test_other_runtime_errors_are_error_rows_but_bugs_propagate(monkeypatch):
    monkeypatch.setattr(registry, "make_runner", _failing("naive", lambda: RuntimeError("odd")))
    result = sweep(impls=("naive",), sizes=(16,))
    assert (result.rows[0].status, result.rows[0].note) == ("error", "odd")
    monkeypatch.setattr(registry, "make_runner", _failing("naive", lambda: TypeError("bug")))
    with pytest.raises(TypeError):
        sweep(impls=("naive",), sizes=(16,))


def test_ctrl_c_keeps_the_rows_finished_so_far():
    calls = []

    def on_start(impl, n):
        calls.append((impl, n))
        if len(calls) == 3:
            raise KeyboardInterrupt

    config = BenchConfig(**{**SMALL, "impls": ("sdpa", "tiled")})
    result = run_sweep(config, CpuOps(), on_start=on_start)
    assert result.interrupted
    assert [(row.impl, row.n) for row in result.rows] == [("sdpa", 16), ("tiled", 16)]


def test_sdpa_default_dispatch_is_named():
    result = sweep(impls=("sdpa",), sizes=(16,))
    assert result.rows[0].note.startswith("dispatched to ")


def test_auto_repeats():
    assert auto_repeats(1000.0) == 5
    assert auto_repeats(50.0) == 10
    assert auto_repeats(0.001) == 50
    assert auto_repeats(0.0) == 50


def test_parse_sizes_and_impls():
    assert parse_sizes(None, "cpu") == (128, 256, 512, 1024, 2048)
    # On a GPU the default starts where the n² work, not a kernel's launch, sets the time.
    assert parse_sizes(None, "cuda") == (2048, 4096, 8192, 16384, 32768)
    assert parse_sizes("100..900", "cpu") == (100, 200, 400, 800)
    assert parse_sizes("1024, 256,256", "cpu") == (256, 1024)
    for bad in ("0..8", "8..4", "12,x", "-5"):
        with pytest.raises(UserError) as raised:
            parse_sizes(bad, "cpu")
        assert flags.message(raised.value).startswith("--sizes ")  # as the command line says it
    assert parse_impls("tiled,naive", ()) == ("naive", "tiled")
    with pytest.raises(UserError, match="--impl"):
        parse_impls("naive,flash3", ())
    assert set(registry.default_impls("cpu")) <= set(IMPLS)


# --- the CUDA branches, on the CPU, with torch.cuda mocked -------------------------------


class FakeEvent:
    def __init__(self, enable_timing=False):
        assert enable_timing

    def record(self):
        pass

    def elapsed_time(self, end):
        return 2.0  # ms


@pytest.fixture
def fake_cuda(monkeypatch, torch):
    state = {"allocated": 1000, "peak": 1000 + 123_456, "synced": 0, "emptied": 0, "reset": 0}
    cuda = torch.cuda

    def synchronize():
        state["synced"] += 1

    def reset_peak_memory_stats():
        state["reset"] += 1

    def empty_cache():
        state["emptied"] += 1

    class Props:
        total_memory = 80 * 2**30
        major, minor = 9, 0

    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "synchronize", synchronize)
    monkeypatch.setattr(cuda, "Event", FakeEvent)
    monkeypatch.setattr(cuda, "memory_allocated", lambda: state["allocated"])
    monkeypatch.setattr(cuda, "max_memory_allocated", lambda: state["peak"])
    monkeypatch.setattr(cuda, "reset_peak_memory_stats", reset_peak_memory_stats)
    monkeypatch.setattr(cuda, "mem_get_info", lambda: (40 * 2**30, 80 * 2**30))
    monkeypatch.setattr(cuda, "memory_reserved", lambda: state["allocated"] + 2**30)
    monkeypatch.setattr(cuda, "empty_cache", empty_cache)
    monkeypatch.setattr(cuda, "get_device_name", lambda *args: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(cuda, "current_device", lambda: 0)
    monkeypatch.setattr(cuda, "get_device_properties", lambda index: Props())
    return state


def cuda_ops_on_cpu():
    ops = device_ops("cuda")
    assert isinstance(ops, CudaOps)
    ops.tensor_device = "cpu"  # the tensors stay on the CPU; every torch.cuda call is mocked
    return ops


def test_cuda_path_with_mocked_device(fake_cuda):
    ops = cuda_ops_on_cpu()
    assert ops.memory_limit() == 41 * 2**30  # free + cached but unused
    impls = ("naive", "sdpa-math", "tiled", "numpy")
    result = sweep(ops=ops, impls=impls, dtype="float32", repeats=3)
    info = result.device_info
    assert info["name"] == "NVIDIA H100 80GB HBM3" and info["peak_label"] == "H100 SXM"
    assert info["peak_tflops"] == 66.9 and info["compute_capability"] == "9.0"
    rows = by_impl(result)
    assert {row.status for row in rows["numpy"]} == {"unsupported"}
    assert rows["numpy"][0].note == "numpy runs on the CPU only"
    for row in rows["naive"] + rows["sdpa-math"] + rows["tiled"]:
        assert row.status == "ok" and row.ms_median == 2.0 and row.ms_spread == 0.0
        assert row.repeats == 3
        assert row.memory_method == "cuda allocator" and row.peak_mem_bytes == 123_456
        assert row.peak_fraction == pytest.approx(row.tflops / 66.9)
        assert row.max_abs_err < 2e-6
    assert fake_cuda["reset"] == 6 and fake_cuda["synced"] > 0


def test_cuda_oom_empties_the_cache(fake_cuda, monkeypatch, torch):
    def oom():
        return torch.cuda.OutOfMemoryError("CUDA out of memory.")

    monkeypatch.setattr(registry, "make_runner", _failing("naive", oom))
    result = sweep(ops=cuda_ops_on_cpu(), impls=("naive",), dtype="float32")
    assert [row.status for row in result.rows] == ["oom", "skipped"]
    assert fake_cuda["emptied"] == 1


def test_cuda_default_impls_and_defaults(fake_cuda, monkeypatch):
    # torch 2.13 has every SDPBackend member: each forced kernel is swept, in this order.
    monkeypatch.setattr(registry, "has_triton", lambda: False)
    assert registry.default_impls("cuda") == (
        "naive", "sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "tiled"
    )  # fmt: skip
    # With triton installed, the flash lesson's kernel is swept too (never on the CPU).
    monkeypatch.setattr(registry, "has_triton", lambda: True)
    assert registry.default_impls("cuda")[-1] == "triton-flash"
    assert "triton-flash" not in registry.default_impls("cpu")


def test_the_default_shape_is_per_device(fake_cuda, monkeypatch):
    """d 128 and n 2048..32768 on cuda (the width of published FlashAttention figures), d 64
    elsewhere; the default cuda sweep passes the work guard of a GPU."""
    from attn_cli.bench.config import DEFAULT_D
    from attn_cli.bench.sweep import check_sweep_work
    from attn_cli.cli.commands.bench import bench_config
    from attn_cli.cli.options import DeviceName

    monkeypatch.setattr(registry, "has_triton", lambda: False)
    shape = (None, None, None, 128, 0, None, 8, 1, None, False)
    cuda = bench_config(DeviceName("cuda"), *shape)
    assert (cuda.d, cuda.sizes, cuda.dtype) == (128, (2048, 4096, 8192, 16384, 32768), "bfloat16")
    check_sweep_work(cuda, cuda_ops_on_cpu())  # not refused
    cpu = bench_config(DeviceName("cpu"), *shape)
    assert (cpu.d, cpu.sizes) == (64, (128, 256, 512, 1024, 2048))
    assert DEFAULT_D == {"cpu": 64, "cuda": 128, "mps": 64}
    assert bench_config(DeviceName("cuda"), None, None, None, 128, 0, 32, 8, 1, None, False).d == 32


def test_cuda_default_impls_leave_out_kernels_this_torch_lacks(monkeypatch):
    monkeypatch.setattr(registry, "has_sdpa_backend", lambda member: member != "CUDNN_ATTENTION")
    monkeypatch.setattr(registry, "has_triton", lambda: False)
    impls = registry.default_impls("cuda")
    assert impls == ("naive", "sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-math", "tiled")


def test_cuda_absent_is_a_user_error(monkeypatch, torch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UserError, match="device=cuda: CUDA is not available"):
        device_ops("cuda")


def test_published_peaks():
    assert dense_peak_tflops("NVIDIA H100 80GB HBM3", "bfloat16") == 989.4
    assert dense_peak_tflops("NVIDIA H100 PCIe", "bfloat16") == 756.0
    assert dense_peak_tflops("NVIDIA H200", "float16") == 989.4
    assert dense_peak_tflops("NVIDIA A100-SXM4-80GB", "float32", tf32=True) == 156.0
    assert dense_peak_tflops("NVIDIA L4", "bfloat16") == 121.0
    assert dense_peak_tflops("NVIDIA GeForce RTX 4090", "bfloat16") == 165.2
    assert dense_peak_tflops("NVIDIA H100 NVL", "bfloat16") is None
    assert dense_peak_tflops("NVIDIA GeForce GTX 1080", "float32") is None
    assert dense_peak_tflops("NVIDIA A100-SXM4-80GB", "float64") is None


def test_outputs_are_compared_on_the_same_rows():
    config = BenchConfig(**SMALL)
    inputs = registry.make_inputs(config, 16, "cpu")
    rows = registry.reference_rows(16, count=4)
    expected = registry.reference_output(inputs, rows, causal=False)
    out = registry.make_runner("numpy", config, inputs)()
    assert np.abs(registry.output_rows(out, rows) - expected).max() < 1e-6
