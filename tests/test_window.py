"""attn window: the worked example computed by hand, the masks against PyTorch's SDPA with a
boolean mask, the JSON contract, quiz and check, and the user errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.lessonfiles.loader import bundled_lessons_dir, load_bundled
from tests.conftest import assert_user_error, unwrap
from tests.lesson_runs import Batch, Runs

SMALL = ("--n", "3", "--dk", "2")
# What the suite-wide tests run of this lesson (tests/lesson_runs.py).
RUNS = Runs(
    random=("--n", "6", "--dk", "3", "--dv", "2", "--window", "1", "--global", "0"),
    sized=lambda s: {"n": s, "dk": s, "window": 2, "causal": True, "global_tokens": "0"},
    large=("--n", "101", "--dk", "2", "--window", "3"),
    variants=(
        (*SMALL, "--window", "1"),
        (*SMALL, "--window", "1", "--causal"),
        (*SMALL, "--window", "1", "--global", "0"),
        (*SMALL, "--window", "1", "--causal", "--global", "0"),
        # five tokens: rows beside the global one that move (worst_row_past and its order)
        ("--n", "5", "--dk", "2", "--window", "1", "--causal", "--global", "0"),
        # --layers: the reach composed, settled short of L, and the span at real positions
        (*SMALL, "--window", "1", "--causal", "--layers", "4"),
        ("--n", "6", "--dk", "2", "--window", "1", "--layers", "2"),
        (*SMALL, "--window", "1", "--global", "0", "--layers", "3"),
    ),
    options=({"window": 1}, {"window": 1, "causal": True}, {"window": 1, "global_tokens": [0]}),
    batch=Batch(
        lambda draw: {"q": draw(3, 2), "k": draw(3, 2), "v": draw(3, 2)},
        ("q", "k", "v"),
        options={"window": 1},
    ),
)


# The bundled default example (lessons/window.toml, "five-tokens").
X = [[1, 0], [0, 1], [1, 1], [1, 0], [0, 1]]
V = [[1, 0], [0, 1], [1, 1], [2, 0], [0, 2]]


def steps_of(doc: dict) -> dict[str, dict]:
    return {step["key"]: step for step in doc["steps"]}


def allowed_by_hand(n: int, w: int, causal: bool, global_tokens: tuple[int, ...] = ()) -> list:
    """The band, written out with loops: |i − j| ≤ w (causal: 0 ≤ i − j ≤ w), plus the rows
    and columns of the global tokens."""
    mask = []
    for i in range(n):
        row = []
        for j in range(n):
            near = 0 <= i - j <= w if causal else abs(i - j) <= w
            row.append(near or i in global_tokens or j in global_tokens)
        mask.append(row)
    return mask


def attention_by_hand(q, k, v, mask) -> tuple[list, list]:
    """Weights and output with plain loops: scaled scores of the allowed keys, softmax, sum."""
    d_k = len(q[0])
    weights, output = [], []
    for i, query in enumerate(q):
        scores = {
            j: sum(a * b for a, b in zip(query, key, strict=True)) / math.sqrt(d_k)
            for j, key in enumerate(k)
            if mask[i][j]
        }
        top = max(scores.values())
        exps = {j: math.exp(s - top) for j, s in scores.items()}
        total = sum(exps.values())
        row = [exps.get(j, 0.0) / total for j in range(len(k))]
        weights.append(row)
        output.append([sum(row[j] * v[j][c] for j in range(len(k))) for c in range(len(v[0]))])
    return weights, output


@pytest.mark.parametrize(
    ("example", "causal", "global_tokens"),
    [("five-tokens", False, ()), ("five-tokens-causal", True, ())],
)
def test_worked_example_matches_loops(invoke_json, example, causal, global_tokens):
    doc = invoke_json("window", "--example", example)
    steps = steps_of(doc)
    assert list(steps) == [
        "scores", "scaled", "band", "masked", "weights", "output", "count", "difference",
    ]  # fmt: skip
    mask = allowed_by_hand(5, 1, causal, global_tokens)
    assert np.array_equal(np.array(unwrap(steps["band"]["value"]), dtype=bool), mask)
    weights, output = attention_by_hand(X, X, V, mask)
    np.testing.assert_allclose(unwrap(steps["weights"]["value"]), weights, atol=1e-12)
    np.testing.assert_allclose(unwrap(doc["output"]), output, atol=1e-12)
    # Compared with full attention of the same kind: causal attention over every earlier key
    # when the window is causal (a causal window hides no future key that it would see).
    full_mask = [[j <= i or not causal for j in range(5)] for i in range(5)]
    _, full = attention_by_hand(X, X, V, full_mask)
    np.testing.assert_allclose(
        unwrap(steps["difference"]["value"]), np.subtract(output, full), atol=1e-12
    )
    needed = sum(map(sum, mask))
    assert doc["meta"]["scores_computed"] == needed and doc["meta"]["scores_full"] == 25
    assert [row["computed"] for row in steps["count"]["value"]] == [sum(row) for row in mask]
    count, band = steps["count"]["notes"]
    assert count["values"]["computed"] == needed
    assert band["values"]["band"] == needed  # the closed form agrees with the count


def test_worked_example_by_hand_first_row(invoke_json):
    """Query 0 sees keys 0 and 1: scores 1/√2 and 0, so its weights are e^(1/√2) : 1."""
    doc = invoke_json("window")
    first = unwrap(steps_of(doc)["weights"]["value"])[0]
    top = math.exp(1 / math.sqrt(2))
    assert first == pytest.approx([top / (top + 1), 1 / (top + 1), 0, 0, 0], abs=1e-12)
    assert steps_of(doc)["count"]["value"][0]["keys"] == "k0–k1"


def test_global_tokens_see_and_are_seen(invoke_json):
    doc = invoke_json("window", "--example", "global-first")
    steps = steps_of(doc)
    q = [[1, 1], [1, 0], [0, 1], [1, 1], [1, 0], [0, 1]]
    v = [[1, 1], [1, 0], [0, 1], [2, 0], [0, 2], [1, -1]]
    mask = allowed_by_hand(6, 1, False, (0,))
    assert np.array_equal(np.array(unwrap(steps["band"]["value"]), dtype=bool), mask)
    _, output = attention_by_hand(q, q, v, mask)
    np.testing.assert_allclose(unwrap(doc["output"]), output, atol=1e-12)
    # Global token 0 sees every key: its row equals full attention's (no difference).
    assert unwrap(steps["difference"]["value"])[0] == pytest.approx([0, 0], abs=1e-12)
    assert doc["meta"]["global"] == [0]
    extra = steps["count"]["notes"][2]["values"]["extra"]
    assert extra == sum(map(sum, mask)) - sum(map(sum, allowed_by_hand(6, 1, False)))


def test_random_shapes_against_sdpa_with_a_boolean_mask(torch):
    """Random sizes, windows, causal and global tokens: the lesson's output against PyTorch's
    F.scaled_dot_product_attention given the band as a boolean "may attend" mask."""
    rng = np.random.default_rng(16)
    for trial in range(12):
        n, d_k, d_v = (int(x) for x in rng.integers(1, 12, size=3))
        window = int(rng.integers(0, n + 1))
        causal = bool(trial % 2)
        chosen = tuple(sorted({int(x) for x in rng.integers(0, n, size=trial % 3)}))
        q, k = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k))
        v = rng.standard_normal((n, d_v))
        walk = attn.window(
            q, k, v, window=window, causal=causal, global_tokens=",".join(map(str, chosen))
        )
        mask = torch.tensor(allowed_by_hand(n, window, causal, chosen))
        expected = torch.nn.functional.scaled_dot_product_attention(
            *(torch.tensor(a) for a in (q, k, v)), attn_mask=mask
        )
        np.testing.assert_allclose(walk.output, expected.numpy(), rtol=0, atol=1e-12)


def test_torch_backend_agrees_with_numpy(invoke_json, torch):
    args = ("window", "--n", "9", "--dk", "3", "--window", "2", "--causal", "--global", "4")
    numpy_doc = invoke_json(*args)
    torch_doc = invoke_json(*args, "--backend", "torch")
    assert torch_doc["backend"] == "torch"
    np.testing.assert_allclose(
        unwrap(torch_doc["output"]), unwrap(numpy_doc["output"]), rtol=0, atol=1e-12
    )


def test_json_output_is_the_attention_output(invoke_json):
    doc = invoke_json("window", "--n", "7", "--dk", "3", "--dv", "5", "--window", "7")
    assert doc["output"]["shape"] == [7, 5]
    # A window wider than the sequence is full attention: attn scaled's output, no difference.
    scaled = attn.scaled(*(np.array(unwrap(doc["inputs"][name])) for name in ("Q", "K", "V")))
    np.testing.assert_allclose(unwrap(doc["output"]), scaled.output, atol=1e-12)
    assert doc["meta"]["max_abs_difference_from_full"] < 1e-12


def test_blockwise_note_agrees(invoke_json):
    doc = invoke_json("window", "--n", "10", "--window", "2", "--causal")
    (note,) = steps_of(doc)["output"]["notes"]
    assert note["key"] == "blockwise" and note["values"]["difference"] < 1e-12
    # Blocks of w + 1 = 3 queries: 4 blocks (10 rows padded to 12), each against 3 + 2 keys.
    assert note["values"]["block"] == 3 and note["values"]["largest"] == 4 * 3 * 5
    assert "every block at once: 60 scores held" in " ".join(note["text"].split())


def test_check_passes_on_the_bundled_file(invoke):
    result = invoke("check", str(bundled_lessons_dir() / "window.toml"))
    assert result.exit_code == 0, result.output
    assert "five-tokens" in result.stdout and "global-first" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--window", "-1"), "--window must be a whole number ≥ 0"),
        (("--global", "0,x"), "--global 0,x:"),
        (("--global", "9"), "positions run 0..4"),
        (("--q", "1,0;0,1", "--k", "1,0", "--v", "1;2"), "give Q and K the same n"),
        (("--q", "1,0;0,1", "--k", "1,0;0,1", "--v", "1;2;3"), "K has 2 rows but V has 3"),
    ],
)
def test_user_errors(invoke, args, fragment):
    assert_user_error(invoke("window", *args), fragment)


# global-first (lessons/window.toml): six tokens, w = 1, token 0 global.
X6 = [[1, 1], [1, 0], [0, 1], [1, 1], [1, 0], [0, 1]]
V6 = [[1, 1], [1, 0], [0, 1], [2, 0], [0, 2], [1, -1]]


def hidden_and_change(x, v, mask, full_mask) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the weight full attention (over ``full_mask``) gives the keys ``mask`` hides,
    and the largest |window output − full output|."""
    _, output = attention_by_hand(x, x, v, mask)
    full_weights, full = attention_by_hand(x, x, v, full_mask)
    hidden = np.sum(np.where(mask, 0.0, full_weights), axis=1)
    return hidden, np.max(np.abs(np.subtract(output, full)), axis=1)


