"""attn ring: ring attention, the tiled algorithm spread over P processes that pass key blocks."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, Option, Size
from attn_cli.course.scaled.card import QKV
from attn_cli.course.shared import CAUSAL, D_K, D_V, SCALE

# The most processes a run starts: a walkthrough shows each process in each round (P² merges of
# six steps), and eight is a node's GPUs.
MAX_PROCESSES = 8
# --dist-backend's default: the transport the run's device and the installed packages allow.
AUTO = "auto"

CARD = Card(
    "ring",
    summary="Ring attention over P processes: each holds n/P queries, merges one key block per "
    "round into its running max and sum, and passes the block on.",
    details="The processes are real ones on this machine, started by the command and stopped "
    "when it ends (Ctrl-C and a failing process too); they talk over the loopback address only. "
    "To run it across GPUs: {backend=torch} {device=cuda} (nccl, one GPU per process), or "
    "{code} for the program to start with torchrun (docs/ring.md).",
    inputs=QKV,  # one sequence: Q, K and V share n
    positional=("q", "k", "v"),
    options=(
        Option(
            "processes",
            f"P, the processes of the ring: 1 to {MAX_PROCESSES}, a divisor of n; each holds n/P "
            "queries and a block of n/P keys (default: the example's, else {default}).",
            2,
            type=int,
            minimum=1,
            metavar="P",
        ),
        Option(
            "sharding",
            "Which positions each process holds: contiguous (process r a run of n/P), striped "
            "(r, r + P, ...) or zigzag (runs r and 2P − 1 − r of 2P), which balances the work "
            "of a causal mask (default: the example's, else {default}).",
            variants.SHARDINGS[0],
            choices=variants.SHARDINGS,
        ),
        CAUSAL,
        SCALE,
        Option(
            "dist_backend",
            "How the blocks move: gloo (torch.distributed between CPU processes), nccl "
            "(torch.distributed between GPUs, with {backend=torch} {device=cuda}), pipes (OS "
            "pipes, no PyTorch needed) or auto (the default: nccl with {device=cuda}, else gloo "
            "where PyTorch is installed, else pipes).",
            AUTO,
            choices=(AUTO, *variants.TRANSPORTS),
        ),
    ),
    sizes=(
        Size("n", "sequence length n (default: {default}).", 8),
        Size("dk", "key width d_k (default: {default}).", 2),
        Size("dv", "value width d_v (default: d_k)."),
    ),
    batches=False,
    examples=(
        "attn ring",
        "attn ring --example causal-four",
        "attn ring --n 16 --processes 4 --causal --sharding zigzag",
    ),
    symbols=(D_K, D_V),
)
