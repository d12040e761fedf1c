"""The bench's window implementations: what their memory estimates count, measured on the CPU,
and FlexAttention's block mask of the band, built from its tiles (flex-window).

The GPU run of 2026-11-26 (tests/data/gpu-runs/2026-11-26-h200/beyond.json) is the fixture:
flex-window ran out of memory at n = 131072 on a card with 139 GiB free, because
create_block_mask evaluated the band on all n² pairs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from attn_cli.bench import impls as registry
from attn_cli.bench.config import BenchConfig
from attn_cli.bench.devices import torch_profiler_peak, tracemalloc_peak
from attn_cli.bench.sweep import MEMORY_HEADROOM
from attn_cli.mechanisms.local import window_attention
from tests.test_mech_local import band_by_loops

BEYOND = Path(__file__).parent / "data" / "gpu-runs" / "2026-11-26-h200" / "beyond.json"
GIB = 1024**3
BLOCK_MASK_FIELDS = (
    "kv_num_blocks",
    "kv_indices",
    "full_kv_num_blocks",
    "full_kv_indices",
    "q_num_blocks",
    "q_indices",
    "full_q_num_blocks",
    "full_q_indices",
)


def beyond() -> dict:
    return json.loads(BEYOND.read_text())


def rows_of(doc: dict, impl: str) -> dict[int, dict]:
    return {row["n"]: row for row in doc["rows"] if row["impl"] == impl}


def free_bytes(doc: dict) -> float:
    """The free GPU memory the sweep saw, read off a skipped row's note ("… 139.1 GiB free")."""
    notes = [row["note"] for row in doc["rows"] if row["status"] == "skipped"]
    (free,) = {float(m.group(1)) for m in (re.search(r"([\d.]+) GiB free", t) for t in notes) if m}
    return free * GIB


def band(window: int, causal: bool):
    def allowed(_b, _h, i, j):
        return ((i - j >= 0) & (i - j <= window)) if causal else (i - j).abs() <= window

    return allowed


# --- window, window-numpy: all query blocks at once -------------------------------------------

WINDOW_CASES = [  # (heads, n, w, block, causal)
    (1, 1024, 16, 64, False),
    (8, 1024, 64, 128, False),
    (8, 2048, 64, 128, False),
    (8, 2048, 64, 128, True),
    (2, 1000, 5, 16, False),
    (1, 2048, 300, 64, False),
]


@pytest.mark.parametrize(("heads", "n", "w", "block", "causal"), WINDOW_CASES)
def test_the_window_estimate_bounds_the_measured_peak_within_a_quarter(
    torch, heads, n, w, block, causal
):
    """numpy's peak (tracemalloc) and torch's on the CPU (the profiler's allocations), float32:
    the estimate is at least the peak and at most 1.25 times it."""
    config = BenchConfig(d=64, heads=heads, batch=1, window=w, block=block, causal=causal)
    rng = np.random.default_rng(n + w)
    q, k, v = (rng.standard_normal((1, heads, n, 64)).astype(np.float32) for _ in range(3))
    tensors = [torch.from_numpy(a) for a in (q, k, v)]
    _, numpy_peak, _ = tracemalloc_peak(
        lambda: window_attention(q, k, v, w, causal=causal, block=block)
    )
    _, torch_peak, method = torch_profiler_peak(
        lambda: window_attention(*tensors, w, causal=causal, block=block)
    )
    assert method == "torch profiler" and torch_peak is not None
    numpy_estimate = registry.estimate_bytes("window-numpy", config, n, 4)
    torch_estimate = registry.estimate_bytes("window", config, n, 4)
    assert numpy_peak <= numpy_estimate <= 1.25 * numpy_peak, (numpy_peak, numpy_estimate)
    assert torch_peak <= torch_estimate <= 1.25 * torch_peak, (torch_peak, torch_estimate)


def test_the_window_estimate_grows_as_n_times_the_span():
    """O(n·(block + 2w)): doubling n doubles it (to within the fixed allowance); the fixture's
    card had room for every size of the sweep (it ran them all, in the loop this replaces)."""
    doc = beyond()
    config = BenchConfig(**{key: doc["config"][key] for key in ("d", "heads", "batch", "window")})
    sizes = doc["config"]["sizes"]
    estimates = [registry.estimate_bytes("window", config, n, 2) for n in sizes]
    ratios = np.array(estimates[1:]) / np.array(estimates[:-1])
    np.testing.assert_allclose(ratios, 2.0, rtol=1e-3)
    assert estimates[-1] < MEMORY_HEADROOM * free_bytes(doc)
    assert {row["status"] for row in rows_of(doc, "window").values()} == {"ok"}


