"""attn variance: the statistical claims with tolerances from the sample size, the worked
numerics computed independently, numpy against torch, every format and every user error."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from attn_cli.core.backend_choice import get_backend
from attn_cli.core.kept import Kept
from attn_cli.course.variance import build as lesson
from attn_cli.course.variance.build import chunk_rows
from attn_cli.mechanisms import variance as mech
from attn_cli.run import runner
from tests.conftest import assert_user_error, data, unwrap
from tests.lesson_runs import Runs

# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--dk", "4,16", "--samples", "200", "--keys", "5", "--seed", "3"),
    sized=lambda s: {"dk": s, "keys": max(s, 2), "samples": 200},
    variants=(("--dk", "4,16", "--samples", "50"), ("--dk", "1", "--samples", "500")),
    sweeps=tuple(
        {"dk": dk, "samples": s, "keys": k}
        for dk in ([1], [4, 64], [2, 512])
        for s in (20, 400)
        for k in (1, 2, 8)
    ),
    figure=(("variance", "--dk", "4,64", "--samples", "50"), ("d_k (width of q and k)",)),
)


OUTPUT_KEYS = {
    "dk",
    "mean_raw",
    "var_raw",
    "mean_scaled",
    "var_scaled",
    "max_weight_raw",
    "max_weight_scaled",
    "entropy_raw",
    "entropy_scaled",
    "grad_raw",
    "grad_scaled",
    "samples",
}


def plain_softmax(scores: list[float]) -> np.ndarray:
    exps = np.array([math.exp(s - max(scores)) for s in scores])
    return exps / exps.sum()


def streams(seed: int, d_k: int) -> mech.Streams:
    """The lesson's streams: in chunk i of width d_k, vector v seeded from (seed, d_k, i, v)."""
    return lesson.streams(get_backend("numpy"), seed, d_k)


def run_estimate(d_k: int, samples: int, keys: int = 8, seed: int = 7) -> mech.Estimates:
    return mech.estimate(streams(seed, d_k), d_k, keys, samples, chunk_rows(samples, keys, d_k))


# Tolerances. With S samples of n keys each, the scaled score's sample mean has standard error
# 1/sqrt(S n) (the n scores of a sample are uncorrelated), and its sample variance has standard
# error sqrt(2 (d + n + 2) / (d S n)) (mech.variance_standard_error: the fourth moment of a
# product of normals, plus the covariance of squared scores that share a query). A fixed seed
# makes each check deterministic; 4 standard errors would be exceeded by chance 6 times in
# 100,000 for a normal estimate, so these tolerances are not tuned to the seed.
@pytest.mark.parametrize("d_k", [1, 16, 256])
def test_mean_and_variance_match_the_theory(d_k):
    samples, keys = 3000, 8
    result = run_estimate(d_k, samples, keys)
    se_mean = 1 / math.sqrt(samples * keys)
    se_var = mech.variance_standard_error(d_k, keys, samples)
    assert abs(result.mean_scaled) < 4 * se_mean
    assert abs(result.var_scaled - 1) < 4 * se_var
    assert abs(result.mean_raw) < 4 * se_mean * math.sqrt(d_k)
    assert abs(result.var_raw / d_k - 1) < 4 * se_var
    # Scaling divides each score by sqrt(d_k): the variance exactly by d_k.
    assert result.var_scaled == pytest.approx(result.var_raw / d_k, rel=1e-12)


def test_the_standard_error_formula_matches_repeated_experiments():
    # 60 independent estimates at d_k = 1 (heaviest tails): their spread should be the formula's.
    # A standard deviation from 60 values is itself uncertain by about 1/sqrt(2 * 59) = 9%, so
    # allow 30% (over 3 of those).
    samples, keys = 400, 8
    estimates = [mech.estimate(streams(seed, 1), 1, keys, samples, samples) for seed in range(60)]
    spread = np.std([e.var_scaled for e in estimates], ddof=1)
    assert spread == pytest.approx(mech.variance_standard_error(1, keys, samples), rel=0.3)


