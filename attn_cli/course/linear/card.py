"""attn linear: linear attention, the n × n matrix reassociated away."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, Option
from attn_cli.course.scaled.card import QKV, SMALL_QKV_SIZES
from attn_cli.course.shared import D_K, D_V

CARD = Card(
    "linear",
    summary="Linear attention step by step: φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1), no n × n matrix.",
    inputs=QKV,
    positional=("q", "k", "v"),
    options=(
        Option(
            "feature_map",
            "φ: elu (elu(x) + 1, on Q and K as they are, no √d_k), random (positive random "
            "features aiming at softmax(Q Kᵀ / √d_k)), relu (max(x, 0): a query with no "
            "positive entry gets no weights) or leaky-squared ((leaky_relu(x) + 0.05)², slope "
            "0.01) (default: the example's, else {default}).",
            default=variants.FEATURE_MAPS[0],
            choices=variants.FEATURE_MAPS,
            metavar="NAME",  # the four choices' metavar would squeeze the help's column
        ),
        Option(
            "features",
            "Random features r, with {feature_map=random} (default: {default}).",
            16,  # r, for the random features (elu + 1 keeps r = d_k)
            type=int,
        ),
        Option(
            "feature_seed",
            "Seed of the random features' directions (default: {default}).",
            0,
            type=int,
        ),
        Option(
            "causal",
            "Query i sees keys 1..i: the running state S_t, z_t (default: the example's, else "
            "{default}).",
            False,
            type=bool,
            switch=True,
        ),
    ),
    sizes=SMALL_QKV_SIZES,
    figure=(
        "the weights φ(q_i)·φ(k_j), normalised, as a heatmap (with {causal}, future keys in grey)"
    ),
    examples=(
        "attn linear",
        "attn linear --example causal-three",
        "attn linear --n 6 --feature-map random --features 64",
    ),
    symbols=(
        (
            "φ",
            "the feature map applied to queries and keys: φ(x) = elu(x) + 1 unless {feature_map} says otherwise (elu(x) = x for x > 0, eˣ − 1 below)",
        ),
        ("q_i, k_j", "query i and key j, rows of Q and K"),
        D_K,
        D_V,
        (
            "S_t, z_t",
            "causal linear attention's running sums after key t: S_t = Σ φ(k_j) v_jᵀ "
            "and z_t = Σ φ(k_j), over j ≤ t",
        ),
    ),
)
