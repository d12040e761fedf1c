"""attn kvcache: each step by hand, the cached rows against full causal attention (bit for bit
with left-to-right sums), the work, the cache bytes with MHA/GQA/MQA, torch, user errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attn_cli.mechanisms import kvcache
from tests.conftest import assert_user_error, data, unwrap
from tests.lesson_runs import Batch, Runs

SMALL = ("--n", "3", "--dk", "2")
# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "5", "--dk", "3", "--dv", "2", "--seed", "3"),
    sized=lambda s: {"n": min(s, 32), "dk": s},  # one step per token: at most 32
    large=("--n", "32", "--dk", "2", "--dv", "400"),
    variants=(
        SMALL,
        (*SMALL, "--heads", "6"),
        # Sliding-window layers; a latent cache with and without the RoPE key, and one too wide.
        (*SMALL, "--window-layers", "16", "--window", "4096", "--latent-width", "512"),
        (*SMALL, "--latent-width", "512", "--rope-width", "64"),
        (*SMALL, "--latent-width", "9000"),
        # Attention sinks: nothing evicted; every value alike (no cache nearer than another).
        (*SMALL, "--sinks", "1", "--window", "10"),
        ("--q", "1;1;1", "--k", "1;1;1", "--v", "1;1;1", "--sinks", "1", "--window", "1"),
        # Past 32 tokens, or with --show-tokens: steps at chosen tokens and the summary.
        (*SMALL, "--show-tokens", "1,3"),
        ("--n", "40", "--dk", "2", "--sinks", "2", "--window", "8"),
    ),
    # A narrow model: at 4096 tokens re-scoring the prefix then costs more than re-projecting it.
    options=(
        {"heads": 1, "kv_heads": 1, "d_head": 4},
        {"window_layers": 8, "window": 2},
        {"latent_width": 512, "rope_width": 64},
        {"latent_width": 9000},
        {"sinks": 1, "window": 2},
    ),
    figure=(("kvcache",), ("q1", "q4", "k1", "k4", "cached key")),
    batch=Batch(lambda draw: {"q": draw(3, 2), "k": draw(3, 2), "v": draw(3, 2)}, ("q", "k", "v")),
)


Q = np.array([[1.0, 0], [0, 1], [1, 1], [0, 2]])
K = np.array([[1.0, 0], [0, 1], [1, 1], [1, -1]])
V = np.array([[1.0, 0], [0, 1], [1, 1], [2, 0]])


def causal_attention(q, k, v):
    """Full causal attention with loops: row t over keys 1..t, scaled by √d_k."""
    out = np.zeros((q.shape[0], v.shape[1]))
    weights = []
    for t in range(q.shape[0]):
        s = [float(q[t] @ k[j]) / math.sqrt(q.shape[1]) for j in range(t + 1)]
        e = [math.exp(x - max(s)) for x in s]
        w = [x / sum(e) for x in e]
        weights.append(w)
        out[t] = sum(wj * v[j] for j, wj in enumerate(w))
    return weights, out


def steps_by_key(doc):
    return {step["key"]: step for step in doc["steps"]}


def test_four_tokens_step_by_step(invoke_json):
    doc = invoke_json("kvcache")
    assert doc["lesson"] == "kvcache" and doc["example"] == "four-tokens"
    steps = steps_by_key(doc)
    weights, output = causal_attention(Q, K, V)
    for t in range(1, 5):
        step = steps[f"token{t}"]
        assert step["col_labels"] == [f"k{j}" for j in range(1, t + 1)]  # the cache: t keys
        assert step["row_labels"] == [f"q{t}"]
        np.testing.assert_allclose(unwrap(step["value"]), [weights[t - 1]], atol=1e-15)
        assert unwrap(step["parts"][f"K cache ({t} × 2)"]) == K[:t].tolist()
        assert unwrap(step["parts"][f"V cache ({t} × 2)"]) == V[:t].tolist()
    assert unwrap(steps["token1"]["value"]) == [[1.0]]  # one key: all the weight
    np.testing.assert_allclose(data(doc["output"]), output, atol=1e-15)
    np.testing.assert_allclose(unwrap(steps["full"]["value"]), output, atol=1e-15)
    assert doc["meta"]["ordered_max_abs_difference"] == 0.0
    assert doc["meta"]["max_abs_difference"] < 1e-15


def test_work_with_and_without_the_cache(invoke_json):
    rows = steps_by_key(invoke_json("kvcache", "--n", "6", "--dk", "2"))["work"]["value"]
    for t, row in enumerate(rows, start=1):
        assert row["with_cache"] == t
        assert row["without_cache"] == sum(range(1, t + 1))  # causal attention over t tokens
        assert row["total_with_cache"] == sum(range(1, t + 1))
        assert row["total_without_cache"] == sum(sum(range(1, s + 1)) for s in range(1, t + 1))


def test_cache_bytes_mha_gqa_mqa(invoke_json):
    args = ("--layers", "32", "--heads", "32", "--kv-heads", "8", "--d-head", "128")
    rows = steps_by_key(invoke_json("kvcache", *args))["cache_bytes"]["value"]
    assert [(r["attention"], r["kv_heads"], r["queries_per_kv_head"]) for r in rows] == [
        ("MHA", 32, 1),
        ("GQA", 8, 4),
        ("MQA", 1, 32),
    ]
    # 2 (a key and a value) · layers · K/V heads · d_head · 2 bytes (float16)
    assert [r["bytes_per_token"] for r in rows] == [2 * 32 * h * 128 * 2 for h in (32, 8, 1)]
    assert rows[0]["bytes_per_token"] == 512 * 1024
    assert all(r["bytes_long"] == 4096 * r["bytes_per_token"] for r in rows)
    mqa = steps_by_key(invoke_json("kvcache", "--example", "mqa"))["cache_bytes"]["value"]
    assert [(r["attention"], r["bytes_per_token"]) for r in mqa] == [
        ("MHA", 2 * 32 * 32 * 128 * 2),
        ("MQA", 2 * 32 * 1 * 128 * 2),
    ]
    f32 = steps_by_key(invoke_json("kvcache", "--cache-dtype", "float32", "--layers", "2",
                                   "--heads", "4", "--kv-heads", "4", "--d-head", "8"))  # fmt: skip
    assert [(r["attention"], r["bytes_per_token"]) for r in f32["cache_bytes"]["value"]] == [
        ("MHA", 2 * 2 * 4 * 8 * 4),
        ("MQA", 2 * 2 * 1 * 8 * 4),
    ]


@pytest.mark.parametrize(("n", "d_k", "d_v", "seed"), [(1, 2, 3, 0), (9, 5, 3, 1), (32, 16, 8, 2)])
def test_random_inputs_equal_causal_attention(invoke_json, n, d_k, d_v, seed):
    doc = invoke_json(
        "kvcache", "--n", str(n), "--dk", str(d_k), "--dv", str(d_v), "--seed", str(seed)
    )
    q, k, v = (np.array(data(doc["inputs"][name])) for name in ("Q", "K", "V"))
    _, expected = causal_attention(q, k, v)
    output = np.array(data(doc["output"]))
    assert output.shape == (n, d_v)
    np.testing.assert_allclose(output, expected, rtol=1e-12, atol=1e-15)
    assert doc["meta"]["max_abs_difference"] < 1e-14  # BLAS: equal up to the last bits
    assert doc["meta"]["ordered_max_abs_difference"] == 0.0  # left-to-right sums: bit for bit


@pytest.mark.parametrize("n", [1, 7, 20])
def test_ordered_attention_is_bit_for_bit(n):
    """Row t of the masked n × n computation and the cache's step t, both summing left to right:
    identical bits; and both equal to the loops to rounding."""
    rng = np.random.default_rng(n)
    q, k, v = rng.standard_normal((n, 6)), rng.standard_normal((n, 6)), rng.standard_normal((n, 3))
    weights, full = kvcache.ordered_attention(q, k, v, causal=True)
    for t in range(n):
        w_t, out_t = kvcache.ordered_attention(q[t : t + 1], k[: t + 1], v[: t + 1])
        np.testing.assert_array_equal(out_t[0], full[t])
        np.testing.assert_array_equal(w_t[0], weights[t, : t + 1])
        assert np.all(weights[t, t + 1 :] == 0)
    np.testing.assert_allclose(full, causal_attention(q, k, v)[1], rtol=1e-12)


def test_torch_agrees_with_causal_sdpa_and_is_bit_for_bit_in_float64(invoke_json, torch):
    doc = invoke_json("kvcache", "--backend", "torch", "--n", "12", "--dk", "4", "--dv", "3")
    q, k, v = (torch.tensor(data(doc["inputs"][name]), dtype=torch.float64) for name in "QKV")
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(data(doc["output"]), expected.numpy(), rtol=1e-12)
    assert doc["meta"]["ordered_max_abs_difference"] == 0.0


def test_the_full_step_names_the_library_that_computed_it(invoke_json, torch):
    """With --backend torch the step said 'Computed as numpy computes a matrix product' beside
    a note that says 'As torch computes them'."""
    for backend in ("numpy", "torch"):
        full = next(
            s for s in invoke_json("kvcache", "--backend", backend)["steps"] if s["key"] == "full"
        )
        assert f"Computed as {backend} computes a matrix product" in full["explanation"]
        assert full["notes"][0]["text"].startswith(f"As {backend} computes them")


def test_check_passes_on_the_bundled_file(invoke):  # its --quiz: tests/test_quiz.py
    check = invoke("check", "lessons/kvcache.toml")
    assert check.exit_code == 0, check.output


def test_rich_output(invoke):
    result = invoke("kvcache")
    assert result.exit_code == 0, result.output
    assert "Token 4: append k4" in result.stdout
    assert "bit for bit" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--q", "1,0;0,1", "--k", "1,0", "--v", "1"), ("generation is over one sequence",)),
        (("--n", "20000"), ("use at most 8,192 (--n 8192)",)),
        (("--show-tokens", "0"), ("--show-tokens 0: give tokens from 1 to 4",)),
        (("--show-tokens", "1,9"), ("give tokens from 1 to 4",)),
        (("--show-tokens", "x"), ("e.g. --show-tokens 1,2,4",)),
        (("--heads", "32", "--kv-heads", "5"), ("--kv-heads 5 does not divide --heads 32",)),
        (("--layers", "0"), ("--layers must be a whole number",)),
        (("--q", "1,0", "--k", "1,0,0", "--v", "1"), ("Q and K must share d_k",)),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("kvcache", *args), *fragments)


def test_kv_heads_default_to_a_quarter_of_the_heads(invoke_json):
    def kv_heads(*args):
        rows = steps_by_key(invoke_json("kvcache", *args))["cache_bytes"]["value"]
        return [row["kv_heads"] for row in rows]

    assert kv_heads() == [32, 8, 1]  # 32 heads: 8 K/V heads, as Llama 3 8B
    assert kv_heads("--heads", "12") == [12, 3, 1]
    assert kv_heads("--heads", "6") == [6, 1]  # 4 does not divide 6: MHA and MQA only


def test_unknown_cache_dtype(invoke):
    result = invoke("kvcache", "--cache-dtype", "int8")
    assert result.exit_code == 2 and result.stdout == ""


def test_cache_and_output_labels_are_tokens_and_dimensions():
    """Issue 22: the cache's rows were labelled q1 and the output's columns k1, k2 (they are
    value dimensions). Each part now carries its own labels."""
    import attn_cli as attn

    walkthrough = attn.kvcache(Q, K, V)
    for t in range(1, 5):
        parts = {part.label: part for part in walkthrough.find(f"token{t}").parts}
        keys = tuple(f"k{j}" for j in range(1, t + 1))
        for name in (f"K cache ({t} × 2)", f"V cache ({t} × 2)"):
            assert (parts[name].rows, parts[name].cols) == (keys, ("1", "2"))
        assert (parts["output"].rows, parts["output"].cols) == ((f"q{t}",), ("1", "2"))
        assert parts["scores q Kᵀ / √d_k"].cols == keys


def test_rich_cache_tables_are_labelled_by_token(invoke):
    out = invoke("kvcache").stdout
    token2 = out[out.index("Step 2 ") : out.index("Step 3 ")]
    assert "│ k2 │ 0 │ 1 │" in token2  # K cache row k2 = [0, 1], columns 1, 2
    assert "│ q2 │ 0.3302 │ 0.6698 │" in token2  # the output row


def test_work_in_a_model_counts_the_projections(invoke_json):
    """Issue 22: the Work table counted only query·key products; recomputing also re-projects
    the prefix's queries, keys and values in every layer, the larger saving here."""
    args = ("--layers", "2", "--heads", "4", "--kv-heads", "2", "--d-head", "3")
    step = steps_by_key(invoke_json("kvcache", *args))["work_model"]
    d_model, rows_per_token = 4 * 3, 4 + 2 * 2  # 4 query rows, 2 key and 2 value rows
    per_token = 2 * rows_per_token * 2 * d_model * 3  # layers · rows · 2·d_model·d_head
    for row in step["value"]:
        t = row["token"]
        assert row["scores_with_cache"] == 2 * 4 * t * 2 * 3  # layers · heads · t · 2·d_head
        assert row["scores_without_cache"] == 2 * 4 * (t * (t + 1) // 2) * 2 * 3
        assert row["projections_with_cache"] == per_token
        assert row["projections_without_cache"] == t * per_token
    assert [row["token"] for row in step["value"]] == [1, 2, 3, 4, 4096]
    notes = {note["key"]: note for note in step["notes"]}
    saved_projections, saved_scores = 4095 * per_token, 2 * 4 * 2 * 3 * (4096 * 4097 // 2 - 4096)
    assert notes["model_saving"]["values"] == {
        "t": 4096,
        "projections": saved_projections,
        "scores": saved_scores,
    }
    # Here re-scoring costs more at t = 4096 (d_model is only 12): the other note, not this one.
    assert saved_scores > saved_projections
    assert "projections_larger" not in notes and "scores_larger" in notes
    default = {n["key"] for n in steps_by_key(invoke_json("kvcache"))["work_model"]["notes"]}
    assert "projections_larger" in default and "scores_larger" not in default


def test_own_cache_bytes_follow_the_dtype_they_name(invoke_json):
    """Issue 22: "32 bytes" assumed float64 right after a float16 table; the note names it."""
    note = steps_by_key(invoke_json("kvcache"))["cache_bytes"]["notes"][0]
    assert note["values"]["dtype"] == "float64" and note["values"]["per_token"] == 4 * 8
    assert "in float64" in note["text"] and "32 bytes" in note["text"]
    small = steps_by_key(invoke_json("kvcache", "--dtype", "float32"))["cache_bytes"]["notes"][0]
    assert small["values"]["per_token"] == 4 * 4 and "in float32" in small["text"]


# Sliding-window layers and a latent (MLA-style) cache (issue 24, part 5): closed forms.


def test_windowed_cache_bytes_closed_form():
    """Llama 3 8B's shape (32 layers, 8 K/V heads of 128, float16: 131,072 bytes per token all
    full) with 16 layers windowed at 4,096 tokens: at n = 32,768 the windowed layers keep 4,096
    tokens, the full ones 32,768, so 16·4096 + 16·32768 = 589,824 layer-tokens of 2·8·128·2 =
    4,096 bytes: 2,415,919,104 bytes against 4,294,967,296, a ratio of 0.5625 = 9/16."""
    full = kvcache.windowed_cache_bytes(32768, 32, 0, 4096, 8, 128)
    kept = kvcache.windowed_cache_bytes(32768, 32, 16, 4096, 8, 128)
    assert full == 32768 * 131072 == 4_294_967_296
    assert kept == 589_824 * 4096 == 2_415_919_104
    assert kept / full == 0.5625
    # Below the window nothing is dropped; all layers windowed keep W tokens whatever n is.
    assert kvcache.windowed_cache_bytes(1000, 32, 16, 4096, 8, 128) == 1000 * 131072
    assert kvcache.windowed_cache_bytes(10**6, 4, 4, 10, 1, 2, "float32") == 2 * 40 * 2 * 4
    with pytest.raises(ValueError, match="window_layers"):
        kvcache.windowed_cache_bytes(10, 4, 5, 2, 1, 2)


def test_latent_cache_bytes_closed_form():
    """DeepSeek-V2's MLA: 60 layers, c = 512 and a RoPE key of 64, in bfloat16: 60·576·2 =
    69,120 bytes per token; without the RoPE key 60·512·2 = 61,440."""
    assert kvcache.latent_cache_bytes_per_token(60, 512, 64, "bfloat16") == 69_120
    assert kvcache.latent_cache_bytes_per_token(60, 512, 0, "bfloat16") == 61_440
    assert kvcache.latent_cache_bytes_per_token(2, 3, 1, "float64") == 64


def test_window_table_and_note(invoke_json):
    doc = invoke_json("kvcache", *SMALL, "--window-layers", "16", "--window", "4096")
    step = next(step for step in doc["steps"] if step["key"] == "window_cache")
    rows = {row["tokens"]: row for row in step["value"]}
    assert sorted(rows) == [3, 4096, 32768]
    assert rows[3]["windowed_bytes"] == rows[3]["full_bytes"] == 3 * 131072
    assert rows[32768]["windowed_bytes"] == 2_415_919_104 and rows[32768]["ratio"] == 0.5625
    (note,) = step["notes"]
    assert note["key"] == "window_ratio"
    assert note["values"] == {"tokens": 32768, "ratio": 0.5625, "limit": 0.5, "window_layers": 16}
    assert "latent_cache" not in {step["key"] for step in doc["steps"]}


def test_latent_table_and_notes(invoke_json):
    """32 layers × 32 heads × 128 in float16: MHA 524,288 bytes per token, GQA (8) 131,072, MQA
    16,384; a latent of 512 + RoPE 64: 32·576·2 = 36,864, 14.2× less than MHA."""
    doc = invoke_json("kvcache", *SMALL, "--latent-width", "512", "--rope-width", "64")
    step = next(step for step in doc["steps"] if step["key"] == "latent_cache")
    rows = step["value"]
    assert [row["bytes"] for row in rows] == [524288, 131072, 16384, 36864]
    assert rows[-1]["cache"] == "latent (c = 512, + RoPE 64)"
    assert rows[0]["vs_latent"] == pytest.approx(524288 / 36864)
    assert rows[-1]["bytes_long"] == 36864 * 4096
    keys = [note["key"] for note in step["notes"]]
    assert keys == ["rope_counted", "latent_smaller"]
    assert step["notes"][1]["values"]["ratio"] == pytest.approx(128 / 9)
    plain = invoke_json("kvcache", *SMALL, "--latent-width", "512")
    step = next(step for step in plain["steps"] if step["key"] == "latent_cache")
    assert step["value"][-1]["bytes"] == 32 * 512 * 2
    assert [note["key"] for note in step["notes"]] == ["rope_not_counted", "latent_smaller"]
    wide = invoke_json("kvcache", *SMALL, "--latent-width", "9000")
    step = next(step for step in wide["steps"] if step["key"] == "latent_cache")
    assert step["notes"][1]["key"] == "latent_not_smaller"  # 9000 > 2·32·128 = 8192


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--window", "4"), "give --window-layers K and --window W together"),
        (("--window-layers", "40", "--window", "4"), "more than the model's 32 layers"),
        (("--window-layers", "0", "--window", "4"), "--window-layers must be a whole number"),
        (("--latent-width", "0"), "--latent-width must be a whole number"),
        (("--rope-width", "64"), "give --latent-width"),
    ],
)
def test_window_and_latent_user_errors(invoke, args, fragment):
    assert_user_error(invoke("kvcache", *SMALL, *args), fragment)