def test_softmax_sharpens_with_width_unless_scaled():
    samples = 2000
    narrow, wide = run_estimate(16, samples), run_estimate(1024, samples)
    # Every per-sample quantity lies in [0, 1] (max weight, gradient) or [0, log 8] (entropy),
    # so its standard deviation is at most half that range and the standard error of a mean of
    # 2000 at most 0.5 / sqrt(2000) = 0.011 (0.023 for entropy): margins below are 4 or more.
    bound = 0.5 / math.sqrt(samples)
    assert wide.max_weight_raw - narrow.max_weight_raw > 0.1 + 8 * bound
    assert wide.max_weight_raw > 0.9
    assert abs(wide.max_weight_scaled - narrow.max_weight_scaled) < 4 * math.sqrt(2) * bound
    assert wide.entropy_scaled - wide.entropy_raw > 1
    assert wide.grad_scaled > 5 * wide.grad_raw
    assert 1 / 8 < wide.max_weight_scaled < 0.5


def test_width_one_scaling_changes_nothing():
    result = run_estimate(1, 500)
    assert result.mean_raw == result.mean_scaled and result.var_raw == result.var_scaled
    assert result.max_weight_raw == result.max_weight_scaled
    assert result.grad_raw == result.grad_scaled


def test_chunk_sums_add_up_over_chunks():
    raw = np.random.default_rng(3).standard_normal((50, 6)) * 4
    whole = mech.chunk_sums(raw, 16)
    parts = mech.chunk_sums(raw[:17], 16) + mech.chunk_sums(raw[17:], 16)
    assert np.allclose(whole, parts, rtol=1e-12)


def test_softmax_summary_against_plain_formulas():
    logits = np.array([[2.0, 1.0, 0.5], [20.0, 10.0, 5.0], [0.0, 0.0, 0.0]])
    summary = mech.softmax_summary(logits)
    for row, max_weight, entropy, gradient in zip(
        logits, summary.max_weight, summary.entropy, summary.gradient, strict=True
    ):
        weights = plain_softmax(list(row))
        assert max_weight == pytest.approx(weights.max(), rel=1e-14)
        assert entropy == pytest.approx(-sum(w * math.log(w) for w in weights), rel=1e-12)
        assert gradient == pytest.approx(weights.max() * (1 - weights.max()), rel=1e-12)
    assert summary.entropy[2] == pytest.approx(math.log(3), rel=1e-14)


def test_histogram_counts_match_numpy():
    values = np.random.default_rng(5).standard_normal((300, 8)) * 3
    edges = tuple(np.linspace(-6, 6, 13))
    expected, _ = np.histogram(values, bins=np.array(edges))
    inside = (values >= -6) & (values < 6)
    assert mech.histogram_counts(values, edges).tolist() == expected.tolist()
    assert expected.sum() == inside.sum()


def test_worked_numerics_exactly(invoke_json):
    doc = invoke_json("variance", "--samples", "20", "--dk", "4")
    spiky, temperature = doc["steps"][4], doc["steps"][5]
    raw = [15.5, -16.1, 2.3]
    assert spiky["key"] == "spiky" and temperature["key"] == "temperature"
    expected = [plain_softmax(raw), plain_softmax([s / 16 for s in raw])]
    assert np.allclose(unwrap(spiky["value"]), expected, rtol=1e-13, atol=0)
    assert unwrap(spiky["parts"]["scores"])[1] == pytest.approx(
        [0.96875, -1.00625, 0.14375], rel=1e-15
    )
    top = expected[0].max()
    assert np.ravel(unwrap(spiky["parts"]["w_max (1 − w_max)"]))[0] == pytest.approx(
        top * (1 - top), rel=1e-6
    )
    logits = [2.0, 1.0, 0.5]
    expected = [plain_softmax(logits), plain_softmax([s / 4 for s in logits])]
    expected.append(plain_softmax([s * 10 for s in logits]))
    assert np.allclose(unwrap(temperature["value"]), expected, rtol=1e-13, atol=0)
    assert temperature["row_labels"] == ["s / 1", "s / 4", "s × 10"]
    # By hand: e^2 / (e^2 + e + e^0.5) for the first weight at T = 1.
    e = math.e
    assert unwrap(temperature["value"])[0][0] == pytest.approx(
        e**2 / (e**2 + e + e**0.5), rel=1e-14
    )


