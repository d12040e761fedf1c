"""Hostile files, round 4 (issue 43): weights files judged from their headers before any array
is read, saved files whose numbers lie, lesson files in another encoding.

Each test drives the real command line; the files are built here from a few KB
(tests/hostile_files.py). Each was a traceback, or minutes and gigabytes, before.
"""

from __future__ import annotations

import numpy as np
import pytest

from attn_cli.core import array_headers
from attn_cli.core.errors import UserError
from attn_cli.core.tensor_file import read_named_arrays
from attn_cli.learn import induction_data
from attn_cli.learn import induction_model as model
from tests.conftest import assert_user_error
from tests.hostile_files import npy_header, npz_of, safetensors_of, zero_bomb


def translate_arrays() -> dict[str, np.ndarray]:
    """A step of a translate model as attn bahdanau --weights reads it (n 4, d_h 6, d_s 3)."""
    return {
        "s_t": np.zeros(3),
        "H": np.ones((4, 6)),
        "W1": np.ones((2, 6)),
        "W2": np.ones((2, 3)),
        "v": np.ones(2),
    }


def induction_arrays(d_model: int = 8, max_len: int = 6, scale: float = 0.1):
    """What attn learn induction --save writes, drawn at random (no training)."""
    rng = np.random.default_rng(0)
    arrays = {"seed": np.array(0), "steps": np.array(20)}
    for key, layers in (("two", 2), ("one", 1)):
        shape = model.Shape(layers, d_model, max_len)
        for name, size in shape.shapes().items():
            arrays[f"{key}.{name}"] = rng.standard_normal(size) * scale
    return arrays


# --- --weights: the headers first --------------------------------------------------------------


def test_bahdanau_weights_with_a_huge_declared_h_is_refused_from_the_header(invoke, tmp_path):
    arrays = translate_arrays()
    del arrays["H"]
    path = npz_of(tmp_path / "w.npz", arrays, {"H": (100_000_000_000, 64)})
    assert path.stat().st_size < 4096
    result = invoke("bahdanau", "--weights", str(path))
    assert_user_error(result, "w.npz", "H is 100000000000 × 64", "accepts n × n", "at most 4,096")


def test_bahdanau_weights_bomb_of_zeros_is_refused_unread(invoke, tmp_path):
    """4,000,000 × 64 zeros, about 2 MB deflated: ran 59 s at 13.7 GB resident."""
    arrays = translate_arrays()
    del arrays["H"]
    path = zero_bomb(tmp_path / "bomb.npz", "H", (4_000_000, 64), arrays)
    assert path.stat().st_size < 3 * 2**20
    result = invoke("bahdanau", "--weights", str(path))
    assert_user_error(result, "bomb.npz", "H is 4000000 × 64", "at most 4,096")


def test_a_header_that_declares_more_than_the_file_holds_is_refused(invoke, tmp_path):
    arrays = translate_arrays()
    del arrays["H"]
    path = npz_of(tmp_path / "w.npz", arrays, {"H": (4, 6)})
    assert_user_error(invoke("bahdanau", "--weights", str(path)), "H is declared 4 × 6", "0 B")


def test_induction_weights_with_a_huge_declared_embedding_is_refused(torch, invoke, tmp_path):
    arrays = induction_arrays()
    del arrays["two.embed"]
    path = npz_of(tmp_path / "w.npz", arrays, {"two.embed": (induction_data.VOCAB, 2**62)})
    result = invoke("learn", "induction", "--weights", str(path))
    assert_user_error(result, "two.embed is 24 × 4611686018427387904", "at most 256")


def test_the_weights_bahdanau_reads_still_load(invoke_json, tmp_path):
    np.savez(tmp_path / "w.npz", **translate_arrays())
    document = invoke_json("bahdanau", "--weights", str(tmp_path / "w.npz"))
    assert document["lesson"] == "bahdanau"


def test_a_tokens_array_declaring_millions_of_words_is_not_read(invoke_json, tmp_path):
    arrays = translate_arrays()
    path = npz_of(tmp_path / "w.npz", arrays, {})
    # a tokens member declaring 10**12 words of text: skipped from its header
    import zipfile

    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("tokens.npy", npy_header((10**12,), "<U8"))
    document = invoke_json("bahdanau", "--weights", str(path))
    weights = next(step for step in document["steps"] if step["key"] == "weights")
    assert weights["col_labels"] != []


# --- the shared reader, for every file of arrays -------------------------------------------------


