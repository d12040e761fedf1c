"""attn block: one Transformer layer (or a stack), encoder or decoder, every intermediate shown;
every weight yours to give, by hand or from a PyTorch model file."""

from __future__ import annotations

from attn_cli.core.card import Card, InputSpec, Option, Size, optional

_KV_SHAPE = "d_model × d_model, or d_model × g·d_k with {kv_heads=g}"
_KV_WIDE = "d_model wide, or g·d_k with {kv_heads=g}"
# (input name, flag, what it is, its shape and PyTorch's name for it): one layer's attention.
_ATTENTION = (
    ("W_Q", "wq", "query weights", "d_model × d_model", "in_proj_weight rows 1…d, transposed"),
    ("W_K", "wk", "key weights", _KV_SHAPE, "in_proj_weight rows d+1…2d, transposed"),
    ("W_V", "wv", "value weights", _KV_SHAPE, "in_proj_weight rows 2d+1…3d, transposed"),
    ("W_O", "wo", "output weights", "d_model × d_model", "out_proj.weight, transposed"),
    ("b_Q", "bq", "query bias", "d_model wide", "in_proj_bias entries 1…d; default 0"),
    ("b_K", "bk", "key bias", _KV_WIDE, "in_proj_bias entries d+1…2d; default 0"),
    ("b_V", "bv", "value bias", _KV_WIDE, "in_proj_bias entries 2d+1…3d; default 0"),
    ("b_O", "bo", "output bias", "d_model wide", "out_proj.bias; default 0"),
)


def _attention(cross: bool) -> tuple[InputSpec, ...]:
    sublayer = "cross-attention" if cross else "self-attention"
    specs = []
    for name, keyword, what, shape, torch_name in _ATTENTION:
        specs.append(
            optional(
                f"{name}_cross" if cross else name,
                f"cross_{keyword}" if cross else keyword,
                "matrix" if name.startswith("W") else "vector",
                f"{sublayer} {what}",
                f"The {sublayer}'s {what}, {shape} (PyTorch: {torch_name}).",
                weight=True,
            )
        )
    return tuple(specs)


def _norms() -> tuple[InputSpec, ...]:
    specs = []
    for index in (1, 2, 3):
        decoder = " (the decoder's third, after the feed-forward)" if index == 3 else ""
        specs += [
            optional(
                f"gamma_{index}",
                f"gamma{index}",
                "vector",
                f"γ of LN{index}",
                f"LayerNorm {index}'s scale γ{decoder}, d_model wide (PyTorch: norm{index}.weight; "
                "default 1).",
                weight=True,
            ),
            optional(
                f"beta_{index}",
                f"beta{index}",
                "vector",
                f"β of LN{index}",
                f"LayerNorm {index}'s shift β, d_model wide (PyTorch: norm{index}.bias; default 0).",
                weight=True,
            ),
        ]
    return tuple(specs)


