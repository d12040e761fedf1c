"""A batch dimension: (B, n, d) inputs as the books write them, computed item by item.

Every item of a batch equals the lesson run on that item alone; the values agree with a direct
float64 formula over the whole batch and with PyTorch's batched conventions
(F.scaled_dot_product_attention on (B, n, d), nn.MultiheadAttention with batch_first=True).
One item is shown (--item); the JSON holds every item and validates against the schema.
"""

from __future__ import annotations

import json
import math

import jsonschema
import numpy as np
import pytest

import attn_cli as attn
from attn_cli.course import card
from attn_cli.render.json_render import SCHEMA_VERSION, schema
from tests.conftest import assert_user_error, data, render_plain, softmax_rows
from tests.lesson_runs import lessons_with_runs, runs_of

VALIDATOR = jsonschema.Draft202012Validator(schema())
# The from-scratch book's chapter 3 inputs ("Your journey starts with one step"), which it
# batches as torch.stack((inputs, inputs)).
BOOK_INPUTS = np.array(
    [
        [0.43, 0.15, 0.89],
        [0.55, 0.87, 0.66],
        [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33],
        [0.77, 0.25, 0.10],
        [0.05, 0.80, 0.55],
    ]
)


def text(array: np.ndarray) -> str:
    return json.dumps(np.asarray(array).tolist())


def case(lesson: str, seed: int) -> tuple[dict[str, np.ndarray], dict]:
    """One item's inputs (keyword -> 2-D or 1-D array) and the lesson's options."""
    rng = np.random.default_rng(seed)
    batch = runs_of(lesson).batch
    assert batch is not None
    return batch.inputs(lambda *shape: rng.standard_normal(shape)), batch.options


# The inputs the books batch (the rest, the weights, are shared by every item).
BATCHED = {
    lesson: batch.batched for lesson in lessons_with_runs() if (batch := runs_of(lesson).batch)
}


def test_every_lesson_that_takes_a_batch_is_run_on_one():
    assert set(BATCHED) == {lesson for lesson in lessons_with_runs() if card(lesson).batches}


def run(lesson: str, inputs: dict, options: dict, **more) -> attn.Walkthrough:
    return getattr(attn, lesson)(**inputs, **options, **more)


def assert_same(one: attn.Walkthrough, other: attn.Walkthrough) -> None:
    """The same computation: every input, step and the output, value for value."""
    assert [i.name for i in one.inputs] == [i.name for i in other.inputs]
    for mine, theirs in zip(one.inputs, other.inputs, strict=True):
        np.testing.assert_array_equal(mine.value, theirs.value)
    assert [step.key for step in one.steps] == [step.key for step in other.steps]
    for mine, theirs in zip(one.steps, other.steps, strict=True):
        assert mine.title == theirs.title and mine.explanation == theirs.explanation
        if isinstance(mine.value, np.ndarray):
            np.testing.assert_allclose(mine.value, theirs.value, rtol=0, atol=1e-15)
        else:
            assert mine.value == theirs.value
    np.testing.assert_allclose(one.output, other.output, rtol=0, atol=1e-15)
    assert one.meta.keys() == other.meta.keys()


def batch_of(lesson: str, items: list[dict]) -> dict:
    """The items' batched inputs stacked, the shared ones from the first item."""
    first = items[0]
    return {
        key: np.stack([item[key] for item in items]) if key in BATCHED[lesson] else value
        for key, value in first.items()
    }


# --- every item equals its own unbatched run ------------------------------------------------


@pytest.mark.parametrize("lesson", sorted(BATCHED))
def test_two_copies_of_one_input_give_identical_items(lesson):
    inputs, options = case(lesson, 1)
    alone = run(lesson, inputs, options)
    batch = run(lesson, batch_of(lesson, [inputs, inputs]), options)
    assert len(batch.items) == 2 and batch.item_index == 0
    for item in batch.items:
        assert_same(item, alone)
        assert item.items == ()  # each item is an ordinary walkthrough
    assert_same(batch, alone)  # the one shown is item 0


