"""attn backward: the backward pass of scaled dot-product attention, step by step."""

from __future__ import annotations

from dataclasses import replace

from attn_cli.core.card import Card, Option, optional
from attn_cli.course.causal.card import CARD as CAUSAL
from attn_cli.course.scaled.card import QKV, SMALL_QKV_SIZES
from attn_cli.course.shared import D_K, D_V, QKV_WEIGHTS, SCALE

# Q, K, V as attn scaled takes them, or tokens X and the weights that project them (as attn
# causal takes them): then the backward goes on to dW_Q, dW_K, dW_V and dX.
TOKENS = tuple(spec for spec in CAUSAL.inputs if spec.name in ("X", "W_Q", "W_K", "W_V"))

CARD = Card(
    "backward",
    summary=(
        "The backward pass of attention step by step: from the upstream gradient dO to dV, dA, "
        "the softmax's Jacobian, dS, dQ and dK."
    ),
    inputs=(
        *(replace(spec, required=False, help=f"{spec.help[:-1]}; or give {{x}}.") for spec in QKV),
        *TOKENS,
        optional(
            "dO",
            "do",
            "matrix",
            "upstream gradient",
            "Upstream gradient dO = ∂L/∂O, m × d_v, one entry per entry of the output (default: "
            "all ones, the gradient of L = the sum of the output's entries; drawn with the "
            "random inputs).",
        ),
    ),
    positional=("q", "k", "v"),
    options=(
        SCALE,
        Option(
            "causal",
            "Mask later keys (query i sees keys 1..i; m = n) and show that no gradient reaches "
            "a masked score (default: {default}).",
            False,
            type=bool,
            switch=True,
        ),
        Option(
            "block",
            "Also run FlashAttention-2's backward in tiles of B queries by B keys (the last ones "
            "shorter where B does not divide m or n), from the forward's O and L alone, and "
            "check it against the plain backward.",
            type=int,
            minimum=1,
            metavar="B",
        ),
        Option(
            "vanishing",
            "Also measure the gradient that reaches the scores at d_k = 16, 64 and 512, with and "
            "without the division by √d_k, on random inputs drawn from {seed}: the reason for "
            "the scale.",
            False,
            type=bool,
        ),
    ),
    sizes=SMALL_QKV_SIZES,
    examples=(
        "attn backward",
        "attn backward --example one-hot",
        "attn backward --n 5 --dk 3 --causal --block 2",
    ),
    symbols=(
        D_K,
        D_V,
        ("d_model", "the width of a token, a row of X"),
        QKV_WEIGHTS,
    ),
)
