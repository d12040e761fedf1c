"""attn posenc --code: the sinusoidal positional encoding, PE[pos, 2i] = sin(pos ω_i),
PE[pos, 2i+1] = cos(pos ω_i), ω_i = base^(−2i/d_model) (or sines then cosines, split)."""

from __future__ import annotations

from attn_cli.core.model import Walkthrough
from attn_cli.render.code_render import number, options_of


def _program(walkthrough: Walkthrough, xp: str) -> str:
    options = options_of(walkthrough)
    positions, d_model = int(options["positions"]), int(options["d_model"])
    base, layout = float(options["base"]), options["layout"]
    if layout == "split":
        arrange = [
            f"pe = {xp}.concatenate((sines, cosines), axis=-1)  # sin_0 .. sin_h-1, cos_0 .. cos_h-1"
            if xp == "np"
            else "pe = torch.cat((sines, cosines), dim=-1)  # sin_0 .. sin_h-1, cos_0 .. cos_h-1"
        ]
    else:
        arrange = [
            f"pe = {xp}.stack((sines, cosines), {'axis' if xp == 'np' else 'dim'}=-1)"
            f".reshape({positions}, {d_model})  # sin_0, cos_0, sin_1, cos_1, ..."
        ]
    library = "numpy" if xp == "np" else "PyTorch"
    dtype = "" if xp == "np" else ", dtype=torch.float64"
    return "\n".join(
        [
            f'"""attn posenc: the sinusoidal positional encoding, in {library}."""',
            "import numpy as np" if xp == "np" else "import torch",
            "",
            f"positions, d_model, base = {positions}, {d_model}, {number(base)}",
            "",
            f"pos = {xp}.arange(positions{dtype})  # 0 .. N-1",
            f"i = {xp}.arange(d_model // 2{dtype})  # the pairs 0 .. d_model/2 - 1",
            "omega = base ** (-2.0 * i / d_model)  # each pair's frequency, radians per position",
            "angles = pos[:, None] * omega[None, :]  # (N, d_model/2)",
            f"sines, cosines = {xp}.sin(angles), {xp}.cos(angles)",
            *arrange,
            "",
            'print("pe =", pe.tolist())',
        ]
    )


def numpy_program(walkthrough: Walkthrough) -> str:
    return _program(walkthrough, "np")


def torch_program(walkthrough: Walkthrough) -> str:
    return _program(walkthrough, "torch")
