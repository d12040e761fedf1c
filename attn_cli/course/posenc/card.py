"""attn posenc: sinusoidal positional encoding and the rotation behind PE(pos+k) = M_k PE(pos)."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, Option

CARD = Card(
    "posenc",
    summary="Sinusoidal positional encoding: frequencies, PE, the shift rotation M_k, similarity.",
    options=(
        Option(
            "positions", "Number of positions N: rows 0 .. N−1 (default: {default}).", 8, type=int
        ),
        Option(
            "d_model", "Width d_model, even: d_model/2 pairs (default: {default}).", 8, type=int
        ),
        Option("base", "Base of the wavelengths (default: {default}).", 10000.0, type=float),
        Option("offset", "Shift k for PE(pos+k) = M_k PE(pos) (default: {default}).", 3, type=int),
        Option(
            "layout",
            "interleaved: sin, cos, sin, … (the paper's); split: all sines, then all cosines "
            "(default: {default}).",
            default=variants.LAYOUTS[0],
            choices=variants.LAYOUTS,
        ),
    ),
    seed=False,
    batches=False,
    precision=3,  # eight signed columns fit in 80
    figure=("the encoding PE as a heatmap, one row per position, one column per dimension"),
    examples=(
        "attn posenc --example binary-counter",
        "attn posenc --positions 16 --d-model 8 --layout split",
    ),
    symbols=(
        ("d_model", "the width of an encoding, even: d_model/2 sine-cosine pairs"),
        (
            "M_k",
            "the rotation that moves every position's encoding k steps ahead: "
            "PE(pos+k) = M_k PE(pos)",
        ),
    ),
)
