"""Each lesson's matrix inputs, declared once: the walkthrough reads them, the command's
--q/--k/... options are generated from them. Cheap to import (no numpy): `attn --help` and a
command's parser read it before anything is computed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


def keyword_of(flag: str) -> str:
    """The parameter (and library keyword) of a command-line flag: ``--d-model`` -> ``d_model``."""
    return flag.lstrip("-").replace("-", "_")


def flag_of(keyword: str) -> str:
    """The command-line flag of a lesson option or size: ``d_model`` -> ``--d-model``."""
    return "--" + keyword.replace("_", "-")


@dataclass(frozen=True)
class InputSpec:
    name: str  # key in inputs and in lesson files, e.g. "Q"
    option: str  # the CLI flag, e.g. "--q"
    shape: Literal["matrix", "vector"]
    description: str
    required: bool = True  # an optional input has a default the lesson fills in
    help: str = ""  # the option's --help text

    @property
    def keyword(self) -> str:
        """The command's parameter (and the library function's keyword): --wq -> wq."""
        return keyword_of(self.option)


def _optional(name: str, option: str, shape: Literal["matrix", "vector"], description: str,
              help: str) -> InputSpec:  # fmt: skip
    return InputSpec(name, option, shape, description, required=False, help=help)


SCALED = (
    InputSpec(
        "Q", "--q", "matrix", "queries", help='Queries Q, m × d_k: "1,0;0,1", JSON or @file.'
    ),
    InputSpec("K", "--k", "matrix", "keys", help="Keys K, n × d_k."),
    InputSpec("V", "--v", "matrix", "values", help="Values V, n × d_v."),
)
BAHDANAU = (
    InputSpec(
        "s_t", "--s", "vector", "decoder state",
        help='Decoder state s_t, d_s entries: "1,3", JSON or @file.',
    ),
    InputSpec(
        "H", "--h", "matrix", "encoder states h_i (rows)",
        help="Encoder states h_i, one per row: n × d_h.",
    ),
    InputSpec(
        "W1", "--w1", "matrix", "projects each h_i",
        help="W1, d_a × d_h (W1 h_i: matrix times column).",
    ),
    InputSpec("W2", "--w2", "matrix", "projects s_t", help="W2, d_a × d_s."),
    InputSpec("v", "--v", "vector", "reads out the score", help="v, d_a entries."),
    _optional(
        "W_a", "--wa", "matrix", "Luong's general weight",
        "Luong's general W_a, d_s × d_h; implies --compare (default: identity).",
    ),
    _optional(
        "values", "--values", "matrix", "values v_i, one per encoder state",
        "Values vᵢ (not the score vector --v), one row per encoder state: n × d_v; the context "
        "is Σ αᵢ vᵢ (default: the encoder states themselves, Σ αᵢ hᵢ).",
    ),
)  # fmt: skip
SELFATTN = (
    InputSpec(
        "X", "--x", "matrix", "tokens as rows",
        help='Tokens X as rows, n × d: "1,0;0,1;1,1", JSON or @file.',
    ),
    _optional("W_Q", "--wq", "matrix", "query projection",
              "W_Q, d × d_k (Q = X W_Q; default: identity)."),
    _optional("W_K", "--wk", "matrix", "key projection",
              "W_K, d × d_k (K = X W_K; default: identity)."),
    _optional("W_V", "--wv", "matrix", "value projection",
              "W_V, d × d_v (V = X W_V; default: identity)."),
)  # fmt: skip
CAUSAL = (
    _optional("S", "--scores", "matrix", "scores, used as given",
              'Scores S, n × n, used as given: "2.1,1.5;0.8,3.1", JSON or @file.'),
    _optional("Q", "--q", "matrix", "queries", "Queries Q, n × d_k (with --k)."),
    _optional("K", "--k", "matrix", "keys", "Keys K, n × d_k (with --q)."),
    _optional("V", "--v", "matrix", "values", "Values V, n × d_v (with --scores or --q/--k)."),
    _optional("X", "--x", "matrix", "tokens",
              "Tokens X, n × d_model: Q = X W_Q, K = X W_K, V = X W_V."),
    _optional("W_Q", "--wq", "matrix", "query weights",
              "W_Q, d_model × d_k, with --x (default: identity)."),
    _optional("W_K", "--wk", "matrix", "key weights",
              "W_K, d_model × d_k, with --x (default: identity)."),
    _optional("W_V", "--wv", "matrix", "value weights",
              "W_V, d_model × d_v, with --x (default: identity)."),
)  # fmt: skip
MULTIHEAD = (
    _optional("X", "--x", "matrix", "tokens",
              'Tokens X, n × d_in: "1,0,1,0;0,1,1,0", JSON or @file.'),
    _optional("W_Q", "--wq", "matrix", "query weights",
              "W_Q, d_in × d_out, split column-wise into the heads (d_out = d_in = d_model in "
              "the transformer paper)."),
    _optional("W_K", "--wk", "matrix", "key weights", "W_K, d_in × d_out."),
    _optional("W_V", "--wv", "matrix", "value weights", "W_V, d_in × d_out."),
    _optional("W_O", "--wo", "matrix", "output weights",
              "W_O, d_out × d_o; optional: without it the result is the concatenated heads "
              "(default, with no weights given: all four drawn from --seed)."),
    _optional("b_Q", "--bq", "vector", "query bias",
              'Bias b_Q added to X W_Q, d_out wide: "0.1,0,-0.2".'),
    _optional("b_K", "--bk", "vector", "key bias", "Bias b_K, d_out wide."),
    _optional("b_V", "--bv", "vector", "value bias", "Bias b_V, d_out wide."),
    _optional("b_O", "--bo", "vector", "output bias", "Bias b_O added to Concat · W_O, d_o wide."),
)  # fmt: skip

GRAPH = (
    InputSpec(
        "H", "--h", "matrix", "node features h_i (rows)",
        help='Node features h_i, one row per node: N × d, "1,0;0,1;1,1;0,2", JSON or @file.',
    ),
    _optional("W_Q", "--wq", "matrix", "query projection",
              "W_Q, d_k × d, as the lecture writes it: q_i = W_Q h_i (default: identity)."),
    _optional("W_K", "--wk", "matrix", "key projection",
              "W_K, d_k × d: k_j = W_K h_j (default: identity)."),
    _optional("W_V", "--wv", "matrix", "value projection",
              "W_V, d_v × d: v_j = W_V h_j (default: identity)."),
    _optional("A", "--adjacency", "matrix", "adjacency (0/1)",
              "Adjacency, N × N of 0/1: row i has 1 at j when j ∈ N(i) (instead of --edges)."),
)  # fmt: skip

# Lesson name -> its inputs, in order (posenc and variance draw everything from their options).
INPUTS: dict[str, tuple[InputSpec, ...]] = {
    "scaled": SCALED,
    "bahdanau": BAHDANAU,
    "selfattn": SELFATTN,
    "causal": CAUSAL,
    "multihead": MULTIHEAD,
    "posenc": (),
    "variance": (),
    "flash": SCALED,  # the same inputs and checks as attn scaled
    "window": SCALED,  # the same inputs as attn scaled, one sequence (m = n)
    "graph": GRAPH,
    "linear": SCALED,
    "kvcache": SCALED,
}

# Every lesson, in the order `attn --help` lists them: the package's lesson functions, the
# lesson registry (walkthroughs.base) and the Python API read this one list.
LESSONS: tuple[str, ...] = tuple(INPUTS)


# --- what each lesson's Python function takes besides its inputs ---------------------------


@dataclass(frozen=True)
class LessonSignature:
    """What a lesson function takes besides the inputs its walkthrough module declares."""

    summary: str
    options: tuple[str, ...] = ()  # the lesson's options, as on the command line
    sizes: tuple[str, ...] = ()  # sizes of random inputs (--n, --dk, ...)
    positional: tuple[str, ...] = ()  # inputs that may be given by position, in order
    labels: str | None = None  # the row names that ``tokens=`` gives (run.labels key)
    seed: bool = True  # whether the lesson draws anything at random
    precision: int = 4  # the decimals its command prints by default


LESSON_SIGNATURES: dict[str, LessonSignature] = {
    "scaled": LessonSignature(
        "Scaled dot-product attention step by step: softmax(Q Kᵀ / √d_k) V.",
        options=("scale", "valid_len", "dropout", "normalise"),
        sizes=("n", "m", "dk", "dv"),
        positional=("q", "k", "v"),
    ),
    "bahdanau": LessonSignature(
        "Additive (Bahdanau) attention for one decoder step, term by term.",
        options=("compare", "dropout"),
        sizes=("n", "d", "da"),
        positional=("s", "h", "w1", "w2", "v"),
        labels="states",
    ),
    "selfattn": LessonSignature(
        "Self-attention: Q, K and V projected from one sequence X.",
        options=("scale", "permute", "dropout"),
        sizes=("n", "d", "dk", "dv"),
        positional=("x", "wq", "wk", "wv"),
        labels="tokens",
    ),
    "causal": LessonSignature(
        "Causal (masked) attention: each token attends to itself and the tokens before it.",
        options=("scale", "fill", "conventions", "valid_len", "dropout"),
        sizes=("n", "dk"),
        positional=("q", "k", "v"),
        labels="tokens",
    ),
    "multihead": LessonSignature(
        "Multi-head attention: split into heads, attend, concatenate, project.",
        options=("heads", "causal", "valid_len", "bias", "dropout"),
        sizes=("n", "d_model", "d_in", "d_out"),
        positional=("x", "wq", "wk", "wv", "wo"),
        labels="tokens",
    ),
    "posenc": LessonSignature(
        "Sinusoidal positional encoding and the rotation behind PE(pos+k) = M_k PE(pos).",
        options=("positions", "d_model", "base", "offset", "layout"),
        seed=False,
        precision=3,  # as `attn posenc` prints: eight signed columns fit in 80
    ),
    "variance": LessonSignature(
        "Why scores are divided by √d_k: the variance of q·k, the softmax and its gradient.",
        options=("dk", "samples", "keys"),
    ),
    "flash": LessonSignature(
        "The tiled (FlashAttention) algorithm step by step: running max, running sum.",
        options=("block", "causal", "scale", "query_block", "sram"),
        sizes=("n", "m", "dk", "dv"),
        positional=("q", "k", "v"),
    ),
    "window": LessonSignature(
        "Sliding-window attention: each token attends to the keys within w of it.",
        options=("window", "causal", "global_tokens"),
        sizes=("n", "dk", "dv"),
        positional=("q", "k", "v"),
    ),
    "graph": LessonSignature(
        "Graph attention: node i attends only to its neighbours N(i).",
        options=("edges", "self_loops", "directed"),
        sizes=("n", "d", "dk"),
        positional=("h",),
        labels="tokens",
    ),
    "linear": LessonSignature(
        "Linear attention φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1): the n × n matrix reassociated away.",
        options=("feature_map", "features", "feature_seed", "causal"),
        sizes=("n", "m", "dk", "dv"),
        positional=("q", "k", "v"),
    ),
    "kvcache": LessonSignature(
        "Generation token by token with a KV cache: one new key and value row per step.",
        options=("layers", "heads", "kv_heads", "d_head", "cache_dtype"),
        sizes=("n", "dk", "dv"),
        positional=("q", "k", "v"),
    ),
}


def default_precision(lesson: str) -> int:
    """The decimals the lesson's command prints unless --precision says otherwise."""
    signature = LESSON_SIGNATURES.get(lesson)
    return signature.precision if signature else 4
