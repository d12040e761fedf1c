"""attn rope: rotary position embedding, q and k turned by their position."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Card, InputSpec, Option, Size

# Two panels: s and L's, and each scaling's own parameters. At 80 columns Typer's help gives the
# flag column no more width than the help column's, so the 34 letters of
# --original-max-position-embeddings are cut in its row: its panel's title writes it whole.
SCALING_SIZE = "--factor and --original-max-position-embeddings (with --rope-scaling)"
SCALING = "RoPE scaling: each type's own"

CARD = Card(
    "rope",
    summary="Rotary position embedding (RoPE): q and k turned by m·θᵢ, so each score depends on "
    "the offset m − n only.",
    inputs=(
        InputSpec(
            "Q",
            "q",
            "matrix",
            "queries",
            help="Queries Q, n × d (row m: the query at position m).",
        ),
        InputSpec("K", "k", "matrix", "keys", help="Keys K, n × d (row n: the key at position n)."),
    ),
    positional=("q", "k"),
    options=(
        Option(
            "layout",
            "Which dimensions a pair turns: interleaved, pairs (2i, 2i+1) as the RoFormer paper "
            "and Meta's Llama code; split, pairs (i, i + r/2) as Hugging Face's rotate_half "
            "(default: the example's, else {default}).",
            default=variants.LAYOUTS[0],
            choices=variants.LAYOUTS,
        ),
        Option(
            "base",
            "θᵢ = base^(−2i/r) (default: {default}, the paper's; Llama 3: 500000).",
            10000.0,
            type=float,
        ),
        Option(
            "rotary_dim",
            "Partial rotary: turn only the first r dimensions, even, the rest pass through "
            "(GPT-NeoX's rotary_pct; default: all d).",
            type=int,
            metavar="R",
        ),
        Option(
            "offset",
            "Shift s: every position moved by s, to show the scores do not change (default: "
            "{default}).",
            3,
            type=int,
            metavar="S",
        ),
        Option(
            "rope_scaling",
            "RoPE scaling, as a model config's rope_type: linear (position interpolation), ntk "
            "(NTK-aware), yarn or llama3 (Llama 3.1's), by the factor s (Llama 3.1: 8; "
            "Qwen2.5's YaRN: 4) over the trained context L (Llama 3.1: 8192; Qwen2.5: 32768); "
            "llama3 without them takes Meta's apply_scaling's 8 and 8192 (default: none, plain "
            "RoPE).",
            choices=variants.ROPE_SCALINGS,
        ),
        Option(
            "factor",
            "The factor s the context grows by, above 1 (Llama 3.1: 8; Qwen2.5's YaRN: 4).",
            type=float,
            metavar="S",
            panel=SCALING_SIZE,
        ),
        Option(
            "original_max_position_embeddings",
            "The context L the model was trained on (Llama 3.1: 8192; Qwen2.5: 32768).",
            type=int,
            metavar="L",
            panel=SCALING_SIZE,
        ),
        Option(
            "low_freq_factor",
            "With {rope_scaling=llama3}: pairs with a wavelength over L / this are interpolated "
            "(default: 1, Llama 3.1's).",
            type=float,
            panel=SCALING,
        ),
        Option(
            "high_freq_factor",
            "With {rope_scaling=llama3}: pairs with a wavelength under L / this are kept "
            "(default: 4, Llama 3.1's).",
            type=float,
            panel=SCALING,
        ),
        Option(
            "beta_fast",
            "With {rope_scaling=yarn}: pairs turning more than this many times in L are kept "
            "(default: 32, the YaRN paper's).",
            type=float,
            panel=SCALING,
        ),
        Option(
            "beta_slow",
            "With {rope_scaling=yarn}: pairs turning fewer than this many times in L are "
            "interpolated (default: 1, the YaRN paper's).",
            type=float,
            panel=SCALING,
        ),
    ),
    sizes=(
        Size("n", "number of positions n (default: {default}).", 6),
        Size("dk", "width d of each query and key, even (default: {default}).", 4),
    ),
    examples=(
        "attn rope",
        "attn rope --example four-tokens --layout split",
        "attn rope --example llama3.1-8b",
    ),
    symbols=(("θ", "θᵢ is pair i's angle per position, base^(−2i/r)"),),
)
