"""Published dense peak throughput of a few GPUs, to turn TFLOP/s into a fraction of peak.

Figures are dense (no 2:4 sparsity), in TFLOP/s. Sources: NVIDIA's product datasheets for
H100 (SXM and PCIe), H200, A100 and L4, which print the tensor-core figures "with sparsity":
the dense figure is half of that; and NVIDIA's Ada Lovelace architecture whitepaper for the
GeForce RTX 4090 (FP16/BF16 tensor with FP32 accumulate, which is what PyTorch uses). "float32"
is the non-tensor FP32 rate; "tf32" the tensor-core rate PyTorch uses for float32 matmuls
only when torch.backends.cuda.matmul.allow_tf32 is on. A device not listed gets no fraction.
"""

from __future__ import annotations

import re

# (pattern on torch.cuda.get_device_name(), label, {dtype: dense TFLOP/s}).
# The first match wins, so the specific names come first; NVL variants are not listed
# (their clocks differ) and must not match the SXM rows.
_HOPPER_SXM = {"bfloat16": 989.4, "float16": 989.4, "tf32": 494.7, "float32": 66.9}
PEAKS: tuple[tuple[str, str, dict[str, float]], ...] = (
    (r"H100.*NVL|H200.*NVL", "", {}),
    (
        r"H100.*PCIe",
        "H100 PCIe",
        {"bfloat16": 756.0, "float16": 756.0, "tf32": 378.0, "float32": 51.0},
    ),
    (r"H100", "H100 SXM", _HOPPER_SXM),
    (r"H200", "H200 SXM", _HOPPER_SXM),
    (r"A100", "A100", {"bfloat16": 312.0, "float16": 312.0, "tf32": 156.0, "float32": 19.5}),
    (r"\bL4\b", "L4", {"bfloat16": 121.0, "float16": 121.0, "tf32": 60.0, "float32": 30.3}),
    (r"RTX 4090", "RTX 4090", {"bfloat16": 165.2, "float16": 165.2, "tf32": 82.6, "float32": 82.6}),
)


def known_device(name: str) -> tuple[str, dict[str, float]] | None:
    """The table entry (label, peaks) for a device name, or None when it is not listed."""
    for pattern, label, peaks in PEAKS:
        if re.search(pattern, name):
            return (label, peaks) if peaks else None
    return None


def dense_peak_tflops(name: str, dtype: str, *, tf32: bool = False) -> float | None:
    """The dense peak for this device and dtype (TF32 for float32 when enabled), or None."""
    entry = known_device(name)
    if entry is None:
        return None
    key = "tf32" if dtype == "float32" and tf32 else dtype
    return entry[1].get(key)
