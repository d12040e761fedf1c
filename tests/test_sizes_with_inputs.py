"""Sizes for random inputs with some inputs given on top: the sizes draw every input from the
seed, the ones given replace theirs (each of the shape the sizes draw, else one line naming the
sizes that fit it), and only the others are said to be drawn."""

from __future__ import annotations

import numpy as np
import pytest

import attn_cli as attn
from tests.conftest import assert_user_error


def inputs_of(walk: attn.Walkthrough) -> dict[str, np.ndarray]:
    return {item.name: np.asarray(item.value, dtype=float) for item in walk.inputs}


def test_the_inputs_not_given_are_the_seeds_own():
    """Q given: K and V are those of the same sizes and seed drawn alone, to the bit, and the
    output is attention on them."""
    q = np.array([[1.0, 0.0]])
    drawn = inputs_of(attn.scaled(n=4, m=1, dk=2, seed=3))
    walk = attn.scaled(n=4, m=1, dk=2, seed=3, q=q)
    mixed = inputs_of(walk)
    np.testing.assert_array_equal(mixed["Q"], q)
    for name in ("K", "V"):
        np.testing.assert_array_equal(mixed[name], drawn[name])
    scores = q @ drawn["K"].T / np.sqrt(2)
    weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    assert np.max(np.abs(np.asarray(walk.output) - weights @ drawn["V"])) <= 1e-15


def test_only_the_drawn_weights_say_so():
    """multihead --n with W_Q by hand: X, W_K, W_V, W_O drawn (and said so), W_Q not."""
    walk = attn.multihead(n=3, d_model=2, heads=1, wq="1,0;0,1", seed=4)
    descriptions = {item.name: item.description for item in walk.inputs}
    assert descriptions["W_Q"] == "query weights"
    for name in ("X", "W_K", "W_V", "W_O"):
        assert descriptions[name].endswith("(drawn, random seed 4)"), (name, descriptions)
    np.testing.assert_array_equal(inputs_of(walk)["W_Q"], np.eye(2))
    note = next(note for note in walk.notes if note.key.startswith("drawn"))
    assert note.key == "drawn_some"
    assert note.text().startswith("W_K, W_V and W_O were drawn with random seed 4")
    assert "; W_Q given." in note.text()


def test_a_mask_on_top_of_a_random_grouped_decoder():
    """The padding given masks the drawn layer's keys: no decoder position reads token 3, and
    no position reads memory row 2, in any head."""
    walk = attn.block(
        n=3, m=2, d_model=4, heads=2, kv_heads=1, decoder=True, padding="0,0,1",
        memory_padding="0,1",
    )  # fmt: skip
    weights = {step.key: np.asarray(step.value) for step in walk.steps}
    for head in (1, 2):
        assert np.all(weights[f"self.head{head}.weights"][:, 2] == 0)
        assert np.all(weights[f"cross.head{head}.weights"][:, 1] == 0)
        np.testing.assert_allclose(weights[f"self.head{head}.weights"].sum(axis=1), 1, atol=1e-15)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (
            ("scaled", "--n", "4", "--q", "1,0"),
            ("--q is 1 × 2, where the random inputs of --n 4 draw Q 4 × 64:", "give --m 1 --dk 2"),
        ),
        (
            ("scaled", "--n", "4", "--dk", "2", "--q", "1,0;0,1"),
            ("--q is 2 × 2, where the random inputs of --n 4, --dk 2 draw Q 4 × 2:", "--m 2"),
        ),
        (
            ("multihead", "--n", "3", "--wq", "1,0;0,1"),
            ("--wq is 2 × 2", "draw W_Q 8 × 8", "give --d-model 2, or leave out --wq"),
        ),
        (
            ("multihead", "--n", "3", "--xk", "[[1]]"),
            (
                "--xk is 1 × 1, which the random inputs of --n 3 do not draw to fit:",
                "give --m 1 --kdim 1, or leave out --xk.",
            ),
        ),
        (
            ("multihead", "--n", "3", "--bq", "1"),
            ("--bq has 1 entry but must have 8",),
        ),
        (
            ("scaled", "--n", "2", "--q", "[[[1,0]],[[0,1]]]"),
            ("--q: a batch with sizes for random inputs", "give every input of the batch"),
        ),
    ],
    ids=["two sizes", "one size", "weights", "not drawn", "the lesson's own", "a batch"],
)
def test_an_input_the_sizes_do_not_fit_is_one_line(invoke, args, fragments):
    assert_user_error(invoke(*args), *fragments)