def notes_of(step: dict) -> dict[str, dict]:
    return {note["key"]: note for note in step.get("notes", ())}


def test_global_first_says_only_what_its_numbers_show(invoke_json):
    """Issue 22: "grows with the weight the window hides" printed where q1 hides 0.50 and moves
    0.099 while q3 hides 0.248 and moves 0.330; "weights outside the band are exactly 0" where
    q3 -> k0 (the global token) is 0.3349; "values inside its window only" where every row sees
    the global token."""
    doc = invoke_json("window", "--example", "global-first")
    steps = steps_of(doc)
    mask = allowed_by_hand(6, 1, False, (0,))
    weights, _ = attention_by_hand(X6, X6, V6, mask)
    hidden, change = hidden_and_change(X6, V6, mask, [[True] * 6 for _ in range(6)])
    assert hidden[1] == pytest.approx(0.5) and change[1] == pytest.approx(0.0989, abs=1e-4)
    assert hidden[3] == pytest.approx(0.2483, abs=1e-4)
    assert change[3] == pytest.approx(0.3302, abs=1e-4)
    assert weights[3][0] == pytest.approx(0.3349, abs=1e-4)  # q3 -> k0, outside q3's band
    everything = " ".join(step["explanation"] for step in doc["steps"])
    assert "grows with the weight" not in everything
    assert "outside the band are" not in everything
    assert "inside its window only" not in everything
    assert "[CLS]" not in load_bundled("window").examples[2].description
    notes = notes_of(steps["difference"])
    assert "grows_with_hidden" not in notes
    follows = notes["not_with_hidden"]["values"]
    assert (follows["first"], follows["second"]) == ("q3", "q1")
    assert follows["first_hidden"] == pytest.approx(hidden[3])
    assert follows["second_change"] == pytest.approx(change[1])
    assert notes["worst_row"]["values"]["query"] == "q3"