def test_the_latex_names_the_weights_it_shows():
    """Issue 42: each token's step shows the new query's weights (a row summing to 1), and its
    LaTeX called them o_t = softmax(…) V, the output."""
    import attn_cli

    latex = attn_cli.kvcache().to_latex()
    assert "o_t = " not in latex
    assert latex.count("\\alpha_t = \\operatorname{softmax}") == 4  # one per token


# --- attention sinks: --sinks S --window W ---------------------------------------------------


def test_sink_caches_against_sdpa_with_their_masks(torch):
    """Each cache's weights and outputs: PyTorch's SDPA with the cache as a boolean mask
    (True = may attend): causal, the last W keys, and the first S with the last W."""
    import attn_cli as attn

    functional = torch.nn.functional
    rng = np.random.default_rng(44)
    for _ in range(10):
        n, d, d_v = int(rng.integers(2, 12)), int(rng.integers(1, 5)), int(rng.integers(1, 4))
        sinks, window = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        q, k, v = (rng.standard_normal(shape) for shape in ((n, d), (n, d), (n, d_v)))
        walk = attn.kvcache(q, k, v, sinks=sinks, window=window)
        position = torch.arange(n)
        i, j = position[:, None], position[None, :]
        masks = {
            "causal_weights": j <= i,
            "window_weights": (j <= i) & (j > i - window),
            "sink_weights": (j <= i) & ((j > i - window) | (j < sinks)),
        }
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        eye = torch.eye(n, dtype=torch.float64)
        for key, allowed in masks.items():
            weights = functional.scaled_dot_product_attention(tq, tk, eye, attn_mask=allowed)
            np.testing.assert_allclose(walk.step(key), weights.numpy(), rtol=0, atol=1e-13)
            output = functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=allowed)
            moved = {"window_weights": "window_moved", "sink_weights": "sinks_moved"}
            if key in moved:
                full = functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
                want = (output - full).abs().amax(dim=-1).numpy()
                got = [row[moved[key]] for row in walk.step("evictions")]
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