@pytest.mark.parametrize("lesson", sorted(BATCHED))
def test_each_item_of_a_batch_is_its_own_run(lesson):
    first, options = case(lesson, 1)
    second, _ = case(lesson, 2)
    second = {k: v if k in BATCHED[lesson] else first[k] for k, v in second.items()}
    batched = batch_of(lesson, [first, second])
    for index, inputs in enumerate((first, second)):
        shown = run(lesson, batched, options, item=index)
        assert shown.item_index == index
        alone = run(lesson, inputs, options)
        assert_same(shown, alone)
        assert_same(shown.items[index], alone)
        assert_same(shown.item(index), alone)
    assert not np.allclose(shown.items[0].output, shown.items[1].output)


def test_batched_weights_too_and_one_matrix_shared():
    """selfattn with W_Q batched as well: each item uses its own W_Q, the shared W_K, W_V."""
    first, _ = case("selfattn", 1)
    second, _ = case("selfattn", 2)
    batch = attn.selfattn(
        np.stack([first["x"], second["x"]]),
        np.stack([first["wq"], second["wq"]]),
        first["wk"],
        first["wv"],
    )
    for index, item in enumerate((first, second)):
        alone = attn.selfattn(item["x"], item["wq"], first["wk"], first["wv"])
        assert_same(batch.items[index], alone)


def test_the_books_batch_of_two_copies_in_multihead():
    """The book's MultiHeadAttention on torch.stack((inputs, inputs)): d_in 3 -> d_out 2, two
    heads, causal; written out here over the whole (B, n, d) batch."""
    rng = np.random.default_rng(123)
    w = {name: rng.standard_normal((3, 2)) for name in ("W_Q", "W_K", "W_V")}
    w["W_O"] = rng.standard_normal((2, 2))
    batch = np.stack([BOOK_INPUTS, BOOK_INPUTS])
    walk = attn.multihead(
        batch, w["W_Q"], w["W_K"], w["W_V"], w["W_O"], heads=2, causal=True, item=1
    )
    # The book's forward, batched: views into heads, triu mask, softmax(/√head_dim), out_proj.
    b, n, heads, head_dim = 2, 6, 2, 1

    def split(m: np.ndarray) -> np.ndarray:
        return (batch @ m).reshape(b, n, heads, head_dim).transpose(0, 2, 1, 3)

    q, k, v = split(w["W_Q"]), split(w["W_K"]), split(w["W_V"])
    scores = q @ k.transpose(0, 1, 3, 2)
    scores = np.where(np.triu(np.ones((n, n), dtype=bool), k=1), -np.inf, scores)
    context = (
        (softmax_rows(scores / math.sqrt(head_dim)) @ v).transpose(0, 2, 1, 3).reshape(b, n, 2)
    )
    expected = context @ w["W_O"]
    got = np.stack([item.output for item in walk.items])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(walk.items[0].output, walk.items[1].output)
    alone = attn.multihead(
        BOOK_INPUTS, w["W_Q"], w["W_K"], w["W_V"], w["W_O"], heads=2, causal=True
    )
    assert_same(walk, alone)


def test_scaled_over_a_batch_matches_the_formula():
    rng = np.random.default_rng(7)
    q, k, v = (
        rng.standard_normal((3, 2, 4)),
        rng.standard_normal((3, 5, 4)),
        rng.standard_normal((3, 5, 2)),
    )
    walk = attn.scaled(q, k, v)
    weights = softmax_rows(np.einsum("bmd,bnd->bmn", q, k) / 2.0)
    np.testing.assert_allclose(
        np.stack([item.step("weights") for item in walk.items]), weights, rtol=0, atol=1e-15
    )
    np.testing.assert_allclose(
        np.stack([item.output for item in walk.items]), weights @ v, rtol=0, atol=1e-15
    )


def test_torch_backend_computes_each_item_too(torch):
    inputs, _ = case("scaled", 3)
    batched = batch_of("scaled", [inputs, case("scaled", 4)[0]])
    on_numpy = attn.scaled(**batched)
    on_torch = attn.scaled(**batched, backend="torch")
    for mine, theirs in zip(on_numpy.items, on_torch.items, strict=True):
        np.testing.assert_allclose(mine.output, theirs.output, rtol=0, atol=1e-14)


# --- PyTorch's batched conventions ----------------------------------------------------------