def test_default_example_and_output_records(invoke_json):
    doc = invoke_json("variance")
    assert doc["example"] == "lecture" and doc["meta"]["seed"] == 0
    assert [record["dk"] for record in doc["output"]] == [1, 4, 16, 64, 256, 1024]
    assert all(set(record) >= OUTPUT_KEYS for record in doc["output"])
    assert all(record["samples"] == 3000 for record in doc["output"])
    assert [step["key"] for step in doc["steps"]] == [
        "moments",
        "softmax",
        "gradient",
        "histogram",
        "spiky",
        "temperature",
    ]
    histogram = unwrap(doc["steps"][3]["value"])
    edges = np.asarray(data(histogram["edges"]))
    assert len(edges) == 21 and edges[0] == -160 and edges[-1] == 160  # ±5√1024
    raw, scaled = data(histogram["series"]["raw"]), data(histogram["series"]["scaled"])
    # The scaled scores on bins of their own, the raw bins ÷ √1024 (issue 57: on the raw bins
    # they all fell in the two central ones): the same counts, bin for bin.
    own = np.asarray(data(histogram["edges_of"]["scaled"]))
    assert own[0] == -5 and own[-1] == 5 and np.allclose(own * 32, edges, rtol=0, atol=1e-12)
    assert scaled == raw and sum(raw) <= 3000 * 8


def test_seed_makes_runs_repeatable(invoke_json):
    args = ("variance", "--dk", "8", "--samples", "200")
    first, again = invoke_json(*args, "--seed", "3"), invoke_json(*args, "--seed", "3")
    other = invoke_json(*args, "--seed", "4")
    assert first["output"] == again["output"] and first["output"] != other["output"]
    # Each d_k draws from its own stream: its row does not depend on the rest of the list.
    in_a_list = invoke_json("variance", "--dk", "2,8", "--samples", "200", "--seed", "3")
    assert in_a_list["output"][1] == first["output"][0]


# --- issue 30: the chunks drawn at once, and the scores kept for the next run ------------------

# Two widths of several chunks each (481 and 199 rows a chunk), the histogram on the larger.
CHUNKED = ("variance", "--dk", "256,1024", "--samples", "1000")


def kept_counts() -> tuple[int, ...]:
    """Tallies, then keys' scores, then queries: each taken as kept, and drawn."""
    stores = (lesson.KEPT_TALLIES, lesson.KEPT_SCORES, lesson.KEPT_QUERIES)
    return tuple(count for kept in stores for count in (kept.hits, kept.misses))


def kept_sizes() -> tuple[int, ...]:
    return tuple(
        kept.size for kept in (lesson.KEPT_TALLIES, lesson.KEPT_SCORES, lesson.KEPT_QUERIES)
    )