def test_the_sink_example_keeps_its_sink(invoke_json):
    doc = invoke_json("kvcache", "--example", "sink")
    steps = steps_by_key(doc)
    full = np.array(unwrap(steps["causal_weights"]["value"]))
    assert np.all(full[1:, 0] > 0.3)  # every later row parks much of its weight on k1
    notes = {note["key"]: note["values"] for step in doc["steps"] for note in step.get("notes", ())}
    assert notes["first_is_sink"]["share"] > notes["first_is_sink"]["next"]
    moved = notes["sinks_closer"]
    assert moved["sinks_moved"] < moved["window_moved"]
    rows = unwrap(steps["evictions"]["value"])
    assert [row["window_keeps"] for row in rows] == [1, 2, 3, 3, 3, 3, 3, 3]
    assert [row["sinks_keeps"] for row in rows] == [1, 2, 3, 4, 4, 4, 4, 4]
    assert all(row["sinks_lost"] <= row["window_lost"] for row in rows)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--sinks", "1"), "--sinks 1 needs --window W"),
        (("--sinks", "0", "--window", "2"), "--sinks must be"),
        (("--sinks", "1", "--window", "0"), "--window must be"),
    ],
)
def test_sink_errors(invoke, args, fragment):
    assert_user_error(invoke("kvcache", *args), fragment)


