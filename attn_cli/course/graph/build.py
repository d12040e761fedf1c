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
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core import variants
from attn_cli.core.backend import namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.matrices import shortened, whole_number
from attn_cli.core.model import InputValue, Note, Walkthrough
from attn_cli.course.graph.card import CARD
from attn_cli.course.lesson import Lesson, LessonRun
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.course.window.build import names
from attn_cli.lessonfiles.texts import Texts
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import gat, local, masks

WEIGHT_NAMES = ("W_Q", "W_K", "W_V")
GAT_NAMES = ("W", "a")
# (N × N) matrices alive at once: adjacency, scores, M, masked, softmax parts (exp by
# hand among them), weights.
_SCORE_MATRICES = 11
# A random graph (random features, no --edges or --adjacency) has each pair as an edge with
# this probability.
EDGE_PROBABILITY = 0.5

# Edges as a user writes them, for the messages (quoted as the command line and Python take them).
EDGES_EXAMPLE = '"0-1,1-2,2-0"'
EDGES_SHORT = '"0-1,1-2"'


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    h = inputs["H"]
    n, d = h.shape
    for name in WEIGHT_NAMES:
        if name in inputs and inputs[name].shape[1] != d:
            raise UserError(
                f"{CARD.param(name)} is {_size(inputs[name])} but the features are "
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
                f"{CARD.param(name)} gives d_k = {inputs[name].shape[0]} but "
                f"{CARD.param(other)} is the identity (d_k = d = {d}); give both."
            )
    if "A" in inputs:
        if options.get("edges"):
            raise UserError(
                f"give the graph one way: {param('edges')} or {param('adjacency')}, not both."
            )
        adjacency = inputs["A"]
        if adjacency.shape != (n, n):
            raise UserError(
                f"{param('adjacency')} is {_size(adjacency)} but there are {n} nodes: it must be "
                f"{n} × {n} (row i has a 1 at column j when j is a neighbour of i)."
            )
        if not np.isin(adjacency, (0.0, 1.0)).all():
            raise UserError(
                f"{param('adjacency')} must hold only 0 and 1 (1: j is a neighbour of i)."
            )
    edges(options.get("edges"), n)
    _check_gat(inputs, options, d)


def score_of(options: dict[str, Any]) -> str:
    """--score: dot (the lecture's), additive (GAT) or gatv2."""
    score = options.get("score") or "dot"
    if score not in variants.GRAPH_SCORES:
        raise UserError(
            f"{param('score', repr(score))}: choose one of {', '.join(variants.GRAPH_SCORES)}."
        )
    return str(score)