def test_scaled_and_causal_agree_with_sdpa_on_a_batch(torch):
    import torch.nn.functional as F

    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((2, 4, 3)) for _ in range(3))
    plain = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)))
    causal = F.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), is_causal=True
    )
    scaled_walk, causal_walk = attn.scaled(q, k, v), attn.causal(q, k, v)
    for walk, expected in ((scaled_walk, plain), (causal_walk, causal)):
        got = np.stack([item.output for item in walk.items])
        np.testing.assert_allclose(got, expected.numpy(), rtol=0, atol=1e-14)


def test_multihead_agrees_with_nn_multiheadattention_batch_first(torch):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 6))  # (B, n, d_model)
    w = {name: rng.standard_normal((6, 6)) / 3 for name in ("W_Q", "W_K", "W_V", "W_O")}
    module = torch.nn.MultiheadAttention(6, 3, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # it computes x @ Wᵀ, so it holds our W transposed
        module.in_proj_weight.copy_(
            torch.from_numpy(np.concatenate([w[n].T for n in ("W_Q", "W_K", "W_V")]))
        )
        module.out_proj.weight.copy_(torch.from_numpy(w["W_O"].T))
    tokens = torch.from_numpy(x)
    expected, _ = module(tokens, tokens, tokens, need_weights=False)
    walk = attn.multihead(
        torch.from_numpy(x), w["W_Q"], w["W_K"], w["W_V"], w["W_O"], heads=3
    )  # a 3-D tensor is a batch as well
    got = np.stack([item.output for item in walk.items])
    np.testing.assert_allclose(got, expected.detach().numpy(), rtol=0, atol=1e-14)


# --- the command line: inputs, --item, JSON ---------------------------------------------------


Q2 = [[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 2.0]]]
K = [[1.0, 1.0], [2.0, 0.0]]
V = [[0.1, 0.2], [0.3, 0.4]]


def validate(doc: dict) -> dict:
    errors = sorted(VALIDATOR.iter_errors(doc), key=str)
    assert not errors, errors[0]
    return doc


def test_every_batch_form_is_the_same_batch(invoke_json, tmp_path):
    np.save(tmp_path / "q.npy", np.array(Q2))
    (tmp_path / "q.json").write_text(json.dumps(Q2))
    (tmp_path / "q.txt").write_text("1 0\n0 1\n|\n1 1\n0 2\n")
    forms = [
        json.dumps(Q2),
        "1,0;0,1 | 1,1;0,2",
        f"@{tmp_path / 'q.npy'}",
        f"@{tmp_path / 'q.json'}",
        f"@{tmp_path / 'q.txt'}",
    ]
    docs = [invoke_json("scaled", "--q", form, "--k", text(K), "--v", text(V)) for form in forms]
    for doc in docs:
        assert doc["items"] == docs[0]["items"] and doc["batch"] == {"size": 2, "item": 0}
    for index in (0, 1):
        alone = invoke_json("scaled", "--q", text(Q2[index]), "--k", text(K), "--v", text(V))
        for key in ("inputs", "steps", "output", "notes", "meta"):
            assert docs[0]["items"][index][key] == alone[key]


def test_the_json_holds_every_item_and_validates(invoke_json):
    doc = validate(
        invoke_json("scaled", "--q", json.dumps(Q2), "--k", text(K), "--v", text(V), "--item", "1")
    )
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["batch"] == {"size": 2, "item": 1}
    assert len(doc["items"]) == 2
    assert [data(item["inputs"]["Q"]) for item in doc["items"]] == Q2
    assert list(doc)[-2:] == ["batch", "items"]
    for key in ("inputs", "steps", "output", "notes", "meta"):
        assert doc[key] == doc["items"][1][key]  # the keys of 1.0 describe the item shown
    plain = validate(invoke_json("scaled", "--q", text(Q2[0]), "--k", text(K), "--v", text(V)))
    assert "batch" not in plain and "items" not in plain


def test_the_schema_wants_batch_and_items_together(invoke_json):
    doc = invoke_json("scaled", "--q", json.dumps(Q2), "--k", text(K), "--v", text(V))
    for missing in ("batch", "items"):
        broken = {key: value for key, value in doc.items() if key != missing}
        assert not VALIDATOR.is_valid(broken)
    broken = json.loads(json.dumps(doc))
    del broken["items"][0]["steps"]
    assert not VALIDATOR.is_valid(broken)