# --- at real sizes: steps at chosen tokens, a summary for the rest --------------------------


def test_a_long_run_shows_chosen_tokens_and_summarises_the_rest(invoke_json):
    doc = invoke_json("kvcache", "--n", "40", "--dk", "2", "--sinks", "2", "--window", "8")
    steps = steps_by_key(doc)
    q, k, v = (np.array(unwrap(doc["inputs"][name])) for name in ("Q", "K", "V"))
    weights, out = causal_attention(q, k, v)
    # The first three, where the window (8) and the sinks' cache (2 + 8) fill and evict, the last.
    shown = [key for key in steps if key.startswith("token")]
    assert shown == [
        "token1",
        "token2",
        "token3",
        "token8",
        "token9",
        "token10",
        "token11",
        "token40",
    ]
    for key in shown:
        t = int(key.removeprefix("token"))
        np.testing.assert_allclose(unwrap(steps[key]["value"])[0], weights[t - 1], atol=1e-12)
        assert steps[key]["parts"][f"K cache ({t} × 2)"]["shape"] == [t, 2]
    np.testing.assert_allclose(unwrap(steps["cached"]["value"]), out, atol=1e-12)
    np.testing.assert_allclose(unwrap(steps["full"]["value"]), out, atol=1e-12)
    assert [n["key"] for n in steps["full"]["notes"]] == ["blas_gap", "ordered_gap_shown"]
    assert steps["full"]["notes"][1]["values"]["unequal"] == 0
    assert [row["token"] for row in steps["work"]["value"]] == [1, 2, 3, 8, 9, 10, 11, 40]
    assert "causal_weights" not in steps and "evictions" not in steps  # no n × n comparison
    rows = {(r["token"], r["policy"]): r for r in steps["policy_tokens"]["value"]}
    assert rows[(11, "sinks 2 + 8")] | {"weight_evicted": 0, "output_moved": 0} == {
        "token": 11,
        "policy": "sinks 2 + 8",
        "held": 10,
        "keys_held": "k1–k2, k4–k11",
        "evicted": "k3",
        "weight_evicted": 0,
        "output_moved": 0,
    }
    row = rows[(40, "window 8")]
    assert (row["held"], row["keys_held"], row["evicted"]) == (8, "k33–k40", "k32")
    assert math.isclose(row["weight_evicted"], sum(weights[39][:32]), rel_tol=1e-12)
    held = [j for j in range(32, 40)]
    kept = np.exp([q[39] @ k[j] / math.sqrt(2) for j in held])
    moved = np.max(np.abs((kept / kept.sum()) @ v[held] - out[39]))
    assert math.isclose(row["output_moved"], moved, rel_tol=1e-9)
    per_token = kvcache.cache_bytes_per_token(32, 32, 128, "float16", 8)  # 131,072 bytes
    assert [tuple(r.values()) for r in steps["cache_summary"]["value"]] == [
        ("full", 1, 40, 1, 40, 0, 0, 40 * per_token),
        ("window 8", 1, 8, 1, 8, 0, 0, 8 * per_token),
        ("window 8", 9, 40, 8, 8, 1, 32, 8 * per_token),
        ("sinks 2 + 8", 1, 10, 1, 10, 0, 0, 10 * per_token),
        ("sinks 2 + 8", 11, 40, 10, 10, 1, 30, 10 * per_token),
    ]


