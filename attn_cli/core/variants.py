"""The names of each mechanism's variants and of the array settings, one list each.

Plain tuples, with no numpy, so that a lesson's card (and through it the command line's
choices) can offer them: the mechanisms key their implementations by these names, and the
lessons check an option against them.
"""

from __future__ import annotations

# softmax first: the default
NORMALISERS = ("softmax", "sparsemax", "entmax15", "sigmoid", "hardmax")
QK_NORMS = ("layernorm", "rmsnorm")  # QK-norm: LayerNorm (ViT-22B) or RMSNorm (OLMo 2, Qwen 3)
LAYOUTS = ("interleaved", "split")  # sinusoidal encoding: sin/cos alternating, or in halves
# RoPE scaling, as model configs name their rope_type (NTK-aware: "ntk"; Llama 3.1: "llama3")
ROPE_SCALINGS = ("linear", "ntk", "yarn", "llama3")
FILLS = ("-inf", "zero")  # what a causal mask writes over the future scores
GRAPH_SCORES = ("dot", "additive", "gatv2")  # graph attention's score of a pair
FEATURE_MAPS = ("elu", "random", "relu", "leaky-squared")  # linear attention's φ
# Ring attention: which positions each process holds (contiguous first: the default), and how
# the processes pass their blocks (torch.distributed's gloo and nccl, or OS pipes).
SHARDINGS = ("contiguous", "striped", "zigzag")
TRANSPORTS = ("gloo", "nccl", "pipes")
BACKENDS = ("numpy", "torch")
DEVICES = ("cpu", "cuda", "mps")
DTYPES = ("float64", "float32", "float16", "bfloat16")  # numpy has no bfloat16

# attn bench's defaults per device: --sizes (a doubling range, low..high) and --d. On a GPU the
# sizes start where the n² work, not the launch of a kernel, sets the time (an H200 took
# 0.03-0.08 ms a call from n = 512 to 4096 at d 64, then doubled n cost 4×), and d is 128, the
# head width that published FlashAttention figures use (there cuDNN ran at 62% of the dense
# peak at n 16384, against 50% at d 64).
BENCH_SIZES = {"cpu": (128, 2048), "cuda": (2048, 32768), "mps": (512, 8192)}
BENCH_HEAD_WIDTH = {"cpu": 64, "cuda": 128, "mps": 64}

# --time: each step's computation runs once untimed (the warm-up), then this many times timed;
# the median is shown (attn_cli.core.backend.Backend.timed).
TIMED_RUNS = 3
