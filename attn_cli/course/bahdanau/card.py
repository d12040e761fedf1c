"""attn bahdanau: additive attention for one decoder step, term by term."""

from __future__ import annotations

from attn_cli.core.card import Card, InputSpec, Option, Size, optional
from attn_cli.course.bahdanau.weights import weights_into_inputs
from attn_cli.course.shared import D_V, DROPOUT

CARD = Card(
    "bahdanau",
    summary="Bahdanau attention for one decoder step: softmax(vᵀ tanh(W1 hᵢ + W2 sₜ)), context "
    "Σ αᵢ hᵢ (Σ αᵢ vᵢ with {values}).",
    inputs=(
        InputSpec(
            "s_t",
            "s",
            "vector",
            "decoder state",
            help="Decoder state s_t, d_s entries (d_s: the decoder's width).",
        ),
        InputSpec(
            "H",
            "h",
            "matrix",
            "encoder states h_i (rows)",
            help="Encoder states h_i, one per row: n × d_h (n states of width d_h).",
        ),
        InputSpec(
            "W1",
            "w1",
            "matrix",
            "projects each h_i",
            help="W1, d_a × d_h: projects each encoder state h_i (d_a: the attention width; W1 h_i: "
            "matrix times column).",
            weight=True,
        ),
        InputSpec(
            "W2",
            "w2",
            "matrix",
            "projects s_t",
            help="W2, d_a × d_s: projects the decoder state s_t.",
            weight=True,
        ),
        InputSpec(
            "v",
            "v",
            "vector",
            "reads out the score",
            help="v, d_a entries: reads the score out of tanh(W1 h_i + W2 s_t).",
            weight=True,
        ),
        optional(
            "W_a",
            "wa",
            "matrix",
            "Luong's general weight",
            "Luong's general W_a, d_s × d_h; implies {all_scores} (default: identity).",
            weight=True,
        ),
        optional(
            "values",
            "values",
            "matrix",
            "values v_i, one per encoder state",
            "Values vᵢ (not the score vector {v}), one row per encoder state: n × d_v; the "
            "context is Σ αᵢ vᵢ (default: the encoder states themselves, Σ αᵢ hᵢ).",
        ),
        # --steps T: the decoder's own weights and inputs (drawn from --seed when not given).
        optional(
            "W_s",
            "ws",
            "matrix",
            "decoder cell: reads sₜ₋₁",
            "With {steps}: W_s, d_s × d_s, the decoder cell's recurrent weight in "
            "sₜ = tanh(W_s sₜ₋₁ + W_y yₜ₋₁ + W_c cₜ) (default: drawn from {seed}).",
            weight=True,
        ),
        optional(
            "W_y",
            "wy",
            "matrix",
            "decoder cell: reads yₜ₋₁",
            "With {steps}: W_y, d_s × d_y, reads yₜ₋₁, the embedding of the previous output "
            "(default: drawn from {seed}).",
            weight=True,
        ),
        optional(
            "W_c",
            "wc",
            "matrix",
            "decoder cell: reads cₜ",
            "With {steps}: W_c, d_s × d_h, reads the context cₜ (default: drawn from {seed}).",
            weight=True,
        ),
        optional(
            "Y",
            "y",
            "matrix",
            "previous outputs: row t is yₜ₋₁",
            "With {steps}: the previous outputs' embeddings, one row per step, T × d_y: row t is "
            "yₜ₋₁, row 1 the start token's y₀ (in training, the reference's words) (default: "
            "drawn from {seed}, d_y = d_s).",
        ),
    ),
    positional=("s", "h", "w1", "w2", "v"),
    rows="states",
    options=(
        Option(
            "all_scores",
            "Add Luong's dot and general scores, side by side, with their cost (default: on "
            "when W_a is given).",
            type=bool,
            switch=True,
        ),
        DROPOUT,
        Option(
            "valid_len",
            "Padding: the encoder states at positions ≥ L are padding; their scores become −∞ "
            "before the softmax, so their weights are 0, as d2l's AdditiveAttention(valid_lens); "
            'with a batch, one length per item separated by "|" ("2|3").',
            metavar="L",
        ),
        Option(
            "steps",
            "Run the decoder for T steps over the same encoder states: each step scores with "
            "sₜ₋₁, gets its own context cₜ, then updates sₜ = tanh(W_s sₜ₋₁ + W_y "
            "yₜ₋₁ + W_c cₜ); {s} is s₀. Shown beside the fixed-vector encoder-decoder, "
            "which hands every step c = hₙ (default: one decoder step).",
            type=int,
            minimum=1,
            metavar="T",
        ),
        Option(
            "weights",
            "Inputs from a trained model: the .npz file that `attn learn translate --save FILE` "
            "writes, with its learned W1, W2 and v, a sentence's encoder states H, the decoder "
            "state of one step as {s}, and the sentence's words as {tokens}.",
            metavar="FILE",
            path=True,
            lesson=False,
        ),
        Option(
            "decoder_step",
            "With {weights}: replay decoder step T of the saved sentence, 1 to its number of "
            "target words and the end (default: the step the file was saved at).",
            type=int,
            minimum=1,
            metavar="T",
            lesson=False,
        ),
    ),
    sizes=(
        Size("n", "number of encoder states n (default {default}).", 6),
        Size("d", "width d of s_t and h_i (default {default}).", 8),
        Size("da", "attention width d_a (default d)."),
    ),
    figure=(
        "the weights over the encoder states (with {all_scores} one row per score; with {steps} "
        "the alignment matrix, one row per decoder step, as Bahdanau et al. draw it)"
    ),
    examples=(
        "attn bahdanau --example cat-slept --all-scores",
        "attn bahdanau --n 4 --d 3 --seed 1",
        "attn bahdanau --example cat-slept --steps 4",
    ),
    symbols=(
        ("h_i", "encoder state i, a row of {h}"),
        ("s_t", "the decoder state at step t"),
        ("d_h", "the width of an encoder state"),
        ("d_s", "the width of the decoder state"),
        ("d_a", "the attention width: W1 and W2 project into it, v reads it"),
        D_V,
        ("α", "the attention weights, softmax of the scores e"),
        ("W_a", "Luong's general score matrix: e = sₜᵀ W_a hᵢ"),
        (
            "W_s, W_y, W_c",
            "the decoder cell's weights on its previous state, the previous "
            "output's embedding and the context (with {steps})",
        ),
        ("d_y", "the width of the previous output's embedding y"),
    ),
    before_run=weights_into_inputs,
)
