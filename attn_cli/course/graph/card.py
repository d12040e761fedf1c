"""attn graph: graph attention, each node attending to its neighbours only."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, InputSpec, Option, Size, optional
from attn_cli.course.shared import D_K, D_V, QKV_WEIGHTS

CARD = Card(
    "graph",
    summary="Graph attention: node i attends only to its neighbours N(i), from an edge list or "
    "adjacency.",
    inputs=(
        InputSpec(
            "H",
            "h",
            "matrix",
            "node features h_i (rows)",
            help="Node features h_i, one row per node: N × d (N nodes, d features each).",
        ),
        optional(
            "W_Q",
            "wq",
            "matrix",
            "query projection",
            "Query weights W_Q, d_k × d, as the lecture writes it: q_i = W_Q h_i (default: identity).",
            weight=True,
        ),
        optional(
            "W_K",
            "wk",
            "matrix",
            "key projection",
            "Key weights W_K, d_k × d: k_j = W_K h_j (default: identity).",
            weight=True,
        ),
        optional(
            "W_V",
            "wv",
            "matrix",
            "value projection",
            "Value weights W_V, d_v × d: v_j = W_V h_j (default: identity).",
            weight=True,
        ),
        optional(
            "A",
            "adjacency",
            "matrix",
            "adjacency (0/1)",
            "Adjacency, N × N of 0/1: row i has 1 at j when j ∈ N(i) (instead of {edges}).",
        ),
        optional(
            "W",
            "w",
            "matrix",
            "GAT's shared weight W",
            "With {score=additive}: GAT's W, d' × d, z_i = W h_i; with {score=gatv2}: W, "
            "d' × 2d, applied to [h_i ‖ h_j] (default: the identity, or [I I] for gatv2).",
            weight=True,
        ),
        optional(
            "a",
            "a",
            "vector",
            "GAT's attention vector a",
            "With {score=additive}: GAT's a, 2·d' entries (a_left reads z_i, a_right z_j); with "
            "{score=gatv2}: a, d' entries (default: drawn from {seed}, N(0, 1)).",
            weight=True,
        ),
    ),
    positional=("h",),
    rows="tokens",
    options=(
        Option(
            "edges",
            'The graph as node pairs from 0, e.g. "0-1,1-2,2-0,2-3" (instead of {adjacency}).',
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
        Option(
            "score",
            "The score of a pair: dot (the lecture's q_iᵀ k_j / √d_k), additive (GAT, "
            "Veličković et al.: LeakyReLU(aᵀ [W h_i ‖ W h_j]), slope 0.2) or gatv2 (Brody et "
            "al.: aᵀ LeakyReLU(W [h_i ‖ h_j])) (default: {default}).",
            "dot",
            choices=variants.GRAPH_SCORES,
        ),
        Option(
            "scale",
            "With {score=dot}: divide the scores by √d_k ({scale=False}: q_iᵀ k_j as dot-product "
            "graph layers write it) (default: {default}).",
            True,
            type=bool,
            switch=True,
        ),
    ),
    sizes=(
        Size("n", "number of nodes N, on a random graph (default: {default}).", 5),
        Size("d", "feature width d (default: {default}).", 3),
        Size("dk", "also draw W_Q, W_K, W_V of d_k rows."),
    ),
    examples=(
        "attn graph",
        'attn graph --h "1,0;0,1;1,1" --edges "0-1,1-2" --self-loops',
        "attn graph --example gat-four-nodes",
    ),
    symbols=(
        ("h_i, h_j", "the features of nodes i and j, rows of {h}"),
        ("q_i, k_j, v_j", "node i's query, node j's key and value"),
        QKV_WEIGHTS,
        D_K,
        D_V,
        ("z_i, z_j", "GAT's transformed features, z_i = W h_i"),
        ("a_left, a_right", "the halves of GAT's vector a that read z_i and z_j"),
    ),
)