# --- flex-window: the band's block mask from its tiles ----------------------------------------


@pytest.mark.parametrize(
    ("n", "w", "causal"),
    [(1000, 64, False), (1000, 64, True), (1024, 0, False), (2000, 300, False), (2000, 300, True),
     (129, 1, False), (5, 10, True), (4096, 128, False), (4096, 127, True), (300, 256, False)],
)  # fmt: skip
def test_band_block_mask_is_the_one_create_block_mask_builds(torch, n, w, causal):
    """Every tensor of the BlockMask equal (partial and full tiles, their transposes), for n on
    and off the 128 grid, w = 0, w past a tile, w past n."""
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    expected = flex.create_block_mask(band(w, causal), None, None, n, n, device="cpu")
    got = registry.band_block_mask(n, w, causal, "cpu")
    for name in BLOCK_MASK_FIELDS:
        want, have = getattr(expected, name), getattr(got, name)
        assert (have is None) if want is None else torch.equal(want, have), name
    assert got.seq_lengths == (n, n) and tuple(got.BLOCK_SIZE) == tuple(expected.BLOCK_SIZE)


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
@pytest.mark.parametrize(
    ("n", "w", "causal"), [(300, 40, False), (300, 40, True), (257, 130, False)]
)
def test_flex_attention_with_the_band_block_mask_is_banded_attention(torch, n, w, causal):
    """FlexAttention (eager, float64) given the mask equals the dense masked softmax."""
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    generator = torch.Generator().manual_seed(n + w)
    q, k, v = (torch.randn(1, 2, n, 8, generator=generator, dtype=torch.float64) for _ in range(3))
    allowed = torch.from_numpy(band_by_loops(n, w, causal))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    mask = registry.band_block_mask(n, w, causal, "cpu")
    got = flex.flex_attention(q, k, v, block_mask=mask)  # eager: the n × n scores, fine here
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=0, atol=1e-12)


def block_mask_bytes(mask) -> int:
    return sum(
        int(t.numel() * t.element_size())
        for t in (getattr(mask, name) for name in BLOCK_MASK_FIELDS)
        if t is not None
    )


@pytest.mark.parametrize("n", [1, 129, 1000, 4096, 16384, 65536, 131072])
def test_the_block_mask_estimate_bounds_its_construction_within_a_half(torch, n):
    """Built on the CPU: the peak while building (the profiler's allocations) is at most the
    estimate, and the estimate at most 1.5 times the peak plus the fixed allowance (it also
    covers the H200's 72 bytes a tile pair, where the CPU takes 56); what the mask keeps is
    exactly its tensors."""
    mask, peak, _ = torch_profiler_peak(lambda: registry.band_block_mask(n, 64, False, "cpu"))
    building, kept = registry.band_block_mask_bytes(n)
    assert peak is not None and peak <= building, (peak, building)
    assert building <= 1.5 * peak + registry.BLOCK_MASK_ALLOWANCE, (peak, building)
    assert kept == block_mask_bytes(mask)


@pytest.mark.parametrize(("n", "causal", "per_pair"), [(1024, False, 16), (2048, True, 10)])
def test_create_block_mask_holds_bytes_for_every_pair(torch, n, causal, per_pair):
    """Why flex-window ran out of memory on the H200: create_block_mask (eager) evaluates the
    band on the whole n × n grid, int64 offsets and their absolute value at once: 16 bytes a
    pair (causal: 10), measured here; the H200 measured the same at n = 8192 (16.0 and 10.1)."""
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    _, peak, _ = torch_profiler_peak(
        lambda: flex.create_block_mask(band(64, causal), None, None, n, n, device="cpu")
    )
    assert peak is not None and per_pair <= peak / n**2 < per_pair + 0.1


