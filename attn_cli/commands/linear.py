"""attn linear: kernelised linear attention, reassociated step by step."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from attn_cli.options import input_option, lesson_command, size_option


class FeatureMap(StrEnum):
    elu = "elu"
    random = "random"


@lesson_command("linear")
def linear(
    feature_map: Annotated[
        FeatureMap | None,
        input_option(
            "--feature-map",
            "φ: elu (elu(x) + 1, on Q and K as they are, no √d_k) or random (positive random "
            "features aiming at softmax(Q Kᵀ / √d_k)) (default: the example's, else elu).",
        ),
    ] = None,
    features: Annotated[
        int | None,
        input_option("--features", "Random features r, with --feature-map random (default: 16)."),
    ] = None,
    feature_seed: Annotated[
        int | None,
        input_option("--feature-seed", "Seed of the random features' directions (default: 0)."),
    ] = None,
    causal: Annotated[
        bool | None,
        input_option(
            "--causal/--no-causal",
            "Query i sees keys 1..i: the running state S_t, z_t (default: the example's, else "
            "off).",
        ),
    ] = None,
    n: Annotated[int | None, size_option("--n", "Random inputs: number of keys n.")] = None,
    m: Annotated[
        int | None, size_option("--m", "Random inputs: number of queries m (default: n).")
    ] = None,
    dk: Annotated[
        int | None, size_option("--dk", "Random inputs: key width d_k (default: 4).")
    ] = None,
    dv: Annotated[
        int | None, size_option("--dv", "Random inputs: value width d_v (default: d_k).")
    ] = None,
) -> None:
    """Linear attention step by step: φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1), no n × n matrix."""