def more(before: tuple[int, ...], after: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(b - a for a, b in zip(before, after, strict=True))


def keeping(**options: Any) -> Any:
    """The walkthrough of a run that keeps what it draws (as the explorer's runs do)."""
    given = {"dk": "256,1024", "samples": 1000, **options}
    return runner.compute(runner.RunRequest("variance", options=given, keep=True))


def records(walkthrough: Any) -> list[Any]:
    """What a run printed, as plain values: the output records and every step's value."""
    return [walkthrough.output, *(step.value for step in walkthrough.steps[:4])]


def test_the_numbers_do_not_depend_on_how_many_chunks_are_drawn_at_once(invoke_json, monkeypatch):
    at_once = invoke_json(*CHUNKED)
    monkeypatch.setattr(lesson, "_workers", lambda backend: 1)
    one_by_one = invoke_json(*CHUNKED)
    assert at_once["output"] == one_by_one["output"]
    assert at_once["steps"] == one_by_one["steps"]


def test_a_width_is_the_sum_of_its_chunks_each_from_its_own_streams(invoke_json):
    """The estimate the lesson prints is what its chunks drawn one by one add up to."""
    doc = invoke_json(*CHUNKED, "--seed", "5")
    chunk = chunk_rows(1000, 8, 1024)
    assert mech.chunk_sizes(1000, chunk) == [199, 199, 199, 199, 199, 5]
    by_hand = mech.estimate(streams(5, 1024), 1024, 8, 1000, chunk, None)
    row = doc["output"][1]
    assert row["var_raw"] == pytest.approx(by_hand.var_raw, rel=1e-12)
    assert row["max_weight_raw"] == pytest.approx(by_hand.max_weight_raw, rel=1e-12)


def test_a_run_keeps_nothing_unless_asked(invoke_json):
    lesson.forget_kept()
    invoke_json(*CHUNKED)  # the command line: one run, nothing to keep it for
    timed = runner.RunRequest("variance", options={"dk": "4"}, keep=True, time_steps=True)
    runner.compute(timed)  # timed steps: every number drawn, or the times would not be its
    assert kept_sizes() == (0, 0, 0) and kept_counts() == (0,) * 6


def test_more_samples_draw_only_the_last_chunk_again(invoke_json):
    lesson.forget_kept()
    first = keeping()
    assert records(first)[0] == invoke_json(*CHUNKED)["output"]  # kept: the same numbers
    before = kept_counts()
    grown = keeping(samples=1001)
    # 256: 481 + 481 + 38 rows, then 39 at the end; 1024: 5 × 199 + 5, then 6 at the end. The
    # first chunks' tallies are kept; the last chunk of each width draws its queries and keys.
    assert more(before, kept_counts()) == (2 + 5, 2, 0, 2 * 8, 0, 2)
    lesson.forget_kept()
    fresh = keeping(samples=1001)
    assert records(grown) == records(fresh)


def test_more_keys_draw_only_the_new_keys():
    lesson.forget_kept()
    keeping()
    before = kept_counts()
    grown = keeping(keys=9)
    # 9 chunks, each a new tally: 8 keys' scores and the queries kept, the 9th key drawn.
    assert more(before, kept_counts()) == (0, 9, 9 * 8, 9, 9, 0)
    before = kept_counts()
    keeping(keys=5)  # every key's scores kept: nothing drawn
    assert more(before, kept_counts()) == (0, 9, 9 * 5, 0, 0, 0)
    lesson.forget_kept()
    fresh = keeping(keys=9)
    assert records(grown) == records(fresh)


def test_what_is_kept_is_bounded_in_bytes():
    kept = Kept(limit=100)
    kept.put(("a",), np.zeros(5), 40)
    kept.put(("b",), np.zeros(5), 40)
    assert kept.get(("a",)) is not None  # now the most recently used
    kept.put(("c",), np.zeros(5), 40)  # over 100 bytes: the least recently used, b, goes
    assert kept.get(("b",)) is None and kept.get(("c",)) is not None and kept.size == 80
    kept.put(("d",), np.zeros(20), 160)  # larger than the limit: not kept at all
    assert kept.get(("d",)) is None and kept.size == 80


def test_an_overflow_in_a_worker_thread_is_noted_as_in_the_main_one(monkeypatch):
    """numpy's error state is per context: each chunk runs in a copy of the caller's, so the
    runner's np.errstate(call=...) sees an overflow in any chunk."""
    real_tally = mech.tally

    def overflowing(*args):
        np.float16(60000) * np.float16(2)  # overflows float16: inf, and numpy's report
        return real_tally(*args)

    monkeypatch.setattr(mech, "tally", overflowing)
    lesson.forget_kept()
    seen: list[str] = []
    options = {**lesson.CARD.defaults, "dk": [1024], "samples": 500}
    run = runner.prepare(runner.RunRequest("variance", options=options))
    with np.errstate(over="call", call=lambda kind, flag: seen.append(kind)):
        lesson._measure(run, lesson.settings(run.options), lesson.histogram_edges(32.0))
    assert seen == ["overflow"] * 3  # one per chunk: 199, 199 and 102 rows


def test_numpy_and_torch_agree_on_the_same_scores(torch):
    raw = np.random.default_rng(1).standard_normal((40, 8)) * 10
    numpy_sums = mech.chunk_sums(raw, 100)
    torch_sums = mech.chunk_sums(torch.from_numpy(raw), 100)
    assert np.allclose(torch_sums.numpy(), numpy_sums, rtol=1e-12)
    edges = tuple(np.linspace(-40, 40, 11))
    assert (
        mech.histogram_counts(torch.from_numpy(raw), edges).tolist()
        == mech.histogram_counts(raw, edges).tolist()
    )


def test_torch_backend_estimates_and_worked_numerics(invoke_json, torch):
    numpy_doc = invoke_json("variance", "--dk", "1,64", "--samples", "2000")
    torch_doc = invoke_json("variance", "--dk", "1,64", "--samples", "2000", "--backend", "torch")
    assert torch_doc["backend"] == "torch"
    # Its own random stream: agreement with the theory, within 4 standard errors as above.
    for record in torch_doc["output"]:
        se = mech.variance_standard_error(record["dk"], 8, 2000)
        assert abs(record["var_scaled"] - 1) < 4 * se
    for key in ("spiky", "temperature"):
        numpy_step = next(s for s in numpy_doc["steps"] if s["key"] == key)
        torch_step = next(s for s in torch_doc["steps"] if s["key"] == key)
        assert np.allclose(
            unwrap(numpy_step["value"]), unwrap(torch_step["value"]), rtol=1e-13, atol=1e-300
        )


def test_half_precision_sums_do_not_overflow(invoke_json, torch):
    doc = invoke_json(
        "variance", "--dk", "1024", "--samples", "300", "--backend", "torch", "--dtype", "float16"
    )
    record = doc["output"][0]
    assert math.isfinite(record["var_raw"]) and abs(record["var_scaled"] - 1) < 0.2


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--dk", "0"), ("--dk: 0", "at least 1")),
        (("--dk=-4",), ("--dk: -4", "at least 1")),
        (("--dk", "16,abc"), ("--dk", "'abc' is not a whole number")),
        (("--dk", ""), ("--dk is empty",)),
        (("--keys", "1"), ("--keys 1", "2 or more")),
        (("--samples", "1"), ("--samples 1", "at least 2")),
        (("--example", "nope"), ("no example 'nope'", "lecture")),
        (("--backend", "numpy", "--device", "cuda"), ("numpy backend runs on the CPU only",)),
    ],
)
def test_user_errors(invoke, args, fragments):
    assert_user_error(invoke("variance", *args), *fragments)