@pytest.mark.parametrize("fmt", ["rich", "markdown", "latex", "html", "svg"])
def test_one_item_is_shown_with_a_note(invoke, fmt):
    args = ("scaled", "--q", json.dumps(Q2), "--k", text(K), "--v", text(V), "-f", fmt)
    shown = invoke(*args, "--item", "1")
    assert shown.exit_code == 0, shown.output
    out = " ".join(shown.stdout.replace("&#160;", " ").replace("-{}-", "--").split())
    if fmt == "svg":  # rich's SVG writes each word of a line in its own text element
        assert "picks" in out and "another" in out
    else:
        assert "batch item 1 shown, of 2 (items 0 to 1); --item picks another" in out
    if fmt == "markdown":  # item 1's Q is the one shown
        assert "| **q1** | 1 | 1 |" in shown.stdout and "| **q2** | 0 | 2 |" in shown.stdout


def test_the_walkthrough_object_reaches_every_item():
    walk = attn.scaled(Q2, K, V)
    assert "batch item 0 of 2" in repr(walk)
    second = walk.item(1)
    assert second.item_index == 1 and second.items is walk.items
    np.testing.assert_array_equal(second.inputs[0].value, Q2[1])
    assert "batch item 1 shown, of 2" in " ".join(render_plain(second).split())
    assert "batch item 1 shown, of 2" in second.to_markdown()
    with pytest.raises(IndexError, match="the batch has 2 items"):
        walk.item(2)
    alone = attn.scaled(Q2[0], K, V)
    assert alone.items == () and alone.item(0) is alone
    with pytest.raises(IndexError, match="not a batch"):
        alone.item(1)
    assert len(walk.to_dict()["items"]) == 2


def test_a_lesson_file_example_may_hold_a_batch(invoke_json, invoke, tmp_path):
    path = tmp_path / "batch.toml"
    path.write_text(
        'lesson = "scaled"\n[[examples]]\nname = "batch"\n[examples.inputs]\n'
        "Q = [[[1, 0], [0, 1]], [[1, 1], [0, 2]]]\nK = [[1, 1], [2, 0]]\n"
        'V = "0.1, 0.2; 0.3, 0.4"\n'
        # attn check compares what a slide printed with item 0
        '[examples.printed]\nweights = "0.33, 0.67; 0.67, 0.33"\n'
    )
    doc = validate(invoke_json("scaled", "--lesson", str(path)))
    assert doc["batch"]["size"] == 2 and doc["example"] == "batch"
    direct = invoke_json("scaled", "--q", json.dumps(Q2), "--k", text(K), "--v", text(V))
    assert doc["items"] == direct["items"]
    checked = invoke("check", str(path), "-f", "json")
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["files"][0]["examples"][0]["checked"] == 4


def test_a_batch_of_vectors(invoke_json):
    """bahdanau: B decoder states (rows) against B encoder sequences; "|" works too."""
    first, _ = case("bahdanau", 1)
    second, _ = case("bahdanau", 2)
    shared = {f"--{k}": text(first[k]) for k in ("w1", "w2", "v")}
    rows = np.stack([first["s"], second["s"]])
    for s in (text(rows), f"{','.join(map(str, rows[0]))} | {','.join(map(str, rows[1]))}"):
        doc = invoke_json(
            "bahdanau",
            "--s", s,
            "--h", text(np.stack([first["h"], second["h"]])),
            *(part for pair in shared.items() for part in pair),
        )  # fmt: skip
        for index, item in enumerate((first, second)):
            alone = attn.bahdanau(item["s"], item["h"], first["w1"], first["w2"], first["v"])
            np.testing.assert_allclose(data(doc["items"][index]["output"]), alone.output, atol=0)


