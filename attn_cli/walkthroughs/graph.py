"""The graph attention lesson: node i attends only to its neighbours N(i).

The lecture's setup (Understanding Attention, "Application 3: Graph Attention Networks"): N
nodes with features h_i ∈ R^d, projections q_i = W_Q h_i, k_j = W_K h_j, v_j = W_V h_j (W_Q,
W_K ∈ R^{d_k × d}, column convention, as the lecture writes them), scores s_ij = q_iᵀ k_j / √d_k for j ∈ N(i), weights normalised over N(i),
update h'_i = Σ_{j ∈ N(i)} w_ij v_j. The graph is an edge list (--edges "0-1,1-2", nodes
from 0, undirected unless --directed) or a 0/1 adjacency (--adjacency); with random features
and neither, a random graph is drawn from --seed. A node with no neighbours has an all −∞ row:
its weights are NaN (0/0), and its update is set to 0, as F.scaled_dot_product_attention does.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from attn_cli.backend import namespace_of
from attn_cli.cards.graph import CARD
from attn_cli.errors import UserError
from attn_cli.lessonfiles.texts import Texts
from attn_cli.matrices import shortened, whole_number
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import local, masks
from attn_cli.model import InputValue, Walkthrough
from attn_cli.walkthroughs.lesson import Lesson, LessonRun
from attn_cli.walkthroughs.recorder import Grid, StepRecorder
from attn_cli.walkthroughs.window import names

WEIGHT_NAMES = ("W_Q", "W_K", "W_V")
# (N × N) matrices alive at once: adjacency, scores, M, masked, softmax parts, weights.
_SCORE_MATRICES = 10
# A random graph (random features, no --edges or --adjacency) has each pair as an edge with
# this probability.
EDGE_PROBABILITY = 0.5


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    h = inputs["H"]
    n, d = h.shape
    for name in WEIGHT_NAMES:
        if name in inputs and inputs[name].shape[1] != d:
            raise UserError(
                f"{CARD.flag(name)} is {_size(inputs[name])} but the features are "
                f"{d} wide: W is d_k × d (q_i = W_Q h_i), so it needs {d} columns."
            )
    if "W_Q" in inputs and "W_K" in inputs and inputs["W_Q"].shape[0] != inputs["W_K"].shape[0]:
        raise UserError(
            f"W_Q has {inputs['W_Q'].shape[0]} rows but W_K has {inputs['W_K'].shape[0]}: q_i "
            "and k_j must share d_k (each score is q_iᵀ k_j)."
        )
    for name in ("W_Q", "W_K"):  # a query or key width from one projection, d from the identity
        other = "W_K" if name == "W_Q" else "W_Q"
        if name in inputs and other not in inputs and inputs[name].shape[0] != d:
            raise UserError(
                f"{CARD.flag(name)} gives d_k = {inputs[name].shape[0]} but "
                f"{CARD.flag(other)} is the identity (d_k = d = {d}); give both."
            )
    if "A" in inputs:
        if options.get("edges"):
            raise UserError("give the graph one way: --edges or --adjacency, not both.")
        adjacency = inputs["A"]
        if adjacency.shape != (n, n):
            raise UserError(
                f"--adjacency is {_size(adjacency)} but there are {n} nodes: it must be "
                f"{n} × {n} (row i has a 1 at column j when j is a neighbour of i)."
            )
        if not np.isin(adjacency, (0.0, 1.0)).all():
            raise UserError("--adjacency must hold only 0 and 1 (1: j is a neighbour of i).")
    edges(options.get("edges"), n)


def edges(value: Any, n: int) -> tuple[tuple[int, int], ...]:
    """The pairs of --edges ("0-1,1-2", or a list of pairs in a lesson file), nodes 0..n − 1."""
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    pairs = []
    for item in items:
        ends = item.split("-") if isinstance(item, str) else list(item)
        texts = [str(end).strip() for end in ends]
        if len(texts) != 2 or not all(text.isdigit() for text in texts):
            raise UserError(
                f"--edges {shortened(value)}: give node pairs i-j from 0, separated by commas, e.g. "
                '--edges "0-1,1-2,2-0".'
            )
        i, j = whole_number(texts[0], "--edges"), whole_number(texts[1], "--edges")
        if max(i, j) >= n:
            raise UserError(
                f"--edges names node {max(i, j)}, but there are {n} nodes: they run 0..{n - 1}."
            )
        pairs.append((i, j))
    return tuple(pairs)


def _size(array: np.ndarray) -> str:
    return f"{array.shape[0]} × {array.shape[1]}"


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Features H (n × d); with --dk, W_Q, W_K, W_V (d_k × d)."""
    n, d = sizes["n"], sizes["d"]
    shapes: dict[str, tuple[int, ...]] = {"H": (n, d)}
    if sizes.get("dk"):
        shapes.update({name: (sizes["dk"], d) for name in WEIGHT_NAMES})
    return shapes


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    n, d = shapes["H"]
    widths = sum(shapes[name][0] if name in shapes else d for name in WEIGHT_NAMES)
    return (_SCORE_MATRICES * n * n + 2 * n * widths) * itemsize


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    h = backend.asarray(run.inputs["H"])
    n, d = h.shape
    nodes = names(run, "tokens", n, "n")
    weights_in = {
        name: run.inputs[name] if name in run.inputs else np.eye(d) for name in WEIGHT_NAMES
    }
    record = StepRecorder(run)
    allowed = _allowed(run, h, n)
    listed = _edge_list(backend.to_numpy(allowed), nodes)
    d_k, d_v = weights_in["W_Q"].shape[0], weights_in["W_V"].shape[0]
    context: dict[str, Any] = {"n": n, "d": d, "dk": d_k, "dv": d_v, "sqrt_dk": math.sqrt(d_k)}
    context["edges"] = listed
    grid = Grid(nodes, nodes, context)
    rows = Grid(nodes, context=context)
    adjacency_notes = [record.note("self_loops")] if run.options.get("self_loops") else []
    if "A" not in run.inputs and not run.options.get("edges"):
        adjacency_notes.append(record.note("random_graph", seed=run.seed))
    record.add("adjacency", allowed, grid=grid, notes=tuple(adjacency_notes))
    mask_np = backend.to_numpy(allowed)
    record.add(
        "neighbours",
        [
            {
                "node": nodes[i],
                "neighbours": ", ".join(nodes[j] for j in np.flatnonzero(mask_np[i])) or "∅",
                "degree": int(np.count_nonzero(mask_np[i])),
            }
            for i in range(n)
        ],
        kind="records",
        grid=Grid(context=context),
    )
    q, k, v = (
        record.compute(
            key, functools.partial(_project, h, backend.asarray(weights_in[name])), grid=rows
        )
        for key, name in zip(("Q", "K", "V"), WEIGHT_NAMES, strict=True)
    )
    scores = record.compute("scores", lambda: mech.scale(mech.scores(q, k), d_k), grid=grid)
    used, total = local.computed_scores(allowed)
    mask = record.compute(
        "mask",
        lambda: masks.additive(allowed, scores),
        grid=grid,
        notes=(record.note("count", used=used, total=total, percent=100.0 * used / total),),
    )
    masked = record.compute("masked", lambda: scores + mask, grid=grid)
    lonely = [nodes[i] for i in range(n) if not mask_np[i].any()]
    weights = record.softmax(
        "weights",
        masked,
        grid=grid,
        notes_of=lambda _: (record.note("isolated", nodes=", ".join(lonely)),) if lonely else (),
    )
    if lonely:
        weights = record.compute(
            "zeroed", lambda: masks.zero_empty_rows(weights, allowed), grid=grid
        )
    output = record.compute("output", lambda: mech.weighted_sum(weights, v), grid=rows)
    meta = {
        # N(i) by node index (from 0): JSON facts hold no bare list of lists.
        "neighbours": {str(i): np.flatnonzero(mask_np[i]).tolist() for i in range(n)},
        "isolated": [i for i in range(n) if not mask_np[i].any()],
        "scores_used": used,
        "scores_full": total,
    }
    return record.walkthrough(output, inputs=_labelled_inputs(run, nodes), meta=meta)


