"""attn cost: every formula against its closed form written out here, the JSON, the lecture's
figures (and the slide's errata), the claims each table's notes make, and the user errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.mechanisms import cost as mech
from tests.conftest import data
from tests.lesson_runs import Runs

# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "1000", "--d", "512"),  # no random inputs: the sizes are its options
    sized=lambda s: {"n": s, "d": s},
    # n below d, the window and the features wider than n; one token; a long one in float32.
    variants=(
        ("--n", "100", "--d", "512"),
        ("--n", "1", "--d", "1"),
        ("--memory-dtype", "float32"),
    ),
    # Around each note's edge: n against d, r and the window 2w + 1; one token; huge n.
    sweeps=tuple(
        {"n": n, "d": d, "window": w, "features": r, "layers": 1}
        for n in (1, 2, 3, 512, 513, 514, 10**6)
        for d in (1, 512)
        for w in (1, 256)
        for r in (None, 1, 513)
    ),
)


def steps(doc: dict) -> dict[str, dict]:
    return {step["key"]: step for step in doc["steps"]}


def rows(step: dict, key: str) -> dict[str, dict]:
    return {row[key]: row for row in step["value"]}


def note_keys(step: dict) -> set[str]:
    return {note["key"] for note in step.get("notes", [])}


# --- the formulas ----------------------------------------------------------------------------


def test_window_keys_are_2w_plus_1_at_most_n():
    assert mech.window_keys(8192, 256) == 513
    assert mech.window_keys(100, 256) == 100  # a window wider than the sequence holds all of it
    assert mech.window_keys(513, 256) == 513


@pytest.mark.parametrize(("n", "k", "layers"), [(1, 5, 0), (2, 2, 1), (9, 3, 2), (10, 3, 3)])
def test_ceil_log_is_exact_at_powers(n, k, layers):
    assert mech.ceil_log(n, k) == layers  # log(9)/log(3) is 2.0000000000000004 in floats
    assert k**layers >= n and (layers == 0 or k ** (layers - 1) < n)


def test_layer_types_at_n_1000_d_512():
    n, d, k = 1000, 512, 513
    got = {row.name: row for row in mech.layer_types(n, d, k)}
    assert got["self-attention"].ops == 1000 * 1000 * 512 == 512_000_000  # n²·d
    assert got["recurrent"].ops == 1000 * 512 * 512 == 262_144_000  # n·d²
    assert got["convolutional"].ops == 513 * 1000 * 512 * 512  # k·n·d²
    assert got["restricted self-attention"].ops == 513 * 1000 * 512  # k·n·d
    assert [row.sequential for row in got.values()] == [1, 1000, 1, 1]
    # Paths: 1, n, ⌈log_513 1000⌉ = 2 (513 < 1000 ≤ 513²), ⌈1000/513⌉ = 2.
    assert [row.path for row in got.values()] == [1, 1000, 2, 2]


def test_variants_at_n_1000_d_512():
    n, d, k, r = 1000, 512, 513, 512
    got = {row.name: (row.time, row.memory) for row in mech.variants(n, d, k, r)}
    assert got == {
        "vanilla": (512_000_000, 1_000_000),  # n²d, n²
        "flash": (512_000_000, 1000),  # n²d, n
        "linear": (1000 * 512 * 512, 1000 * 512),  # n·r·d with r = d: nd²; nd
        "window": (1000 * 513 * 512, 1000 * 513),  # n·k·d, n·k
    }


def test_bytes_of_one_score_matrix():
    assert mech.score_matrix_entries(8192) == 67_108_864 == 64 * mech.MIB  # 64 Mi entries
    assert mech.bytes_of(8192**2, "float16") == 128 * mech.MIB
    assert mech.bytes_of(8192**2, "float32") == 256 * mech.MIB
    assert mech.bytes_of(10**12, "float16") == 2000 * mech.GB


# --- the walkthrough -------------------------------------------------------------------------


def test_json_at_n_1000_d_512(invoke_json):
    doc = invoke_json("cost", "--n", "1000", "--d", "512")
    assert doc["example"] is None and doc["inputs"] == {}
    assert doc["options"] == {
        "n": 1000,
        "d": 512,
        "window": 256,
        "features": 512,  # r = d unless given
        "heads": 32,
        "layers": 32,
        "memory_dtype": "float16",
    }
    by_key = steps(doc)
    assert list(by_key) == ["layer_types", "variants", "doubling", "one_word", "score_matrix"]
    layers = rows(by_key["layer_types"], "layer")
    assert layers["self-attention"]["ops"] == 1000**2 * 512
    assert layers["recurrent"]["ops"] == 1000 * 512**2
    assert layers["recurrent"]["sequential"] == 1000 and layers["recurrent"]["path"] == 1000
    assert layers["restricted self-attention"]["measured_by"] == "attn window"
    assert layers["recurrent"]["measured_by"] is None  # no lesson runs one
    variants = rows(by_key["variants"], "variant")
    assert variants["Vanilla"]["time"] == 1000**2 * 512
    assert variants["Vanilla"]["bytes"] == 1000**2 * 2  # float16
    assert variants["FlashAttention"]["memory"] == 1000
    assert variants["Linear attention"]["time"] == 1000 * 512 * 512
    assert variants["Sliding window"]["time"] == 1000 * 513 * 512
    commands = [row["measured_by"] for row in by_key["variants"]["value"]]
    for command, name in zip(commands, ("bench", "flash", "linear", "window"), strict=True):
        assert f"attn {name}" in command
    assert doc["output"] == by_key["variants"]["value"]
    doubling = rows(by_key["doubling"], "variant")
    assert {name: (row["time_ratio"], row["memory_ratio"]) for name, row in doubling.items()} == {
        "Vanilla": (4.0, 4.0),
        "FlashAttention": (4.0, 2.0),
        "Linear attention": (2.0, 2.0),
        "Sliding window": (2.0, 2.0),
    }
    assert doubling["Vanilla"]["time_at_2n"] == 2000**2 * 512
    words = by_key["one_word"]["value"]
    assert [row["scores"] for row in words] == [1000, 1000**2, 513, 1000 * 513]
    assert [row["multiply_adds"] for row in words] == [1000 * 512, 1000**2 * 512, 513 * 512,
                                                       1000 * 513 * 512]  # fmt: skip
    wall = np.array(data(by_key["score_matrix"]["value"]))
    entries = np.array([1000**2, 1000**2 * 32, 1000**2 * 32 * 32], dtype=float)
    np.testing.assert_array_equal(wall[:, 0], entries)
    np.testing.assert_array_equal(wall[:, 1], entries * 2)
    np.testing.assert_allclose(wall[:, 2], entries * 2 / 2**20, rtol=1e-15)
    np.testing.assert_allclose(wall[:, 3], entries * 2 / 1e9, rtol=1e-15)
    assert by_key["score_matrix"]["row_labels"] == [
        "1 head, 1 layer",
        "32 heads, 1 layer",
        "32 heads, 32 layers",
    ]


def test_the_lecture_example_notes_the_slides_64_mb(invoke_json):
    doc = invoke_json("cost")  # the default example: n = 8192, float16
    assert doc["example"] == "lecture"
    wall = steps(doc)["score_matrix"]
    assert data(wall["value"])[0][2] == 8192**2 * 2 / 2**20 == 128
    texts = [note["text"] for note in wall["notes"]]
    assert (
        "The slide prints 64 for ('1 head, 1 layer', MiB), a misprint: the exact value is 128."
        in texts
    )
    assert note_keys(wall) >= {"beyond_gpu"}  # 32 layers of 4 GiB: 137 GB


def test_the_million_token_example_notes_the_slides_500_gb(invoke_json):
    wall = steps(invoke_json("cost", "--example", "million"))["score_matrix"]
    assert data(wall["value"])[0][3] == 10**12 * 2 / 10**9 == 2000
    texts = [note["text"] for note in wall["notes"]]
    assert (
        "The slide prints 500 for ('1 head, 1 layer', GB), a misprint: the exact value is 2000."
        in texts
    )


def test_the_bahdanau_question_needs_1000_scores_per_word(invoke_json):
    doc = invoke_json("cost", "--example", "bahdanau-question")
    words = steps(doc)["one_word"]["value"]
    assert words[0]["scores"] == 1000 and words[1]["scores"] == 1_000_000
    assert note_keys(steps(doc)["layer_types"]) == {"attention_dearer"}  # n = 1000 > d = 512


def test_memory_dtype_sets_the_bytes(invoke_json):
    wall = steps(invoke_json("cost", "--n", "8192", "--memory-dtype", "float32"))["score_matrix"]
    assert data(wall["value"])[0][2] == 256  # MiB
    assert "notes" not in wall or not any("slide" in n["text"] for n in wall["notes"])


def test_the_python_function_is_the_command(invoke_json):
    walk = attn.cost(n=1000, d=512, features=64)
    variants = {row["variant"]: row for row in walk.step("variants")}
    assert variants["Linear attention"]["time"] == 1000 * 64 * 512
    assert walk.to_dict() == invoke_json("cost", "--n", "1000", "--d", "512", "--features", "64")


# --- the notes' claims -----------------------------------------------------------------------


def test_short_sequences_favour_attention_and_a_wide_window_is_everything(invoke_json):
    """n = 100 < d = 512, 2w + 1 = 513 > n, r = 512 > n: each note on the other side."""
    by_key = steps(invoke_json("cost", "--n", "100", "--d", "512"))
    assert note_keys(by_key["layer_types"]) == {"attention_cheaper"}
    assert note_keys(by_key["variants"]) == {
        "linear_not_cheaper",
        "window_everything",
        "flash_memory",
    }
    # The window holds all n keys at n = 100 and at 2n = 200: it grows as n², not n.
    window = rows(by_key["doubling"], "variant")["Sliding window"]
    assert (window["time_ratio"], window["memory_ratio"]) == (4.0, 4.0)
    assert note_keys(by_key["doubling"]) == {"four_times", "linear_twice"}
    assert note_keys(by_key["score_matrix"]) == {"within_gpu"}


def test_one_token_holds_as_much_with_flash_as_without(invoke_json):
    variants = steps(invoke_json("cost", "--n", "1", "--d", "1"))["variants"]
    assert "flash_memory" not in note_keys(variants)  # 1 number either way
    assert rows(variants, "variant")["FlashAttention"]["memory"] == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--window", "0"), "--window"),
        (("--n", "0"), "--n"),
        (("--features", "0"), "--features"),
        (("--memory-dtype", "int8"), "int8"),
    ],
)
def test_bad_options_exit_2_naming_the_option(invoke, args, fragment):
    result = invoke("cost", *args)
    assert result.exit_code == 2
    assert fragment in result.output


def test_the_ratio_notes_say_the_tables_ratios(invoke_json):
    by_key = steps(invoke_json("cost", "--n", "8192", "--d", "4096"))
    values = {note["key"]: note["values"] for note in by_key["variants"]["notes"]}
    assert values["linear_cheaper"]["ratio"] == 8192 / 4096
    assert math.isclose(values["window_cheaper"]["ratio"], 8192 / 513)
    assert values["flash_memory"]["ratio"] == 8192


def test_the_million_token_example_groups_every_large_whole_number_in_words(invoke):
    """Issue 57, numbers for a projector: a whole number of more than 6 digits is grouped in
    threes in the titles, notes and cells of words, as in the tables' number columns."""
    import re

    result = invoke("cost", "--example", "million")
    assert result.exit_code == 0
    text = result.stdout
    assert "(n = 1,000,000, d = 4096)" in text.replace("\n", " ").replace("d =  ", "d = ")
    assert "Double the context: n = 1,000,000 → 2,000,000" in text
    assert "all 1,000,000 words" in text
    assert "holds 1,000,000× fewer numbers" in text.replace("\n", " ")
    assert "2,048,000 GB" in text
    assert not re.search(r"(?<![\d.,e+-])\d{7,}(?![\d.,])", text)  # none ungrouped


def test_whole_numbers_in_a_text_are_grouped_from_seven_digits():
    from attn_cli.core.numbers import format_number, whole_text
    from attn_cli.core.templates import fill

    assert [whole_text(n) for n in (999_999, 1_000_000, -2_048_000)] == [
        "999999",
        "1,000,000",
        "-2,048,000",
    ]
    assert fill("n = {n}, {n:d} as asked, {flag}", {"n": 10**6, "flag": True}) == (
        "n = 1,000,000, 1000000 as asked, True"
    )
    assert fill("{x}", {"x": np.int64(4096000)}) == "4,096,000"
    assert format_number(2048000.0) == "2,048,000" and format_number(4096.0) == "4096"