def test_too_many_samples_for_memory_is_refused_with_the_estimate(invoke, monkeypatch):
    monkeypatch.setattr("attn_cli.core.backend.available_host_bytes", lambda: 2**20)
    monkeypatch.setattr(lesson, "_cores", lambda: 2)  # two chunks drawn at once
    result = invoke("variance", "--dk", "1024", "--samples", "1000000")
    assert_user_error(result, "needs about 6.7 MiB", "1.0 MiB is free", "lower --samples")
    assert invoke("variance", "--dk", "1024", "--samples", "10").exit_code == 0


def test_memory_is_bounded_by_chunks():
    # A million samples hold no more than one chunk: 199 rows of a query, a key and the scores.
    assert chunk_rows(1_000_000, 8, 1024) == 199
    assert chunk_rows(5, 8, 1024) == 5


def test_every_format(invoke):
    args = ("variance", "--dk", "4,64", "--samples", "100")
    rich = invoke(*args, "--time")
    assert rich.exit_code == 0, rich.output
    for text in ("var q·k", "max w raw", "w(1−w) raw", "scaled", "s × 10", " ms ─", "█"):
        assert text in rich.stdout
    markdown = invoke(*args, "--format", "markdown")
    assert markdown.exit_code == 0
    assert "| d_k | mean q·k | var q·k |" in markdown.stdout
    assert "| raw bin | raw | scaled bin | scaled |" in markdown.stdout
    latex = invoke(*args, "--format", "latex")
    assert latex.exit_code == 0
    # The tables are tabulars with their headings, the histogram a table of counts per bin.
    assert "d\\texttt{\\char95}k & mean q$\\cdot$k & var q$\\cdot$k" in latex.stdout
    assert "raw bin & raw & scaled bin & scaled \\\\" in latex.stdout


