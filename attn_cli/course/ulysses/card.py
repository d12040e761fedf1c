"""attn ulysses: DeepSpeed-Ulysses, the all-to-all that turns P sequence shards into head shards,
on attn ring's processes, with the bytes of both methods."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, InputSpec, Option, Size
from attn_cli.course.ring.card import AUTO, MAX_PROCESSES
from attn_cli.course.shared import CAUSAL, D_K, D_V, SCALE

CARD = Card(
    "ulysses",
    summary="Ulysses context parallelism over P processes: an all-to-all turns each process's "
    "n/P positions of every head into all n positions of H/P heads, each attends locally, and "
    "an all-to-all sends the outputs back; the bytes against the ring's.",
    details="The processes are attn ring's: real ones on this machine, started by the command "
    "and stopped when it ends, talking over the loopback address only (docs/ring.md). To run "
    "it across GPUs: {backend=torch} {device=cuda} (nccl, one GPU per process).",
    inputs=(
        InputSpec(
            "Q",
            "q",
            "matrix",
            "queries",
            help="Queries Q, n × H·d_k: the H heads' queries side by side, d_k columns each.",
        ),
        InputSpec(
            "K",
            "k",
            "matrix",
            "keys",
            help="Keys K, n × G·d_k: the G key/value heads' keys side by side.",
        ),
        InputSpec(
            "V",
            "v",
            "matrix",
            "values",
            help="Values V, n × G·d_v: the G key/value heads' values side by side.",
        ),
    ),
    positional=("q", "k", "v"),
    options=(
        Option(
            "processes",
            f"P, the processes: 1 to {MAX_PROCESSES}, dividing n, the heads and the key/value "
            "heads; each holds n/P positions, then H/P heads (default: the example's, else "
            "{default}).",
            2,
            type=int,
            minimum=1,
            metavar="P",
        ),
        Option(
            "heads",
            "H, the query heads; Q holds them side by side (default: the example's, else "
            "{default}).",
            2,
            type=int,
            minimum=1,
        ),
        Option(
            "kv_heads",
            "G, the key/value heads (grouped-query attention; 1: multi-query): query heads share "
            "them H/G at a time; G divides H (default: H).",
            type=int,
            minimum=1,
            metavar="G",
        ),
        CAUSAL,
        SCALE,
        Option(
            "dist_backend",
            "How the parts move: gloo (torch.distributed's all_to_all between CPU processes), "
            "nccl (between GPUs, with {backend=torch} {device=cuda}), pipes (OS pipes from every "
            "process to every other, no PyTorch needed) or auto (the default: nccl with "
            "{device=cuda}, else gloo where PyTorch is installed, else pipes).",
            AUTO,
            choices=(AUTO, *variants.TRANSPORTS),
        ),
    ),
    sizes=(
        Size("n", "sequence length n (default: {default}).", 4),
        Size("dk", "key width d_k of each head (default: {default}).", 2),
        Size("dv", "value width d_v of each head (default: d_k)."),
    ),
    batches=False,
    examples=(
        "attn ulysses",
        "attn ulysses --example gqa-four",
        "attn ulysses --n 16 --heads 8 --kv-heads 4 --processes 4 --causal",
    ),
    symbols=(D_K, D_V),
)
