"""attn flash: the tiled walkthrough, checked against plain softmax attention written out here."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from attn_cli.course.flash.build import MAX_BLOCKS
from tests.conftest import assert_user_error, data, unwrap
from tests.lesson_runs import Batch, Runs

# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "7", "--m", "5", "--dk", "3", "--block", "3", "--seed", "3"),
    # a few blocks (at most MAX_BLOCKS): each block is six more steps of the same kinds
    sized=lambda s: {"n": s, "dk": s, "block": max(2, -(-s // 4), -(-s // MAX_BLOCKS))},
    large=("--n", "150", "--block", "75", "--dk", "2"),
    variants=(
        ("--n", "5", "--dk", "2"),
        ("--n", "5", "--dk", "2", "--no-scale"),
        ("--n", "5", "--dk", "2", "--query-block", "2"),
        ("--n", "5", "--dk", "2", "--query-block", "2", "--causal"),
        ("--n", "4", "--dk", "2", "--block", "1", "--query-block", "1", "--causal"),
        # A tile of 256 elements on a chip of M = 1 KiB = 128 float64s: more than fits.
        ("--n", "16", "--dk", "2", "--block", "8", "--sram", "1"),
        # One block of every key, alone and in each of two query tiles.
        ("--n", "3", "--dk", "2", "--block", "3"),
        ("--n", "3", "--dk", "2", "--block", "4", "--query-block", "2"),
    ),
    # One-row query tiles re-read every key block per query: more traffic than the standard way.
    options=({"causal": True}, {"block": 1}, {"block": 1, "query_block": 1}),
    figure=(("flash",), ("q1", "q2", "k1", "k4")),
    batch=Batch(
        lambda draw: {"q": draw(2, 3), "k": draw(4, 3), "v": draw(4, 2)},
        ("q", "k", "v"),
        options={"block": 2},
    ),
)


def plain_attention(q, k, v, *, use_scale, causal=False):
    s = q @ k.T / (math.sqrt(q.shape[1]) if use_scale else 1.0)
    if causal:
        s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def steps_by_key(doc):
    return {step["key"]: step for step in doc["steps"]}


def test_two_blocks_example(invoke_json):
    doc = invoke_json("flash")
    assert doc["lesson"] == "flash" and doc["example"] == "two-blocks"
    q = np.array([[1.0, 0], [0, 1]])
    k = np.array([[1.0, 0], [0, 1], [2, 1], [-1, 0]])
    v = np.array([[1.0, 2], [3, 0], [0, 1], [2, 2]])
    expected = plain_attention(q, k, v, use_scale=False)
    np.testing.assert_allclose(data(doc["output"]), expected, rtol=0, atol=1e-12)
    steps = steps_by_key(doc)
    keys = [step["key"] for step in doc["steps"]]
    assert keys == [
        f"block{b}.{name}"
        for b in (1, 2)
        for name in ("scores", "max", "rescale", "p", "sum", "acc")
    ] + ["output", "check", "io"]
    # Block 1 starts from nothing: m = −∞ before, the rescale factor is 0.
    assert unwrap(steps["block1.max"]["parts"]["m before"]) == [["-inf"], ["-inf"]]
    assert unwrap(steps["block1.rescale"]["value"]) == [[0.0], [0.0]]
    # Block 2: q1's max rises from 1 to 2 (c = e^(1−2)); q2's stays at 1 (c = 1).
    assert unwrap(steps["block2.max"]["value"]) == [[2.0], [1.0]]
    np.testing.assert_allclose(unwrap(steps["block2.rescale"]["value"]), [[np.exp(-1.0)], [1.0]])
    # The running sum after the last block is the softmax denominator against the row max.
    s = q @ k.T
    denominators = np.exp(s - s.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(unwrap(steps["block2.sum"]["value"]), denominators, atol=1e-12)
    assert steps["block1.scores"]["col_labels"] == ["k1", "k2"]
    assert steps["block2.scores"]["col_labels"] == ["k3", "k4"]
    np.testing.assert_allclose(unwrap(steps["check"]["value"]), expected, atol=1e-12)
    assert doc["meta"]["max_abs_difference"] < 1e-14


def test_causal_three_example(invoke_json):
    doc = invoke_json("flash", "--example", "causal-three")
    x = np.array([[1.0, 0], [0, 1], [1, 1]])
    np.testing.assert_allclose(
        data(doc["output"]), plain_attention(x, x, x, use_scale=True, causal=True), atol=1e-12
    )
    steps = steps_by_key(doc)
    assert unwrap(steps["block1.scores"]["value"])[0][1] == "-inf"  # q1 may not see k2
    # The second block holds only k3: q1 and q2 see none of it.
    assert unwrap(steps["block2.p"]["value"])[:2] == [[0.0], [0.0]]
    assert unwrap(steps["block2.rescale"]["value"])[:2] == [[1.0], [1.0]]


@pytest.mark.parametrize(
    ("n", "block", "causal"), [(7, 3, False), (7, 3, True), (5, 5, False), (9, 2, True)]
)
def test_random_inputs_equal_plain_attention(invoke_json, n, block, causal):
    flag = "--causal" if causal else "--no-causal"
    doc = invoke_json(
        "flash", "--n", str(n), "--dk", "3", "--block", str(block), flag, "--seed", "4"
    )
    q, k, v = (np.array(data(doc["inputs"][name])) for name in ("Q", "K", "V"))
    expected = plain_attention(q, k, v, use_scale=True, causal=causal)
    np.testing.assert_allclose(data(doc["output"]), expected, rtol=0, atol=1e-12)
    blocks = math.ceil(n / block)
    assert len(doc["steps"]) == 6 * blocks + 3  # and output, check, io


def test_torch_backend_agrees(invoke_json, torch):
    doc = invoke_json("flash", "--backend", "torch", "--n", "6", "--m", "4", "--block", "4")
    q, k, v = (np.array(data(doc["inputs"][name])) for name in ("Q", "K", "V"))
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v))
    ).numpy()
    np.testing.assert_allclose(data(doc["output"]), expected, atol=1e-12)


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_other_formats(invoke, fmt):
    result = invoke("flash", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert "running max" in result.stdout


def test_rich_output(invoke):
    result = invoke("flash")
    assert result.exit_code == 0, result.output
    assert "Block 2 · rescale factor" in result.stdout
    assert "max |tiled − plain|" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--n", "40", "--block", "2"), ("20 blocks", "raise --block to 3")),
        (("--n", "5", "--m", "3", "--causal"), ("--causal needs as many queries as keys",)),
        (("--q", "1,0", "--k", "1,0,0", "--v", "1"), ("Q and K must share d_k",)),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("flash", *args), *fragments)


LABELLED = """\
lesson = "flash"
[[examples]]
name = "mine"
options = {{ block = 2 }}
labels = {{ {labels} }}
[examples.inputs]
Q = [[1, 0], [0, 1]]
K = [[1, 0], [0, 1], [1, 1]]
V = [[1], [2], [3]]
"""


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        ('keys = ["x"]', "labels.keys) gives 1 name but there are 3 rows"),
        ('queries = ["a", "b", "c"]', "labels.queries) gives 3 names but there are 2 rows"),
    ],
)
def test_label_counts_from_a_lesson_file(invoke, tmp_path, labels, fragment):
    path = tmp_path / "mine.toml"
    path.write_text(LABELLED.format(labels=labels), encoding="utf-8")
    assert_user_error(invoke("flash", "--lesson", str(path)), fragment)


def test_labels_from_a_lesson_file_name_the_blocks(invoke_json, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(LABELLED.format(labels='keys = ["x", "y", "z"]'), encoding="utf-8")
    steps = steps_by_key(invoke_json("flash", "--lesson", str(path)))
    assert steps["block1.scores"]["col_labels"] == ["x", "y"]
    assert steps["block2.scores"]["col_labels"] == ["z"]
    assert steps["block1.scores"]["row_labels"] == ["q1", "q2"]


@pytest.mark.parametrize(
    ("sizes", "shapes"),
    [
        ({"dv": 2}, ((6, 4), (6, 4), (6, 2))),  # n = 6, m = n, d_k = 4
        ({"m": 3}, ((3, 4), (6, 4), (6, 4))),  # n keeps its default
        ({"n": 5, "m": 2, "dv": 3}, ((2, 4), (5, 4), (5, 3))),
        ({"n": 7, "dk": 2}, ((7, 2), (7, 2), (7, 2))),
    ],
)
def test_random_shapes_defaults(invoke_json, sizes, shapes):
    args = [item for key, value in sizes.items() for item in (f"--{key}", str(value))]
    doc = invoke_json("flash", *args, "--block", "4")
    got = tuple(np.array(data(doc["inputs"][name])).shape for name in ("Q", "K", "V"))
    assert got == shapes


# --- Step 1 says what this run does to the scores (issue 22, 8) --------------------------------


def test_step_one_says_only_what_the_options_do(invoke_json):
    # The default example neither scales nor masks; Step 1 used to say it did both.
    doc = invoke_json("flash")
    first = steps_by_key(doc)["block1.scores"]
    assert "Scaling by √d_k and the causal mask" not in first["explanation"]
    assert [note["key"] for note in first.get("notes", [])] == ["block_unscaled"]
    np.testing.assert_allclose(data(first["value"]), [[1, 0], [0, 1]])  # plain q·k
    causal = steps_by_key(invoke_json("flash", "--example", "causal-three"))["block1.scores"]
    assert [note["key"] for note in causal.get("notes", [])] == ["block_scaled", "block_causal"]
    assert causal["notes"][0]["values"]["sqrt_dk"] == pytest.approx(math.sqrt(2), abs=1e-15)
    scores = data(causal["value"])  # q1·k2 is in q1's future: −∞; q2·k2 = 1 / √2
    assert scores[0][1] in ("-inf", -math.inf) and scores[1][1] == pytest.approx(1 / math.sqrt(2))
    assert not any(
        step.get("notes") for key, step in steps_by_key(doc).items() if key != "block1.scores"
        and key.endswith(".scores")
    )  # fmt: skip


# --- Why it is faster: HBM reads and writes (issue 22, 8) ---------------------------------------


@pytest.mark.parametrize(("m", "n", "d_k", "d_v"), [(2, 4, 2, 2), (5, 7, 3, 2), (64, 64, 16, 16)])
def test_standard_traffic_is_the_papers_algorithm_0(m, n, d_k, d_v):
    from attn_cli.mechanisms.tiled import standard_traffic

    traffic = standard_traffic(m, n, d_k, d_v)
    assert traffic.reads == m * d_k + n * d_k + 2 * m * n + n * d_v  # Q, K; S; P, V
    assert traffic.writes == 2 * m * n + m * d_v  # S, P, O
    if m == n and d_k == d_v:  # Θ(Nd + N²): exactly 4Nd + 4N²
        assert traffic.total == 4 * n * d_k + 4 * n * n


@pytest.mark.parametrize(
    ("m", "n", "d_k", "d_v", "block", "query_block"),
    [(2, 4, 2, 2, 2, 2), (5, 7, 3, 2, 3, 2), (64, 64, 16, 16, 8, 16), (3, 3, 4, 4, 1, 1)],
)
def test_tiled_traffic_reads_k_and_v_once_per_query_tile(m, n, d_k, d_v, block, query_block):
    from attn_cli.mechanisms.tiled import tiled_traffic

    traffic = tiled_traffic(m, n, d_k, d_v, block=block, query_block=query_block)
    tiles = math.ceil(m / query_block)
    assert traffic.reads == m * d_k + tiles * n * (d_k + d_v)
    assert traffic.writes == m * d_v  # O once; no n × n matrix ever reaches HBM
    causal = tiled_traffic(m, n, d_k, d_v, block=block, query_block=query_block, causal=True)
    visited = sum(  # a causal tile reads the key blocks up to its last row only
        min(block, n - first) * (d_k + d_v)
        for start in range(0, m, query_block)
        for first in range(0, n, block)
        if first <= min(start + query_block, m) - 1
    )
    assert causal.reads == m * d_k + visited and causal.writes == m * d_v


@pytest.mark.parametrize(("n", "d", "sram"), [(4, 2, 29184), (1000, 16, 4096), (4096, 64, 116736)])
def test_paper_traffic_is_algorithm_1_and_theorem_2(n, d, sram):
    from attn_cli.mechanisms.tiled import paper_blocks, paper_traffic

    b_c, b_r = paper_blocks(sram, d)
    assert b_c == math.ceil(sram / (4 * d)) and b_r == min(b_c, d)
    t_c = math.ceil(n / b_c)
    traffic = paper_traffic(n, n, d, d, sram=sram)
    assert traffic.reads == 2 * n * d + t_c * n * (2 * d + 2)  # K, V once; Q, O, ℓ, m per j
    assert traffic.writes == (t_c + 1) * n * (d + 2)  # O, ℓ, m: initialised, then per j
    if n >= 1000:  # Θ(N²d²/M): T_c ≈ 4Nd/M blocks, each moving about 3Nd elements
        assert 8 <= traffic.total / (n * n * d * d / sram) <= 16


def io_table(doc) -> dict[str, dict]:
    return {row["algorithm"]: row for row in steps_by_key(doc)["io"]["value"]}


def io_note_keys(doc) -> list[str]:
    return [note["key"] for note in steps_by_key(doc)["io"].get("notes", [])]


def test_the_io_step_counts_the_sizes_on_screen(invoke_json):
    doc = invoke_json("flash")  # m = 2 queries, n = 4 keys, d = 2, blocks of 2, float64
    table = io_table(doc)
    assert [(row["reads"], row["writes"], row["total"]) for row in table.values()] == [
        (2 * 2 + 4 * 2 + 2 * 8 + 4 * 2, 2 * 8 + 2 * 2, 56),  # standard
        (2 * 2 + 4 * (2 + 2), 2 * 2, 24),  # one tile of both queries, K and V read once
        (4 * 4 + 1 * 2 * (2 + 2 + 2), 2 * 2 * (2 + 2), 44),  # Algorithm 1: one K, V block
    ]
    assert all(row["bytes"] == 8 * row["total"] for row in table.values())
    step = steps_by_key(doc)["io"]
    assert "M = 228 KiB" in step["title"] and "29184 elements of 8 bytes" in step["explanation"]
    assert io_note_keys(doc) == ["io_fewer", "io_paper_fewer", "sram_default"]
    assert step["notes"][0]["values"]["ratio"] == pytest.approx(56 / 24)


def test_a_sentence_comparing_the_counts_is_true_for_them(invoke_json):
    # One query per tile with wide rows: every tile re-reads K and V, more than S and P cost.
    doc = invoke_json("flash", "--n", "8", "--dk", "8", "--block", "8", "--query-block", "1")
    table = io_table(doc)
    assert table["tiled, on screen"]["total"] == 8 * 8 + 8 * 8 * 16 + 8 * 8  # 1152
    assert table["standard"]["total"] == 512
    assert "io_fewer" not in io_note_keys(doc) and "io_more" in io_note_keys(doc)
    one = invoke_json("flash", "--n", "1", "--dk", "4")  # one key: no n × n matrix to avoid
    totals = {name: row["total"] for name, row in io_table(one).items()}
    assert totals["tiled, paper's M"] >= totals["standard"]
    assert "io_paper_fewer" not in io_note_keys(one) and "io_paper_more" in io_note_keys(one)


def test_sram_sets_m_and_the_papers_blocks(invoke, invoke_json):
    doc = invoke_json("flash", "--sram", "1")  # 1 KiB = 128 float64 elements
    step = steps_by_key(doc)["io"]
    assert "M = 1 KiB" in step["title"] and "128 elements of 8 bytes" in step["explanation"]
    assert "here 16 and 2" in step["explanation"]  # B_c = ⌈128 / 8⌉, B_r = min(16, 2)
    assert "sram_default" not in io_note_keys(doc)
    assert_user_error(invoke("flash", "--sram", "0"), "--sram")


def test_the_check_claims_agreement_only_when_it_is_rounding():
    from attn_cli.course.flash.build import same_up_to_rounding

    doc_steps = {"difference": 2.2e-16}

    class Fake:  # the claim reads the check step, the keys and the dtype
        dtype = "float64"
        inputs = (type("I", (), {"name": "K", "value": np.zeros((4, 2))})(),)

        @staticmethod
        def step(key):
            assert key == "check"
            return np.array([[1.0, 2.0]])

    assert same_up_to_rounding(Fake(), doc_steps)
    assert not same_up_to_rounding(Fake(), {"difference": 0.5})  # not rounding: withheld
    assert not same_up_to_rounding(Fake(), {"difference": float("nan")})
    assert not same_up_to_rounding(Fake(), {})  # degenerate: a plain False, never an error


def test_a_tile_larger_than_m_is_said_not_to_fit(invoke_json):
    """n = 32, blocks of 16, --sram 1: the on-screen tile holds 32·4 + 16·8 + 32·16 + 32·4 + 2·32
    = 960 elements and M = 1 KiB = 128 float64s, yet the step said only that the tiled loop
    moves 512 elements, counted as if its scores stayed on chip."""
    io = steps_by_key(invoke_json("flash", "--n", "32", "--block", "16", "--sram", "1"))["io"]
    shown = next(row for row in io["value"] if row["algorithm"] == "tiled, on screen")
    assert shown["on_chip"] == 32 * 4 + 16 * 8 + 32 * 16 + 32 * 4 + 2 * 32 == 960
    spills = [note for note in io["notes"] if note["key"] == "io_spills"]
    assert spills and spills[0]["text"] == (
        "The tile on screen holds 960 elements at once, more than M = 128: on this chip its "
        "scores could not stay on chip, so its count above is for a chip large enough to hold "
        "the tile."
    )
    # The default M holds the default example's tile of 24: no such note.
    default = steps_by_key(invoke_json("flash"))["io"]
    assert "io_spills" not in [note["key"] for note in default["notes"]]


def test_the_time_legend_counts_the_steps_it_times(invoke):
    """--time times the steps computed alone: in flash the output only (the blocks' steps come
    out of one loop). The legend said 'Each step's time: ...' above 15 steps of which 1 had one."""
    text = " ".join(invoke("flash", "--time").stdout.split())
    assert "A step's time (shown on 1 of the 15 steps): its computation alone on the device" in text
    assert "Each step's time" not in text
    assert len(re.findall(r"^Step \d+ · .* ms ─", invoke("flash", "--time").stdout, re.M)) == 1
    scaled = " ".join(invoke("scaled", "--time").stdout.split())
    assert "Each step's time: its computation alone on the device" in scaled