def _check_gat(inputs: dict[str, np.ndarray], options: dict[str, Any], d: int) -> None:
    """W and a belong to GAT's scores, √d_k to the dot product's; their shapes fit d."""
    score = score_of(options)
    if score == "dot":
        given = [CARD.param(name) for name in GAT_NAMES if name in inputs]
        if given:
            raise UserError(
                f"{' and '.join(given)} {'belongs' if len(given) == 1 else 'belong'} to GAT's "
                f"score: add {param('score', 'additive')} (or gatv2); "
                f"the dot-product score uses {param('wq')}, {param('wk')} and {param('wv')}."
            )
        return
    if options.get("scale") is False:
        raise UserError(
            f"{param('scale', False)} changes the dot-product score; {param('score', score)} has "
            f"no 1/√d_k to leave out: drop {param('scale', False)}, or use {param('score', 'dot')}."
        )
    columns = d if score == "additive" else 2 * d
    if "W" in inputs and inputs["W"].shape[1] != columns:
        where = "z_i = W h_i" if score == "additive" else "W [h_i ‖ h_j] reads 2·d entries"
        raise UserError(
            f"{param('w')} is {_size(inputs['W'])} but {param('score', score)} needs {columns} columns "
            f"({where}, d = {d})."
        )
    width = inputs["W"].shape[0] if "W" in inputs else d
    entries = 2 * width if score == "additive" else width
    if "a" in inputs and inputs["a"].shape[0] != entries:
        what = (
            "aᵀ [W h_i ‖ W h_j]: 2·d'" if score == "additive" else "aᵀ LeakyReLU(W [h_i ‖ h_j]): d'"
        )
        raise UserError(
            f"{param('a')} has {inputs['a'].shape[0]} entries but {param('score', score)} needs {entries} "
            f"({what}, d' = {width} rows of W)."
        )


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
                f"{param('edges', shortened(value))}: give node pairs i-j from 0, separated by commas, e.g. "
                f"{param('edges', EDGES_EXAMPLE)}."
            )
        i, j = whole_number(texts[0], param("edges")), whole_number(texts[1], param("edges"))
        if max(i, j) >= n:
            raise UserError(
                f"{param('edges')} names node {max(i, j)}, but there are {n} nodes: they run 0..{n - 1}."
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
    # gatv2: the pairs' W [h_i ‖ h_j] and its LeakyReLU, n² × d' each.
    pairs = 2 * n * n * (shapes["W"][0] if "W" in shapes else d)
    gatv2 = options.get("score") == "gatv2"
    return (_SCORE_MATRICES * n * n + 2 * n * widths + (pairs if gatv2 else 0)) * itemsize


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    h = backend.asarray(run.inputs["H"])
    n, d = h.shape
    nodes = names(run, "tokens", n, "n")
    score = score_of(run.options)
    record = StepRecorder(run)
    allowed = _allowed(run, h, n)
    listed = _edge_list(backend.to_numpy(allowed), nodes)
    if score == "dot":
        d_k, d_v = (
            run.inputs[name].shape[0] if name in run.inputs else d for name in ("W_Q", "W_V")
        )
    else:
        d_k = d_v = run.inputs["W"].shape[0] if "W" in run.inputs else d  # d', the width of W h
    context: dict[str, Any] = {"n": n, "d": d, "dk": d_k, "dv": d_v, "sqrt_dk": math.sqrt(d_k)}
    context["edges"] = listed
    if score != "dot":
        context["dp"] = d_k  # d', the width of W h
    grid = Grid(nodes, nodes, context)
    rows = Grid(nodes, context=context)
    adjacency_notes = [record.note("self_loops")] if run.options.get("self_loops") else []
    if "A" not in run.inputs and not run.options.get("edges"):
        adjacency_notes.append(record.note("random_graph", seed=run.seed))
    if score != "dot" and not run.options.get("self_loops"):
        adjacency_notes.append(record.note("gat_without_self_loops"))
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
    if score == "dot":
        scores, v = _dot_scores(run, record, h, rows, grid)
    else:
        scores, v = _gat_scores(run, record, h, score, nodes, grid, mask_np)
    e = "" if score == "dot" else "_e"  # GAT's texts name the scores e_ij and the weights α_ij
    used, total = local.computed_scores(allowed)
    mask = record.compute(
        "mask",
        lambda: masks.additive(allowed, scores),
        grid=grid,
        notes=(record.note("count", used=used, total=total, percent=100.0 * used / total),),
    )
    masked = record.compute("masked", lambda: scores + mask, grid=grid, text="masked" + e)
    lonely = [nodes[i] for i in range(n) if not mask_np[i].any()]
    weights = record.softmax(
        "weights",
        masked,
        grid=grid,
        text="weights" + e,
        notes_of=lambda _: (record.note("isolated", nodes=", ".join(lonely)),) if lonely else (),
    )
    if lonely:
        weights = record.compute(
            "zeroed", lambda: masks.zero_empty_rows(weights, allowed), grid=grid
        )
    output = record.compute(
        "output",
        lambda: mech.weighted_sum(weights, v),
        grid=rows,
        text="output" if score == "dot" else f"output_{score}",
    )
    meta = {
        # N(i) by node index (from 0): JSON facts hold no bare list of lists.
        "neighbours": {str(i): np.flatnonzero(mask_np[i]).tolist() for i in range(n)},
        "isolated": [i for i in range(n) if not mask_np[i].any()],
        "scores_used": used,
        "scores_full": total,
        "score": score,
    }
    notes: tuple[Note, ...] = ()
    # The inputs the note names, each spelt by the door that asked (wq, or --wq).
    keyword_of = {spec.name: spec.keyword for spec in CARD.inputs}
    unused = [run.door.words(param(keyword_of[n])) for n in WEIGHT_NAMES if n in run.inputs]
    if score != "dot" and unused:
        given = run.door.words(param("score", score))  # score=additive, or --score additive
        notes = (
            record.note("unused_projections", flags=", ".join(unused), score=score, given=given),
        )
    inputs = _labelled_inputs(run, nodes, score)
    return record.walkthrough(output, inputs=inputs, notes=notes, meta=meta)


def _dot_scores(
    run: LessonRun, record: StepRecorder, h: Any, rows: Grid, grid: Grid
) -> tuple[Any, Any]:
    """The lecture's projections and dot-product scores (÷ √d_k unless --no-scale); (S, V)."""
    d = h.shape[1]
    weights_in = {
        name: run.inputs[name] if name in run.inputs else np.eye(d) for name in WEIGHT_NAMES
    }
    q, k, v = (
        record.compute(
            key, functools.partial(_project, h, run.backend.asarray(weights_in[name])), grid=rows
        )
        for key, name in zip(("Q", "K", "V"), WEIGHT_NAMES, strict=True)
    )
    d_k = weights_in["W_Q"].shape[0]
    if run.options.get("scale") is False:
        scores = record.compute("scores", lambda: mech.scores(q, k), grid=grid, text="unscaled")
    else:
        scores = record.compute("scores", lambda: mech.scale(mech.scores(q, k), d_k), grid=grid)
    return scores, v


def gat_weights(run: LessonRun, d: int, score: str) -> tuple[np.ndarray, np.ndarray]:
    """(W, a) as given, else W the identity ([I I] for gatv2) and a drawn from --seed."""
    if "W" in run.inputs:
        w = run.inputs["W"]
    else:
        w = np.eye(d) if score == "additive" else np.hstack([np.eye(d), np.eye(d)])
    width = w.shape[0]
    if "a" in run.inputs:
        return w, run.inputs["a"]
    rng = np.random.default_rng((run.seed, 2))  # the graph drew from (seed, 1)
    return w, rng.standard_normal(2 * width if score == "additive" else width)


def _gat_scores(
    run: LessonRun,
    record: StepRecorder,
    h: Any,
    score: str,
    nodes: tuple[str, ...],
    grid: Grid,
    allowed: np.ndarray,
) -> tuple[Any, Any]:
    """GAT's or GATv2's scores e_ij for every pair, each intermediate a step; (e, the values)."""
    n, d = h.shape
    w_np, a_np = gat_weights(run, d, score)
    w, a = run.backend.asarray(w_np), run.backend.asarray(a_np)
    context = grid.context
    rows = Grid(nodes, context=context)
    drawn = () if "a" in run.inputs else (record.note("a_drawn", seed=run.seed),)
    if score == "additive":
        z = record.compute("Wh", lambda: gat.project(h, w), grid=rows, notes=drawn)
        halves = record.compute(
            "halves",
            lambda: gat.gat_halves(z, a),
            grid=Grid(nodes, HALVES, context),
        )
        sums = record.compute("pair_sums", lambda: gat.gat_pair_sums(halves), grid=grid)
        sums_np = record.to_numpy(sums)
        notes = _negative_note(record, "negative_sums", sums_np, allowed)
        scores = record.compute(
            "leaky",
            lambda: gat.leaky_relu(sums),
            grid=grid,
            notes=notes + _static_note(record, record.to_numpy(halves)[:, 1], nodes, allowed),
        )
        return scores, z
    target, neighbour = gat.gatv2_halves(h, w)
    record.add("Wh_target", target, grid=rows, notes=drawn)
    record.add("Wh_neighbour", neighbour, grid=rows)
    pairs = tuple(f"{nodes[i]}→{nodes[j]}" for i in range(n) for j in range(n))
    by_pair = Grid(pairs, context=context)
    sums = record.compute(
        "pair_sums_v2", lambda: gat.gatv2_pair_sums(target, neighbour), grid=by_pair
    )
    sums_np = record.to_numpy(sums).reshape(n, n, -1)
    notes = _negative_note(record, "negative_entries", sums_np, allowed)
    activated = record.compute("leaky_v2", lambda: gat.leaky_relu(sums), grid=by_pair, notes=notes)
    scores = record.compute("scores_v2", lambda: gat.gatv2_scores(activated, a, n), grid=grid)
    return scores, neighbour


# The column labels of GAT's two halves of aᵀ [W h_i ‖ W h_j].
HALVES = ("a_leftᵀ W h_i", "a_rightᵀ W h_j")


def _negative_note(
    record: StepRecorder, key: str, sums: np.ndarray, allowed: np.ndarray
) -> tuple[Note, ...]:
    """How many of the neighbour pairs' pre-activations LeakyReLU scales by its slope."""
    count, total = _negatives(sums, allowed)
    if not count:
        return ()
    return (record.note(key, count=count, total=total, slope=gat.LEAKY_SLOPE),)


def _negatives(sums: np.ndarray, allowed: np.ndarray) -> tuple[int, int]:
    """(negative entries, entries) of the pre-activations over the neighbour pairs: sums is
    n × n (GAT) or n × n × d' (GATv2)."""
    chosen = sums[allowed.astype(bool)]  # (pairs,) or (pairs, d')
    return int(np.count_nonzero(chosen < 0)), int(chosen.size)


def _static_note(
    record: StepRecorder, right: np.ndarray, nodes: tuple[str, ...], allowed: np.ndarray
) -> tuple[Note, ...]:
    """GAT's ranking is static: the neighbour with the largest a_rightᵀ W h_j wins every row."""
    cited = np.flatnonzero(allowed.any(axis=0))  # nodes that are someone's neighbour
    if not cited.size or not np.isfinite(right).all():
        return ()
    best = int(cited[np.argmax(right[cited])])
    rows = int(np.count_nonzero(allowed[:, best]))
    return (record.note("static", node=nodes[best], rows=rows),)


def negatives_counted(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of negative_sums / negative_entries: that many of the neighbour pairs'
    pre-activations are negative, out of that many."""
    allowed = np.asarray(walkthrough.step("adjacency"), dtype=bool)
    n = allowed.shape[0]
    if walkthrough.meta.get("score") == "additive":
        sums = np.asarray(walkthrough.step("pair_sums"), dtype=np.float64)  # (n, n)
    else:
        sums = np.asarray(walkthrough.step("pair_sums_v2"), dtype=np.float64).reshape(n, n, -1)
    count, total = _negatives(sums, allowed)
    return count >= 1 and (count, total) == (values.get("count"), values.get("total"))


def static_ranking(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Claim of static: the named node has the largest a_rightᵀ W h_j of every node that is a
    neighbour, is a neighbour in ``rows`` rows, and has the largest weight in each of them,
    larger than every other neighbour's (not tied)."""
    allowed = np.asarray(walkthrough.step("adjacency"), dtype=bool)
    halves = walkthrough.find("halves")
    labels = list(halves.row_labels or ())
    if values.get("node") not in labels:
        return False
    best = labels.index(values["node"])
    right = np.asarray(halves.value, dtype=np.float64)[:, 1]
    cited: np.ndarray = np.any(allowed, axis=0)
    if not cited[best] or right[best] < right[cited].max():
        return False
    weights = np.asarray(walkthrough.step("weights"), dtype=np.float64)
    rows = np.flatnonzero(allowed[:, best])
    if len(rows) != values.get("rows"):
        return False
    for i in rows:  # strictly: a weight tied with another neighbour's is not "the largest"
        others = allowed[i].copy()
        others[best] = False
        if others.any() and not weights[i, best] > np.max(weights[i][others]):
            return False
    return True


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
                f"give the graph: {param('edges', EDGES_SHORT)} (nodes from 0) or {param('adjacency')} with a "
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


def _labelled_inputs(run: LessonRun, nodes: tuple[str, ...], score: str) -> tuple[InputValue, ...]:
    """The inputs shown: GAT's W and a (as used, given or not) with --score additive or gatv2."""
    shown = tuple(
        InputValue(
            spec.name,
            run.inputs[spec.name],
            row_labels=nodes if spec.name in ("H", "A") else None,
            description=spec.description,
        )
        for spec in CARD.inputs
        if spec.name in run.inputs and spec.name not in GAT_NAMES
    )
    if score == "dot":
        return shown
    w, a = gat_weights(run, run.inputs["H"].shape[1], score)
    described = {spec.name: spec.description for spec in CARD.inputs}
    return (
        *shown,
        InputValue("W", w, description=described["W"]),
        InputValue("a", a, description=described["a"]),
    )


# The values every step text of this lesson may read.
CONTEXT = ("n", "d", "dk", "dv", "sqrt_dk", "edges")
GAT_CONTEXT = (*CONTEXT, "dp")

TEXTS = Texts(
    steps={
        "adjacency": CONTEXT,
        "neighbours": CONTEXT,
        "Q": CONTEXT,
        "K": CONTEXT,
        "V": CONTEXT,
        "scores": CONTEXT,
        "unscaled": CONTEXT,  # --no-scale
        # --score additive (GAT) and gatv2: d' is the width of W h.
        **dict.fromkeys(("Wh", "halves", "pair_sums", "leaky"), GAT_CONTEXT),
        **dict.fromkeys(("Wh_target", "Wh_neighbour", "pair_sums_v2"), GAT_CONTEXT),
        **dict.fromkeys(("leaky_v2", "scores_v2"), GAT_CONTEXT),
        "mask": CONTEXT,
        "masked": CONTEXT,
        "masked_e": GAT_CONTEXT,
        "weights": CONTEXT,
        "weights_e": GAT_CONTEXT,
        "zeroed": CONTEXT,
        "output": CONTEXT,
        **dict.fromkeys(("output_additive", "output_gatv2"), GAT_CONTEXT),
    },
    notes={
        "self_loops": (),
        "random_graph": ("seed",),
        "count": ("used", "total", "percent"),
        "isolated": ("nodes",),
        "gat_without_self_loops": (),
        "a_drawn": ("seed",),
        "unused_projections": ("flags", "score", "given"),
        "negative_sums": ("count", "total", "slope"),
        "negative_entries": ("count", "total", "slope"),
        "static": ("node", "rows"),
    },
    claims={
        "negative_sums": negatives_counted,
        "negative_entries": negatives_counted,
        "static": static_ranking,
    },
    measured=(
        "count",
        "isolated",
    ),
    general=(
        "self_loops",
        "random_graph",
        "gat_without_self_loops",
        "a_drawn",
        "unused_projections",
    ),
)

LESSON = Lesson(
    card=CARD,
    labels=("tokens",),
    validate=validate,
    random_shapes=random_shapes,
    estimate_bytes=estimate_bytes,
    build=build,
    texts=TEXTS,
    # GAT's W and a may be given on top of an example (its graph and features, with --score).
    example_overrides=frozenset(GAT_NAMES),
)
