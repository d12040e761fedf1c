"""The lectures' complexity formulas, evaluated: plain integer arithmetic, no arrays.

Each function is one cell of a table the lectures print, its order written out with the
constant factors dropped as the table drops them: the Transformer paper's table of layer types
(per-layer operations, sequential operations, maximum path length), and the four attention
variants with their time and memory. Sizes: n tokens, width d, a window of half-width w (query i
sees key j when |i − j| ≤ w, as attn window), r features of linear attention.
"""

from __future__ import annotations

from dataclasses import dataclass

from attn_cli.core.backend import ITEMSIZE

MIB = 2**20  # a mebibyte
GB = 10**9  # a gigabyte


def window_keys(n: int, window: int) -> int:
    """k, the keys a query of a sliding window sees: 2w + 1, or all n when the window is wider
    than the sequence (the band's interior rows; rows near the ends see fewer)."""
    return min(2 * window + 1, n)


@dataclass(frozen=True)
class LayerType:
    """One row of the Transformer paper's comparison of layer types."""

    name: str
    ops: int  # per-layer operations, the leading term
    sequential: int  # operations that must wait for the one before
    path: int  # the longest path a signal travels between two positions, in layers or steps


def layer_types(n: int, d: int, k: int) -> tuple[LayerType, ...]:
    """Self-attention O(n²·d), O(1), O(1); recurrent O(n·d²), O(n), O(n); convolution with a
    kernel of k O(k·n·d²), O(1), O(log_k n) (dilated); self-attention restricted to the k
    nearest keys O(k·n·d), O(1), O(n/k). Paths in whole layers: ⌈log_k n⌉ and ⌈n/k⌉."""
    return (
        LayerType("self-attention", n * n * d, 1, 1),
        LayerType("recurrent", n * d * d, n, n),
        LayerType("convolutional", k * n * d * d, 1, ceil_log(n, k)),
        LayerType("restricted self-attention", k * n * d, 1, -(-n // k)),
    )


def ceil_log(n: int, k: int) -> int:
    """⌈log_k n⌉, the fewest stacked dilated convolutions of kernel k that reach n positions
    (k^L ≥ n), in integers: no rounding of a logarithm (0 for one position)."""
    if n <= 1:
        return 0
    if k < 2:
        raise ValueError(f"a kernel of {k} never widens the reach; give k >= 2")
    layers, reach = 0, 1
    while reach < n:
        layers, reach = layers + 1, reach * k
    return layers


@dataclass(frozen=True)
class Variant:
    """One row of the lecture's table of attention variants: time and memory."""

    name: str
    time: int  # multiply-adds, the leading term
    memory: int  # numbers held beyond the inputs and outputs (linear: the n × d they need)


def variants(n: int, d: int, k: int, r: int) -> tuple[Variant, ...]:
    """Vanilla O(n²d) time, O(n²) memory; FlashAttention O(n²d), O(n) (a running max and sum per
    query, the tiles aside); linear O(n·r·d), O(nd) (r = d: the lecture's O(nd²)); sliding
    window O(n·k·d), O(n·k)."""
    return (
        Variant("vanilla", n * n * d, n * n),
        Variant("flash", n * n * d, n),
        Variant("linear", n * r * d, n * d),
        Variant("window", n * k * d, n * k),
    )


def score_matrix_entries(n: int) -> int:
    """Entries of one n × n score matrix: one head in one layer."""
    return n * n


def bytes_of(entries: int, dtype: str) -> int:
    """Bytes of ``entries`` numbers stored in ``dtype``."""
    return entries * ITEMSIZE[dtype]
