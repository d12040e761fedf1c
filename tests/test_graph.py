"""attn graph: seed 001's graph attention formulas computed with loops on the worked example,
the neighbour mask against PyTorch's SDPA with a boolean mask, the JSON contract, quiz and
check, and the user errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.lessonfiles.loader import bundled_lessons_dir
from tests.conftest import assert_user_error, unwrap
from tests.lesson_runs import Batch, Runs

# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "5", "--d", "3", "--dk", "2", "--seed", "3"),
    sized=lambda s: {"n": s, "d": s},
    large=("--n", "101", "--d", "2"),
    variants=(
        ("--n", "4", "--d", "2"),
        ("--n", "4", "--d", "2", "--edges", "0-1", "--self-loops"),
    ),
    options=({"self_loops": True},),
    batch=Batch(lambda draw: {"h": draw(3, 2)}, ("h",), options={"edges": "0-1,1-2"}),
)


# The bundled default example (lessons/graph.toml, "four-nodes").
H = [[1, 0], [0, 1], [1, 1], [2, 0]]
W_Q = [[1, 0], [1, 1]]
W_K = [[1, 1], [0, 1]]
W_V = [[1, 0], [0, 1]]
EDGES = [(0, 1), (1, 2), (2, 0), (2, 3)]


def steps_of(doc: dict) -> dict[str, dict]:
    return {step["key"]: step for step in doc["steps"]}


def neighbourhoods(n: int, edges, directed=False, self_loops=False) -> list[set[int]]:
    hood: list[set[int]] = [set() for _ in range(n)]
    for i, j in edges:
        hood[i].add(j)
        if not directed:
            hood[j].add(i)
    if self_loops:
        for i in range(n):
            hood[i].add(i)
    return hood


def matvec(w, x) -> list[float]:
    """W x for a matrix W (rows) and a column x: the seed's q_i = W_Q h_i."""
    return [sum(a * b for a, b in zip(row, x, strict=True)) for row in w]


def graph_attention_by_hand(h, wq, wk, wv, hood) -> tuple[list, list]:
    """The seed's formulas, node by node: s_ij = q_iᵀ k_j / √d_k for j ∈ N(i),
    w_ij = exp(s_ij) / Σ_{k ∈ N(i)} exp(s_ik), h'_i = Σ_{j ∈ N(i)} w_ij v_j (0 when N(i) = ∅)."""
    q = [matvec(wq, x) for x in h]
    k = [matvec(wk, x) for x in h]
    v = [matvec(wv, x) for x in h]
    d_k, n = len(wq), len(h)
    weights, updates = [], []
    for i in range(n):
        s = {
            j: sum(a * b for a, b in zip(q[i], k[j], strict=True)) / math.sqrt(d_k) for j in hood[i]
        }
        total = sum(math.exp(x) for x in s.values())
        row = [math.exp(s[j]) / total if j in s else 0.0 for j in range(n)]
        weights.append(row if s else [math.nan] * n)
        updates.append([sum(row[j] * v[j][c] for j in hood[i]) for c in range(len(v[0]))])
    return weights, updates


def test_worked_example_reproduces_the_lecture_formulas(invoke_json):
    doc = invoke_json("graph")
    assert doc["example"] == "four-nodes"
    steps = steps_of(doc)
    assert list(steps) == [
        "adjacency", "neighbours", "Q", "K", "V", "scores", "mask", "masked", "weights", "output",
    ]  # fmt: skip
    hood = neighbourhoods(4, EDGES)
    adjacency = [[j in hood[i] for j in range(4)] for i in range(4)]
    assert np.array_equal(np.array(unwrap(steps["adjacency"]["value"]), dtype=bool), adjacency)
    assert [row["degree"] for row in steps["neighbours"]["value"]] == [2, 2, 3, 1]
    assert steps["neighbours"]["value"][2]["neighbours"] == "n0, n1, n3"
    np.testing.assert_allclose(unwrap(steps["Q"]["value"]), [matvec(W_Q, x) for x in H])
    weights, updates = graph_attention_by_hand(H, W_Q, W_K, W_V, hood)
    np.testing.assert_allclose(unwrap(steps["weights"]["value"]), weights, atol=1e-12)
    np.testing.assert_allclose(unwrap(doc["output"]), updates, atol=1e-12)
    assert doc["output"]["shape"] == [4, 2]
    assert doc["meta"]["scores_used"] == 8 and doc["meta"]["scores_full"] == 16


