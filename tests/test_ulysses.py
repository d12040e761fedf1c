"""attn ulysses: the gathered output (and the ring's on the same processes) against attention on
one device head by head, the bytes each process's link counted against the formulas, the
formulas against a count of what each exchange carries, and the refusals."""

from __future__ import annotations

import importlib.util
import math
import multiprocessing
import sys

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.mechanisms import ulysses
from tests.conftest import assert_user_error
from tests.lesson_runs import Runs

# What the suite-wide tests run of this lesson (tests/lesson_runs.py): small, as each run starts
# P processes; auto picks pipes without PyTorch, so these run there too.
RUNS = Runs(
    random=("--n", "4", "--dk", "2", "--processes", "2", "--causal", "--seed", "3"),
    sized=lambda s: {"n": s, "dk": min(s, 3), "processes": 2 - s % 2, "causal": True},
    large=("--n", "101", "--dk", "2", "--processes", "1"),
    variants=(
        ("--n", "8", "--dk", "2", "--heads", "4", "--processes", "4"),  # Ulysses sends fewer
        ("--n", "4", "--dk", "2", "--no-scale", "--dist-backend", "pipes"),
        ("--n", "3", "--dk", "2", "--processes", "1"),  # one process: nothing sent
    ),
    options=({"processes": 2, "causal": True},),
    # nccl runs between GPUs only; gloo, auto's choice, only where PyTorch is installed.
    never_made=frozenset(
        {"transport_nccl"} | (set() if importlib.util.find_spec("torch") else {"transport_gloo"})
    ),
)
TRANSPORTS = ("gloo", "pipes")


def transport_available(transport: str) -> None:
    if transport == "gloo":
        pytest.importorskip("torch")


def heads_qkv(seed: int, n: int, heads: int, kv_heads: int, d_k: int, d_v: int):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((n, heads * d_k)),
        rng.standard_normal((n, kv_heads * d_k)),
        rng.standard_normal((n, kv_heads * d_v)),
    )


def one_device(q, k, v, heads: int, kv_heads: int, causal: bool) -> np.ndarray:
    """Each head through attn scaled (attn causal with the mask), its key/value head h // (H/G)."""
    d_k, d_v = q.shape[1] // heads, v.shape[1] // kv_heads
    outputs = []
    for h in range(heads):
        g = h // (heads // kv_heads)
        qh, kh = q[:, h * d_k : (h + 1) * d_k], k[:, g * d_k : (g + 1) * d_k]
        vh = v[:, g * d_v : (g + 1) * d_v]
        run = attn.causal(q=qh, k=kh, v=vh) if causal else attn.scaled(qh, kh, vh)
        outputs.append(run.output)
    return np.concatenate(outputs, axis=1)


def steps_of(walkthrough) -> dict:
    return {step.key: step.value for step in walkthrough.steps}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("processes", "heads", "kv_heads", "causal"),
    [(1, 2, 2, False), (2, 4, 2, True), (4, 4, 4, False), (4, 8, 4, True)],
)
def test_ulysses_and_the_ring_equal_one_device_attention(
    transport, processes, heads, kv_heads, causal
):
    """P = 1, 2, 4, grouped or not, causal or not: the gathered output of Ulysses, and of the
    ring run by the same processes, within float64 rounding of attention head by head."""
    transport_available(transport)
    n = 8
    q, k, v = heads_qkv(processes + heads, n, heads, kv_heads, d_k=3, d_v=2)
    expected = one_device(q, k, v, heads, kv_heads, causal)
    w = attn.ulysses(
        q,
        k,
        v,
        processes=processes,
        heads=heads,
        kv_heads=kv_heads,
        causal=causal,
        dist_backend=transport,
    )
    assert w.output.shape == (n, heads * 2)
    assert np.max(np.abs(w.output - expected)) <= 1e-12
    assert w.meta["ring_max_abs_difference"] <= 1e-12
    notes = [note.key for note in w.notes]
    assert notes[:2] == ["ulysses_check", "ring_check"]
    assert notes[2] == (f"transport_{transport}" if processes > 1 else "transport_alone")
    values = steps_of(w)
    # after the first all-to-all, process r holds every position of its heads' queries
    for rank in range(processes):
        mine = ulysses.heads_of(rank, heads, processes)
        np.testing.assert_array_equal(
            values[f"process{rank}.heads.q"], q[:, mine.start * 3 : mine.stop * 3]
        )
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_bytes_each_link_counted_are_the_formulas(transport):
    """n = 8, P = 4, H = 8, G = 4, d_k = 3, d_v = 2, float64: each all-to-all of Q sends three
    of its four parts of 2 rows × 2 heads × 3, 36 entries (288 bytes); Ulysses in all
    (3/16)·8·12·5 = 90 entries (720 bytes), the ring 3 rounds of 2 rows × 4 heads × 5, 120
    (960 bytes); as P = 4 > 1 + H/G = 3, Ulysses sends fewer, 960/720 = 4/3."""
    transport_available(transport)
    q, k, v = heads_qkv(7, 8, 8, 4, d_k=3, d_v=2)
    w = attn.ulysses(q, k, v, processes=4, heads=8, kv_heads=4, dist_backend=transport)
    table = steps_of(w)["traffic"]
    by_method = {m: [row for row in table if row["method"] == m] for m in ("ulysses", "ring")}
    for row in by_method["ulysses"]:
        assert (row["q_sent"], row["k_sent"], row["v_sent"]) == (288, 144, 96)
        assert row["o_sent"] == 3 * 2 * 2 * 2 * 8  # 3 parts of 2 rows × its 2 heads × d_v
        assert row["sent"] == row["received"] == row["formula"] == 720
    assert [row["sent"] for row in by_method["ring"]] == [960] * 4
    assert [row["received"] for row in by_method["ring"]] == [960] * 4
    notes = {note.key: note for note in w.find("traffic").notes}
    assert set(notes) == {"traffic_exact", "ulysses_fewer"}
    assert math.isclose(notes["ulysses_fewer"].values["ratio"], 4 / 3)
    assert str(notes["ulysses_fewer"]).startswith(
        "Ulysses sends 720 bytes per process, the ring 960: Ulysses 1.33× fewer"
    )