def test_safetensors_headers_are_checked_against_the_files_size(tmp_path, invoke):
    good = safetensors_of(
        tmp_path / "good.safetensors",
        {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}},
        np.arange(6, dtype="<f4").tobytes(),
    )
    assert read_named_arrays(good)["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    lying = safetensors_of(
        tmp_path / "lying.safetensors",
        {"w": {"dtype": "F32", "shape": [2**40, 64], "data_offsets": [0, 2**48]}},
        bytes(24),
    )
    huge_table = tmp_path / "table.safetensors"
    huge_table.write_bytes((2**60).to_bytes(8, "little") + b"{}")
    for path, detail in ((lying, "file not fully covered)"), (huge_table, "(header too large)")):
        assert_user_error(invoke("block", "--weights", str(path)), path.name, detail)
    # What the header declares, judged before anything is read (check_declared's words).
    declared = array_headers.Declared("w", (2**40, 64), np.dtype("<f4"), 24)
    with pytest.raises(UserError, match=r"w is 1099511627776 × 64 \(7.0e\+13 entries\)"):
        array_headers.check_declared(
            declared, (None, 64), 4096, "--weights m.safetensors", "attn block --weights"
        )


# --- what a saved file says ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [("seed", -1, "seed is -1"), ("steps", -5, "steps is -5"), ("seed", 2**63 - 1, "at most")],
)
def test_a_saved_seed_or_step_count_out_of_range_is_one_line(
    invoke, torch, tmp_path, name, value, fragment
):
    arrays = induction_arrays()
    arrays[name] = np.array(value)
    np.savez(tmp_path / "w.npz", **arrays)
    assert_user_error(invoke("learn", "induction", "--weights", str(tmp_path / "w.npz")), fragment)


def test_induction_weights_on_a_translate_file_names_induction(invoke, torch, tmp_path):
    np.savez(tmp_path / "w.npz", **translate_arrays())
    result = invoke("learn", "induction", "--weights", str(tmp_path / "w.npz"))
    assert_user_error(result, "attn learn induction --save FILE")
    assert "translate" not in result.stderr


def test_weights_beyond_float32_are_refused_and_overflowing_ones_are_noted(
    invoke, invoke_json, torch, tmp_path
):
    arrays = induction_arrays()
    arrays["two.embed"] = arrays["two.embed"] * 1e300  # finite in float64, ∞ in float32
    np.savez(tmp_path / "huge.npz", **arrays)
    result = invoke("learn", "induction", "--weights", str(tmp_path / "huge.npz"))
    assert_user_error(result, "two.embed", "beyond the largest float32")
    arrays = induction_arrays()
    for name in ("w_q", "w_k"):  # scores of about 1e60: past float32, NaN weights
        arrays[f"two.layer1.{name}"] = arrays[f"two.layer1.{name}"] * 1e30
    np.savez(tmp_path / "large.npz", **arrays)
    document = invoke_json("learn", "induction", "--weights", str(tmp_path / "large.npz"))
    notes = [note["text"] for note in document["notes"]]
    assert any("two layers model's attention weights are NaN" in note for note in notes), notes


# --- lesson files in another encoding ------------------------------------------------------------


@pytest.mark.parametrize("command", ["block", "check"])
def test_a_lesson_file_in_latin_1_is_one_line(invoke, tmp_path, command):
    path = tmp_path / "cafe.toml"
    path.write_bytes(b'lesson = "block"\ntitle = "caf\xe9"\n')
    args = ["block", "--lesson", str(path)] if command == "block" else ["check", str(path)]
    assert_user_error(invoke(*args), "cafe.toml", "UTF-8", "byte 0xe9", "line 2")


