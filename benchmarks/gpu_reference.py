"""An independent timing of a CUDA GPU, to hold `attn bench --device cuda` against.

Everything here is timed with Triton's own `do_bench` (CUDA events, the median of the runs after
a warm-up), not with attn's bench code:

1. the card's two ceilings: a bf16 matrix product (8192 × 8192 × 8192) and a device copy;
2. PyTorch's scaled_dot_product_attention, its default dispatch and each kernel forced, at
   d = 128, 8 heads, bf16, causal and not, and which kernel the default ran;
3. the flash lesson's Triton kernel (attn_cli/kernels/flash_triton.py): tuned (the autotuner
   over TUNING) and each launch setting of TUNING on its own, beside cuDNN, with the error of
   each against cuDNN's output; and, with --old-kernel FILE, an earlier version of the kernel
   module, launched as that version's bench did (query tiles of 128, key blocks of 128);
4. the backward (issue 58), at n = --backward-at (16384), d = 128, 8 heads, in bfloat16 (the
   forward's type, and the issue's) and then float32 (the kernel's exact products): sdpa's
   backward alone (autograd of a saved forward, and which kernels it ran), the Triton backward
   kernel alone (flash_attention_backward from the forward's O and L) at a few launch
   settings, each with its largest error against float64 gradients on sampled rows, and
   forward + backward of both. The issue's target: the kernel's backward within 1.25x of
   sdpa's own backward in bfloat16 (sdpa's time / the kernel's at least 0.8).

    python benchmarks/gpu_reference.py [--sizes 4096,16384,32768] [--old-kernel FILE]
        [--backward-at 16384]  (0: no backward)

It prints one line per measurement and ends with a summary. benchmarks/gpu_run.py runs it as
part of a whole GPU run.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attn_cli.bench.peaks import dense_peak_tflops
from attn_cli.kernels import flash_triton

HEADS, D = 8, 128
BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
}


def median_ms(fn: Callable[[], Any]) -> float:
    return float(do_bench(fn, warmup=25, rep=200, return_mode="median"))


def attention_flops(n: int, causal: bool) -> float:
    """Q Kᵀ and A V, 2·n²·d each per head; causal counts half the pairs (as attn bench does)."""
    flops = 4.0 * HEADS * n * n * D
    return flops / 2 if causal else flops


def rate(n: int, causal: bool, ms: float, peak: float | None) -> str:
    tflops = attention_flops(n, causal) / ms / 1e9
    share = f"{100 * tflops / peak:5.1f}% of {peak:g}" if peak else "no published peak"
    return f"{ms:8.3f} ms {tflops:6.0f} TFLOP/s {share}"


def ceilings() -> None:
    a, b = (torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    ms = median_ms(lambda: a @ b)
    print(f"ceiling: bf16 matmul 8192^3: {2 * 8192**3 / ms / 1e9:.0f} TFLOP/s ({ms:.3f} ms)")
    source = torch.empty(2**30, device="cuda", dtype=torch.int16)  # 2 GiB
    target = torch.empty_like(source)
    ms = median_ms(lambda: target.copy_(source))
    print(f"ceiling: device copy 2 GiB: {2 * 2**31 / ms / 1e9:.0f} GB/s (read + write)")


def dispatched_kernels(fn: Callable[[], Any]) -> list[str]:
    """The CUDA kernels one call ran (torch's profiler)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({event.name for event in prof.events() if event.device_type.name == "CUDA"})


def load_old_kernel(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("old_flash_triton", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="4096,16384,32768")
    parser.add_argument("--old-kernel", type=Path, default=None)
    parser.add_argument("--settings-at", type=int, default=16384, help="n of the TUNING table")
    parser.add_argument(
        "--backward-at", type=int, default=16384, help="n of the backward's timing (0: none)"
    )
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    name = torch.cuda.get_device_name()
    peak = dense_peak_tflops(name, "bfloat16")
    print(
        f"{name} · torch {torch.__version__} · CUDA {torch.version.cuda} · triton "
        f"{triton.__version__} · bf16, {HEADS} heads, d {D}"
    )
    ceilings()
    old = load_old_kernel(args.old_kernel) if args.old_kernel else None
    summary = []
    for n in sizes:
        for causal in (False, True):
            q, k, v = (
                torch.randn(1, HEADS, n, D, device="cuda", dtype=torch.bfloat16) for _ in "qkv"
            )

            def sdpa(q=q, k=k, v=v, causal=causal):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            where = f"n={n:6d} causal={causal!s:5}"
            default_ms = median_ms(sdpa)
            print(f"{where} sdpa (default)   {rate(n, causal, default_ms, peak)}")
            print(f"  the default dispatch ran: {dispatched_kernels(sdpa)}")
            outputs = {}
            for label, backend in BACKENDS.items():
                with sdpa_kernel(backend):
                    outputs[label] = sdpa()
                    ms = median_ms(sdpa)
                print(f"{where} sdpa {label:11} {rate(n, causal, ms, peak)}")
                if label == "cudnn":
                    cudnn_ms = ms
            reference = outputs["cudnn"].float()

            def tuned(q=q, k=k, v=v, causal=causal):
                return flash_triton.tuned_flash_attention(q, k, v, causal=causal)

            error = (tuned().float() - reference).abs().max().item()
            tuned_ms = median_ms(tuned)
            setting = flash_triton.tuned_setting(q, k, v, causal=causal)
            print(
                f"{where} triton tuned     {rate(n, causal, tuned_ms, peak)} "
                f"{cudnn_ms / tuned_ms:.2f}x cuDNN; max |diff| vs cuDNN {error:.1e}; {setting}"
            )
            summary.append((n, causal, cudnn_ms, tuned_ms, None))
            if old is not None:

                def before(q=q, k=k, v=v, causal=causal):
                    return old.flash_attention(q, k, v, block=128, query_block=128, causal=causal)

                error = (before().float() - reference).abs().max().item()
                old_ms = median_ms(before)
                print(
                    f"{where} triton before    {rate(n, causal, old_ms, peak)} "
                    f"{cudnn_ms / old_ms:.2f}x cuDNN; max |diff| vs cuDNN {error:.1e}"
                )
                summary[-1] = (n, causal, cudnn_ms, tuned_ms, old_ms)
            if n == args.settings_at:
                settings(q, k, v, causal, reference, cudnn_ms, peak)
            del q, k, v, outputs, reference
            torch.cuda.empty_cache()
    print("\nsummary (TFLOP/s; the ratio is cuDNN's time over the kernel's)")
    for n, causal, cudnn_ms, tuned_ms, old_ms in summary:
        flops = attention_flops(n, causal) / 1e9
        line = (
            f"n={n:6d} causal={causal!s:5} cuDNN {flops / cudnn_ms:4.0f}  tuned kernel "
            f"{flops / tuned_ms:4.0f} ({cudnn_ms / tuned_ms:.2f}x cuDNN)"
        )
        if old_ms is not None:
            line += f"  kernel before {flops / old_ms:4.0f} ({cudnn_ms / old_ms:.2f}x cuDNN)"
        print(line)
    if args.backward_at:
        for dtype in BACKWARD_DTYPES:
            backward(args.backward_at, dtype)


# Where backward() draws its tensors (a smoke test runs it on the CPU, on Triton's interpreter).
BACKWARD_DEVICE = "cuda"
# The backward kernel's launch settings timed: (query tiles, key blocks); the bench uses 64, 64.
BACKWARD_SETTINGS = ((64, 64), (32, 64), (64, 32), (32, 32), (128, 64), (64, 128))
# The backward's types, in the order timed; the 1.25x target is for the first.
BACKWARD_DTYPES = ("bfloat16", "float32")
TARGET_DTYPE = BACKWARD_DTYPES[0]


def backward(n: int, dtype: str) -> None:
    """The Triton backward kernel against sdpa's own backward at n, d = D, HEADS heads, in
    ``dtype`` ("bfloat16" or "float32"), not causal; each with its error against float64."""
    import numpy as np

    from attn_cli.bench import backward as bench_backward
    from attn_cli.bench.impls import Inputs, reference_rows

    name = torch.cuda.get_device_name() if BACKWARD_DEVICE == "cuda" else BACKWARD_DEVICE
    peak = dense_peak_tflops(name, dtype, tf32=_tf32())
    flops = 3 * attention_flops(n, False)  # forward + backward: 12·n²·d per head
    backward_flops = 2 * attention_flops(n, False)  # the backward's four products: 8·n²·d
    print(
        f"\nbackward: n={n} d={D} heads={HEADS} {dtype}, not causal; TF32 for float32 matmuls "
        f"{'on' if _tf32() else 'off'}; FLOPs counted: forward + backward 12·n²·d, backward "
        "8·n²·d per head (a recomputed Q Kᵀ not counted)"
    )
    generator = torch.Generator(device=BACKWARD_DEVICE).manual_seed(58)
    q, k, v, d_out = (
        torch.randn(1, HEADS, n, D, device=BACKWARD_DEVICE, generator=generator).to(
            getattr(torch, dtype)
        )
        for _ in range(4)
    )
    rows = reference_rows(n)
    expected = bench_backward.reference_gradients(Inputs(q, k, v, d_out), rows, False)

    def error(grads) -> float:
        return float(np.abs(bench_backward.gradient_rows(grads, rows) - expected).max())

    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves)

    def sdpa_backward():
        return torch.autograd.grad(out, leaves, d_out, retain_graph=True)

    def sdpa_both():
        output = F.scaled_dot_product_attention(*leaves)
        return torch.autograd.grad(output, leaves, d_out)

    sdpa_error = error(sdpa_backward())
    sdpa_ms = median_ms(sdpa_backward)
    both_ms = median_ms(sdpa_both)
    print(f"  sdpa's backward ran: {dispatched_kernels(sdpa_backward)}")
    print(
        f"  sdpa backward alone      {_rate(backward_flops, sdpa_ms, peak)}  err {sdpa_error:.1e}"
    )
    print(f"  sdpa forward + backward  {_rate(flops, both_ms, peak)}")
    best = None
    for query_block, block in BACKWARD_SETTINGS:
        launch = {"block": block, "query_block": query_block}
        label = f"  triton backward {query_block:3d} x {block:3d}"
        try:
            output, lse = flash_triton.flash_attention_with_lse(q, k, v, **launch)

            def kernel(output=output, lse=lse, launch=launch):
                return flash_triton.flash_attention_backward(q, k, v, output, lse, d_out, **launch)

            def kernel_both(launch=launch):
                o, saved = flash_triton.flash_attention_with_lse(q, k, v, **launch)
                return flash_triton.flash_attention_backward(q, k, v, o, saved, d_out, **launch)

            kernel_error = error(kernel())
            ms = median_ms(kernel)
            both = median_ms(kernel_both)
        except Exception as failure:  # a setting that does not fit: say so and go on
            print(f"{label}: failed: {str(failure).splitlines()[0][:100]}")
            continue
        print(
            f"{label} {_rate(backward_flops, ms, peak)}  err {kernel_error:.1e}  "
            f"sdpa/kernel {sdpa_ms / ms:.2f}; forward + backward {_rate(flops, both, peak)}"
        )
        if best is None or ms < best[0]:
            best = (ms, query_block, block, both)
        del output, lse
    if best is None:
        print("summary backward: no launch setting of the kernel ran")
        return
    ms, query_block, block, both = best
    target = " (the target, within 1.25x of sdpa's: at least 0.80)" if dtype == TARGET_DTYPE else ""
    print(
        f"summary backward n={n} d={D} {dtype}: sdpa {sdpa_ms:.3f} ms, the Triton kernel "
        f"{ms:.3f} ms at query tiles of {query_block}, key blocks of {block}: sdpa's time / the "
        f"kernel's {sdpa_ms / ms:.2f}{target}; "
        f"forward + backward: sdpa {both_ms:.3f} ms, the kernel {both:.3f} ms"
    )


def _tf32() -> bool:
    return bool(torch.backends.cuda.matmul.allow_tf32)


def _rate(flops: float, ms: float, peak: float | None) -> str:
    tflops = flops / ms / 1e9
    share = f"{100 * tflops / peak:5.1f}% of {peak:g}" if peak else "no published peak"
    return f"{ms:8.3f} ms {tflops:6.1f} TFLOP/s {share}"


def settings(q, k, v, causal: bool, reference, cudnn_ms: float, peak: float | None) -> None:
    """Each launch setting of TUNING on its own, as the tuner times them."""
    n = q.shape[-2]
    q3, k3, v3 = (t.reshape(-1, n, D).contiguous() for t in (q, k, v))
    o3 = torch.empty_like(q3)
    for rows, keys, warps, stages in flash_triton.TUNING:

        def launch(rows=rows, keys=keys, warps=warps, stages=stages):
            flash_triton.flash_forward[(math.ceil(n / rows), q3.shape[0])](
                q3, k3, v3, o3, o3, o3, n, n,
                q3.stride(0), q3.stride(1), k3.stride(0), k3.stride(1),
                v3.stride(0), v3.stride(1), o3.stride(0), o3.stride(1),
                flash_triton.LOG2_E / math.sqrt(D),
                D=D, D_V=D, QUERY_BLOCK=rows, BLOCK=keys, TILE_M=rows, TILE_N=keys,
                TILE_D=D, TILE_DV=D, CAUSAL=causal, TRACE=False,
                DOT=triton.language.bfloat16, PRECISION="tf32", LSE=False,
                num_warps=warps, num_stages=stages,
            )  # fmt: skip

        label = f"  setting {rows:3d} x {keys:3d}, {warps} warps, {stages} stages:"
        try:
            launch()
            torch.cuda.synchronize()
            error = (o3.reshape(q.shape).float() - reference).abs().max().item()
            ms = median_ms(launch)
            print(
                f"{label} {rate(n, causal, ms, peak)} {cudnn_ms / ms:.2f}x cuDNN, err {error:.1e}"
            )
        except Exception as failure:  # a setting that does not fit: say so and go on
            print(f"{label} failed: {str(failure).splitlines()[0][:100]}")


if __name__ == "__main__":
    main()
