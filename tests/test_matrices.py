"""The input grammar: text, JSON and files, and every way it can be wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attn_cli.core.errors import UserError
from attn_cli.core.matrices import as_matrix, as_vector_or_batch, parse_int_list
from tests.conftest import assert_user_error


@pytest.mark.parametrize(
    "text",
    ["1,0;0,1", "1 0; 0 1", " 1, 0 ;\n0 ,1 ", "[[1,0],[0,1]]", "1,0\n0,1", "1.0,0e0;-0,1"],
)
def test_matrix_text_forms(text):
    parsed = as_matrix(text, "--q")
    assert parsed.dtype == np.float64
    np.testing.assert_array_equal(parsed, [[1, 0], [0, 1]])


def test_one_row_is_a_matrix_and_a_vector():
    assert as_matrix("1,3", "--q").shape == (1, 2)
    np.testing.assert_array_equal(as_vector_or_batch("1,3", "--s"), [1, 3])
    np.testing.assert_array_equal(as_vector_or_batch("1;3", "--s"), [1, 3])  # a column works too
    np.testing.assert_array_equal(as_vector_or_batch("[1,3]", "--s"), [1, 3])


def test_files(tmp_path):
    expected = np.array([[1.5, -2.0], [0.25, 4.0]])
    np.save(tmp_path / "m.npy", expected)
    (tmp_path / "m.csv").write_text("1.5,-2\n0.25,4\n")
    (tmp_path / "m.txt").write_text("1.5 -2\n0.25 4\n")
    (tmp_path / "m.json").write_text(json.dumps(expected.tolist()))
    for name in ("m.npy", "m.csv", "m.txt", "m.json"):
        np.testing.assert_array_equal(as_matrix(f"@{tmp_path / name}", "--k"), expected)
    np.save(tmp_path / "ints.npy", np.array([[1, 2]], dtype=np.int32))
    assert as_matrix(f"@{tmp_path / 'ints.npy'}", "--k").dtype == np.float64


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("1,0;0", "row 2 has 1 entries but row 1 has 2"),
        ("1,x;0,1", "'x' (row 1, entry 2) is not a number"),
        ("", "--q is empty"),
        (" ; ", "--q is empty"),
        ("[]", "--q is empty"),
        ("1,nan;0,1", "nan at position (1, 2)"),
        ("1,0;inf,1", "inf at position (2, 1)"),
        ("[[1,0],[0]]", "row 2 has 1 entries but row 1 has 2"),
        ('[[1,"a"]]', "'a' (row 1, entry 2) is not a number"),
        ("[[1,0]", "is not valid JSON"),
        ("[[1,[2]]]", "is not a number"),
        ("[[[1]]]", "3 dimensions"),  # a batch: the lessons read one with as_matrix_or_batch
        ("@nowhere.npy", "file 'nowhere.npy' not found"),
        ("@data.xlsx", "use a .npy, .csv, .txt or .json file"),
    ],
)
def test_matrix_errors_name_the_option_and_problem(text, fragment):
    with pytest.raises(UserError) as error:
        as_matrix(text, "--q")
    assert fragment in str(error.value)
    assert str(error.value).startswith("--q")


def test_pickled_and_non_numeric_npy_are_refused(tmp_path):
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(UserError, match="pickled array"):
        as_matrix(f"@{tmp_path / 'objects.npy'}", "--v")
    np.save(tmp_path / "text.npy", np.array(["a", "b"]))
    with pytest.raises(UserError, match="save a real numeric array"):
        as_matrix(f"@{tmp_path / 'text.npy'}", "--v")
    np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2)))
    with pytest.raises(UserError, match="3 dimensions"):
        as_matrix(f"@{tmp_path / 'cube.npy'}", "--v")
    (tmp_path / "bad.npy").write_bytes(b"not an npy file")
    with pytest.raises(UserError, match=r"not a valid \.npy file"):
        as_matrix(f"@{tmp_path / 'bad.npy'}", "--v")


def test_vector_refuses_a_batch_of_matrices():
    with pytest.raises(UserError, match=r"shape 1 × 2 × 2; give a vector"):
        as_vector_or_batch("[[[1,2],[3,4]]]", "--s")


def test_int_lists():
    assert parse_int_list("1, 4,16", "--dk") == [1, 4, 16]
    with pytest.raises(UserError, match="'x' is not a whole number"):
        parse_int_list("1,x", "--dk")
    with pytest.raises(UserError, match="is empty"):
        parse_int_list(" ", "--dk")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--q", "1,0;0", "--k", "1,1;2,0", "--v", "1;2"], "--q: row 2 has 1 entries"),
        (["--q", "1,a", "--k", "1,1", "--v", "1"], "'a' (row 1, entry 2) is not a number"),
        (["--q", "", "--k", "1,1", "--v", "1"], "--q is empty"),
        (["--q", "1,nan", "--k", "1,1", "--v", "1"], "--q has nan"),
        (["--q", "1,1", "--k", "1,inf", "--v", "1"], "--k has inf"),
        (["--q", "@missing.npy", "--k", "1,1", "--v", "1"], "file 'missing.npy' not found"),
        (["--q", "1,0", "--k", "1,1,1", "--v", "1"], "Q has 2 columns but K has 3"),
        (["--q", "1,0", "--k", "1,1;2,0", "--v", "1,2"], "K has 2 rows but V has 1"),
        (["--q", "1,0"], "--k, --v missing"),
    ],
)
def test_cli_input_errors_are_one_line_exit_2(invoke, args, fragment):
    assert_user_error(invoke("scaled", *args), fragment)


def test_cli_pickled_npy_is_a_user_error(invoke, tmp_path):
    path = tmp_path / "q.npy"
    np.save(path, np.array([[1, None]], dtype=object), allow_pickle=True)
    result = invoke("scaled", "--q", f"@{path}", "--k", "1,1", "--v", "1")
    assert_user_error(result, "pickled")


@pytest.mark.parametrize("text", ["1,,2", "1,2,", ",1,2", "1, ,2"])
def test_an_empty_entry_is_a_typo_not_a_skip(text):
    with pytest.raises(UserError, match="has an empty entry"):
        as_matrix(text, "--q")
    with pytest.raises(UserError, match="has an empty entry"):
        parse_int_list(text, "--dk")


def test_a_number_too_large_for_float64_is_a_user_error(invoke):
    huge = "[[" + "9" * 400 + "]]"
    assert_user_error(
        invoke("scaled", "--q", huge, "--k", "1", "--v", "1"), "too large for a float64"
    )
    # Written as a float it is refused as read (not as the inf float() would make of it).
    assert_user_error(
        invoke("scaled", "--q", "1e999", "--k", "1", "--v", "1"),
        "--q: '1e999' is too large for a float64",
    )
    # inf written as inf is still named by the finiteness check.
    assert_user_error(invoke("scaled", "--q", "inf", "--k", "1", "--v", "1"), "--q has inf")