def test_change_grows_with_hidden_weight_where_it_does(invoke_json):
    doc = invoke_json("window")  # five-tokens: ordered by weight hidden, changes never fall
    hidden, change = hidden_and_change(X, V, allowed_by_hand(5, 1, False), [[True] * 5] * 5)
    # q1 and q3 hide the same weight (0.3746): a tie, in no order; every other pair is ordered.
    assert all(
        change[a] <= change[b] for a in range(5) for b in range(5) if hidden[a] < hidden[b] - 1e-9
    )
    notes = notes_of(steps_of(doc)["difference"])
    assert "grows_with_hidden" in notes and "not_with_hidden" not in notes


def test_causal_window_is_compared_with_causal_attention(invoke_json):
    """A causal window hides no future key from causal attention: rows whose window reaches
    key 0 (q0, q1 with w = 1) do not move at all."""
    doc = invoke_json("window", "--example", "five-tokens-causal")
    step = steps_of(doc)["difference"]
    assert step["title"].startswith("Difference from causal full attention")
    difference = np.array(unwrap(step["value"]))
    assert np.all(difference[:2] == 0) and np.all(np.abs(difference[2:]).max(axis=1) > 0.2)
    worst = notes_of(step)["worst_row"]["values"]
    causal = allowed_by_hand(5, 4, True)  # every earlier key
    hidden, change = hidden_and_change(X, V, allowed_by_hand(5, 1, True), causal)
    np.testing.assert_allclose(np.abs(difference).max(axis=1), change, atol=1e-12)
    assert worst["query"] == "q3" and worst["outside"] == pytest.approx(hidden[3])


