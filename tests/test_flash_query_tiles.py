"""attn flash --query-block: the outer loop over query tiles around the loop over key blocks.

The final output must equal direct softmax attention in float64 for every tile and block size,
including sizes that do not divide m or n; causal tiles skip the key blocks wholly in their
future. Without --query-block the walkthrough is today's (one tile holding every query).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.mechanisms import tiled
from tests.conftest import assert_user_error, random_qkv


def direct(q, k, v, causal: bool = False) -> np.ndarray:
    s = q @ k.T / math.sqrt(q.shape[1])
    if causal:
        s = np.where(np.tri(*s.shape, dtype=bool), s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


# (m, n, block, query_block): tiles that divide m, that do not, one row each, one tile for all.
SIZES = [(6, 6, 2, 2), (7, 5, 2, 3), (5, 7, 3, 2), (4, 4, 4, 1), (3, 8, 3, 5), (6, 6, 4, 4)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("m", "n", "block", "query_block"), SIZES)
def test_output_equals_direct_attention(m, n, block, query_block, causal):
    if causal and m != n:
        n = m
    q, k, v = random_qkv(m * 10 + n, m, n)
    walk = attn.flash(q, k, v, block=block, query_block=query_block, causal=causal)
    np.testing.assert_allclose(walk.output, direct(q, k, v, causal), rtol=0, atol=1e-14)
    tiles = math.ceil(m / query_block)
    blocks = math.ceil(n / block)
    keys = [step.key for step in walk.steps]
    assert keys[-3:] == ["output", "check", "io"]
    for t in range(1, tiles + 1):
        rows = range((t - 1) * query_block, min(t * query_block, m))
        np.testing.assert_array_equal(walk.step(f"tile{t}.queries"), q[rows.start : rows.stop])
        # Each tile's own output rows are final when its inner loop ends.
        np.testing.assert_allclose(
            walk.step(f"tile{t}.output"),
            direct(q, k, v, causal)[rows.start : rows.stop],
            atol=1e-14,
        )
        # Causal: the blocks after the tile's last row are never visited.
        visited = math.ceil(rows.stop / block) if causal else blocks
        assert f"tile{t}.block{visited}.acc" in keys
        assert f"tile{t}.block{visited + 1}.scores" not in keys
        scores = walk.step(f"tile{t}.block1.scores")
        assert scores.shape == (len(rows), min(block, n))
    assert walk.find("tile1.queries").title.startswith(f"Query tile 1 of {tiles}")
    assert walk.find("tile1.block1.scores").title.startswith("Tile 1 · block 1 · scores")


def test_causal_tiles_skip_the_future_and_say_so():
    q, k, v = random_qkv(1, 6, 6)
    walk = attn.flash(q, k, v, block=2, query_block=2, causal=True)
    keys = [step.key for step in walk.steps]
    assert [key for key in keys if key.endswith(".scores")] == [
        "tile1.block1.scores",
        "tile2.block1.scores",
        "tile2.block2.scores",
        "tile3.block1.scores",
        "tile3.block2.scores",
        "tile3.block3.scores",
    ]
    assert (
        "The last 2 key blocks lie wholly in the future" in walk.find("tile1.queries").explanation
    )
    assert "3 of 9 tile × block visits were never computed" in " ".join(map(str, walk.notes))


def test_without_query_block_nothing_changes():
    q, k, v = random_qkv(2, 4, 6)
    walk = attn.flash(q, k, v, block=2)
    keys = [step.key for step in walk.steps]
    assert keys == [f"block{b}.{name}" for b in (1, 2, 3) for name in (
        "scores", "max", "rescale", "p", "sum", "acc"
    )] + ["output", "check", "io"]  # fmt: skip
    assert walk.find("block1.scores").title == "Block 1 · scores of keys k1..k2"
    assert walk.meta["options"]["query_block"] is None
    np.testing.assert_allclose(walk.output, direct(q, k, v), atol=1e-14)


def test_a_tile_of_every_query_repeats_the_inner_loop_values():
    q, k, v = random_qkv(3, 4, 5)
    plain = attn.flash(q, k, v, block=2)
    tiles = attn.flash(q, k, v, block=2, query_block=4)
    for b in (1, 2, 3):
        for name in ("scores", "max", "sum", "acc"):
            np.testing.assert_array_equal(
                tiles.step(f"tile1.block{b}.{name}"), plain.step(f"block{b}.{name}")
            )
    np.testing.assert_array_equal(tiles.output, plain.output)


def test_mechanism_query_tiles_directly():
    q, k, v = random_qkv(4, 9, 7)
    loops = list(tiled.query_tiles(q, k, v, block=3, query_block=4, causal=False))
    assert [(tile.start, tile.stop, len(tile.blocks), tile.skipped) for tile in loops] == [
        (0, 4, 3, 0),
        (4, 8, 3, 0),
        (8, 9, 3, 0),
    ]
    output = np.concatenate([tiled.finish(tile.blocks[-1].update.state) for tile in loops])
    np.testing.assert_allclose(output, direct(q, k, v), rtol=0, atol=1e-14)


def test_torch_backend_agrees(torch):
    q, k, v = random_qkv(5, 5, 5)
    walk = attn.flash(q, k, v, block=2, query_block=3, causal=True, backend="torch")
    np.testing.assert_allclose(walk.output, direct(q, k, v, True), rtol=0, atol=1e-14)


def test_example_and_command_line(invoke_json):
    doc = invoke_json("flash", "--example", "two-blocks", "--query-block", "1")
    keys = [step["key"] for step in doc["steps"]]
    assert keys[0] == "tile1.queries" and "tile2.block2.acc" in keys
    assert doc["options"]["query_block"] == 1


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--query-block", "0"), ("--query-block must be a whole number >= 1", "not 0")),
        (("--query-block", "-2"), ("--query-block must be a whole number >= 1",)),
        (
            ("--n", "12", "--block", "2", "--query-block", "1"),
            ("12 × 6 = 72 tile × block visits", "raise --query-block"),
        ),
    ],
)
def test_errors_are_one_line(invoke, args, fragments):
    assert_user_error(invoke("flash", *args), *fragments)


def test_a_lesson_file_query_block(invoke, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        """lesson = "flash"
[[examples]]
name = "mine"
options = { query_block = 0 }
[examples.inputs]
Q = [[1, 0]]
K = [[1, 0], [0, 1]]
V = [[1, 2], [3, 4]]
""",
        encoding="utf-8",
    )
    assert_user_error(invoke("flash", "--lesson", str(path)), "options.query_block: found 0", "≥ 1")


def test_the_plot_stacks_the_tiles(tmp_path):
    pytest.importorskip("matplotlib")
    q, k, v = random_qkv(6, 5, 5)
    walk = attn.flash(q, k, v, block=2, query_block=2, causal=True)
    figure = walk.plot()
    assert figure is not None
    (axes, *_) = figure.axes
    assert "3 tiles, 3 blocks" in " ".join(axes.get_title().split())


def test_a_later_tiles_first_block_starts_the_keys_again():
    """Tile 2's first block is keys k1..k2 with m = −∞ before it: it was captioned 'The next 2
    keys' and 'c = 1 for rows whose max stayed put; below 1 for rows whose max rose' beside c = 0."""
    q, k, v = random_qkv(4, 4, 4)
    walk = attn.flash(q, k, v, block=2, query_block=2)  # 2 tiles of 2 queries, 2 blocks of 2 keys
    scores = walk.find("tile2.block1.scores")
    assert scores.title == "Tile 2 · block 1 · scores of keys k1..k2"
    assert scores.explanation.startswith("This tile's first key block: the blocks stream past")
    rescale = walk.find("tile2.block1.rescale")
    np.testing.assert_array_equal(walk.step("tile2.block1.rescale"), np.zeros((2, 1)))
    assert rescale.explanation.startswith("0 for every row: the tile starts at m = −∞")
    # The next blocks of that tile are the short texts, as before.
    assert walk.find("tile2.block2.scores").explanation.startswith("The next 2 keys")
    assert walk.find("tile2.block2.rescale").explanation.startswith("c = 1 for rows")


