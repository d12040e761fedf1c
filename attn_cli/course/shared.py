"""Options several lessons take, declared once."""

from __future__ import annotations

from attn_cli.core import variants
from attn_cli.core.card import Option

VALID_LEN = Option(
    "valid_len",
    "Padding mask: keys at positions ≥ the valid length get no weight; one length for every "
    'query row ("2") or one per row ("2,3,1"), as masked_softmax(valid_lens) or '
    'key_padding_mask; with a batch, one per item separated by "|" ("2|3").',
    metavar="LENGTHS",
)
SCALE = Option(
    "scale",
    "Divide scores by √d_k (default: the example's, else {default}).",
    default=True,
    type=bool,
    switch=True,
)
# A causal mask on the lessons that tile or split the keys (flash, ring).
CAUSAL = Option(
    "causal",
    "Mask future keys: query i sees keys 1..i (default: the example's, else {default}).",
    False,
    type=bool,
    switch=True,
)
DROPOUT = Option(
    "dropout",
    "Dropout on the weights, as in training: keep each with probability 1 − P, scale the kept by "
    "1/(1 − P); 0 ≤ P < 1. The mask is seeded by {seed}: {backend=torch} draws "
    "torch.manual_seed(seed) then nn.Dropout(P), exactly PyTorch's mask; numpy draws "
    "np.random.default_rng(seed) (uniform < 1 − P keeps), a different mask.",
    type=float,
    metavar="P",
)

# Score transforms of the 2026 models (attn_cli.course.score_transforms computes them).
SOFTCAP = Option(
    "softcap",
    "Soft-cap the scaled scores: s becomes cap·tanh(s / cap), within (−cap, cap), before any "
    "mask (Gemma 2 caps attention scores at 50).",
    type=float,
    metavar="CAP",
)
QK_NORM = Option(
    "qk_norm",
    "Normalise each query and key row before the dot product: layernorm (ViT-22B) or rmsnorm "
    "(OLMo 2, Qwen 3, Gemma 3), without a learned gain; a scaled score then lies within ±√d_k.",
    choices=variants.QK_NORMS,
    metavar="NAME",
)

# The symbols most lessons' help uses, defined once (a card's ``symbols``).
D_K = ("d_k", "the width of each query and key (a score is their dot product)")
D_V = ("d_v", "the width of each value, and so of each output row")
QKV_WEIGHTS = ("W_Q, W_K, W_V", "the query, key and value weights (projections of the tokens)")
