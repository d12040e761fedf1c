"""An unavailable device is a user error in every lesson, with or without PyTorch installed.

Each case forces its condition (no torch; torch without CUDA) instead of depending on what the
test machine has, so the same assertions hold on a fresh machine, in CI and on a GPU machine.
"""

from __future__ import annotations

import pytest

from attn_cli.course import lesson_names
from tests.conftest import assert_user_error

LESSONS = lesson_names()


@pytest.mark.parametrize("command", LESSONS)
@pytest.mark.parametrize("backend", [(), ("--backend", "torch")])
def test_cuda_without_torch_names_the_device_and_the_install(
    invoke, without_torch, command, backend
):
    assert_user_error(
        invoke(command, *backend, "--device", "cuda"),
        "--device cuda needs PyTorch",
        "pip install 'attn-cli[torch]'",
    )


@pytest.mark.parametrize("command", LESSONS)
def test_torch_backend_without_torch_names_the_install(invoke, without_torch, command):
    assert_user_error(
        invoke(command, "--backend", "torch"), "--backend torch needs PyTorch", "attn-cli[torch]"
    )


@pytest.mark.parametrize("command", LESSONS)
def test_cuda_without_a_gpu_says_cuda_is_not_available(invoke, torch_without_cuda, command):
    assert_user_error(invoke(command, "--device", "cuda"), "--device cuda", "CUDA is not available")


@pytest.mark.parametrize("command", LESSONS)
def test_numpy_backend_on_cuda_says_cpu_only(invoke, command):
    assert_user_error(
        invoke(command, "--backend", "numpy", "--device", "cuda"), "CPU only", "--backend torch"
    )


# --- torch installed without the [torch] extra (issue 25) ----------------------------------------
# A user who already has PyTorch installs attn without naming the extra: their torch may be older
# than the extra asks for, and the torch paths must run, or say in one line what to install.

TORCH_PATHS = [
    *[(command, "--backend", "torch") for command in LESSONS],
    ("bench", "--sizes", "32", "--impl", "naive", "--repeats", "1"),
]


def test_array_api_compat_is_a_core_dependency():
    """The torch backend's one other import ships with attn itself, not with the [torch] extra,
    so `pip install attn-cli` next to an existing torch is enough."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads(
        (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    )["project"]
    names = [requirement.split(">")[0] for requirement in project["dependencies"]]
    assert "array-api-compat" in names
    assert "array-api-compat" not in str(project["optional-dependencies"]["torch"])


def test_install_problem_names_the_upgrade_for_an_old_torch_only(torch):
    from attn_cli.core.torch_backend import install_problem

    assert install_problem("2.13.0+cpu") is None
    assert install_problem("2.1.0") is None
    assert install_problem("10.0") is None
    old = install_problem("1.13.1+cu117")
    assert old is not None and "PyTorch 1.13.1+cu117" in old
    assert "pip install -U 'torch>=2.1'" in old


@pytest.mark.parametrize("args", TORCH_PATHS, ids=" ".join)
def test_an_old_torch_is_one_line_naming_the_upgrade(invoke, torch, monkeypatch, args):
    monkeypatch.setattr(torch, "__version__", "1.13.1")
    assert_user_error(invoke(*args), "PyTorch 1.13.1 is older than", "pip install -U 'torch>=2.1'")


@pytest.mark.parametrize("args", TORCH_PATHS, ids=" ".join)
def test_torch_without_array_api_compat_is_one_line_naming_it(invoke, torch, monkeypatch, args):
    """As after `pip install --no-deps`: torch there, array-api-compat not."""
    import sys

    monkeypatch.setitem(sys.modules, "array_api_compat", None)  # find_spec now finds nothing
    assert_user_error(invoke(*args), "needs array-api-compat", "pip install 'array-api-compat")


@pytest.mark.parametrize("problem", ["old torch", "no array-api-compat"])
def test_bench_numpy_implementations_need_neither(invoke, torch, monkeypatch, problem):
    """The bench's numpy implementations run whatever the torch beside them; its torch ones
    name the fix and the numpy way out."""
    import sys

    if problem == "old torch":
        monkeypatch.setattr(torch, "__version__", "1.13.1")
    else:
        monkeypatch.setitem(sys.modules, "array_api_compat", None)
    args = ("bench", "--sizes", "32", "--repeats", "1", "--format", "json")
    result = invoke(*args, "--impl", "numpy,tiled-numpy")
    assert result.exit_code == 0, result.output
    assert_user_error(
        invoke(*args, "--impl", "naive"), "--impl naive: ", "--impl numpy,tiled-numpy"
    )