def test_node_3_has_one_neighbour_so_it_copies_its_value(invoke_json):
    """N(3) = {2}: its one weight is 1, so h'_3 = v_2 = W_V h_2 = [1, 1]."""
    doc = invoke_json("graph")
    assert unwrap(steps_of(doc)["weights"]["value"])[3] == [0, 0, 1, 0]
    assert unwrap(doc["output"])[3] == pytest.approx([1, 1], abs=1e-15)


def test_a_lonely_node_gets_a_nan_row_then_zero(invoke_json):
    doc = invoke_json("graph", "--example", "lonely-node")
    steps = steps_of(doc)
    assert np.isnan(np.array(unwrap(steps["weights"]["value"])[4], dtype=float)).all()
    (note,) = steps["weights"]["notes"]
    assert note["key"] == "isolated" and note["values"]["nodes"] == "n4"
    assert unwrap(steps["zeroed"]["value"])[4] == [0, 0, 0, 0, 0]
    assert unwrap(doc["output"])[4] == [0, 0]
    assert doc["meta"]["isolated"] == [4]
    assert not [note for note in doc["notes"] if note["key"] == "overflow"]


def test_self_loops_leave_no_row_empty(invoke_json):
    doc = invoke_json("graph", "--example", "lonely-node-self-loops")
    steps = steps_of(doc)
    assert "zeroed" not in steps and doc["meta"]["isolated"] == []
    h = [*H, [0, 2]]
    _, updates = graph_attention_by_hand(h, W_Q, W_K, W_V, neighbourhoods(5, EDGES, False, True))
    np.testing.assert_allclose(unwrap(doc["output"]), updates, atol=1e-12)
    assert unwrap(doc["output"])[4] == pytest.approx([0, 2])  # only itself: its own value


def test_directed_adjacency_example(invoke_json):
    doc = invoke_json("graph", "--example", "directed-adjacency")
    hood = [{1}, {2}, {0}, {2}]
    eye = [[1, 0], [0, 1]]
    _, updates = graph_attention_by_hand(H, eye, eye, eye, hood)
    np.testing.assert_allclose(unwrap(doc["output"]), updates, atol=1e-12)


def test_edges_and_the_same_adjacency_agree(invoke_json):
    args = ("--h", "1,0;0,1;1,1;2,0", "--wq", "1,0;1,1")
    by_edges = invoke_json("graph", *args, "--edges", "0-1,1-2,2-0,2-3", "--directed")
    adjacency = "0,1,0,0;0,0,1,0;1,0,0,1;0,0,0,0"
    by_matrix = invoke_json("graph", *args, "--adjacency", adjacency)
    assert by_edges["output"] == by_matrix["output"]
    assert by_edges["meta"]["isolated"] == [3]


def sdpa_reference(torch, q, k, v, allowed):
    return torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(allowed)
    ).numpy()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_random_graphs_against_sdpa_with_a_boolean_mask(torch, backend):
    """Random sizes and graphs (isolated nodes included): the update against PyTorch's SDPA
    given N(i) as a boolean "may attend" mask, on q_i = W_Q h_i, k_j, v_j."""
    rng = np.random.default_rng(16)
    for trial in range(10):
        n, d, d_k, d_v = (int(x) for x in rng.integers(1, 9, size=4))
        h = rng.standard_normal((n, d))
        wq, wk = rng.standard_normal((d_k, d)), rng.standard_normal((d_k, d))
        wv = rng.standard_normal((d_v, d))
        adjacency = (rng.random((n, n)) < 0.4).astype(float)
        self_loops = bool(trial % 2)
        walk = attn.graph(
            h, wq=wq, wk=wk, wv=wv, adjacency=adjacency, self_loops=self_loops, backend=backend
        )
        allowed = adjacency.astype(bool) | (np.eye(n, dtype=bool) if self_loops else False)
        expected = sdpa_reference(torch, h @ wq.T, h @ wk.T, h @ wv.T, allowed)
        np.testing.assert_allclose(walk.output, expected, rtol=0, atol=1e-12)


