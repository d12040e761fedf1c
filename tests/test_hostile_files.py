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


def test_safetensors_headers_are_checked_against_the_files_size(tmp_path):
    where = "--weights m.safetensors"
    good = safetensors_of(
        tmp_path / "good.safetensors",
        {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}},
        bytes(24),
    )
    (declared,) = array_headers.safetensors_declared(good, where).values()
    assert (declared.shape, declared.dtype, declared.held) == ((2, 3), np.float32, 24)
    array_headers.check_declared(declared, (2, None), 8, where, "attn block --weights")
    lying = safetensors_of(
        tmp_path / "lying.safetensors",
        {"w": {"dtype": "F32", "shape": [2**40, 64], "data_offsets": [0, 2**48]}},
        bytes(24),
    )
    with pytest.raises(UserError, match="lies at bytes 0 to 281,474,976,710,656"):
        array_headers.safetensors_declared(lying, where)
    short = safetensors_of(
        tmp_path / "short.safetensors",
        {"w": {"dtype": "F32", "shape": [2**40, 64], "data_offsets": [0, 24]}},
        bytes(24),
    )
    (declared,) = array_headers.safetensors_declared(short, where).values()
    with pytest.raises(UserError, match=r"w is 1099511627776 × 64 \(7.0e\+13 entries\)"):
        array_headers.check_declared(declared, (None, 64), 4096, where, "attn block --weights")
    huge_table = tmp_path / "table.safetensors"
    huge_table.write_bytes((2**60).to_bytes(8, "little") + b"{}")
    with pytest.raises(UserError, match="header declares"):
        array_headers.safetensors_declared(huge_table, where)


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


def test_pt_files_are_judged_before_any_tensor_is_read(torch, tmp_path):
    import zipfile

    where = "--weights m.pt"
    good = tmp_path / "good.pt"
    torch.save({"w": torch.zeros(2, 3), "b": torch.ones(4, dtype=torch.float64)}, good)
    declared = array_headers.pt_declared(good, where)
    assert {name: (d.shape, d.dtype, d.held) for name, d in declared.items()} == {
        "w": ((2, 3), np.float32, 24),
        "b": ((4,), np.float64, 32),
    }
    array_headers.check_declared(declared["w"], (2, None), 8, where, "attn block --weights")
    # The pickle says 2 × 3 float32; the file holds 4 bytes of it (torch would map past them).
    lying = tmp_path / "lying.pt"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(lying, "w") as out:
        for info in source.infolist():
            data = source.read(info)
            out.writestr(info, data[:4] if info.filename.endswith("data/0") else data)
    with pytest.raises(UserError, match="declare storages of 56 bytes but the file holds 36"):
        array_headers.pt_declared(lying, where)
    squeezed = tmp_path / "squeezed.pt"
    with (
        zipfile.ZipFile(good) as source,
        zipfile.ZipFile(squeezed, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for info in source.infolist():
            out.writestr(info.filename, source.read(info))
    with pytest.raises(UserError, match="compressed members"):
        array_headers.pt_declared(squeezed, where)