def test_lesson_file_with_dk_as_text(invoke_json, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'lesson = "variance"\n[[examples]]\nname = "mine"\n'
        'options = { dk = "2,8", keys = 3, samples = 50 }\n'
    )
    doc = invoke_json("variance", "--lesson", str(path))
    assert [record["dk"] for record in doc["output"]] == [2, 8]
    assert doc["output"][0]["keys"] == 3 and doc["example"] == "mine"


# --- issue 22: every sentence true for the numbers on screen ---------------------------------


def test_the_histogram_says_within_three_only_with_the_count_that_shows_it(invoke_json):
    """Issue 22 #18: "the scaled ones stay within about ±3" stood under bins 16 wide, where
    nothing showed ±3. Now a note counts the scaled scores within ±3, and "nearly all" is
    printed only when at least 99% of them are."""
    doc = invoke_json("variance", "--dk", "4,1024", "--samples", "500")
    step = doc["steps"][3]
    assert "stay within about ±3" not in step["explanation"]
    assert "the raw scores' 16 wide, the scaled ones' 32 times narrower (0.5 wide)" in " ".join(
        step["explanation"].split()
    )
    notes = {note["key"]: note for note in step["notes"]}
    assert set(notes) == {"within_three", "same_bars"}
    values = notes["within_three"]["values"]
    # The same streams as the lesson's, drawn and counted here by hand.
    inside, lesson_streams = 0, streams(0, 1024)
    for chunk, rows in enumerate(mech.chunk_sizes(500, chunk_rows(500, 8, 1024))):
        q = lesson_streams(chunk, 0)((rows, 1024))  # the queries
        k = np.stack([lesson_streams(chunk, j)((rows, 1024)) for j in range(1, 9)], axis=1)
        raw = np.einsum("rd,rkd->rk", q, k)  # (rows, 8): q · k_j
        inside += int(np.sum(np.abs(raw / 32) <= 3))
    assert values["inside"] == inside and values["scores"] == 4000
    assert values["share"] >= 0.99 and values["bound"] == 96


def test_heavy_tails_at_d_k_1_are_not_called_nearly_all(invoke_json):
    doc = invoke_json("variance", "--dk", "1")
    notes = {note["key"]: note for note in doc["steps"][3]["notes"]}
    assert "within_three" not in notes and "beyond_three" in notes
    assert notes["beyond_three"]["values"]["share"] < 0.99
    assert notes["beyond_three"]["text"].startswith("Only ")


def test_the_quiz_gives_the_numbers_it_asks_about(invoke):
    """Issue 22 #7: "fill in every blank from the inputs" with no inputs shown, and blanks
    titled "scores" that expect weights."""
    result = invoke("variance", "--quiz", "--dk", "4", "--samples", "50")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "from the inputs" not in text
    assert "Fill in every blank from the numbers in its step's title" in text
    assert "softmax of s = [15.5, −16.1, 2.3] and of s / 16 (d_k = 256)" in text
    assert "softmax(s / T) for s = [2, 1, 0.5], T = 1, 4, 0.1" in text
    assert "Spiky scores at" not in text
    scaled = invoke("scaled", "--quiz")  # a lesson with inputs keeps its words
    assert "Fill in every blank from the inputs" in " ".join(scaled.stdout.split())


def test_nearly_one_hot_is_said_only_of_a_nearly_one_hot_row(invoke_json):
    """The spiky step's "nearly one-hot ... learning can go on" was fixed text in its
    explanation, whatever spiky_scores a lesson file gives: now a note with a claim."""
    lecture = invoke_json("variance", "--dk", "4", "--samples", "50")
    spiky = lecture["steps"][4]
    assert "nearly one-hot" not in spiky["explanation"]
    notes = {note["key"]: note for note in spiky["notes"]}
    assert "spiky_peaked" in notes and "spiky_mild" not in notes
    e = math.e
    top = 1 / (1 + e ** (-16.1 - 15.5) + e ** (2.3 - 15.5))  # softmax of [15.5, −16.1, 2.3]
    assert notes["spiky_peaked"]["values"]["top_raw"] == pytest.approx(top, rel=1e-12)
    mild = invoke_json("variance", "--example", "mild", "--samples", "50")
    notes = {note["key"]: note for note in mild["steps"][4]["notes"]}
    assert "spiky_mild" in notes and "spiky_peaked" not in notes
    exps = [e**1.2, e**-0.8, e**0.3]
    assert notes["spiky_mild"]["values"]["top_raw"] == pytest.approx(exps[0] / sum(exps))