def test_the_traffic_notes_name_the_m_by_n_matrices(invoke_json):
    """m = 2 queries against n = 8 keys: the standard algorithm writes and reads 2 × 8 matrices,
    which the notes called 'the n × n matrices'."""
    io = steps_by_key(
        invoke_json(
            "flash", "--m", "2", "--n", "8", "--dk", "8", "--block", "1", "--query-block", "1"
        )
    )["io"]
    (more,) = [note for note in io["notes"] if note["key"] == "io_more"]
    assert more["text"] == (
        "The tiled loop on screen moves 288 elements, more than the standard one's 224: each of "
        "its 2 query tiles reads the key and value blocks again, which at these sizes costs more "
        "than the 2 × 8 matrices the standard one writes and reads back."
    )
    standard = next(row for row in io["value"] if row["algorithm"] == "standard")
    # Algorithm 0: read Q, K; write S; read S; write P; read P, V; write O (m 2, n 8, d 8).
    reads, writes = (2 * 8 + 8 * 8) + 2 * 8 + (2 * 8 + 8 * 8), 2 * 8 + 2 * 8 + 2 * 8
    assert standard["total"] == reads + writes == 224
    paper = steps_by_key(invoke_json("flash", "--n", "1", "--dk", "4"))["io"]
    (small,) = [note for note in paper["notes"] if note["key"] == "io_paper_more"]
    assert small["text"].endswith("the 1 × 1 matrices it avoids are still small.")
