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
        # GAT on the default example: W_Q.. unused, a drawn, no self-loops (each a note).
        ("--score", "additive"),
        ("--score", "gatv2", "--self-loops", "--w", "1,0,-1,0;0,1,0,-1"),
        ("--no-scale",),
    ),
    options=(
        {"self_loops": True},
        {"score": "additive"},
        {"score": "additive", "self_loops": True},
        {"score": "gatv2"},
        {"scale": False},
    ),
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
    assert "Veličković et al., 2018" in load_bundled("graph").intro
    doc = invoke_json("graph")
    intro = " ".join(attn.graph().intro.split())  # as the Python API spells its parameters
    assert "LeakyReLU" in intro and "here N(i) holds i only with self_loops=True" in intro
    steps = steps_of(doc)
    assert "GAT's own" in steps["scores"]["explanation"]
    assert "only where the graph has a self-loop" in steps["neighbours"]["explanation"]
    # The default graph has no self-loop: no node is its own neighbour (the diagonal is 0).
    assert not np.diag(np.array(unwrap(steps["adjacency"]["value"]), dtype=bool)).any()
    looped = steps_of(invoke_json("graph", "--example", "lonely-node-self-loops"))
    assert np.diag(np.array(unwrap(looped["adjacency"]["value"]), dtype=bool)).all()


# GAT and GATv2 (issue 24, part 5): the additive scores against a direct formula, node by node.


def leaky(x: float) -> float:
    return x if x > 0 else 0.2 * x