def _project(h: Any, w: Any) -> Any:
    """The lecture's q_i = W_Q h_i for every node at once: row i of H W_Qᵀ."""
    return h @ namespace_of(w).matrix_transpose(w)  # (n, d) @ (d, d_k) -> (n, d_k)


def _allowed(run: LessonRun, h: Any, n: int) -> Any:
    """The neighbour mask: True at (i, j) when j ∈ N(i)."""
    self_loops = bool(run.options.get("self_loops"))
    like = run.backend.asarray(np.zeros((n, n)))  # the backend's dtype and device
    if "A" in run.inputs:
        return local.adjacency_allowed(run.backend.asarray(run.inputs["A"]), self_loops)
    pairs = edges(run.options.get("edges"), n)
    directed = bool(run.options.get("directed"))
    if not pairs:
        if "H" not in run.drawn:
            raise UserError(
                'give the graph: --edges "0-1,1-2" (nodes from 0) or --adjacency with a '
                f"{n} × {n} 0/1 matrix."
            )
        rng = np.random.default_rng((run.seed, 1))  # the features came from default_rng(seed)
        upper = np.triu(rng.random((n, n)) < EDGE_PROBABILITY, k=1)
        pairs = tuple((int(i), int(j)) for i, j in zip(*np.nonzero(upper), strict=True))
    return local.graph_allowed(like, pairs, directed=directed, self_loops=self_loops)


# The explanation lists at most this many of the pairs (the neighbours table lists them all).
_LISTED_PAIRS = 12


def _edge_list(allowed: np.ndarray, nodes: tuple[str, ...]) -> str:
    """The neighbour pairs as text, "n0→n1, n1→n0, …"."""
    pairs = list(zip(*np.nonzero(allowed), strict=True))
    text = ", ".join(f"{nodes[i]}→{nodes[j]}" for i, j in pairs[:_LISTED_PAIRS])
    return text + (", …" if len(pairs) > _LISTED_PAIRS else "")


def _labelled_inputs(run: LessonRun, nodes: tuple[str, ...]) -> tuple[InputValue, ...]:
    return tuple(
        InputValue(
            spec.name,
            run.inputs[spec.name],
            row_labels=nodes if spec.name in ("H", "A") else None,
            description=spec.description,
        )
        for spec in CARD.inputs
        if spec.name in run.inputs
    )


# The values every step text of this lesson may read.
CONTEXT = ("n", "d", "dk", "dv", "sqrt_dk", "edges")

TEXTS = Texts(
    steps={
        "adjacency": CONTEXT,
        "neighbours": CONTEXT,
        "Q": CONTEXT,
        "K": CONTEXT,
        "V": CONTEXT,
        "scores": CONTEXT,
        "mask": CONTEXT,
        "masked": CONTEXT,
        "weights": CONTEXT,
        "zeroed": CONTEXT,
        "output": CONTEXT,
    },
    notes={
        "self_loops": (),
        "random_graph": ("seed",),
        "count": ("used", "total", "percent"),
        "isolated": ("nodes",),
    },
)

LESSON = Lesson(
    card=CARD,
    labels=("tokens",),
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
    code="attn_cli.render.programs.graph",
)