# --- errors: one line, exit 2 ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--q", json.dumps(Q2), "--item", "2"], ["--item 2 is out of range", "0 to 1"]),
        (["--q", json.dumps(Q2), "--item", "-1"], ["--item -1 is out of range"]),
        (["--q", text(Q2[0]), "--item", "1"], ["--item 1", "not a batch"]),
        (
            ["--q", json.dumps(Q2), "--k", json.dumps([K, K, K])],
            ["--q holds a batch of 2 but --k a batch of 3", "same batch size"],
        ),
        (["--q", "1,0;0,1 | 1,1"], ["batch item 1 is 1 × 2 but item 0 is 2 × 2"]),
        (["--q", "1,0;0,1 ||"], ["batch item 1 is empty"]),
        (["--q", json.dumps([Q2])], ["nested 4 levels deep", "three for a batch"]),
        (["--q", json.dumps([Q2[0], K[0]])], ["batch item 1 is not a list of rows"]),
        (["--q", json.dumps(Q2), "--valid-len", "1|2|1"], ["gives 3 values", "2 items"]),
        (["--q", text(Q2[0]), "--valid-len", "1|2"], ["'|' separates", "not a batch"]),
    ],
)
def test_batch_errors_are_one_line(invoke, args, fragments):
    given = dict(zip(args[::2], args[1::2], strict=True))
    full = {"--k": text(K), "--v": text(V), **given}
    assert_user_error(invoke("scaled", *(p for pair in full.items() for p in pair)), *fragments)


def test_a_rank_4_npy_is_refused(invoke, tmp_path):
    np.save(tmp_path / "q.npy", np.zeros((2, 2, 2, 2)))
    result = invoke("scaled", "--q", f"@{tmp_path / 'q.npy'}", "--k", text(K), "--v", text(V))
    assert_user_error(result, "--q has 4 dimensions", "batch × rows × columns")


def test_shapes_that_disagree_between_items_and_inputs(invoke):
    """Each item is checked as the lesson checks one run: K's width must be Q's."""
    result = invoke("scaled", "--q", json.dumps(Q2), "--k", "1,1,1;2,0,0", "--v", text(V))
    assert_user_error(result, "Q has 2 columns but K has 3")


def test_random_inputs_have_no_batch(invoke):
    assert_user_error(invoke("scaled", "--n", "3", "--item", "1"), "not a batch")


def test_a_batch_too_large_to_walk_through_is_refused(invoke, tmp_path):
    from attn_cli.core.batch import MAX_BATCH

    np.save(tmp_path / "q.npy", np.zeros((MAX_BATCH + 1, 1, 2)))
    result = invoke("scaled", "--q", f"@{tmp_path / 'q.npy'}", "--k", text(K), "--v", text(V))
    assert_user_error(result, f"--q holds a batch of {MAX_BATCH + 1:,} items", "fewer items")


def padded_case() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal(shape) for shape in ((2, 3, 2), (2, 4, 2), (2, 4, 2)))
    keep = np.arange(4)[None, None, :] < np.array([1, 3])[:, None, None]  # (B, 1, n)
    return q, k, v, keep


def test_one_valid_length_per_item():
    """--valid-len "1|3": the books' valid_lens of shape (B,), one length per sentence."""
    q, k, v, keep = padded_case()
    walk = attn.scaled(q, k, v, valid_len="1|3")
    assert walk.to_dict()["options"]["valid_len"] == "1|3"
    expected = softmax_rows(np.where(keep, q @ k.transpose(0, 2, 1) / math.sqrt(2), -np.inf)) @ v
    got = np.stack([item.output for item in walk.items])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)
    for index, length in enumerate((1, 3)):
        assert_same(walk.items[index], attn.scaled(q[index], k[index], v[index], valid_len=length))


def test_one_valid_length_per_item_agrees_with_sdpa(torch):
    import torch.nn.functional as F

    q, k, v, keep = padded_case()
    walk = attn.scaled(q, k, v, valid_len="1|3")
    t = torch.from_numpy
    sdpa = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(keep))  # True: attend
    got = np.stack([item.output for item in walk.items])
    np.testing.assert_allclose(got, sdpa.numpy(), rtol=0, atol=1e-14)


def test_dropout_in_a_batch_says_every_item_gets_the_same_mask():
    """Each item is its own run: the same --seed gives the same mask, unlike nn.Dropout on the
    whole batch. The note says so; the masks are equal."""
    q = [[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]
    k, v = [[1.0, 1.0], [2.0, 0.0]], [[1.0, 2.0], [3.0, 4.0]]
    walk = attn.scaled(q, k, v, dropout=0.5, seed=3)
    masks = [item.find("dropout").parts[0].value for item in walk.items]
    np.testing.assert_array_equal(masks[0], masks[1])
    assert any("every item gets the same mask" in str(note) for note in walk.notes)
    assert not any("same mask" in str(note) for note in attn.scaled(q[0], k, v, dropout=0.5).notes)