def test_check_on_numbers_that_overflow_prints_no_warning(invoke, tmp_path):
    import warnings

    path = tmp_path / "big.toml"
    body = '[[examples]]\nname = "big"\n[examples.inputs]\nX = [[1e308, 1e308, 1, 3]]\n'
    for lesson in ("selfattn", "block", "multihead"):
        path.write_text(f'lesson = "{lesson}"\n{body}', encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a RuntimeWarning fails the run
            result = invoke("check", str(path))
        assert result.exit_code == 0, result.output
        assert result.stderr == ""


@pytest.mark.parametrize(
    ("args", "flag"), [(("--seed", "3"), "--seed"), (("--tokens", "a,b,c,d"), "--tokens")]
)
def test_bahdanau_weights_refuses_what_the_file_gives_or_nothing_uses(invoke, tmp_path, args, flag):
    np.savez(tmp_path / "w.npz", **translate_arrays())
    assert_user_error(invoke("bahdanau", "--weights", str(tmp_path / "w.npz"), *args), flag)


def test_pt_files_are_judged_before_any_tensor_is_read(torch, tmp_path, invoke):
    import zipfile

    good = tmp_path / "good.pt"
    torch.save({"w": torch.zeros(2, 3), "b": torch.ones(4, dtype=torch.float64)}, good)
    read = read_named_arrays(good)
    assert {name: array.tolist() for name, array in read.items()} == {
        "w": [[0.0] * 3] * 2,
        "b": [1.0] * 4,
    }
    # The pickle says 2 × 3 float32; the file holds 4 bytes of it (torch would map past them).
    lying = tmp_path / "lying.pt"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(lying, "w") as out:
        for info in source.infolist():
            data = source.read(info)
            out.writestr(info, data[:4] if info.filename.endswith("data/0") else data)
    result = invoke("block", "--weights", str(lying))
    assert_user_error(result, "declare storages of 56 bytes but the file holds 36")
    squeezed = tmp_path / "squeezed.pt"
    with (
        zipfile.ZipFile(good) as source,
        zipfile.ZipFile(squeezed, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for info in source.infolist():
            out.writestr(info.filename, source.read(info))
    assert_user_error(invoke("block", "--weights", str(squeezed)), "compressed members")


# --- round 5 (issue 54): tensors that are not dense weights, headers nested past recursion -----


def _lesson_naming(folder, lesson: str, weights: str, options: str = "") -> str:
    """A lesson file of one example whose options name ``weights`` (beside it)."""
    path = folder / f"{lesson}.toml"
    path.write_text(
        f'lesson = "{lesson}"\n[[examples]]\nname = "mine"\n'
        f'options = {{ weights = "{weights}"{options} }}\n'
        '[examples.inputs]\nX = "1,0,0,1"\n',
        encoding="utf-8",
    )
    return str(path)


# What each kind of tensor becomes, and the words that refuse it (after "<key> is ").
NOT_DENSE_WEIGHTS = {
    "sparse_coo": (lambda t: t.to_sparse(), "a sparse_coo tensor, not a dense one; save it dense"),
    "sparse_csr": (lambda t: t.to_sparse_csr(), "a sparse_csr tensor, not a dense one"),
    "quantized": (
        lambda t: __import__("torch").quantize_per_tensor(t, 0.1, 0, __import__("torch").qint8),
        "a quantized tensor (qint8); save it dequantized (tensor.dequantize())",
    ),
    "meta": (lambda t: t.to("meta"), "a tensor on the meta device, which holds no numbers"),
    "int32": (lambda t: (t * 10).int(), "a tensor of int32 values, not floating-point weights"),
    "complex64": (lambda t: t.to(__import__("torch").complex64), "a tensor of complex64 values"),
    "bool": (lambda t: t > 0, "a tensor of bool values"),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's beta (CSR) and deprecated (qint8)
@pytest.mark.parametrize("kind", NOT_DENSE_WEIGHTS)
def test_a_weight_that_is_not_a_dense_float_tensor_is_named_in_one_line(
    torch, invoke, tmp_path, kind
):
    """Before: a sparse tensor was a 200-line traceback (Cannot access storage of
    SparseTensorImpl), a quantized one 'Got unsupported ScalarType QInt8', a meta one blamed on
    a truncated file; an int tensor was read as weights."""
    make, words = NOT_DENSE_WEIGHTS[kind]
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
    state = layer.state_dict()
    state["linear1.weight"] = make(state["linear1.weight"])
    torch.save(state, tmp_path / "layer.pt")
    attention = torch.nn.MultiheadAttention(4, 2).state_dict()
    attention["in_proj_weight"] = make(attention["in_proj_weight"])
    torch.save(attention, tmp_path / "mha.pt")
    layer_words = f"linear1.weight is {words}"
    assert_user_error(invoke("block", "--weights", str(tmp_path / "layer.pt")), layer_words)
    result = invoke("multihead", "--weights", str(tmp_path / "mha.pt"), "--heads", "2")
    assert_user_error(result, "mha.pt", f"in_proj_weight is {words}")
    block_lesson = _lesson_naming(tmp_path, "block", "layer.pt")
    multihead_lesson = _lesson_naming(tmp_path, "multihead", "mha.pt", ", heads = 2")
    for lesson, key in ((block_lesson, "linear1.weight"), (multihead_lesson, "in_proj_weight")):
        assert_user_error(invoke("check", lesson), lesson, "example 'mine'", f"{key} is {words}")


def test_a_state_dict_from_python_with_a_sparse_tensor_names_it(torch):
    import attn_cli as attn

    state = torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).state_dict()
    state["linear2.weight"] = state["linear2.weight"].to_sparse()
    with pytest.raises(UserError, match=r"linear2\.weight is a sparse_coo tensor"):
        attn.block(weights=state)


def test_float8_weights_widen_exactly(torch, tmp_path):
    state = {"w": torch.tensor([0.5, -1.5, 448.0]).to(torch.float8_e4m3fn)}
    torch.save(state, tmp_path / "f8.pt")
    assert read_named_arrays(tmp_path / "f8.pt")["w"].tolist() == [0.5, -1.5, 448.0]


# 100,000 levels of JSON arrays, objects and both (each past Python's recursion limit).
NESTINGS = {
    "arrays": "[" * 100_000 + "]" * 100_000,
    "objects": '{"a": ' * 100_000 + "1" + "}" * 100_000,
    "both": '[{"a": ' * 50_000 + "1" + "}]" * 50_000,
}


@pytest.mark.parametrize("nesting", NESTINGS)
def test_a_header_nested_past_recursion_is_one_line_in_every_reader(invoke, tmp_path, nesting):
    """Before: RecursionError in our own .safetensors reader (also via attn check). The
    safetensors package reads the header in Rust: nested JSON is not a table of tensors."""
    header = NESTINGS[nesting].encode()
    path = tmp_path / "deep.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    refused = "deep.safetensors: not a .safetensors file the safetensors package can read"
    assert_user_error(invoke("block", "--weights", str(path)), refused, "invalid JSON in header")
    result = invoke("multihead", "--weights", str(path), "--heads", "2")
    assert_user_error(result, refused)
    assert_user_error(
        invoke("check", _lesson_naming(tmp_path, "block", "deep.safetensors")), refused
    )
    # attn bench --from refuses the same nesting in its JSON (kept as it was).
    (tmp_path / "deep.json").write_text(NESTINGS[nesting], encoding="utf-8")
    result = invoke("bench", "--from", str(tmp_path / "deep.json"))
    assert_user_error(result, "nested 100000 levels deep", "attn bench --format json")


def test_safetensors_of_every_dtype_read_as_the_package_wrote_them_in_the_files_order(
    torch, tmp_path
):
    from safetensors.torch import save_file

    values = torch.tensor([[0.5, -2.25, 3.0], [1e-3, 7.0, -0.125]])
    tensors = {
        "z.bf16": values.bfloat16(),
        "y.f16": values.half(),
        "x.f32": values,
        "w.f64": values.double(),
        "v.i64": torch.arange(6).reshape(2, 3),
        "u.u8": torch.arange(6, dtype=torch.uint8),
    }
    save_file(tensors, str(tmp_path / "all.safetensors"))
    read = read_named_arrays(tmp_path / "all.safetensors")
    for name, tensor in tensors.items():
        assert np.array_equal(read[name], tensor.double().numpy()), name
    # The file's order (by offset), as the safetensors package wrote it, not the names' order.
    from safetensors import safe_open

    with safe_open(str(tmp_path / "all.safetensors"), framework="numpy") as file:
        assert list(read) == list(file.offset_keys())
    save_file({"a": torch.ones(2, dtype=torch.bool)}, str(tmp_path / "bool.safetensors"))
    with pytest.raises(UserError, match="a holds BOOL values, not real numbers attn reads"):
        read_named_arrays(tmp_path / "bool.safetensors")


@pytest.fixture
def without_safetensors(monkeypatch):
    """As on a machine without the safetensors package (attn installed without its torch
    extra)."""
    import sys

    monkeypatch.setitem(sys.modules, "safetensors", None)  # `import safetensors` raises


def test_a_safetensors_file_without_the_package_names_the_install_command(
    without_safetensors, invoke, tmp_path
):
    path = safetensors_of(
        tmp_path / "w.safetensors",
        {"w": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}},
        bytes(8),
    )
    for command in (("block", "--weights", str(path)), ("multihead", "--weights", str(path))):
        assert_user_error(
            invoke(*command),
            "w.safetensors: reading a .safetensors file needs the safetensors package; install "
            "it with: pip install 'safetensors>=0.6.1', or save the state_dict as .npz.",
        )


def grammar_arrays(d_model: int = 16, max_len: int = 8, scale: float = 0.3):
    """What attn learn grammar --save writes, drawn at random (no training)."""
    from attn_cli.learn import grammar_model

    rng = np.random.default_rng(0)
    arrays = {"seed": np.array(1), "steps": np.array(60)}
    for key, uniform in (("model", False), ("control", True)):
        shape = grammar_model.Shape(d_model, max_len, uniform=uniform)
        for name, size in shape.shapes().items():
            arrays[f"{key}.{name}"] = rng.standard_normal(size) * scale
    return arrays


def test_grammar_weights_beyond_float32_are_refused_and_overflowing_ones_are_noted(
    invoke, invoke_json, torch, tmp_path
):
    """Before: an embedding × 1e300 (finite in the file) gave exit 0, 137 NaN in the JSON,
    heatmaps of NaN and no note; induction refused it already. Now both tasks that read
    --weights say the same."""
    arrays = grammar_arrays()
    arrays["model.embed"] = arrays["model.embed"] * 1e300
    np.savez(tmp_path / "huge.npz", **arrays)
    assert_user_error(
        invoke("learn", "grammar", "--weights", str(tmp_path / "huge.npz")),
        "huge.npz: model.embed has an entry of",
        "beyond the largest float32 (3.4e+38), the dtype the models compute in",
        "attn learn grammar --save FILE",
    )
    for scaled in (("model.embed",), ("model.layer1.w_q", "model.layer1.w_k")):
        arrays = grammar_arrays()
        for name in scaled:  # in float32, but the scores overflow it: NaN weights
            arrays[name] = arrays[name] * 1e30
        np.savez(tmp_path / "large.npz", **arrays)
        document = invoke_json("learn", "grammar", "--weights", str(tmp_path / "large.npz"))
        notes = [note["text"] for note in document["notes"]]
        assert any(
            note.startswith(
                "The attention model's attention weights are NaN on the held-out "
                "sentences: its weights are so large that the scores overflow float32"
            )
            for note in notes
        ), notes
    np.savez(tmp_path / "fine.npz", **grammar_arrays())
    document = invoke_json("learn", "grammar", "--weights", str(tmp_path / "fine.npz"))
    assert not any("NaN" in note["text"] for note in document["notes"])


@pytest.mark.parametrize("task", ["grammar", "translate"])
@pytest.mark.parametrize(
    ("sentence", "quoted"),
    [
        (" ".join(["the"] * 10_000), "'the the the the the the the the' (10,000 words)"),
        (" ".join(f"w{i}" for i in range(10_000)), "'w0 w1 w2 w3 w4 w5 w6 w7' (10,000 words)"),
        ("x" * 40_000, "'" + "x" * 80 + "…' (1 word)"),
    ],
)
def test_a_long_sentence_is_quoted_by_its_first_words(invoke, torch, task, sentence, quoted):
    """Before: the error echoed all 10,000 words, one 40 KB line."""
    result = invoke("learn", task, "--sentence", sentence)
    assert_user_error(result, f"--sentence {quoted}: ")
    assert len(result.stderr) < 1000


@pytest.mark.parametrize(
    ("options", "inputs", "fragment"),
    [
        ('weights = "pipe.npz"', 'X = "1,0,0,1"', "options.weights: '{pipe}.npz' is a FIFO"),
        ("", 'X = "@pipe.npy"', "inputs.X: '{pipe}.npy' is a FIFO"),
    ],
)
def test_a_fifo_named_in_a_lesson_file_is_said_to_be_one(
    invoke, tmp_path, options, inputs, fragment
):
    """Before: 'not found' (it is there, and is no file); reading it would wait for a writer."""
    import os

    for suffix in (".npz", ".npy"):
        os.mkfifo(tmp_path / f"pipe{suffix}")
    path = tmp_path / "block.toml"
    path.write_text(
        f'lesson = "block"\n[[examples]]\nname = "mine"\noptions = {{ {options} }}\n'
        f"[examples.inputs]\n{inputs}\n",
        encoding="utf-8",
    )
    words = fragment.format(pipe=tmp_path / "pipe")
    for command in (("check", str(path)), ("block", "--lesson", str(path))):
        result = invoke(*command)
        assert_user_error(result, f"{path}: example 'mine', {words} (a named pipe), not a file")


def test_a_fifo_or_a_folder_given_on_the_command_line_is_said_to_be_one(invoke, torch, tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.npz")
    (tmp_path / "folder.npz").mkdir()
    os.mkfifo(tmp_path / "pipe.toml")
    pipe = str(tmp_path / "pipe.npz")
    for args in (("block", "--weights", pipe), ("learn", "grammar", "--weights", pipe)):
        assert_user_error(invoke(*args), "that is a FIFO (a named pipe), not a file")
    result = invoke("multihead", "--weights", str(tmp_path / "folder.npz"))
    assert_user_error(result, "folder.npz: that is a folder, not a file")
    result = invoke("block", "--x", f"@{tmp_path / 'pipe.npz'}")
    assert_user_error(result, "--x: cannot read")  # not a suffix it reads: said first
    result = invoke("check", str(tmp_path / "pipe.toml"))
    assert_user_error(result, "pipe.toml' is a FIFO (a named pipe), not a file; give a .toml file")
