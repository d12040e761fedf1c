"""The tour's stops at attn learn: attention learned on the spot, each at a budget that shows
the lesson's point (every note of its run shown; measured in docs/learn.md)."""

from __future__ import annotations

from attn_cli.core.stop import Stop

# The translate stop: a budget that shows the alignment learned for seed 0 (held-out alignment
# score 0.888, every word of the shown sentence on its true source word, attention exact at
# every length, the fixed-vector model falling with length: 1.00 at 3 words to 0.04 at 8), a
# few seconds on a laptop CPU; needs PyTorch (skipped with its reason without it). The smaller budget it replaces
# (--steps 150 --hidden 16 --max-len 6) scored 0.737 and put "dort" on "tomorrow". The default
# budget (`attn learn translate`) takes about half a minute.
LEARN_ARGS = ("translate", "--steps", "300", "--hidden", "32", "--max-len", "8")

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

GRAMMAR = Stop(
    "grammar",
    "The lectures' opening heatmap, learned: self-attention finds each word's head",
    ("grammar",),
    topic="the opening heatmap learned",
    lead_in=(
        "Those W_Q, W_K and W_V were drawn at random. The lectures' opening heatmap, red and "
        "soft attending to mat and cat to sat, came from training: the next stop trains it on "
        "the spot, a one-layer encoder on a small language whose words take their endings from "
        "the words they depend on, beside a control whose attention is frozen even (needs "
        "PyTorch)."
    ),
    after="selfattn",
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
