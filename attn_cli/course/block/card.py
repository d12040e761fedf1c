"""attn block: one Transformer layer, encoder or decoder, every intermediate shown."""

from __future__ import annotations

from attn_cli.core.card import Card, InputSpec, Option, Size, optional

CARD = Card(
    "block",
    summary="One Transformer layer step by step: multi-head attention, residual, LayerNorm, "
    "feed-forward (encoder, or --decoder).",
    details="The weights are drawn from --seed, from numpy's default_rng(seed).spawn(1)[0], in "
    "this order: W_Q, W_K, W_V, W_O of self-attention (d_model × d_model, N(0, 1/d_model): "
    "attn multihead's for the same seed), with --decoder those of cross-attention, then W_1 "
    "(d_model × d_ff) and b_1, N(0, 1/d_model), and W_2 (d_ff × d_model) and b_2, "
    "N(0, 1/d_ff). Attention has no biases.",
    inputs=(
        InputSpec(
            "X",
            "--x",
            "matrix",
            "token embeddings",
            help="Token embeddings, n × d_model (n tokens of width d_model; the positional "
            "encoding is added to them unless --no-posenc).",
        ),
        optional(
            "Memory",
            "--memory",
            "matrix",
            "encoder output (memory)",
            "--decoder only: the encoder's output that cross-attention reads keys and values "
            "from, m × d_model (default: the example's, else N(0, 1) drawn from --seed, m = n).",
        ),
    ),
    positional=("x",),
    rows="tokens",
    options=(
        Option(
            "heads",
            "Number of heads h; must divide d_model (default: the example's, else {default}).",
            2,
            type=int,
            minimum=1,
        ),
        Option(
            "d_ff",
            "Width d_ff of the feed-forward network's hidden layer (default: the example's, "
            "else 4 × d_model, as the paper's 2048 = 4 × 512).",
            type=int,
            minimum=1,
        ),
        Option(
            "pre_norm",
            "Pre-norm: x + MHA(LN(x)), then x + FFN(LN(x)), as most models are built today "
            "(default: the example's, else off: post-norm LN(x + MHA(x)), as the paper draws it).",
            False,
            type=bool,
            switch=True,
        ),
        Option(
            "decoder",
            "The decoder layer: masked self-attention, cross-attention over --memory, FFN; "
            "--tokens then names the targets y1 … yn (default: the example's, else off).",
            False,
            type=bool,
            switch=True,
        ),
        Option(
            "posenc",
            "Add the sinusoidal positional encoding (base 10000) to X first; needs an even "
            "d_model (default: the example's, else on).",
            True,
            type=bool,
            switch=True,
        ),
        Option(
            "gamma_beta",
            "Draw each LayerNorm's γ and β from --seed (γ = 1 + N(0, 0.1²), β = N(0, 0.1²)) "
            "instead of γ = 1, β = 0, nn.LayerNorm's initial values.",
            False,
            type=bool,
        ),
        Option("eps", "LayerNorm's ε (default: {default}).", 1e-5, type=float, metavar="EPS"),
    ),
    sizes=(
        Size("n", "number of tokens n (default: {default}).", 4),
        Size("d_model", "width d_model (default: {default}).", 8),
        Size("m", "memory rows m, with --decoder (default: n)."),
    ),
    figure=(
        "the layer's attention weights, one panel per head (with --decoder, then cross-"
        "attention's over the memory)"
    ),
    examples=(
        "attn block",
        "attn block --example decoder",
        "attn block --n 6 --d-model 8 --heads 4 --d-ff 16 --decoder --m 5 --seed 3",
    ),
    symbols=(
        ("d_model", "the width of each token, in and out of the layer"),
        ("d_ff", "the feed-forward network's hidden width"),
        ("W_Q, W_K, W_V, W_O", "attention's query, key, value and output weights"),
        ("W_1, b_1", "the feed-forward's first layer, d_model to d_ff"),
        ("W_2, b_2", "its second layer, d_ff back to d_model"),
        ("γ, β", "LayerNorm's scale and shift, one per feature"),
        ("ε", "LayerNorm's small constant, added to the variance before the square root"),
    ),
)
