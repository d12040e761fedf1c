"""attn flash: the tiled (FlashAttention) algorithm, one key block at a time."""

from __future__ import annotations

from attn_cli.core.card import Card, Option
from attn_cli.course.flash.kernel import kernel_instead
from attn_cli.course.scaled.card import QKV, SMALL_QKV_SIZES
from attn_cli.course.shared import CAUSAL, D_K, D_V, SCALE

CARD = Card(
    "flash",
    summary="Tiled attention, one key block at a time: running max, running sum, rescaling.",
    details="No {dropout} here: FlashAttention's kernels drop weights inside the kernel, tile "
    "by tile, with their own generator, so no nn.Dropout mask reproduces theirs (see attn "
    "scaled {dropout}).",
    inputs=QKV,
    positional=("q", "k", "v"),
    options=(
        Option(
            "block",
            "Keys per block (default: the example's, else {default}).",
            2,
            type=int,
            minimum=1,
        ),
        Option(
            "query_block",
            "Queries per tile: adds the outer loop over query tiles, each running the loop over "
            "key blocks, as FlashAttention does (default: the example's, else one tile holding "
            "every query: the inner loop only).",
            type=int,
        ),
        CAUSAL,
        SCALE,
        Option(
            "sram",
            "On-chip memory M in KiB, for the HBM traffic step (default: {default}, the shared "
            "memory of one streaming multiprocessor of an NVIDIA H100).",
            228,
            type=int,
        ),
        Option(
            "kernel",
            "Print the lesson as a GPU kernel instead: the Triton source of FlashAttention's "
            "forward pass, each part marked with the step it implements ({format=rich}, "
            "markdown or json; {output}; needs no GPU and no triton). See docs/kernel.md.",
            False,
            type=bool,
            lesson=False,
        ),
    ),
    sizes=SMALL_QKV_SIZES,
    figure=("the score blocks side by side, each outlined (the weights are never formed whole)"),
    examples=(
        "attn flash",
        "attn flash --example causal-three",
        "attn flash --n 8 --block 4 --causal",
    ),
    before_run=kernel_instead,
    symbols=(D_K, D_V),
)