def test_random_features_draw_a_random_graph(invoke_json):
    doc = invoke_json("graph", "--n", "6", "--d", "3", "--seed", "2")
    assert doc["output"]["shape"] == [6, 3]
    hood = doc["meta"]["neighbours"]
    pairs = {(int(i), j) for i, row in hood.items() for j in row}
    assert pairs and pairs == {(j, i) for i, j in pairs}  # drawn from the seed, undirected
    assert invoke_json("graph", "--n", "6", "--d", "3", "--seed", "2")["meta"] == doc["meta"]


def test_random_features_on_a_given_graph(invoke_json):
    doc = invoke_json("graph", "--n", "4", "--dk", "2", "--edges", "0-1,2-3")
    assert doc["meta"]["neighbours"] == {"0": [1], "1": [0], "2": [3], "3": [2]}
    assert doc["output"]["shape"] == [4, 2]


def test_check_passes_on_the_bundled_file(invoke):
    result = invoke("check", str(bundled_lessons_dir() / "graph.toml"))
    assert result.exit_code == 0, result.output
    assert "lonely-node" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--h", "1,0;0,1"), "give the graph"),
        (("--h", "1,0;0,1", "--edges", "0-2"), "there are 2 nodes: they run 0..1"),
        (("--h", "1,0;0,1", "--edges", "0,1"), "give node pairs i-j"),
        (("--h", "1,0;0,1", "--adjacency", "0,2;1,0"), "only 0 and 1"),
        (("--h", "1,0;0,1", "--adjacency", "0,1"), "must be 2 × 2"),
        (("--h", "1,0;0,1", "--adjacency", "0,1;1,0", "--edges", "0-1"), "not both"),
        (("--h", "1,0;0,1", "--edges", "0-1", "--wq", "1,2,3"), "needs 2 columns"),
        (("--h", "1,0;0,1", "--edges", "0-1", "--wq", "1,0"), "give both"),
        (("--h", "1,0;0,1", "--edges", "0-1", "--wq", "1,0;0,1", "--wk", "1,0"), "share d_k"),
    ],
)
def test_user_errors(invoke, args, fragment):
    assert_user_error(invoke("graph", *args), fragment)


def test_says_which_score_and_neighbourhood_it_uses(invoke_json):
    """Issue 22: N(i) leaves i out by default without saying that GAT adds self-loops, and the
    score is the dot-product one, not GAT's additive LeakyReLU score; "the seed's formulas"
    (seed is also the random seed) names nothing a student knows."""
    from attn_cli.lessonfiles.loader import bundled_lessons_dir, load_bundled

    text = (bundled_lessons_dir() / "graph.toml").read_text(encoding="utf-8")
    assert "seed's" not in text and "the seed writes" not in text
    intro = load_bundled("graph").intro
    assert "Veličković et al., 2018" in intro and "LeakyReLU" in intro
    assert "here N(i) holds i only with --self-loops" in intro
    doc = invoke_json("graph")
    steps = steps_of(doc)
    assert "GAT's own" in steps["scores"]["explanation"]
    assert "only where the graph has a self-loop" in steps["neighbours"]["explanation"]
    # The default graph has no self-loop: no node is its own neighbour (the diagonal is 0).
    assert not np.diag(np.array(unwrap(steps["adjacency"]["value"]), dtype=bool)).any()
    looped = steps_of(invoke_json("graph", "--example", "lonely-node-self-loops"))
    assert np.diag(np.array(unwrap(looped["adjacency"]["value"]), dtype=bool)).all()