CARD = Card(
    "block",
    summary="One Transformer layer step by step: multi-head attention, residual, LayerNorm, "
    "feed-forward (encoder, or {decoder}).",
    details="Every weight is yours to give: by hand ({wq}, {w1}, {gamma1}, ...), in a lesson "
    "file, or as a PyTorch model's state_dict with {weights} FILE (an nn.TransformerEncoderLayer, "
    "nn.TransformerDecoderLayer, or a stack of them, nn.TransformerEncoder or "
    "nn.TransformerDecoder, saved as .pt, .safetensors or .npz). A weight not given is drawn at "
    "random from {seed} (the same {seed} gives the same weights, and attn multihead's W_Q, W_K, "
    "W_V, W_O): W_Q, W_K, W_V, W_O of self-attention (d_model × d_model), with {decoder} those "
    "of cross-attention, then W_1 (d_model × d_ff) and b_1, each entry a normal random number "
    "of mean 0 and variance 1/d_model, and W_2 (d_ff × d_model) and b_2, of variance 1/d_ff, so "
    "that each layer's outputs keep about the scale of its inputs; attention's biases not given "
    "are 0 and "
    "LayerNorm's γ and β are 1 and 0 (PyTorch's initial values; {gamma_beta} draws γ and β). "
    "Weights are written as the lectures write them, inputs × outputs (Q = X W_Q); nn.Linear "
    "stores each transposed. When any is given, the first step lists every one and where it "
    "came from.",
    inputs=(
        InputSpec(
            "X",
            "x",
            "matrix",
            "token embeddings",
            help="Token embeddings, n × d_model (n tokens of width d_model; the positional "
            "encoding is added to them unless {posenc=False}).",
        ),
        optional(
            "Memory",
            "memory",
            "matrix",
            "encoder output (memory)",
            "{decoder} only: the encoder's output that cross-attention reads keys and values "
            "from, m × d_model (default: the example's, else standard normal random numbers drawn "
            "from {seed}, m = n).",
        ),
        *_attention(cross=False),
        *_attention(cross=True),
        optional(
            "W_1",
            "w1",
            "matrix",
            "feed-forward weights W_1",
            "The feed-forward's first weights, d_model × d_ff (PyTorch: linear1.weight, "
            "transposed).",
            weight=True,
        ),
        optional(
            "b_1",
            "b1",
            "vector",
            "feed-forward bias b_1",
            "The feed-forward's first bias, d_ff wide (PyTorch: linear1.bias).",
            weight=True,
        ),
        optional(
            "W_2",
            "w2",
            "matrix",
            "feed-forward weights W_2",
            "The feed-forward's second weights, d_ff × d_model (PyTorch: linear2.weight, "
            "transposed).",
            weight=True,
        ),
        optional(
            "b_2",
            "b2",
            "vector",
            "feed-forward bias b_2",
            "The feed-forward's second bias, d_model wide (PyTorch: linear2.bias).",
            weight=True,
        ),
        *_norms(),
        optional(
            "gamma_final",
            "gamma_final",
            "vector",
            "γ of the final LayerNorm",
            "With {final_norm}: the last LayerNorm's scale γ (PyTorch: norm.weight; default 1).",
            weight=True,
        ),
        optional(
            "beta_final",
            "beta_final",
            "vector",
            "β of the final LayerNorm",
            "With {final_norm}: its shift β (PyTorch: norm.bias; default 0).",
            weight=True,
        ),
        optional(
            "key_padding_mask",
            "padding",
            "vector",
            "key padding mask",
            "Key padding: n entries, 1 where a token is padding (no query attends to it), else "
            "0; PyTorch's src_key_padding_mask (tgt_ in the decoder), True = padding. One per "
            'batch item: "0,0,1 | 0,1,1".',
        ),
        optional(
            "memory_key_padding_mask",
            "memory_padding",
            "vector",
            "memory padding mask",
            "{decoder} only: the memory's padding, m entries, 1 = padding (PyTorch's "
            "memory_key_padding_mask).",
        ),
        optional(
            "attn_mask",
            "attn_mask",
            "matrix",
            "attention mask (boolean)",
            "Self-attention's mask, n × n: 1 where query i may not attend key j, else 0 "
            "(PyTorch's boolean attn_mask: src_mask, or tgt_mask in the decoder).",
        ),
        optional(
            "attn_mask_float",
            "attn_mask_float",
            "matrix",
            "attention mask (additive)",
            "Self-attention's mask as PyTorch's float attn_mask, n × n: added to the scaled "
            "scores (0 keeps a key, -inf blocks it).",
            minus_infinity=True,
        ),
    ),
    positional=("x",),
    rows="tokens",
    options=(
        Option(
            "heads",
            "Number of heads h (PyTorch's nhead); must divide d_model (default: the example's, "
            "else {default}).",
            2,
            type=int,
            minimum=1,
        ),
        Option(
            "kv_heads",
            "Key/value heads g (grouped-query attention; 1: multi-query): query head i reads "
            "key/value head ⌊i / (h/g)⌋, as PyTorch's enable_gqa pairs them, and W_K, W_V "
            "(with {decoder} W_K_cross, W_V_cross too) are d_model × g·d_k; g must divide h. A "
            "PyTorch state_dict ({weights}) has none: g = h (default: read from W_K's or W_V's "
            "columns, g·d_k, where given by hand or in a file of the lesson's own names; else "
            "h, a key/value head per query head).",
            type=int,
            minimum=1,
            metavar="G",
        ),
        Option(
            "d_ff",
            "Width d_ff of the feed-forward network's hidden layer (default: W_1's columns when "
            "given, else the example's, else 4 × d_model, as the paper's 2048 = 4 × 512).",
            type=int,
            minimum=1,
        ),
        Option(
            "pre_norm",
            "Pre-norm: x + MHA(LN(x)), then x + FFN(LN(x)), as most models are built today "
            "(PyTorch's norm_first=True; default: the example's, else off: post-norm "
            "LN(x + MHA(x)), as the paper draws it).",
            False,
            type=bool,
            switch=True,
        ),
        Option(
            "decoder",
            "The decoder layer: masked self-attention, cross-attention over {memory}, FFN; "
            "{tokens} then names the targets y1 … yn (default: the {weights} file's kind, else "
            "the example's, else off).",
            type=bool,
            switch=True,
        ),
        Option(
            "causal",
            "The causal mask in self-attention: no token attends to a later one (default: on in "
            "the decoder, where PyTorch's tgt_mask is optional, off in the encoder).",
            type=bool,
            switch=True,
        ),
        Option(
            "activation",
            "The feed-forward's activation: relu, gelu (exact, with erf: nn.GELU()) or "
            'gelu-tanh (nn.GELU(approximate="tanh")) (default: {default}).',
            "relu",
            choices=("relu", "gelu", "gelu-tanh"),
            metavar="NAME",
        ),
        Option(
            "bias",
            "Biases in attention, the feed-forward and LayerNorm (β); {bias=False}: none, "
            "PyTorch's bias=False (default: the {weights} file's, else on).",
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
            "Draw each LayerNorm's γ and β not given from {seed} (γ near 1 and β near 0: each "
            "a normal random number of standard deviation 0.1 about them) instead of γ = 1, "
            "β = 0, nn.LayerNorm's initial values.",
            False,
            type=bool,
        ),
        Option("eps", "LayerNorm's ε (default: {default}).", 1e-5, type=float, metavar="EPS"),
        Option(
            "layers",
            "A stack of N layers, each reading the one before, every layer's steps shown "
            "(nn.TransformerEncoder(layer, N)); default: the {weights} file's count, else 1.",
            type=int,
            minimum=1,
        ),
        Option(
            "shared_weights",
            "With {layers} N: every layer uses the same weights (given by hand, or layer 1's "
            "drawn); without it each layer draws its own, or reads its own from {weights}.",
            False,
            type=bool,
        ),
        Option(
            "final_norm",
            "A LayerNorm after the last layer, as nn.TransformerEncoder(norm=...) and pre-norm "
            "models have (default: the {weights} file's, else none).",
            type=bool,
        ),
        Option(
            "sequence_first",
            "A batch of inputs (3-D X, Memory) is n × batch × d_model, PyTorch's default "
            "layout (batch_first=False); without it, batch × n × d_model.",
            False,
            type=bool,
        ),
        Option(
            "weights",
            "Every weight from a PyTorch model's state_dict (nn.TransformerEncoderLayer, "
            "nn.TransformerDecoderLayer, nn.TransformerEncoder or nn.TransformerDecoder) saved "
            "as .pt (read with torch.load(weights_only=True): no pickled object runs), "
            ".safetensors or .npz; from Python, the state_dict itself. It holds no settings: "
            "give {heads}, {pre_norm}, {activation} and {eps} as the module has them.",
            metavar="FILE",
            path=True,
        ),
    ),
    sizes=(
        Size("n", "number of tokens n (default: {default}).", 4),
        Size("d_model", "width d_model, with {weights} the file's (default: {default}).", 8),
        Size("m", "memory rows m, with {decoder} (default: n)."),
    ),
    figure=(
        "the layer's attention weights, one panel per head (with {decoder}, then cross-"
        "attention's over the memory)"
    ),
    examples=(
        "attn block",
        "attn block --example decoder",
        "attn block --layers 2 --pre-norm --final-norm --activation gelu",
    ),
    symbols=(
        ("d_model", "the width of each token, in and out of the layer"),
        ("d_ff", "the feed-forward network's hidden width"),
        ("d_k", "each head's width, d_model / h"),
        ("W_Q, W_K, W_V, W_O", "attention's query, key, value and output weights"),
        ("W_1, b_1", "the feed-forward's first layer, d_model to d_ff"),
        ("W_2, b_2", "its second layer, d_ff back to d_model"),
        ("γ, β", "LayerNorm's scale and shift, one per feature"),
        ("ε", "LayerNorm's small constant, added to the variance before the square root"),
    ),
)