def test_no_largest_change_when_no_row_moves(invoke_json):
    doc = invoke_json("window", "--q", "1", "--k", "1", "--v", "1", "--window", "1")
    notes = notes_of(steps_of(doc)["difference"])
    assert not {"worst_row", "grows_with_hidden", "not_with_hidden"} & set(notes)


def test_the_rows_out_of_order_are_the_pairwise_searchs():
    from attn_cli.course.window.build import _TIE, _out_of_order

    def pairwise(hidden: np.ndarray, change: np.ndarray) -> tuple[int, int] | None:
        tie = _TIE * max(1.0, float(np.max(change, initial=0.0)))
        worst = None
        for a in range(len(hidden)):
            for b in range(len(hidden)):
                margin = float(change[a] - change[b])
                pairs = hidden[a] < hidden[b] - _TIE and margin > tie
                if pairs and (worst is None or margin > worst[0]):
                    worst = (margin, a, b)
        return None if worst is None else (worst[1], worst[2])

    rng = np.random.default_rng(11)
    for trial in range(400):
        n = int(rng.integers(1, 10))
        if trial % 3 == 0:
            hidden, change = rng.random(n), rng.random(n)
        elif trial % 3 == 1:  # ties
            hidden, change = rng.integers(0, 3, n) / 4, rng.integers(0, 3, n) / 8
        else:  # within the tie of each other
            hidden = 0.5 + rng.integers(0, 2, n) * 1e-10
            change = rng.integers(0, 4, n) * 1e-10
        assert _out_of_order(hidden, change) == pairwise(hidden, change), (hidden, change)


