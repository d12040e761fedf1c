"""The tour's stops at attn learn: attention learned on the spot, at small budgets."""

from __future__ import annotations

from attn_cli.core.stop import Stop

# The translate stop: a small budget (a few seconds on a laptop CPU; needs PyTorch, skipped with
# its reason without it). The default budget (`attn learn translate`) takes about half a minute.
LEARN_ARGS = ("translate", "--steps", "150", "--hidden", "16", "--max-len", "6")

# The induction stop's budget: the smallest that forms the induction head of the default seed
# clearly (prefix-matching 0.8 on held-out sequences), a few seconds of training on a laptop.
INDUCTION_STEPS = 300

TRANSLATE = Stop(
    "translate",
    "Attention that was learned: a toy translation trained on the spot",
    LEARN_ARGS,
    topic="attention learned",
    lead_in=(
        "Those weights were written by hand. The next stop trains them: a small translation "
        "model learns W1, W2 and v on the spot, beside the fixed-vector encoder-decoder that "
        "has no attention, and its heatmap of a sentence it never saw is scored against the "
        "true alignment."
    ),
    after="bahdanau",
    command="learn",
    lesson=False,
)

INDUCTION = Stop(
    "induction",
    "Attention that was learned: an induction head forms in seconds",
    ("induction", "--steps", str(INDUCTION_STEPS)),
    topic="an induction head trained on the spot",
    lead_in=(
        "That layer ran on weights drawn at random. Where do useful attention patterns come "
        "from? The next stop trains two small attention-only Transformers on the spot, on "
        "sequences whose second half repeats the first, and shows a pattern that no one wrote"
        " emerge in one of them: an induction head (needs PyTorch)."
    ),
    after="block",
    command="learn",
    lesson=False,
)