def test_streamingllm_4_sinks_and_1020_recent(invoke_json):
    """StreamingLLM's setting: 4 sinks + 1,020 recent = 1,024 tokens; from token 1,025 on each
    new token evicts one, the fifth token first (the oldest after the sinks)."""
    doc = invoke_json("kvcache", "--example", "streamingllm")
    steps = steps_by_key(doc)
    shown = [int(key.removeprefix("token")) for key in steps if key.startswith("token")]
    assert shown == [1, 2, 3, 1020, 1021, 1024, 1025, 1100]
    rows = {(r["token"], r["policy"]): r for r in steps["policy_tokens"]["value"]}
    first = rows[(1025, "sinks 4 + 1,020")]
    assert (first["held"], first["keys_held"], first["evicted"]) == (1024, "k1–k4, k6–k1025", "k5")
    last = rows[(1100, "sinks 4 + 1,020")]
    assert (last["held"], last["keys_held"]) == (1024, "k1–k4, k81–k1100")
    window = rows[(1100, "window 1,020")]
    assert (window["held"], window["keys_held"]) == (1020, "k81–k1100")
    # Keeping the sink k1 keeps the outputs nearer the full cache's than the window alone.
    assert last["output_moved"] < window["output_moved"]
    q, k = (np.array(unwrap(doc["inputs"][name])) for name in ("Q", "K"))
    scores = q[1099] @ k.T / math.sqrt(2)
    full = np.exp(scores - scores.max()) / np.sum(np.exp(scores - scores.max()))
    assert math.isclose(window["weight_evicted"], full[:80].sum(), rel_tol=1e-12)
    assert math.isclose(last["weight_evicted"], full[4:80].sum(), rel_tol=1e-12)
    assert full[0] > 0.3  # the sink: k1 takes a third or more of token 1,100's weight
    summary = [r for r in steps["cache_summary"]["value"] if r["policy"] == "sinks 4 + 1,020"]
    assert [
        (r["first_token"], r["last_token"], r["held_last"], r["evicted_total"]) for r in summary
    ] == [
        (1, 1024, 1024, 0),
        (1025, 1100, 1024, 76),
    ]
    assert summary[-1]["bytes_last"] == 1024 * 131_072 == 128 * 2**20  # 128 MiB, Llama 3 8B-sized
    np.testing.assert_allclose(
        unwrap(steps["cached"]["value"]), unwrap(steps["full"]["value"]), rtol=0, atol=1e-12
    )