def test_a_causal_window_with_a_global_token_does_not_blame_hidden_keys_for_future_ones(
    invoke_json,
):
    """--causal --window 0 --global 0 on the default draw: q0, the global token, sees every key,
    future ones included, and changes by 0.622 while hiding nothing from causal attention. The
    notes once said "Largest change at q0: ... it would give 0 of its weight to the keys the mask
    hides" and then that the change does not follow the weight hidden, about q0. The step now
    says which rows see future keys, and the notes speak of the others (q1–q4) only."""
    doc = invoke_json("window", "--causal", "--window", "0", "--global", "0")
    q, k, v = (np.array(unwrap(doc["inputs"][name])) for name in "QKV")
    n = len(q)
    mask = allowed_by_hand(n, 0, True, (0,))
    assert mask[0] == [True] * n  # the global row sees the future
    causal = [[j <= i for j in range(n)] for i in range(n)]
    hidden, change = hidden_and_change_qk(q, k, v, mask, causal)
    assert hidden[0] == 0.0 and change[0] == pytest.approx(0.62195701, abs=1e-8)
    step = steps_of(doc)["difference"]
    assert "The global tokens break the causal rule here" in step["explanation"]
    notes = notes_of(step)
    assert "worst_row" not in notes
    worst = notes["worst_row_past"]
    rest = int(np.argmax(change[1:])) + 1  # the rows that see no future key: q1 to q4
    assert worst["values"]["query"] == f"q{rest}"
    assert worst["values"]["change"] == pytest.approx(change[rest], rel=1e-12)
    assert worst["text"].startswith("Of the rows that see no future key, the largest change")
    for note in notes.values():
        assert "q0" not in note["text"]


def hidden_and_change_qk(q, k, v, mask, full_mask) -> tuple[np.ndarray, np.ndarray]:
    """hidden_and_change with queries and keys of their own."""
    _, output = attention_by_hand(q, k, v, mask)
    full_weights, full = attention_by_hand(q, k, v, full_mask)
    hidden = np.sum(np.where(mask, 0.0, full_weights), axis=1)
    return hidden, np.max(np.abs(np.subtract(output, full)), axis=1)


def test_a_window_of_0_does_not_say_rows_near_the_ends_have_fewer_keys(invoke_json):
    """--window 0: every row sees its own key alone, 1 = 2w + 1, ends included; the band step
    once said "Near the ends a row has fewer"."""
    doc = invoke_json("window", "--window", "0")
    band = steps_of(doc)["band"]
    assert all(sum(row) == 1 for row in unwrap(band["value"]))
    assert "Near the ends a row has fewer" not in band["explanation"]
    assert "When w ≥ 1, a row near either end has fewer" in band["explanation"]


# --- --layers: the reach over stacked layers (the receptive field) ----------------------------


def reach_by_matrix_powers(mask: np.ndarray, layers: int) -> np.ndarray:
    """(layers, n, n) booleans: A^l > 0 for l = 1..layers, by numpy's integer matrix power."""
    a = np.asarray(mask, dtype=np.int64)
    return np.array([np.linalg.matrix_power(a, layer) > 0 for layer in range(1, layers + 1)])