def gat_by_hand(h, w, a, hood, version: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Veličković et al.'s e_ij = LeakyReLU(aᵀ [W h_i ‖ W h_j]) (version 1) or Brody et al.'s
    e_ij = aᵀ LeakyReLU(W [h_i ‖ h_j]) (version 2), softmax over N(i), h'_i = Σ α_ij W h_j
    (GATv2: W_right h_j, W's last d columns); a row with no neighbour: NaN weights, update 0."""
    h, w, a = (np.asarray(x, dtype=float) for x in (h, w, a))
    n, d = h.shape
    weights = np.full((n, n), np.nan)
    updates = np.zeros((n, w.shape[0]))
    for i in range(n):
        e = {}
        for j in sorted(hood[i]):
            if version == 1:
                e[j] = leaky(float(a @ np.concatenate([w @ h[i], w @ h[j]])))
            else:
                pre = w @ np.concatenate([h[i], h[j]])
                e[j] = float(a @ np.array([leaky(x) for x in pre]))
        if not e:
            continue
        top = max(e.values())
        total = sum(math.exp(x - top) for x in e.values())
        weights[i] = 0.0
        for j, x in e.items():
            weights[i, j] = math.exp(x - top) / total
            message = w @ h[j] if version == 1 else w[:, d:] @ h[j]
            updates[i] += weights[i, j] * message
    return weights, updates


def random_graph(rng, n) -> tuple[np.ndarray, list[set[int]]]:
    adjacency = (rng.random((n, n)) < 0.4).astype(float)
    return adjacency, [set(np.flatnonzero(row).tolist()) for row in adjacency]


@pytest.mark.parametrize("version", [1, 2])
def test_gat_and_gatv2_against_the_direct_formula(version):
    """Random sizes and graphs (isolated nodes and self-loops included): weights and updates of
    --score additive / gatv2 against the papers' formulas computed pair by pair."""
    rng = np.random.default_rng(24 + version)
    worst = 0.0
    for trial in range(12):
        n, d, width = (int(x) for x in rng.integers(1, 7, size=3))
        h = rng.standard_normal((n, d))
        w = rng.standard_normal((width, d if version == 1 else 2 * d))
        a = rng.standard_normal(2 * width if version == 1 else width)
        adjacency, hood = random_graph(rng, n)
        self_loops = bool(trial % 2)
        if self_loops:
            hood = [row | {i} for i, row in enumerate(hood)]
        score = "additive" if version == 1 else "gatv2"
        walk = attn.graph(h, w=w, a=a, adjacency=adjacency, self_loops=self_loops, score=score)
        weights, updates = gat_by_hand(h, w, a, hood, version)
        np.testing.assert_allclose(walk.step("weights"), weights, rtol=0, atol=1e-13)
        np.testing.assert_allclose(walk.output, updates, rtol=0, atol=1e-13)
        worst = max(worst, float(np.max(np.abs(walk.output - updates), initial=0.0)))
    assert worst < 1e-13


def gat_like_torch_geometric(torch, h, w, a, allowed, version: int):
    """GATConv / GATv2Conv (heads=1, no bias, no dropout, concat) written out in torch as PyTorch
    Geometric computes them: over an edge list (source j → target i, j ∈ N(i)), a softmax per
    target by scatter (amax, exp, index_add), then the messages summed with index_add."""
    h, w, a = (torch.tensor(x, dtype=torch.float64) for x in (h, w, a))
    target, source = (torch.tensor(x) for x in np.nonzero(allowed))  # edge j → i
    n, d = h.shape
    width = w.shape[0]
    if version == 1:
        x = h @ w.T  # lin
        alpha = (x * a[:width]).sum(-1)[target] + (x * a[width:]).sum(-1)[
            source
        ]  # att_dst, att_src
        alpha = torch.nn.functional.leaky_relu(alpha, 0.2)
        messages = x[source]
    else:
        x_r, x_l = h @ w[:, :d].T, h @ w[:, d:].T  # lin_r reads the target, lin_l the source
        alpha = (torch.nn.functional.leaky_relu(x_r[target] + x_l[source], 0.2) * a).sum(-1)
        messages = x_l[source]
    top = torch.full((n,), -math.inf, dtype=torch.float64).scatter_reduce(
        0, target, alpha, reduce="amax"
    )
    e = torch.exp(alpha - top[target])
    total = torch.zeros(n, dtype=torch.float64).index_add(0, target, e)
    alpha = e / total[target]
    out = torch.zeros((n, width), dtype=torch.float64).index_add(
        0, target, alpha[:, None] * messages
    )
    return out.numpy()


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_gat_against_a_torch_edge_list_reference(torch, version, backend):
    """torch_geometric is not a dependency: the same computation written as its GATConv and
    GATv2Conv do it (edge list, scatter softmax), with the same W and a, to float64 rounding."""
    rng = np.random.default_rng(7 + version)
    for _ in range(8):
        n, d, width = (int(x) for x in rng.integers(1, 7, size=3))
        h = rng.standard_normal((n, d))
        w = rng.standard_normal((width, d if version == 1 else 2 * d))
        a = rng.standard_normal(2 * width if version == 1 else width)
        adjacency, _ = random_graph(rng, n)
        allowed = adjacency.astype(bool) | np.eye(n, dtype=bool)  # GAT's self-loops
        score = "additive" if version == 1 else "gatv2"
        walk = attn.graph(
            h, w=w, a=a, adjacency=adjacency, self_loops=True, score=score, backend=backend
        )
        expected = gat_like_torch_geometric(torch, h, w, a, allowed, version)
        np.testing.assert_allclose(walk.output, expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("version", [1, 2])
def test_gat_against_torch_geometric_when_installed(version):
    """GATConv / GATv2Conv themselves, where torch_geometric is installed (it is not a dev
    dependency: skipped cleanly otherwise)."""
    pyg = pytest.importorskip("torch_geometric.nn")
    import torch

    rng = np.random.default_rng(3)
    n, d, width = 5, 3, 4
    h = rng.standard_normal((n, d))
    w = rng.standard_normal((width, d if version == 1 else 2 * d))
    a = rng.standard_normal(2 * width if version == 1 else width)
    adjacency, _ = random_graph(rng, n)
    target, source = np.nonzero(adjacency)
    edge_index = torch.tensor(np.stack([source, target]))
    if version == 1:
        layer = pyg.GATConv(d, width, heads=1, bias=False, add_self_loops=True).double()
        layer.lin.weight.data = torch.tensor(w)
        layer.att_dst.data = torch.tensor(a[:width]).view(1, 1, width)
        layer.att_src.data = torch.tensor(a[width:]).view(1, 1, width)
        score = "additive"
    else:
        layer = pyg.GATv2Conv(d, width, heads=1, bias=False, add_self_loops=True).double()
        layer.lin_r.weight.data = torch.tensor(w[:, :d])
        layer.lin_l.weight.data = torch.tensor(w[:, d:])
        layer.att.data = torch.tensor(a).view(1, 1, width)
        score = "gatv2"
    expected = layer(torch.tensor(h), edge_index).detach().numpy()
    walk = attn.graph(h, w=w, a=a, adjacency=adjacency, self_loops=True, score=score)
    np.testing.assert_allclose(walk.output, expected, rtol=0, atol=1e-12)


def test_gat_worked_example_by_hand(invoke_json):
    """gat-four-nodes: z = W h = (1,1), (0,1), (1,2), (2,2); a = (1, −1, 1, −0.5), so
    a_leftᵀ z_i = z_i1 − z_i2 = 0, −1, −1, 0 and a_rightᵀ z_j = z_j1 − 0.5 z_j2 = 0.5, −0.5, 0,
    1; node 3's neighbours (self-loop on) are 2 and 3: e = LeakyReLU(0 + 0), LeakyReLU(0 + 1)."""
    doc = invoke_json("graph", "--example", "gat-four-nodes")
    steps = steps_of(doc)
    assert list(steps) == [
        "adjacency", "neighbours", "Wh", "halves", "pair_sums", "leaky", "mask", "masked",
        "weights", "output",
    ]  # fmt: skip
    assert unwrap(steps["Wh"]["value"]) == [[1, 1], [0, 1], [1, 2], [2, 2]]
    assert unwrap(steps["halves"]["value"]) == [[0, 0.5], [-1, -0.5], [-1, 0], [0, 1]]
    assert unwrap(steps["pair_sums"]["value"])[1] == [-0.5, -1.5, -1, 0]
    assert unwrap(steps["leaky"]["value"])[1] == pytest.approx([-0.1, -0.3, -0.2, 0])
    row3 = unwrap(steps["weights"]["value"])[3]
    assert row3 == pytest.approx([0, 0, 1 / (1 + math.e), math.e / (1 + math.e)], abs=1e-15)
    assert unwrap(doc["output"])[3] == pytest.approx(
        [(1 + 2 * math.e) / (1 + math.e), (2 + 2 * math.e) / (1 + math.e)], abs=1e-15
    )
    # Negative pre-activations over the 12 neighbour pairs: (n0, n1), and n1's and n2's
    # neighbours n0, n1, n2 (n2 → n3 sums to 0): 1 + 3 + 3.
    notes = {note["key"]: note["values"] for note in steps["leaky"]["notes"]}
    assert notes["negative_sums"] == {"count": 7, "total": 12, "slope": 0.2}
    assert notes["static"] == {"node": "n3", "rows": 2}
    assert doc["meta"]["score"] == "additive"


def test_gat_on_the_dot_example_says_what_it_leaves_out(invoke_json):
    """--score additive on the default example: its W_Q, W_K, W_V are not used, a is drawn from
    --seed, and N(i) has no self-loop unless asked (GAT's own has one): each is a note."""
    doc = invoke_json("graph", "--score", "additive", "--seed", "5")
    steps = steps_of(doc)
    adjacency_notes = [note["key"] for note in steps["adjacency"]["notes"]]
    assert adjacency_notes == ["gat_without_self_loops"]
    assert steps["Wh"]["notes"][0] == {**steps["Wh"]["notes"][0], "key": "a_drawn"}
    assert steps["Wh"]["notes"][0]["values"] == {"seed": 5}
    (unused,) = doc["notes"]
    assert unused["values"] == {
        "flags": "--wq, --wk, --wv",
        "score": "additive",
        "given": "--score additive",  # each input and option as the command line spells it
    }
    a = np.random.default_rng((5, 2)).standard_normal(4)
    np.testing.assert_array_equal(unwrap(doc["inputs"]["a"]), a)
    _, updates = gat_by_hand(H, np.eye(2), a, neighbourhoods(4, EDGES))
    np.testing.assert_allclose(unwrap(doc["output"]), updates, atol=1e-14)


def test_gatv2_steps_and_identity_default(invoke_json):
    """gatv2 with no --w: W = [I I], so W [h_i ‖ h_j] = h_i + h_j, and the update averages h_j."""
    doc = invoke_json("graph", "--score", "gatv2", "--a", "1,-2", "--self-loops")
    steps = steps_of(doc)
    assert list(steps)[2:7] == [
        "Wh_target",
        "Wh_neighbour",
        "pair_sums_v2",
        "leaky_v2",
        "scores_v2",
    ]
    pairs = np.array(unwrap(steps["pair_sums_v2"]["value"]))
    assert pairs.shape == (16, 2)
    np.testing.assert_array_equal(pairs[2 * 4 + 3], np.add(H[2], H[3]))  # row "n2→n3"
    hood = neighbourhoods(4, EDGES, self_loops=True)
    w = np.hstack([np.eye(2), np.eye(2)])
    _, updates = gat_by_hand(H, w, [1, -2], hood, version=2)
    np.testing.assert_allclose(unwrap(doc["output"]), updates, atol=1e-14)
    assert "notes" not in steps["leaky_v2"]  # h_i + h_j ≥ 0 here: nothing for LeakyReLU


def test_gatv2_with_a_given_w(invoke_json):
    """W = [I −I]: W [h_i ‖ h_j] = h_i − h_j, the update averages −h_j. Negative entries over
    the 12 neighbour pairs (self-loops on): h0−h1, h0−h2, h1−h0, h1−h2, h2−h3, h3−h2 have one
    each: 6 of 24."""
    w = "1,0,-1,0;0,1,0,-1"
    doc = invoke_json("graph", "--score", "gatv2", "--w", w, "--a", "0.5,1", "--self-loops")
    steps = steps_of(doc)
    (note,) = steps["leaky_v2"]["notes"]
    assert note["key"] == "negative_entries"
    assert note["values"] == {"count": 6, "total": 24, "slope": 0.2}
    hood = neighbourhoods(4, EDGES, self_loops=True)
    matrix = [[1, 0, -1, 0], [0, 1, 0, -1]]
    _, updates = gat_by_hand(H, matrix, [0.5, 1], hood, version=2)
    np.testing.assert_allclose(unwrap(doc["output"]), updates, atol=1e-14)
    np.testing.assert_allclose(unwrap(steps["Wh_neighbour"]["value"]), -np.array(H))


def test_no_scale_gives_the_plain_dot_product(invoke_json):
    scaled = steps_of(invoke_json("graph"))
    plain = invoke_json("graph", "--no-scale")
    steps = steps_of(plain)
    assert steps["scores"]["title"].startswith("Scores  s_ij = q_iᵀ k_j (not scaled)")
    np.testing.assert_allclose(
        np.array(unwrap(steps["scores"]["value"])),
        np.array(unwrap(scaled["scores"]["value"])) * math.sqrt(2),
        atol=1e-14,
    )
    q = np.array(H) @ np.array(W_Q).T
    k = np.array(H) @ np.array(W_K).T
    s = q @ k.T
    allowed = np.array([[j in row for j in range(4)] for row in neighbourhoods(4, EDGES)])
    e = np.where(allowed, np.exp(s - np.where(allowed, s, -np.inf).max(1, keepdims=True)), 0)
    np.testing.assert_allclose(unwrap(steps["weights"]["value"]), e / e.sum(1, keepdims=True))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--w", "1,0;0,1"), "add --score additive"),
        (("--a", "1,2,3,4"), "add --score additive"),
        (("--score", "additive", "--no-scale"), "has no 1/√d_k"),
        (("--score", "additive", "--w", "1,0,0;0,1,0"), "needs 2 columns"),
        (("--score", "gatv2", "--w", "1,0;0,1"), "needs 4 columns"),
        (("--score", "additive", "--a", "1,2"), "needs 4 (aᵀ [W h_i ‖ W h_j]: 2·d'"),
        (("--score", "gatv2", "--a", "1,2,3,4"), "needs 2 (aᵀ LeakyReLU"),
    ],
)
def test_gat_user_errors(invoke, args, fragment):
    assert_user_error(invoke("graph", *args), fragment)


def test_unscaled_scores_of_width_1_are_not_called_sharper(invoke_json):
    """d_k = 1: the unscaled scores are √1 = 1 times the scaled ones, the same numbers; the step
    once said "so the softmax over N(i) is sharper"."""
    doc = invoke_json("graph", "--h", "1;2;3", "--edges", "0-1,1-2", "--no-scale")
    unscaled = invoke_json("graph", "--h", "1;2;3", "--edges", "0-1,1-2")
    weights = [
        next(s["value"] for s in d["steps"] if s["key"] == "weights") for d in (doc, unscaled)
    ]
    assert weights[0] == weights[1]
    step = next(s for s in doc["steps"] if s["key"].startswith("scores"))
    assert "so the softmax over N(i) is sharper (" not in step["explanation"]
    assert "with d_k = 1 nothing changes" in step["explanation"]


def test_the_static_ranking_note_is_withheld_where_the_weights_tie(invoke_json):
    """Equal features: every neighbour scores alike, so no node 'gets the largest weight'; the
    note (said before this fix, naming n0) is withheld, and the weights are 1/2 each."""
    doc = invoke_json("graph", "--h", "1;1;1", "--edges", "0-1,0-2,1-2", "--score", "additive")
    steps = {step["key"]: step for step in doc["steps"]}
    keys = [note["key"] for step in doc["steps"] for note in step.get("notes", [])]
    assert "static" not in keys
    weights = unwrap(steps["weights"]["value"])
    assert weights[0] == pytest.approx([0, 0.5, 0.5], abs=1e-15)
