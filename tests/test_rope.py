"""attn rope: the rotations against RoPE as the models' code writes it in PyTorch (Hugging Face's
rotate_half, Meta's complex numbers over consecutive pairs), the offset property, the sinusoidal
comparison, the worked example by hand, and the user errors."""

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
    random=("--n", "5", "--dk", "4", "--seed", "3"),
    sized=lambda s: {"n": s, "dk": 2 * (s // 2 + 1)},  # an even width
    large=("--n", "101", "--dk", "2"),
    variants=(
        (),
        ("--layout", "split"),
        ("--example", "partial"),
        ("--rotary-dim", "2"),  # one pair: both layouts turn dimensions 0 and 1
        ("--q", "0,0;0,0", "--k", "0,0;0,0"),  # no cross terms: PE's scores keep too
        ("--example", "llama3.1-8b"),
        ("--example", "qwen2.5-yarn"),
        ("--rope-scaling", "linear", "--factor", "4", "--original-max-position-embeddings", "16"),
        ("--rope-scaling", "ntk", "--factor", "4", "--original-max-position-embeddings", "16"),
    ),
    options=({"layout": "split"}, {"rotary_dim": 2}),
    batch=Batch(lambda draw: {"q": draw(3, 2), "k": draw(3, 2)}, ("q", "k")),
)


def steps_of(doc: dict) -> dict[str, dict]:
    return {step["key"]: step for step in doc["steps"]}


# --- references, written as the models' repositories write RoPE (PyTorch, float64) ----------


def hf_rope(torch, x, positions, base: float, r: int):
    """Hugging Face's Llama: inv_freq, cos and sin of the angles repeated for both halves, and
    rotate_half; partial rotary as GPT-NeoX (the first r dimensions)."""

    def rotate_half(t):
        first, second = t[..., : t.shape[-1] // 2], t[..., t.shape[-1] // 2 :]
        return torch.cat((-second, first), dim=-1)

    inv_freq = 1.0 / (base ** (torch.arange(0, r, 2, dtype=torch.float64) / r))
    freqs = torch.outer(positions, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    turned, passed = x[..., :r], x[..., r:]
    return torch.cat((turned * emb.cos() + rotate_half(turned) * emb.sin(), passed), dim=-1)


def meta_rope(torch, x, positions, base: float, r: int):
    """Meta's Llama: precomputed e^(i m θ) (torch.polar) times consecutive pairs viewed as
    complex numbers."""
    inv_freq = 1.0 / (base ** (torch.arange(0, r, 2, dtype=torch.float64)[: r // 2] / r))
    freqs_cis = torch.polar(torch.ones(len(positions), r // 2, dtype=torch.float64),
                            torch.outer(positions, inv_freq))  # fmt: skip
    pairs = torch.view_as_complex(x[..., :r].reshape(x.shape[0], -1, 2).contiguous())
    turned = torch.view_as_real(pairs * freqs_cis).flatten(-2)
    return torch.cat((turned, x[..., r:]), dim=-1)


def sinusoidal(positions: np.ndarray, d: int, base: float) -> np.ndarray:
    """The lectures' PE, one entry at a time, interleaved, cut to d columns."""
    pe = np.zeros((len(positions), d))
    for row, pos in enumerate(positions):
        for col in range(d):
            angle = pos / base ** (2 * (col // 2) / d)
            pe[row, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return pe


@pytest.mark.parametrize("layout", ["split", "interleaved"])
def test_random_shapes_against_the_models_rope(torch, layout):
    rng = np.random.default_rng(44)
    reference = hf_rope if layout == "split" else meta_rope
    for _ in range(12):
        n = int(rng.integers(1, 9))
        d = 2 * int(rng.integers(1, 7))
        r = 2 * int(rng.integers(1, d // 2 + 1))
        base = float(rng.choice([10000.0, 500000.0, 1.0 + 100 * rng.random()]))
        s = int(rng.integers(1, 50))
        q, k = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        walk = attn.rope(q, k, layout=layout, base=base, rotary_dim=r, offset=s)
        positions = torch.arange(n, dtype=torch.float64)
        tq, tk = torch.tensor(q), torch.tensor(k)
        q_ref, k_ref = (reference(torch, t, positions, base, r) for t in (tq, tk))
        np.testing.assert_allclose(walk.step("q_rotated"), q_ref.numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(walk.step("k_rotated"), k_ref.numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(walk.output, (q_ref @ k_ref.T).numpy(), rtol=0, atol=1e-12)
        later = positions + s
        shifted = reference(torch, tq, later, base, r) @ reference(torch, tk, later, base, r).T
        np.testing.assert_allclose(walk.step("shifted"), shifted.numpy(), rtol=0, atol=1e-11)
        # The offset property, on the reference itself: the scores at m + s are those at m.
        np.testing.assert_allclose(shifted.numpy(), walk.output, rtol=0, atol=1e-11)
        other = hf_rope if reference is meta_rope else meta_rope
        expected = other(torch, tq, positions, base, r) @ other(torch, tk, positions, base, r).T
        np.testing.assert_allclose(walk.step("other_layout"), expected.numpy(), atol=1e-12)


def test_the_sinusoidal_comparison_is_pe_added_to_q_and_k():
    rng = np.random.default_rng(5)
    for n, d in ((4, 4), (3, 6), (5, 5)):
        q, k = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        rotary = {"rotary_dim": d - d % 2} if d % 2 else {}
        walk = attn.rope(q, k, offset=2, **rotary)
        at, moved = sinusoidal(np.arange(n), d, 10000.0), sinusoidal(np.arange(n) + 2, d, 1e4)
        np.testing.assert_allclose(walk.step("pe_scores"), (q + at) @ (k + at).T, atol=1e-12)
        np.testing.assert_allclose(walk.step("pe_shifted"), (q + moved) @ (k + moved).T, atol=1e-12)


def test_the_worked_example_by_hand(invoke_json):
    """q1 = (0, 1, 0, 1) at position 1: pair 0 turned by 1 radian, pair 1 by 0.01."""
    doc = invoke_json("rope")
    steps = steps_of(doc)
    assert list(steps) == [
        "frequencies", "angles", "q_rotated", "k_rotated", "scores", "other_layout",
        "shifted", "pe_scores", "pe_shifted",
    ]  # fmt: skip
    q1 = unwrap(steps["q_rotated"]["value"])[1]
    expected = [-math.sin(1), math.cos(1), -math.sin(0.01), math.cos(0.01)]
    assert q1 == pytest.approx(expected, abs=1e-15)
    assert [row["dims"] for row in steps["frequencies"]["value"]] == ["0, 1", "2, 3"]
    assert [row["theta"] for row in steps["frequencies"]["value"]] == [1.0, 0.01]
    notes = {note["key"]: note for step in doc["steps"] for note in step.get("notes", ())}
    assert notes["shift_kept"]["values"]["difference"] < 1e-15
    assert notes["pe_changes"]["values"]["difference"] > 0.5
    assert notes["layouts_differ"]["values"]["other"] == "split"


def test_the_same_token_everywhere_gives_one_score_per_offset(invoke_json):
    doc = invoke_json("rope", "--example", "same-token")
    scores = np.array(unwrap(steps_of(doc)["scores"]["value"]))
    for offset in range(-4, 5):
        diagonal = np.diagonal(scores, offset)
        np.testing.assert_allclose(diagonal, diagonal[0], atol=1e-15)


def test_the_layouts_name_the_pairs_they_turn(invoke_json):
    steps = steps_of(invoke_json("rope", "--example", "llama3"))
    assert [row["dims"] for row in steps["frequencies"]["value"]] == ["0, 2", "1, 3"]
    assert [row["theta"] for row in steps["frequencies"]["value"]] == pytest.approx(
        [1.0, 500000**-0.5], rel=1e-15
    )
    doc = invoke_json("rope", "--rotary-dim", "2")  # one pair: the layouts agree
    notes = {note["key"] for step in doc["steps"] for note in step.get("notes", ())}
    assert {"layouts_agree", "partial"} <= notes and "layouts_differ" not in notes


def test_partial_rotary_passes_the_last_dimensions_through(invoke_json):
    doc = invoke_json("rope", "--example", "partial")
    steps = steps_of(doc)
    q = np.array(unwrap(doc["inputs"]["Q"]))
    turned = np.array(unwrap(steps["q_rotated"]["value"]))
    np.testing.assert_array_equal(turned[:, 4:], q[:, 4:])
    np.testing.assert_allclose(
        np.linalg.norm(turned[:, :4], axis=1), np.linalg.norm(q[:, :4], axis=1), atol=1e-15
    )


def test_torch_backend_agrees_with_numpy(invoke_json, torch):
    args = ("rope", "--n", "7", "--dk", "6", "--layout", "split", "--rotary-dim", "4")
    numpy_doc, torch_doc = invoke_json(*args), invoke_json(*args, "--backend", "torch")
    assert torch_doc["backend"] == "torch"
    np.testing.assert_allclose(
        unwrap(torch_doc["output"]), unwrap(numpy_doc["output"]), rtol=0, atol=1e-12
    )


def test_check_passes_on_the_bundled_file(invoke):
    result = invoke("check", str(bundled_lessons_dir() / "rope.toml"))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--rotary-dim", "3"), "--rotary-dim 3 is odd"),
        (("--rotary-dim", "6"), "wider than q and k (d = 4)"),
        (("--rotary-dim", "0"), "--rotary-dim must be a whole number >= 2"),
        (("--q", "1,0,1;0,1,0", "--k", "1,0,1;0,1,0"), "an odd width"),
        # d = 1 once read "or --rotary-dim with an even width of at most 1", and no such width is
        # allowed (--rotary-dim is at least 2)
        (("--q", "1;0", "--k", "1;0"), "1 wide: RoPE turns pairs of dimensions, so it needs"),
        (("--base", "1"), "--base 1: the base must be greater than 1"),
        (("--offset", "0"), "--offset must be a whole number >= 1"),
        (("--q", "1,0;0,1", "--k", "1,0"), "give Q and K the same number of rows"),
        (("--q", "1,0;0,1", "--k", "1,0,0,0;0,1,0,0"), "Q and K must share d"),
        (("--layout", "halves"), "halves"),
    ],
)
def test_user_errors(invoke, args, fragment):
    assert_user_error(invoke("rope", *args), fragment)


def test_one_turned_pair_is_not_followed_by_slower_pairs(invoke_json):
    """--dk 6 --rotary-dim 2: one pair, θ₀ = 1. The frequencies step once said "each later pair
    turns slower, down to pair 0, a full turn every 6.283 positions"."""
    doc = invoke_json("rope", "--n", "3", "--dk", "6", "--rotary-dim", "2")
    step = doc["steps"][0]
    assert step["key"] == "frequencies"
    assert [(row["pair"], row["theta"]) for row in step["value"]] == [(0, 1.0)]
    assert "down to pair" not in step["explanation"]
    assert "with one pair there is only the fastest" in step["explanation"]
    wide = invoke_json("rope", "--n", "3", "--dk", "4")
    assert "down to pair 1" in wide["steps"][0]["explanation"]


# --- RoPE scaling (--rope-scaling): the lesson's steps against the published formulas --------

LLAMA_ARGS = ("rope", "--example", "llama3.1-8b")
QWEN_ARGS = ("rope", "--example", "qwen2.5-yarn")


def test_llama31_8b_frequencies_are_metas(invoke_json):
    from tests.test_rope_scaling import llama3_reference, plain_frequencies

    steps = steps_of(invoke_json(*LLAMA_ARGS))
    assert list(steps)[:3] == ["frequencies", "scaling", "angles"] and list(steps)[-1] == "far"
    rows = steps["scaling"]["value"]
    expected = llama3_reference(plain_frequencies(500000.0, 128), 8.0, 1.0, 4.0, 8192)
    np.testing.assert_allclose([row["scaled_theta"] for row in rows], expected, rtol=1e-14)
    words = [row["regime"] for row in rows]
    assert words == ["kept"] * 29 + ["blended"] * 6 + ["interpolated"] * 29
    plain = np.array(plain_frequencies(500000.0, 128))
    np.testing.assert_allclose([row["divided"] for row in rows], plain / expected, rtol=1e-14)
    np.testing.assert_allclose(
        [row["turns"] for row in rows], 8192 / (2 * np.pi / plain), rtol=1e-14
    )
    (note,) = steps["scaling"]["notes"]
    assert note["values"]["order"] == "0–28 kept, 29–34 blended, 35–63 interpolated"
    # The angles are turned by the scaled frequencies: position 1's row is θ'ᵢ.
    np.testing.assert_allclose(unwrap(steps["angles"]["value"])[1], expected, rtol=1e-14)


def test_llama31_8b_far_scores(invoke_json):
    """q = k = ones: a score at offset Δ is Σᵢ 2 cos(Δ·θᵢ) (each pair (1, 1) turned by Δ·θᵢ)."""
    from tests.test_rope_scaling import llama3_reference, plain_frequencies

    steps = steps_of(invoke_json(*LLAMA_ARGS))
    plain = np.array(plain_frequencies(500000.0, 128))
    scaled = np.array(llama3_reference(list(plain), 8.0, 1.0, 4.0, 8192))
    rows = steps["far"]["value"]
    assert [(row["position"], row["offset"]) for row in rows] == [(0, 16384), (1, 16383)]
    for row in rows:
        delta = row["offset"]
        assert row["plain"] == pytest.approx(2 * np.sum(np.cos(delta * plain)), abs=1e-9)
        assert row["scaled"] == pytest.approx(2 * np.sum(np.cos(delta * scaled)), abs=1e-9)
    (note,) = steps["far"]["notes"]
    sweep = 8191 * plain

    def past(theta):
        return int(np.sum((sweep < 2 * np.pi) & (np.mod(16384 * theta, 2 * np.pi) > sweep)))

    assert note["values"]["plain"] == past(plain) == 25  # of the 29 pairs slower than L
    assert note["values"]["scaled"] == past(scaled) == 0


def test_qwen25_yarn_ramp_and_temperature(invoke_json):
    from tests.test_rope_scaling import yarn_reference

    steps = steps_of(invoke_json(*QWEN_ARGS))
    assert list(steps)[:3] == ["frequencies", "scaling", "temperature"]
    expected, attention, (low, high) = yarn_reference(1e6, 128, 4.0, 32768, 32.0, 1.0)
    rows = steps["scaling"]["value"]
    np.testing.assert_allclose([row["scaled_theta"] for row in rows], expected, rtol=1e-14)
    assert [row["regime"] for row in rows] == ["kept"] * 24 + ["blended"] * 16 + [
        "interpolated"
    ] * 24
    assert (low, high) == (23, 40)
    assert "w = (i − 23) / (40 − 23)" in steps["scaling"]["explanation"]
    (temperature,) = steps["temperature"]["value"]
    assert temperature["attention_factor"] == pytest.approx(0.1 * math.log(4) + 1, rel=1e-15)
    assert temperature["on_scores"] == pytest.approx(1.2964769927807063, rel=1e-15)
    for row in steps["far"]["value"]:  # the scaled scores carry YaRN's 1/t
        want = attention**2 * 2 * np.sum(np.cos(row["offset"] * np.array(expected)))
        assert row["scaled"] == pytest.approx(want, abs=1e-9)
    # The main scores are the turns alone: q0·k0 at offset 0 is |q|² = 128.
    assert unwrap(steps["scores"]["value"])[0][0] == pytest.approx(128.0, abs=1e-12)


def test_linear_and_ntk_turn_by_the_scaled_frequencies(invoke_json):
    base = (
        "rope",
        "--n",
        "3",
        "--dk",
        "8",
        "--seed",
        "1",
        "--original-max-position-embeddings",
        "64",
    )
    linear = steps_of(invoke_json(*base, "--rope-scaling", "linear", "--factor", "4"))
    theta = np.array([10000.0 ** (-2 * i / 8) for i in range(4)])
    np.testing.assert_allclose(unwrap(linear["angles"]["value"])[2], 2 * theta / 4, rtol=1e-15)
    assert {row["regime"] for row in linear["scaling"]["value"]} == {"interpolated"}
    ntk = steps_of(invoke_json(*base, "--rope-scaling", "ntk", "--factor", "4"))
    new_base = 10000.0 * 4 ** (8 / 6)
    want = np.array([new_base ** (-2 * i / 8) for i in range(4)])
    np.testing.assert_allclose(unwrap(ntk["angles"]["value"])[1], want, rtol=1e-14)
    assert [row["regime"] for row in ntk["scaling"]["value"]] == [
        "kept", "blended", "blended", "interpolated",
    ]  # fmt: skip
    assert "= 63496" in ntk["scaling"]["title"]  # 10000 · 4^(4/3) = 63496.04


@pytest.mark.parametrize("kind", ["linear", "ntk", "yarn", "llama3"])
def test_scaling_on_torch_agrees_with_numpy(invoke_json, torch, kind):
    args = ("rope", "--n", "4", "--dk", "8", "--seed", "2", "--rope-scaling", kind,
            "--factor", "8", "--original-max-position-embeddings", "32")  # fmt: skip
    numpy_doc, torch_doc = invoke_json(*args), invoke_json(*args, "--backend", "torch")
    for mine, theirs in zip(numpy_doc["steps"], torch_doc["steps"], strict=True):
        assert mine["key"] == theirs["key"]
        if mine["kind"] == "records":
            for a, b in zip(mine["value"], theirs["value"], strict=True):
                for name, value in a.items():
                    if isinstance(value, float):
                        assert b[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
                    else:
                        assert b[name] == value
        else:
            np.testing.assert_allclose(unwrap(theirs["value"]), unwrap(mine["value"]), atol=1e-12)
        assert [n["key"] for n in mine.get("notes", ())] == [
            n["key"] for n in theirs.get("notes", ())
        ]


def test_code_refuses_scaling(invoke):
    assert_user_error(invoke(*LLAMA_ARGS, "--code"), "--code", "--rope-scaling llama3")


SCALED = ("--rope-scaling", "llama3", "--factor", "8", "--original-max-position-embeddings", "64")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--factor", "8"), "--factor is a RoPE scaling parameter: give --rope-scaling"),
        (("--beta-fast", "32"), "--beta-fast is a RoPE scaling parameter"),
        (("--rope-scaling", "yarn", "--original-max-position-embeddings", "64"), "needs --factor"),
        (("--rope-scaling", "yarn", "--factor", "4"), "needs --original-max-position-embeddings"),
        ((*SCALED[:2], "--factor", "0", *SCALED[4:]), "--factor 0: the factor must be greater"),
        ((*SCALED[:2], "--factor", "-2", *SCALED[4:]), "--factor -2: the factor must be greater"),
        ((*SCALED[:2], "--factor", "1", *SCALED[4:]), "--factor 1: the factor must be greater"),
        ((*SCALED[:4], "--original-max-position-embeddings", "0"), "must be a whole number >= 1"),
        ((*SCALED, "--low-freq-factor", "4", "--high-freq-factor", "4"), "--low-freq-factor 4 is not below --high-freq-factor 4"),
        ((*SCALED, "--low-freq-factor", "5"), "--low-freq-factor 5 is not below --high-freq-factor 4"),
        ((*SCALED, "--low-freq-factor", "0"), "--low-freq-factor 0: give a number > 0"),
        ((*SCALED, "--beta-fast", "32"), "--beta-fast is a parameter of --rope-scaling yarn"),
        (("--rope-scaling", "yarn", *SCALED[2:], "--low-freq-factor", "1"), "--low-freq-factor is a parameter of --rope-scaling llama3"),
        (("--rope-scaling", "yarn", *SCALED[2:], "--beta-fast", "1", "--beta-slow", "2"), "--beta-fast 1 is not above --beta-slow 2"),
        (("--rope-scaling", "yarn", *SCALED[2:], "--beta-slow", "0"), "--beta-slow 0: give a number of turns > 0"),
        (("--rope-scaling", "ntk", *SCALED[2:], "--rotary-dim", "2"), "needs r >= 4"),
        ((*SCALED[:4], "--original-max-position-embeddings", "2048", "--dtype", "float16"), "position 4096 (2L)"),
        (("--rope-scaling", "rope2"), "rope2"),
    ],
)  # fmt: skip
def test_scaling_user_errors(invoke, args, fragment):
    assert_user_error(invoke("rope", *args), fragment)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_regimes_note_holds_in_a_narrow_dtype(invoke_json, dtype):
    """θᵢ / 3 is rounded in the run's dtype: the note's check allows that rounding, so the note
    is printed (a withheld note would leave the step without it)."""
    doc = invoke_json("rope", "--n", "3", "--dk", "8", "--seed", "1", "--rope-scaling", "linear",
                      "--factor", "3", "--original-max-position-embeddings", "32", "--dtype", dtype)  # fmt: skip
    (note,) = steps_of(doc)["scaling"]["notes"]
    assert note["values"]["interpolated"] == 4


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_added_encodings_are_judged_on_the_inputs_not_the_types_rounding(invoke_json, torch, dtype):
    """The sinusoidal comparison's note says whether the inputs' cross terms move the scores:
    in bfloat16 the rounding bound (8·d·ε·(m + 1) · sizes) exceeds the change itself on the
    lecture's example, and the note said "these scores stay". Decided in float64 from the
    inputs, every type says they change, by the difference of its own matrices; Q and K of
    zeros stay in every type."""
    exact = steps_of(invoke_json("rope"))["pe_shifted"]["notes"][0]
    assert exact["key"] == "pe_changes" and exact["values"]["difference"] > 1  # float64: moves
    for extra, key in (((), "pe_changes"), (("--q", "0,0;0,0", "--k", "0,0;0,0"), "pe_kept")):
        doc = invoke_json("rope", *extra, "--backend", "torch", "--dtype", dtype)
        step = steps_of(doc)["pe_shifted"]
        (note,) = step["notes"]
        assert note["key"] == key, (extra, note["text"])
        shown = np.asarray(unwrap(step["value"]), dtype=np.float64)
        before = np.asarray(unwrap(steps_of(doc)["pe_scores"]["value"]), dtype=np.float64)
        largest = np.abs(shown - before).max()  # the subtraction rounds in the lesson's type
        assert abs(note["values"]["difference"] - largest) <= 2**-7 * max(1.0, largest)
