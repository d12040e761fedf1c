"""attn graph: graph attention, each node attending to its neighbours only."""

from __future__ import annotations

from attn_cli.cards import Card, InputSpec, Option, Size, optional

CARD = Card(
    "graph",
    order=100,
    summary="Graph attention: node i attends only to its neighbours N(i), from an edge list or "
    "adjacency.",
    inputs=(
        InputSpec(
            "H",
            "--h",
            "matrix",
            "node features h_i (rows)",
            help="Node features h_i, one row per node: N × d (N nodes, d features each).",
        ),
        optional(
            "W_Q",
            "--wq",
            "matrix",
            "query projection",
            "Query weights W_Q, d_k × d, as the lecture writes it: q_i = W_Q h_i (default: identity).",
        ),
        optional(
            "W_K",
            "--wk",
            "matrix",
            "key projection",
            "Key weights W_K, d_k × d: k_j = W_K h_j (default: identity).",
        ),
        optional(
            "W_V",
            "--wv",
            "matrix",
            "value projection",
            "Value weights W_V, d_v × d: v_j = W_V h_j (default: identity).",
        ),
        optional(
            "A",
            "--adjacency",
            "matrix",
            "adjacency (0/1)",
            "Adjacency, N × N of 0/1: row i has 1 at j when j ∈ N(i) (instead of --edges).",
        ),
    ),
    positional=("h",),
    rows="tokens",
    options=(
        Option(
            "edges",
            'The graph as node pairs from 0, e.g. "0-1,1-2,2-0,2-3" (instead of --adjacency).',
            metavar="EDGES",
        ),
        Option(
            "self_loops",
            "Make each node its own neighbour, so that no row is empty.",
            False,
            type=bool,
        ),
        Option(
            "directed",
            "An edge i-j makes j a neighbour of i only (default: both ways).",
            False,
            type=bool,
        ),
    ),
    sizes=(
        Size("n", "number of nodes N (default: {default}), on a random graph.", 5),
        Size("d", "feature width d (default: {default}).", 3),
        Size("dk", "also draw W_Q, W_K, W_V of d_k rows."),
    ),
    examples=(
        "attn graph",
        "attn graph --example lonely-node",
        'attn graph --h "1,0;0,1;1,1" --edges "0-1,1-2" --self-loops',
    ),
)