def test_one_block_of_every_key_is_not_called_a_tile_of_the_matrix():
    """--block at least n: the one block is every score. It said 'the full 5 × 5 matrix is never
    formed' above the 5 × 5 block that is that matrix."""
    q, k, v = random_qkv(5, 5, 5)
    walk = attn.flash(q, k, v, block=7)
    text = walk.find("block1.scores").explanation
    assert "never formed" not in text
    assert text.startswith(
        "This one block holds all 5 keys (a block of 7, at least n), so its 5 × 5 scores are "
        "every score of these queries"
    )
    assert np.shape(walk.step("block1.scores")) == (5, 5)
    tiles = attn.flash(q, k, v, block=5, query_block=3)
    assert "never formed" not in tiles.find("tile1.block1.scores").explanation
    assert tiles.find("tile2.block1.scores").explanation.startswith("All 5 keys in one block again")
    # Blocks of fewer keys keep the tiling sentence.
    assert (
        "the full 5 × 5 matrix is never formed"
        in attn.flash(q, k, v, block=2).find("block1.scores").explanation
    )


def test_the_plot_counts_one_block_as_one():
    """One block of every key was titled '(1 blocks)'."""
    pytest.importorskip("matplotlib")
    q, k, v = random_qkv(7, 3, 3)
    (axes, *_) = attn.flash(q, k, v, block=4).plot().axes
    assert axes.get_title().endswith("one key block at a time (1 block)")
    (tiled, *_) = attn.flash(q, k, v, block=4, query_block=3).plot().axes
    assert "(1 tile, 1 block)" in " ".join(tiled.get_title().split())