@pytest.mark.parametrize("causal", [False, True])
def test_the_arithmetic_reach_is_the_composed_mask(causal):
    """On every small size, window and depth: the earliest position heard after l layers is
    max(0, i − l·w) (the arithmetic the span table uses at real lengths), the latest i (causal)
    or min(n − 1, i + l·w), and both are what the mask's matrix powers give."""
    from attn_cli.mechanisms import local

    for n in range(1, 13):
        for w in range(4):
            mask = np.array(allowed_by_hand(n, w, causal))
            powers = reach_by_matrix_powers(mask, 7)
            reach = local.composed_reach(mask, 7)
            shown = reach.earliest.shape[0]
            for layer in range(1, 8):
                row = min(layer, shown) - 1  # past the settled layer the reach repeats
                earliest = [int(np.argmax(powers[layer - 1][i])) for i in range(n)]
                latest = [n - 1 - int(np.argmax(powers[layer - 1][i][::-1])) for i in range(n)]
                assert earliest == [local.window_earliest(i, layer, w) for i in range(n)]
                assert latest == [local.window_latest(i, layer, w, n, causal) for i in range(n)]
                assert reach.earliest[row].tolist() == earliest
                assert reach.latest[row].tolist() == latest
            if reach.settled is not None:  # one more layer changes nothing, and not before
                settled = reach.settled
                assert np.array_equal(powers[settled], powers[settled - 1])
                assert settled == 1 or not np.array_equal(powers[settled - 1], powers[settled - 2])
            # The picture: the fewest layers l with (A^l)[i, j], 0 on the diagonal.
            for i in range(n):
                for j in range(n):
                    first = next((ly for ly in range(1, 8) if powers[ly - 1][i, j]), None)
                    expected = 0 if i == j else first
                    got = reach.layers_needed[i, j]
                    assert (np.isnan(got) and expected is None) or got == expected


def test_the_mistral_span_against_the_paper():
    """Mistral 7B: W = 4096 over 32 layers, "approximately 131K tokens". Counting w keys
    before the token (attn's --window), the span is L·w; with W counting the token (Mistral's
    count), w = W − 1 and the span is L·(W − 1) = 131,040. The paper's 131K is L·W = 131,072."""
    from attn_cli.mechanisms import local

    assert local.window_span(32, 4096) == 32 * 4096 == 131_072  # the paper's L·W
    assert local.window_span(32, 4096 - 1) == 131_040  # W counting the token: L·(W − 1)
    assert local.window_earliest(131_040, 32, 4095) == 0  # the last position to hear token 0
    assert local.window_earliest(131_041, 32, 4095) == 1
    assert local.window_earliest(131_072, 32, 4096) == 0  # under attn's count, w = 4096


def test_the_mistral_example(invoke_json):
    doc = invoke_json("window", "--example", "mistral-7b")
    steps = steps_of(doc)
    assert doc["options"] == {"window": 4095, "causal": True, "global_tokens": None, "layers": 32}
    span = steps["span"]
    assert span["col_labels"] == ["position 4,095", "position 131,040", "position 135,135"]
    table = unwrap(span["value"])
    assert span["row_labels"][-1] == "32 layers" and len(table) == 32
    assert table[0] == [0, 131_040 - 4095, 135_135 - 4095]
    assert table[-1] == [0, 0, 4095]  # 131,040 hears token 0 only after all 32 layers
    assert [row[1] for row in table] == [max(0, 131_040 - layer * 4095) for layer in range(1, 33)]
    (note,) = span["notes"]
    assert note["key"] == "span"
    assert note["values"] == {
        "layers": 32,
        "w": 4095,
        "span": 131_040,
        "mistral_w": 4096,
        "paper_span": 131_072,
    }
    text = " ".join(note["text"].split())
    assert "L·w = 32 × 4095 = 131,040 positions" in text
    assert "L·W = 131,072, 32 more than the 131,040 reached" in text
    # Five tokens inside one window: one layer reaches all, the rows stop there (settled).
    assert unwrap(steps["reach"]["value"]) == [[0, 0, 0, 0, 0]]
    assert [n["key"] for n in steps["reach"]["notes"]] == ["reach_formula", "settled"]
    assert "W = w + 1 = 4096" in steps["reach"]["explanation"]