def test_a_4096_token_window_as_mistral_keeps_it(invoke_json):
    doc = invoke_json("kvcache", "--example", "window-4096")
    steps = steps_by_key(doc)
    shown = [int(key.removeprefix("token")) for key in steps if key.startswith("token")]
    assert shown == [1, 2, 3, 4096, 4097, 4160]
    summary = steps["cache_summary"]["value"]
    assert summary[-1] == {
        "policy": "window 4,096",
        "first_token": 4097,
        "last_token": 4160,
        "held_first": 4096,
        "held_last": 4096,
        "evicted_each": 1,
        "evicted_total": 64,
        "bytes_last": 2 * 32 * 8 * 128 * 2 * 4096,  # 512 MiB: K and V, 32 layers, 8 heads of 128
    }
    assert summary[-1]["bytes_last"] == 512 * 2**20
    assert summary[0]["bytes_last"] == 4160 * 131_072  # the full cache keeps growing
    rows = {r["token"]: r for r in steps["policy_tokens"]["value"]}
    assert (rows[4097]["keys_held"], rows[4097]["evicted"]) == ("k2–k4097", "k1")


def test_long_runs_hold_no_n_by_n_matrix():
    """The estimate (what the memory check reads) grows as n, not n²; the blocked and the
    one-token-at-a-time computations are full causal attention's rows."""
    from attn_cli.course.kvcache import build

    options = {name: build.CARD.defaults[name] for name in build.CARD.defaults}
    shape = lambda n: {"Q": (n, 2), "K": (n, 2), "V": (n, 2)}  # noqa: E731
    small, large = (build.estimate_bytes(shape(n), options, 8) for n in (2048, 8192))
    assert large < 96 * 2**20 and large / small < 4.5  # 8,192 tokens in under 96 MiB
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((600, 3)) for _ in range(3))
    _, out = causal_attention(q, k, v)
    np.testing.assert_allclose(kvcache.blocked_causal_attention(q, k, v, 256), out, atol=1e-12)
    np.testing.assert_allclose(kvcache.cached_rows(q, k, v), out, atol=1e-12)
    assert kvcache.held(1100, 1020, 4) == (range(4), range(80, 1100))
    assert kvcache.evicted_at(1025, 1020, 4) == 4 and kvcache.evicted_at(1024, 1020, 4) is None


def test_show_tokens_at_a_small_size(invoke_json):
    doc = invoke_json("kvcache", "--n", "5", "--dk", "2", "--show-tokens", "5,2")
    steps = steps_by_key(doc)
    assert [key for key in steps if key.startswith("token")] == ["token2", "token5"]
    assert [r["policy"] for r in steps["cache_summary"]["value"]] == ["full"]


def test_32_tokens_are_still_every_step(invoke_json):
    steps = steps_by_key(invoke_json("kvcache", "--n", "32", "--dk", "2"))
    assert sum(key.startswith("token") for key in steps) == 32
    assert "cache_summary" not in steps and "policy_tokens" not in steps
