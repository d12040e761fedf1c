"""An unavailable device is a user error in every lesson, with or without PyTorch installed.

Each case forces its condition (no torch; torch without CUDA) instead of depending on what the
test machine has, so the same assertions hold on a fresh machine, in CI and on a GPU machine.
"""

from __future__ import annotations

import pytest

from tests.conftest import assert_user_error

LESSONS = [
    "scaled",
    "bahdanau",
    "selfattn",
    "causal",
    "multihead",
    "posenc",
    "variance",
    "flash",
    "linear",
    "kvcache",
]


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
