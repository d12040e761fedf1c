"""The additive graph-attention scores: GAT (Veličković et al., 2018) and GATv2 (Brody et al.,
2022), for every pair of nodes (the neighbour mask is added afterwards, as for the dot product).

GAT: z_i = W h_i (W is d' × d), e_ij = LeakyReLU(aᵀ [z_i ‖ z_j]) with a ∈ R^{2d'}; the
concatenation splits into two halves, aᵀ [z_i ‖ z_j] = a_leftᵀ z_i + a_rightᵀ z_j, so the n × n
pre-activations are one column plus one row. The update is h'_i = Σ_j α_ij z_j.

GATv2: W is d' × 2d, W [h_i ‖ h_j] = W_left h_i + W_right h_j (W_left its first d columns),
e_ij = aᵀ LeakyReLU(W [h_i ‖ h_j]) with a ∈ R^{d'}: the nonlinearity sits between W and a, so
each pair has its own d'-vector. The update is h'_i = Σ_j α_ij W_right h_j, as PyTorch
Geometric's GATv2Conv (its lin_l is W_right, applied to the neighbour j; lin_r is W_left).
"""

from __future__ import annotations

from attn_cli.core.backend import Array, namespace_of

# GAT's and GATv2's negative slope (PyTorch Geometric's default negative_slope).
LEAKY_SLOPE = 0.2


def leaky_relu(x: Array, slope: float = LEAKY_SLOPE) -> Array:
    """x where x > 0, slope · x elsewhere."""
    xp = namespace_of(x)
    return xp.where(x > 0, x, slope * x)  # same shape as x


def project(h: Array, w: Array) -> Array:
    """z_i = W h_i for every node: row i of H Wᵀ."""
    xp = namespace_of(h, w)
    return xp.matmul(h, xp.matrix_transpose(w))  # (n, d) @ (d, d') -> (n, d')


def gat_halves(z: Array, a: Array) -> Array:
    """The two halves of aᵀ [z_i ‖ z_j]: column 0 a_leftᵀ z_i, column 1 a_rightᵀ z_i."""
    xp = namespace_of(z, a)
    width = z.shape[-1]
    left = xp.matmul(z, a[:width])  # (n, d') @ (d',) -> (n,)
    right = xp.matmul(z, a[width:])  # (n,)
    return xp.stack([left, right], axis=-1)  # (n, 2)


def gat_pair_sums(halves: Array) -> Array:
    """aᵀ [z_i ‖ z_j] = a_leftᵀ z_i + a_rightᵀ z_j for every pair (i, j)."""
    xp = namespace_of(halves)
    return halves[..., :, 0:1] + xp.matrix_transpose(halves[..., :, 1:2])  # (n, 1) + (1, n)


def gatv2_halves(h: Array, w: Array) -> tuple[Array, Array]:
    """(W_left h_i, W_right h_j) for every node: W's first d columns read h_i, the rest h_j."""
    d = h.shape[-1]
    return project(h, w[..., :, :d]), project(h, w[..., :, d:])  # (n, d') each


def gatv2_pair_sums(target: Array, neighbour: Array) -> Array:
    """W [h_i ‖ h_j] = W_left h_i + W_right h_j for every pair, row i·n + j."""
    xp = namespace_of(target, neighbour)
    n, width = target.shape[-2], target.shape[-1]
    pairs = target[..., :, None, :] + neighbour[..., None, :, :]  # (n, n, d')
    return xp.reshape(pairs, (n * n, width))  # (n², d'): pair (i, j) in row i·n + j


def gatv2_scores(activated: Array, a: Array, n: int) -> Array:
    """e_ij = aᵀ LeakyReLU(W [h_i ‖ h_j]), from the pairs' rows (i·n + j) back to n × n."""
    xp = namespace_of(activated, a)
    return xp.reshape(xp.matmul(activated, a), (n, n))  # (n², d') @ (d',) -> (n, n)
