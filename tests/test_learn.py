"""attn learn: what every task shares (the command, torch missing, saving and loading weights,
the texts). Each task's own tests are tests/test_learn_<task>.py; a test that trains a task's
default budget is marked ``training`` (left out of the default run; .ci/run runs it)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from attn_cli.core import weights_file
from attn_cli.core.errors import UserError
from attn_cli.learn import common
from tests.conftest import assert_user_error
from tests.waits import HANG_GUARD_SECONDS

TASKS = ("translate", "grammar", "induction")


@pytest.mark.parametrize("task", TASKS)
def test_without_torch_one_line_names_what_to_install(invoke, without_torch, task):
    result = invoke("learn", task, "--steps", "1")
    assert_user_error(result, "PyTorch", "pip install 'attn-cli[torch]'")


def test_a_task_that_is_not_there_is_one_line(invoke):
    assert_user_error(invoke("learn", "nosuch"), "nosuch")


def test_the_budget_options_refuse_zero(invoke):
    assert_user_error(invoke("learn", "translate", "--steps", "0"), "--steps")


def test_save_must_be_npz(invoke, torch, tmp_path):
    result = invoke("learn", "translate", "--save", str(tmp_path / "w.pt"))
    assert_user_error(result, ".npz")


def test_code_refuses_other_outputs(invoke, tmp_path):
    result = invoke("learn", "translate", "--code", "--format", "json")
    assert_user_error(result, "--code", "--format json")


def test_saved_arrays_load_back_exactly(tmp_path):
    path = tmp_path / "w.npz"
    arrays = {"W1": np.arange(6.0).reshape(2, 3) / 7, "v": np.array([0.1, -0.2])}
    weights_file.save_arrays(path, arrays)
    loaded = weights_file.load_arrays(
        path, {"W1": (2, None), "v": (2,)}, "--weights", largest=3, written_by="attn learn"
    )
    assert set(loaded) == {"W1", "v"}
    assert np.array_equal(loaded["W1"], arrays["W1"]) and np.array_equal(loaded["v"], arrays["v"])


def _refused(path, shapes, *fragments):
    with pytest.raises(UserError) as caught:
        weights_file.load_arrays(path, shapes, "weights", largest=8, written_by="attn learn")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("weights=")
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_bad_weights_files_are_one_line(tmp_path):
    _refused(tmp_path / "none.npz", {"v": (2,)}, "no such file")
    text = tmp_path / "text.npz"
    text.write_text("not a zip", encoding="utf-8")
    _refused(text, {"v": (2,)}, "not a weights file")
    single = tmp_path / "single.npz"
    with single.open("wb") as file:
        np.save(file, np.zeros(2))
    _refused(single, {"v": (2,)}, "single .npy")
    good = tmp_path / "good.npz"
    np.savez(good, v=np.zeros(3), W=np.zeros((2, 2)), s=np.array(["a", "b"]))
    _refused(good, {"u": (3,)}, "no u")
    _refused(good, {"v": (2,)}, "v is 3", "accepts 2 (1-D)")
    _refused(good, {"W": (None,)}, "W is 2 × 2", "1-D")
    _refused(good, {"s": (2,)}, "not numbers")
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, v=np.array([{"a": 1}], dtype=object))
    _refused(pickled, {"v": (1,)}, "v")


def test_options_resolve_to_the_task_defaults_only_where_not_given():
    given = common.LearnOptions("translate", steps=5)
    resolved = given.resolved(steps=100, hidden=32, max_len=9)
    assert (resolved.steps, resolved.hidden, resolved.max_len) == (5, 32, 9)


def test_seeded_fixes_torch_generator_threads_and_determinism(torch):
    common.seeded(3)
    first = torch.rand(4)
    common.seeded(3)
    assert torch.equal(first, torch.rand(4))
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.get_num_threads() <= common.THREADS
    torch.use_deterministic_algorithms(False)


def test_progress_is_quiet_off_a_terminal():
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=False)
    with common.progress_bar(console) as progress:
        assert progress is None
    assert console.file.getvalue() == ""


def test_progress_draws_on_a_terminal():
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with common.progress_bar(console) as progress:
        assert progress is not None
        progress("attention", 5, 10, 1.25, 0.5)
        progress("attention", 10, 10, 0.5, None)
    assert "attention" in console.file.getvalue()


# A fresh interpreter: pins (or not) before torch is imported, prints what it found.
_PROBE = """
import json, sys
from attn_cli.learn import common
if sys.argv[1] == "late":
    import torch
common.pin_kernels()
import torch
torch.ones(4).softmax(0)
found = common.reproducibility()
print(json.dumps({**found, "note": str(common.reproducibility_note(found))}))
"""


def _probe(when: str) -> dict:
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k not in common.KERNELS}
    completed = subprocess.run(
        [sys.executable, "-c", _PROBE, when],
        capture_output=True,
        text=True,
        check=True,
        timeout=HANG_GUARD_SECONDS,
        env=env,
    )
    import json

    return json.loads(completed.stdout)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="AVX2 is x86-64's")
def test_the_kernels_are_pinned_when_attn_learn_imports_torch():
    """Pinned before torch is imported: torch reports its AVX2 kernels (on any x86-64 CPU that
    has them, AVX-512 or not), MKL its AVX2 code path, and the output says the numbers are
    reproducible; pinned too late, it says what they depend on instead."""
    pinned = _probe("first")
    assert pinned["kernels"] == common.PINNED_CAPABILITY and pinned["mkl_cbwr"] == "AVX2"
    assert pinned["pinned"] and pinned["threads"] >= 1
    assert pinned["note"].startswith("Reproducible on this machine: with torch ")
    late = _probe("late")
    assert not late["pinned"] and late["mkl_cbwr"] is None
    assert f"this CPU's kernels ({late['kernels']}" in late["note"]
    assert "depend on" in late["note"]


def test_the_reproducibility_note_states_the_facts_it_is_given():
    found = {
        "torch": "9.9",
        "numpy": "8.8",
        "kernels": "AVX512",
        "mkl_cbwr": None,
        "threads": 2,
        "deterministic": True,
        "pinned": False,
    }
    note = str(common.reproducibility_note(found))
    assert "torch 9.9 and numpy 8.8" in note and "(AVX512;" in note and "2 threads" in note
    pinned = str(common.reproducibility_note({**found, "pinned": True, "threads": 1}))
    assert "pinned to AVX2, 1 thread," in pinned and "Another CPU can differ" in pinned