def test_layers_on_the_command_line(invoke_json):
    """Eight tokens, a causal window of 1 over 3 layers: the edge moves back one a layer."""
    doc = invoke_json(
        "window", "--n", "8", "--dk", "2", "--window", "1", "--causal", "--layers", "3"
    )
    steps = steps_of(doc)
    assert unwrap(steps["reach"]["value"]) == [
        [0, 0, 1, 2, 3, 4, 5, 6],
        [0, 0, 0, 1, 2, 3, 4, 5],
        [0, 0, 0, 0, 1, 2, 3, 4],
    ]
    assert steps["reach"]["row_labels"] == ["1 layer", "2 layers", "3 layers"]
    assert "reach_latest" not in steps  # causal: the latest position heard is the token itself
    picture = unwrap(steps["reach_picture"]["value"])
    assert picture[7][4:] == [3, 2, 1, 0] and picture[7][3] == "nan"  # 4 back: > 3 layers
    assert picture[0][1] == "nan"  # a future token never reaches through a causal window
    assert steps["reach_picture"]["kind"] == "heatmap"
    assert steps["span"]["col_labels"] == ["position 1", "position 3", "position 4"]
    assert unwrap(steps["span"]["value"]) == [[0, 2, 3], [0, 1, 2], [0, 0, 1]]


def test_layers_without_causal_reach_both_ways(invoke_json):
    doc = invoke_json("window", "--n", "6", "--dk", "2", "--window", "1", "--layers", "2")
    steps = steps_of(doc)
    assert unwrap(steps["reach"]["value"]) == [[0, 0, 1, 2, 3, 4], [0, 0, 0, 1, 2, 3]]
    assert unwrap(steps["reach_latest"]["value"]) == [[1, 2, 3, 4, 5, 5], [2, 3, 4, 5, 5, 5]]


def test_layers_with_a_global_token_join_every_pair_in_two_layers(invoke_json):
    doc = invoke_json(
        "window",
        "--n",
        "6",
        "--dk",
        "2",
        "--window",
        "1",
        "--causal",
        "--global",
        "3",
        "--layers",
        "4",
    )
    steps = steps_of(doc)
    reach = unwrap(steps["reach"]["value"])
    assert reach[0] == [0, 0, 1, 0, 3, 3]  # q3 global sees all; q4, q5: k3 and their band
    assert reach[1] == [0] * 6  # i → 3 → j: two layers join every pair
    assert len(reach) == 2  # then nothing changes: settled
    assert [n["key"] for n in steps["reach"]["notes"]] == ["settled"]  # no band arithmetic
    assert "span" not in steps


def test_default_output_has_no_layer_steps(invoke_json):
    keys = [step["key"] for step in invoke_json("window")["steps"]]
    assert keys == [
        "scores",
        "scaled",
        "band",
        "masked",
        "weights",
        "output",
        "count",
        "difference",
    ]


def test_layers_through_the_python_api():
    q = np.array(X, dtype=float)
    walk = attn.window(q, q, np.array(V, dtype=float), window=2, causal=True, layers=2)
    assert walk.step("reach").tolist() == [[0, 0, 0, 1, 2], [0, 0, 0, 0, 0]]
    assert walk.step("span").tolist() == [[0, 2, 4], [0, 0, 2]]  # positions 2, 4, 6


@pytest.mark.parametrize("layers", ["0", "257", "x"])
def test_layers_user_errors(invoke, layers):
    result = invoke("window", "--layers", layers)
    if layers == "x":
        assert result.exit_code == 2 and "Traceback" not in result.output
    else:
        assert_user_error(result, "--layers must be a whole number from 1 to 256")
