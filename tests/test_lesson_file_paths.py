"""A path in a lesson file (an option that names a file, such as block's and multihead's
weights, and an input's ``@file``) is read from the lesson file's folder, where a lecturer keeps
a lesson and its weights together; a path on the command line stays the current directory's."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from attn_cli import course
from tests.conftest import assert_user_error, data
from tests.test_block import WEIGHTS_FILE


def lesson_file(folder: Path, lesson: str, options: str, inputs: str = "") -> Path:
    """A lesson file of one example, ``mine``, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{lesson}.toml"
    path.write_text(
        f'lesson = "{lesson}"\n[[examples]]\nname = "mine"\noptions = {{ {options} }}\n'
        f"[examples.inputs]\n{inputs}\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A course folder (course/) under tmp_path, and the current directory another one (cwd/)."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path / "course"


def test_block_reads_the_weights_beside_its_lesson_file_from_another_directory(
    elsewhere, invoke_json
):
    shutil.copy(WEIGHTS_FILE, elsewhere.parent / "layer.npz")  # not beside the lesson: a decoy
    (elsewhere / "weights").mkdir(parents=True)
    shutil.copy(WEIGHTS_FILE, elsewhere / "weights" / "layer.npz")
    np.save(elsewhere / "x.npy", np.eye(4)[:3])
    path = lesson_file(elsewhere, "block", 'weights = "weights/layer.npz"', 'X = "@x.npy"')
    doc = invoke_json("block", "--lesson", str(path))
    assert doc["meta"]["module"] == "nn.TransformerEncoderLayer"
    assert doc["options"]["weights"] == str(elsewhere / "weights" / "layer.npz")
    assert set(doc["meta"]["sources"].values()) == {"file"}
    assert data(doc["inputs"]["X"]) == np.eye(4)[:3].tolist()
    # The same file from the command line, from the lesson's folder's parent: the cwd's path.
    relative = Path("..") / "course" / "weights" / "layer.npz"
    same = invoke_json("block", "--lesson", str(path), "--weights", str(relative))
    assert same["output"] == doc["output"]


def test_multihead_reads_its_weights_from_the_lesson_files_folder(elsewhere, invoke_json):
    rng = np.random.default_rng(0)
    elsewhere.mkdir()
    state = {
        "in_proj_weight": rng.standard_normal((12, 4)),
        "in_proj_bias": rng.standard_normal(12),
        "out_proj.weight": rng.standard_normal((4, 4)),
        "out_proj.bias": rng.standard_normal(4),
    }
    np.savez(elsewhere / "mha.npz", **state)
    path = lesson_file(
        elsewhere, "multihead", 'weights = "mha.npz", heads = 2', "X = [[1, 0, 0, 1], [0, 1, 1, 0]]"
    )
    doc = invoke_json("multihead", "--lesson", str(path))
    assert np.array_equal(data(doc["inputs"]["W_Q"]), state["in_proj_weight"][:4].T)


def test_an_absolute_path_in_a_lesson_file_is_read_as_it_is(elsewhere, invoke_json):
    path = lesson_file(
        elsewhere, "block", f'weights = "{Path(WEIGHTS_FILE).as_posix()}"', 'X = "1,0,0,1"'
    )
    doc = invoke_json("block", "--lesson", str(path))
    assert doc["options"]["weights"] == WEIGHTS_FILE


def test_a_missing_file_names_the_path_as_resolved_and_where_it_was_named(
    elsewhere, invoke, tmp_path
):
    path = lesson_file(elsewhere, "block", 'weights = "layer.npz"', 'X = "1,0,0,1"')
    shutil.copy(WEIGHTS_FILE, "layer.npz")  # in the current directory: not where the file says
    resolved = str(elsewhere / "layer.npz")
    for command in (("block", "--lesson", str(path)), ("check", str(path))):
        assert_user_error(
            invoke(*command),
            f"{path}: example 'mine', options.weights: no file '{resolved}'",
            "a relative path in a lesson file starts at the lesson file's folder",
        )
    absolute = lesson_file(elsewhere, "block", f'weights = "{tmp_path / "gone.npz"}"', 'X = "1"')
    result = invoke("block", "--lesson", str(absolute))
    assert_user_error(result, f"no file '{tmp_path / 'gone.npz'}'; check the path.")
    inputs = lesson_file(elsewhere, "block", "", 'X = "@x.npy"')
    assert_user_error(
        invoke("block", "--lesson", str(inputs)),
        "example 'mine', inputs.X",
        f"'{elsewhere / 'x.npy'}' not found",
    )


def test_every_option_that_names_a_file_says_so():
    """The rule reads ``Option.path``: an option shown as FILE must set it."""
    for name in course.lesson_names():
        for option in course.get_lesson(name).card.options:
            assert option.path == (option.metavar == "FILE"), (name, option.name)
