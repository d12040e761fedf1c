"""The tour's stops: the one list of the lectures' order, read by `attn tour` and by its help.

Kept light (dataclasses and shlex only: no rich, numpy or TOML), because `attn --help` builds
the tour's help from it. Each stop is a real command line (attn NAME ARGS); ``topic`` is its
name in the help's list; ``bridge`` is shown after the stop and says why the next stop follows
(the last one closes the tour).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class Stop:
    name: str  # the command, and the name for --only
    title: str  # what the stop shows, in a line
    args: tuple[str, ...] = ()  # arguments after `attn NAME`
    topic: str = ""  # the stop in a few words, for the help's list
    bridge: str = ""  # shown after the stop: why the next one follows
    command: str = ""  # the command, when it is not the name (attn learn induction: "learn")

    @property
    def command_name(self) -> str:
        return self.command or self.name

    @property
    def command_line(self) -> str:
        return shlex.join(("attn", self.command_name, *self.args))


INTRO = "The lecture in {count} stop{s}, in order:"
CLOSING = "Run any stop on its own:"

# The bench stop: the lesson's own numpy code (every n × n score in memory) against the tiled
# loop (one key block of 64 at a time), on every machine, with or without PyTorch. Memory grows
# as n² against n from the first size; time needs n in the hundreds to leave fixed costs behind.
# About 10 s on a 2-core laptop (see docs/benchmarks.md).
BENCH_ARGS = (
    "--device", "cpu", "--impl", "numpy,tiled-numpy", "--sizes", "256..2048", "--d", "32",
    "--heads", "1", "--block", "64",
)  # fmt: skip

# The translate stop: a small budget (a few seconds on a laptop CPU; needs PyTorch, skipped with
# its reason without it). The default budget (`attn learn translate`) takes about half a minute.
LEARN_ARGS = ("translate", "--steps", "150", "--hidden", "16", "--max-len", "6")

# The induction stop's budget: the smallest that forms the induction head of the default seed
# clearly (prefix-matching 0.8 on held-out sequences), a few seconds of training on a laptop.
INDUCTION_STEPS = 300

# The lectures' order: retrieval, √d_k right after scaled dot-product, Bahdanau, self-attention,
# the causal mask, heads, positions, the layer around attention, the O(n²) wall, then the ways
# past it.
TOUR: tuple[Stop, ...] = (
    Stop(
        "scaled",
        "Attention as retrieval: queries look up keys",
        ("--example", "library"),
        topic="retrieval view",
        bridge=(
            "The lecture's formula is softmax(Q Kᵀ / √d_k) V: every score is divided by √d_k "
            "before the softmax. Why that number? The next stop measures how the spread of a dot "
            "product grows with the width d_k of the vectors, and what a wide spread does to the "
            "softmax."
        ),
    ),
    Stop(
        "variance",
        "Why divide by √d_k: the variance of a dot product",
        ("--dk", "4,64,512"),
        topic="why √d_k",
        bridge=(
            "A dot product is one way to score a query against a key. The first attention model, "
            "for translation (Bahdanau, Cho and Bengio, 2015), scored with a small network "
            "instead: additive attention, next, beside the dot-product scores of Luong et al."
        ),
    ),
    Stop(
        "bahdanau",
        "Additive attention: a decoder scores each encoder state",
        ("--example", "cat-slept"),
        topic="Bahdanau (additive)",
        bridge=(
            "Those weights were written by hand. The next stop trains them: a small translation "
            "model learns W1, W2 and v on the spot, beside the fixed-vector encoder-decoder that "
            "has no attention, and its heatmap of a sentence it never saw is scored against the "
            "true alignment."
        ),
    ),
    Stop(
        "translate",
        "Attention that was learned: a toy translation trained on the spot",
        LEARN_ARGS,
        topic="attention learned",
        bridge=(
            "There the query came from the decoder and the keys and values from the encoder. In "
            "self-attention, next, one sequence supplies all three: each token is projected to a "
            "query, a key and a value by learned matrices W_Q, W_K and W_V."
        ),
        command="learn",
    ),
    Stop(
        "selfattn",
        "Self-attention: Q, K and V from one sequence",
        topic="self-attention",
        bridge=(
            "Every token attended to every token, the later ones included. A model that writes "
            "text one token at a time must not look ahead: the causal mask, next, hides the "
            "future from each token."
        ),
    ),
    Stop(
        "causal",
        "The causal mask: no peeking at later tokens",
        topic="causal mask",
        bridge=(
            "One set of projections gives each token one way to attend. Multi-head attention, "
            "next, runs several smaller attentions side by side, each with its own projections, "
            "and joins their outputs."
        ),
    ),
    Stop(
        "multihead",
        "Multi-head attention: heads side by side",
        topic="multi-head",
        bridge=(
            "Attention by itself ignores order: permute the tokens (without a causal mask) and "
            "the output rows are permuted the same way. Positional encoding, next, adds each "
            "position's own vector to its token's embedding."
        ),
    ),
    Stop(
        "posenc",
        "Positional encoding: giving tokens an order",
        ("--positions", "8", "--d-model", "6"),
        topic="positional encoding",
        bridge=(
            "Attention, heads and positions are the parts. The next stop puts them together into "
            "one Transformer layer, as the lectures draw it: the embeddings plus the positional "
            "encoding, multi-head self-attention, a residual sum and LayerNorm, then a "
            "feed-forward network, another residual sum and LayerNorm."
        ),
    ),
    Stop(
        "block",
        "Attention inside a Transformer layer: residual, LayerNorm, FFN",
        topic="attention inside a Transformer layer",
        bridge=(
            "That layer ran on weights drawn at random. Where do useful attention patterns come "
            "from? The next stop trains two small attention-only Transformers on the spot, on "
            "sequences whose second half repeats the first, and shows a pattern that no one "
            "wrote emerge in one of them: an induction head (needs PyTorch)."
        ),
    ),
    Stop(
        "induction",
        "Attention that was learned: an induction head forms in seconds",
        ("induction", "--steps", str(INDUCTION_STEPS)),
        topic="an induction head trained on the spot",
        bridge=(
            "Of everything in a Transformer layer, only attention compares every token with every "
            "other: its n × n scores, one matrix per head and layer. The next stop measures what "
            "they cost as the sequence grows: the O(n²) wall."
        ),
        command="learn",
    ),
    Stop(
        "bench",
        "The O(n²) wall, measured: a small run on the CPU",
        BENCH_ARGS,
        topic="the O(n²) wall measured",
        bridge=(
            "That was up to 2048 tokens of width 32 on one CPU. The next stop evaluates the "
            "lectures' complexity formulas at a real model's sizes, 8192 tokens of width 4096: "
            "the work of each layer type and attention variant, and the bytes of the n × n scores."
        ),
    ),
    Stop(
        "cost",
        "What attention costs: the complexity tables evaluated",
        topic="the costs evaluated",
        bridge=(
            "Of vanilla attention's costs, the n × n scores it stores are the first to run out. "
            "FlashAttention, next, does the same O(n²d) work a block of keys at a time and never "
            "holds the n × n matrix."
        ),
    ),
    Stop(
        "flash",
        "Tiled attention: the online softmax that avoids the n × n matrix",
        topic="tiled attention (FlashAttention)",
        bridge=(
            "FlashAttention gives the exact result with the same O(n²d) work. The next stops "
            "change attention itself so that it does less work: in sliding-window attention each "
            "token sees only the tokens near it."
        ),
    ),
    Stop(
        "window",
        "Sliding-window attention: a band of keys, plus a global token",
        ("--example", "global-first"),
        topic="sliding window",
        bridge=(
            "A window is one rule for which keys a query may see. Graph attention, next, takes "
            "the rule from a graph: a node attends only to its neighbours."
        ),
    ),
    Stop(
        "graph",
        "Graph attention: a node attends only to its neighbours",
        ("--example", "lonely-node"),
        topic="graph attention",
        bridge=(
            "Windows and graphs drop keys. Linear attention, next, keeps every key but replaces "
            "the softmax by a product of feature maps, so the products can be regrouped and the n "
            "× n matrix never forms."
        ),
    ),
    Stop(
        "linear",
        "Linear attention: the n × n matrix reassociated away",
        topic="linear attention",
        bridge=(
            "Each stop so far computed attention over a whole sequence at once. A model that "
            "generates text adds one token per step and would redo the earlier tokens' work every "
            "time: KV caching, next and last, keeps their keys and values instead."
        ),
    ),
    Stop(
        "kvcache",
        "KV caching: one new key and value per generated token",
        topic="KV caching",
        bridge=(
            "That is the lecture: attention as a lookup, its scale, its masks, heads and "
            "positions, the Transformer layer around it, the O(n²) wall, and the ways past it."
        ),
    ),
)


def help_text() -> str:
    """The tour command's help: its stops' topics, in order, from the tour itself."""
    topics = ", ".join(stop.topic for stop in TOUR)
    return (
        f"The lecture in order, {len(TOUR)} stops: {topics}; one screen at a time. At a "
        "pause: Enter (or any key) for the next screen, q or Ctrl-D to stop."
    )