def test_the_examples_say_which_method_sends_fewer():
    """two-heads (P = 2, H = G = 2): the same bytes; gqa-four (P = 2, H/G = 2): the ring fewer."""
    same = {note.key for note in attn.ulysses().find("traffic").notes}
    assert same == {"traffic_exact", "same_bytes"}
    gqa = attn.ulysses(example="gqa-four")
    notes = {note.key: note.values for note in gqa.find("traffic").notes}
    # Ulysses (1/4)·8·6·4 = 48 entries, the ring (1/2)·8·2·4 = 32: 384 and 256 bytes
    assert notes["ring_fewer"]["ulysses"] == 384 and notes["ring_fewer"]["ring"] == 256


@pytest.mark.parametrize("processes", range(1, 9))
@pytest.mark.parametrize(("heads", "kv_heads"), [(8, 8), (8, 4), (8, 2), (16, 8), (24, 8)])
def test_the_formulas_count_what_each_exchange_carries(processes, heads, kv_heads):
    """Each process's parts for the others, counted one by one (no formula), against the
    formulas; and Ulysses fewer exactly when P > 1 + H/G; the large-P limits 4nD/P and 2nD
    approached from below (d_k = d_v = d, G = H)."""
    if kv_heads % processes:
        return
    n, d_k, d_v = 8 * processes, 3, 2
    block = n // processes
    a2a = 0
    for _other in range(processes - 1):  # the parts for the P − 1 others
        a2a += block * (heads // processes) * d_k  # Q
        a2a += block * (kv_heads // processes) * (d_k + d_v)  # K, V
        a2a += block * (heads // processes) * d_v  # O back: its heads at their positions
    assert ulysses.ulysses_entries(n, processes, heads, kv_heads, (d_k, d_v)) == a2a
    passed = (processes - 1) * block * kv_heads * (d_k + d_v)
    assert ulysses.ring_entries(n, processes, kv_heads, (d_k, d_v)) == passed
    assert ulysses.ulysses_sends_fewer(processes, heads, kv_heads) == (a2a < passed)
    if heads == kv_heads:
        d, width = 4, 4 * heads
        assert (
            ulysses.ulysses_entries(n, processes, heads, heads, (d, d)) <= 4 * n * width / processes
        )
        assert ulysses.ring_entries(n, processes, heads, (d, d)) <= 2 * n * width


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (
            ("--n", "4", "--heads", "3", "--processes", "2"),
            ("--processes 2 does not divide the 3 query heads", "use --processes 1, or query"),
        ),
        (
            ("--n", "8", "--heads", "4", "--kv-heads", "2", "--processes", "4"),
            ("--processes 4 does not divide the 2 key/value heads", "use --processes 1 or 2"),
        ),
        (("--heads", "4", "--kv-heads", "3"), ("--kv-heads 3 does not divide --heads 4",)),
        (("--n", "3", "--processes", "2"), ("--processes 2 does not divide n = 3",)),
        (
            ("--q", "1,0,1;0,1,1", "--k", "1,0;0,1", "--v", "1,0;0,1", "--heads", "2"),
            ("Q has 3 columns, which --heads 2 does not divide",),
        ),
        (("--dist-backend", "nccl"), ("nccl moves CUDA tensors", "--device cuda")),
    ],
)
def test_user_errors_are_one_line(invoke, args, fragments):
    assert_user_error(invoke("ulysses", *args), *fragments)


def test_the_tour_visits_ulysses_after_the_ring_last():
    from attn_cli.cli.itinerary import tour
    from attn_cli.core.stop import BEYOND_THE_LECTURES

    stops = tour()
    names = [stop.name for stop in stops]
    assert names[-2:] == ["ring", "ulysses"] and stops[-1].section is BEYOND_THE_LECTURES


def test_without_torch_ulysses_runs_over_pipes(without_torch):
    w = attn.ulysses()
    assert "transport_pipes" in [note.key for note in w.notes]
    assert w.meta["max_abs_difference"] <= 1e-12


# Process 1 killed as it attends (the processes are forked from the driver: they attend
# through the patched function; the command's own check, in the main process, does not).
KILLED_AS_IT_ATTENDS = """
import multiprocessing, os, signal, sys
from attn_cli.mechanisms import attention
real = attention.attention

def attend(*args, **options):
    if multiprocessing.current_process().name == "attn ring rank 1":
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args, **options)

attention.attention = attend
sys.argv = ["attn", "ulysses", *{args!r}]
from attn_cli.__main__ import main
main()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_process_killed_mid_lesson_stops_every_process_in_one_line(transport):
    """The ring's machinery, on Ulysses's processes: one killed between its all-to-alls, the
    others (waiting in an all-to-all for it) stopped, one line, none left."""
    from tests.test_ring import run_driver

    transport_available(transport)
    args = ["--n", "8", "--heads", "4", "--processes", "4", "--dist-backend", transport]
    result, left = run_driver("", args, driver=KILLED_AS_IT_ATTENDS)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("attn: error: process 1 of Ulysses (4 processes) was killed")
    assert "none is left running" in lines[0]
    assert left == []
