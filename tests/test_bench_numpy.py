"""attn bench without PyTorch: the numpy implementations run; a torch one is a user error."""

from __future__ import annotations

import json
import sys

import pytest

from attn_cli.bench import impls as registry
from attn_cli.bench.config import BenchConfig
from attn_cli.bench.devices import CpuOps, device_ops, torch_available
from attn_cli.core.errors import UserError
from tests.conftest import assert_user_error

FAST = ("--sizes", "32,64", "--d", "8", "--heads", "1", "--repeats", "2", "--block", "16")


def rows_of(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["rows"]


def test_numpy_impls_run_without_torch(invoke, without_torch):
    assert not torch_available()
    result = invoke("bench", *FAST, "--impl", "numpy,tiled-numpy", "--format", "json")
    doc = json.loads(result.stdout)
    rows = rows_of(result)
    assert [(row["impl"], row["n"]) for row in rows] == [
        ("numpy", 32),
        ("numpy", 64),
        ("tiled-numpy", 32),
        ("tiled-numpy", 64),
    ]
    for row in rows:
        assert row["status"] == "ok", row["note"]
        assert row["max_abs_err"] < 2e-6 and row["ms_median"] > 0 and row["repeats"] == 2
        assert row["memory_method"] == "tracemalloc" and row["peak_mem_bytes"] > 0
    assert "torch" not in doc["machine"]
    assert set(doc["fit"]) == {"numpy", "tiled-numpy"}


def test_the_default_without_torch_is_the_numpy_impls(invoke, without_torch):
    rows = rows_of(invoke("bench", *FAST, "--format", "json"))
    assert sorted({row["impl"] for row in rows}) == ["numpy", "tiled-numpy"]
    result = invoke("bench", *FAST, "--causal")  # the rich table too
    assert result.exit_code == 0, result.output
    assert "tiled-numpy" in result.stdout and "How time and memory grow" in result.stdout


@pytest.mark.parametrize(
    ("impls", "named"),
    [
        ("naive", "--impl naive"),
        ("sdpa,tiled,numpy", "--impl sdpa,tiled"),
        ("sdpa-math", "--impl sdpa-math"),
    ],
)
def test_a_torch_impl_without_torch_is_a_user_error(invoke, without_torch, impls, named):
    result = invoke("bench", *FAST, "--impl", impls)
    assert_user_error(result, named, "needs PyTorch", "pip install 'attn-cli[torch]'")


@pytest.mark.parametrize("device", ["cuda", "mps"])
def test_a_gpu_without_torch_is_a_user_error(invoke, without_torch, device):
    result = invoke("bench", *FAST, "--device", device)
    assert_user_error(result, f"--device {device} needs PyTorch", "pip install 'attn-cli[torch]'")


def test_numpy_only_inputs_need_no_torch(without_torch):
    config = BenchConfig(
        sizes=(16,), d=4, heads=2, causal=True, block=4, impls=("numpy", "tiled-numpy")
    )
    inputs = registry.make_inputs(config, 16, "cpu")
    assert inputs.q.shape == (1, 2, 16, 4) and str(inputs.q.dtype) == "float32"
    assert inputs.nbytes == 3 * 16 * 2 * 4 * 4
    again = registry.make_inputs(config, 16, "cpu")
    assert (inputs.q == again.q).all()  # seeded
    rows = registry.reference_rows(16, count=4)
    expected = registry.reference_output(inputs, rows, causal=True)
    out = registry.make_runner("tiled-numpy", config, inputs)()
    assert abs(registry.output_rows(out, rows) - expected).max() < 1e-6
    assert isinstance(device_ops("cpu"), CpuOps)
    with pytest.raises(UserError, match="needs PyTorch"):
        registry.require_torch(("naive",), with_torch=False)
    registry.require_torch(("numpy", "tiled-numpy"), with_torch=False)


def test_numpy_impls_give_the_same_errors_with_and_without_torch(invoke, monkeypatch):
    pytest.importorskip("torch")
    args = ("bench", *FAST, "--impl", "numpy,tiled-numpy", "--format", "json")
    with_torch = [row["max_abs_err"] for row in rows_of(invoke(*args))]
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.delitem(sys.modules, "attn_cli.core.torch_backend", raising=False)
    assert with_torch == [row["max_abs_err"] for row in rows_of(invoke(*args))]
