"""Options several lessons take, declared once."""

from __future__ import annotations

from attn_cli.core.card import Option

VALID_LEN = Option(
    "valid_len",
    "Padding mask: keys at positions ≥ the valid length get no weight; one length for every "
    'query row ("2") or one per row ("2,3,1"), as masked_softmax(valid_lens) or '
    'key_padding_mask; with a batch, one per item separated by "|" ("2|3").',
    metavar="LENGTHS",
)
DROPOUT = Option(
    "dropout",
    "Dropout on the weights, as in training: keep each with probability 1 − P, scale the kept by "
    "1/(1 − P); 0 ≤ P < 1. The mask is seeded by --seed: --backend torch draws "
    "torch.manual_seed(seed) then nn.Dropout(P), exactly PyTorch's mask; numpy draws "
    "np.random.default_rng(seed) (uniform < 1 − P keeps), a different mask.",
    type=float,
    metavar="P",
)


# The symbols most lessons' help uses, defined once (a card's ``symbols``).
D_K = ("d_k", "the width of each query and key (a score is their dot product)")
D_V = ("d_v", "the width of each value, and so of each output row")
QKV_WEIGHTS = ("W_Q, W_K, W_V", "the query, key and value weights (projections of the tokens)")
