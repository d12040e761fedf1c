"""Which backend a request names: numpy's (attn_cli.core.backend) or torch's
(attn_cli.core.torch_backend, imported only here, and only when named).

Above both backends, so that neither imports the other: the torch backend extends the numpy one,
and this module chooses between them.
"""

from __future__ import annotations

from attn_cli.core.backend import NUMPY_DTYPES, TORCH_DTYPES, Backend
from attn_cli.core.errors import UserError, param
from attn_cli.core.variants import BACKENDS, DEVICES


def get_backend(
    name: str | None, device: str = "cpu", dtype: str | None = None, *, python: bool = False
) -> Backend:
    """Validate a backend request; torch is imported only here, and only when named.

    With no backend named, a GPU device implies torch and the CPU implies numpy. ``python``:
    asked for by a Python call (attn.scaled(backend="torch")), whose errors name its keyword
    arguments, not the command line's flags.
    """
    if name is None:
        name = "numpy" if device == "cpu" else "torch"
    if name not in BACKENDS:
        raise UserError(f"unknown backend {name!r}; choose numpy or torch.")
    if device not in DEVICES:
        raise UserError(f"unknown device {device!r}; choose cpu, cuda or mps.")
    dtype = dtype or "float64"
    if name == "numpy":
        if device != "cpu":
            raise UserError(
                f"the numpy backend runs on the CPU only; add {param('backend', 'torch')} for "
                f"{param('device', device)}."
            )
        if dtype not in NUMPY_DTYPES:
            raise UserError(
                f"numpy has no {dtype}; use float64, float32 or float16, or {param('backend', 'torch')}."
            )
        return Backend("numpy", "cpu", dtype)
    if dtype not in TORCH_DTYPES:
        raise UserError(f"unknown dtype {dtype!r}; choose one of {', '.join(TORCH_DTYPES)}.")
    try:
        from attn_cli.core.torch_backend import make_torch_backend
    except ImportError:
        # Name what the user asked for: device cuda implies the torch backend. Python's
        # keyword arguments are written as a call gives them, quoted (device='cuda').
        value = repr(device) if python else device
        torch = repr("torch") if python else "torch"
        asked = param("device", value) if device != "cpu" else param("backend", torch)
        from attn_cli.core.install import install_command

        raise UserError(
            f"{asked} needs PyTorch, which is not installed; install it with: "
            f"{install_command('torch')}."
        ) from None
    return make_torch_backend(device, dtype)