def test_the_h200s_flex_window_rows_and_the_one_that_ran_out():
    """The fixture's ok rows measured the call alone: output and two float32 numbers a row,
    exactly. At n = 131072 create_block_mask needed 16 bytes a pair, 256 GiB, on a card with
    139.1 GiB free: out of memory, under an estimate of 258.5 MiB. Now the estimate is the tile
    mask kept plus that call (what the rows below it measured, doubled), 152.0 MiB, and the
    construction's peak, measured here, stays below it."""
    doc = beyond()
    config = BenchConfig(**{key: doc["config"][key] for key in ("d", "heads", "batch", "window")})
    lanes, itemsize = config.batch * config.heads, 2
    rows = rows_of(doc, "flex-window")
    for n, row in rows.items():
        if row["status"] == "ok":
            assert row["peak_mem_bytes"] == lanes * registry.flex_call_bytes(config, n, itemsize)
    last = rows[131072]
    assert last["status"] == "oom" and last["note"] == "out of memory (estimate was 258.5 MiB)"
    assert 16 * 131072**2 > free_bytes(doc) > 139 * GIB  # what create_block_mask held
    call = 2 * rows[65536]["peak_mem_bytes"]  # the call at n = 131072, as its rows grow
    _building, kept = registry.band_block_mask_bytes(131072)
    estimate = registry.estimate_bytes("flex-window", config, 131072, itemsize)
    assert estimate == kept + call == 159_399_936  # 152.0 MiB
    assert estimate < MEMORY_HEADROOM * free_bytes(doc)  # the row now runs


def test_the_band_mask_at_131072_is_built_within_that_estimate(torch):
    """The construction's peak, measured here (torch's profiler), stays below the estimate."""
    config = BenchConfig(
        **{key: beyond()["config"][key] for key in ("d", "heads", "batch", "window")}
    )
    estimate = registry.estimate_bytes("flex-window", config, 131072, 2)
    _, peak, _ = torch_profiler_peak(lambda: registry.band_block_mask(131072, 64, False, "cpu"))
    assert peak is not None and peak < estimate


def test_the_sdpa_window_estimate_is_what_the_h200_measured():
    """beyond.json: sdpa-window held n²·2 + 8·n·64·2 + 1536 bytes at every n (a fused kernel
    that takes the mask, no head's scores stored), yet the estimate assumed the math path for
    every head, 32× that: n = 65536 was skipped as 'this run needs ≈260.1 GiB' against 139.1 GiB
    free, where the measured rows put it at 8 GiB."""
    doc = beyond()
    config = BenchConfig(
        device="cuda", **{key: doc["config"][key] for key in ("d", "heads", "batch", "window")}
    )
    rows = rows_of(doc, "sdpa-window")
    measured = {n: row["peak_mem_bytes"] for n, row in rows.items() if row["status"] == "ok"}
    assert sorted(measured) == [4096, 8192, 16384, 32768]
    for n, peak in measured.items():
        assert peak == 2 * n * n + 8 * n * 64 * 2 + 1536
        estimate = registry.estimate_bytes("sdpa-window", config, n, 2)
        assert peak <= estimate <= 1.03 * peak, (n, peak, estimate)
    assert rows[65536]["note"].startswith("this run needs ≈260.1 GiB")  # what it said then
    assert registry.estimate_bytes("sdpa-window", config, 65536, 2) < 8.1 * GIB
    assert registry.estimate_bytes("sdpa-window", config, 65536, 2) < (
        MEMORY_HEADROOM * free_bytes(doc)
    )  # the row now runs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_sdpa_window_estimate_bounds_the_cpu_peak(torch, dtype):
    """On the CPU sdpa with a mask held about n²·(itemsize + 1) whatever the heads (the old
    estimate, every head's scores and weights, was 12× that at n = 512 in float32 with 4 heads):
    the estimate is above the measured peak and within 1.6× of it."""
    from attn_cli.bench.devices import CpuOps
    from attn_cli.bench.sweep import run_sweep

    config = BenchConfig(
        device="cpu", sizes=(512,), impls=("sdpa-window",), d=16, heads=4, dtype=dtype,
        repeats=2, window=8,
    )  # fmt: skip
    (row,) = run_sweep(config, CpuOps()).rows
    assert row.status == "ok" and row.peak_mem_bytes
    itemsize = 4 if dtype == "float32" else 8
    estimate = registry.estimate_bytes("sdpa-window", config, 512, itemsize)
    assert row.peak_mem_bytes <= estimate <= 1.6 * row.peak_mem_bytes