def test_weights_are_fixed_decimals_and_a_tiny_one_says_it_is_below_them(invoke):
    """Issue 57: the softmax of s = [15.5, −16.1, 2.3] printed 1.000e+00, 1.889e-14, 1.851e-06
    (one tiny weight made the whole table scientific). Weights are in fixed decimals in every
    format; a positive weight below the last decimal shown is written <0.0001."""
    rich = " ".join(invoke("variance").stdout.split())
    assert "│ s │ 1.0000█ │ <0.0001 │ <0.0001 │ 1.0000 │" in rich
    assert "│ s / 16 │ 0.6341▓ │ 0.0880 │ 0.2779░ │ 1.0000 │" in rich
    markdown = invoke("variance", "--format", "markdown").stdout
    assert "| **s** | 1.0000 | <0.0001 | <0.0001 | 1.0000 |" in markdown
    assert "1.889e-14" not in rich + markdown
    assert (
        "| **s** | 1.00 | <0.01 | <0.01 | 1.00 |"
        in invoke("variance", "--format", "markdown", "--precision", "2").stdout
    )


def test_the_weights_format_keeps_whole_numbers_and_exact_zeros():
    from attn_cli.core.numbers import format_column, weights_style

    assert weights_style("scientific") == weights_style("fixed") == "probability"
    assert weights_style("integer") == "integer"  # a one-hot row: 0 and 1
    shown = format_column([1 - 2e-6, 0.0, 3e-5, 4.9e-5, 5e-5], 4, style="probability")
    assert shown == ["1.0000", "0.0000", "<0.0001", "<0.0001", "0.0001"]


def test_each_histogram_is_on_its_own_bins(invoke_json, invoke):
    """Issue 57: the scaled scores were counted on the raw scores' bins, 16 wide, so 24,000 of
    them fell in two bars. Each series now has its own: the scaled ones on the raw bins ÷ √d_k,
    where they show the same bars, and the note that says so is checked on the counts."""
    doc = invoke_json("variance")
    step = next(step for step in doc["steps"] if step["key"] == "histogram")
    value = unwrap(step["value"])
    edges, scaled_edges = data(value["edges"]), data(value["edges_of"]["scaled"])
    assert np.allclose(np.asarray(scaled_edges) * 32, edges, rtol=0, atol=1e-12)  # d_k = 1024
    assert scaled_edges[0] == -5.0 and scaled_edges[1] - scaled_edges[0] == 0.5
    series = {name: data(counts) for name, counts in value["series"].items()}
    assert series["raw"] == series["scaled"]
    assert sum(count > 0 for count in series["scaled"]) > 10  # no longer two bars
    assert any(note["key"] == "same_bars" for note in step["notes"])
    text = " ".join(invoke("variance").stdout.split())
    assert "scaled [-5.0, -4.5) 0 [-4.5, -4.0) 1" in text
    markdown = invoke("variance", "--format", "markdown").stdout
    assert "| raw bin | raw | scaled bin | scaled |" in markdown


def test_the_same_bars_note_needs_the_same_counts():
    from attn_cli.course.variance.build import same_bars

    class Found:
        def __init__(self, series):
            self.value = {"series": series}

    class Walk:
        def __init__(self, series):
            self.series = series

        def find(self, key):
            return Found(self.series)

    assert same_bars(Walk({"raw": [1, 2], "scaled": [1, 2]}), {})
    assert not same_bars(Walk({"raw": [1, 2], "scaled": [2, 1]}), {})
