"""Writes encoder-layer.npz, the state_dict of a small nn.TransformerEncoderLayer that the block
lesson's tests read with --weights (in CI's run without PyTorch too: .npz needs numpy only).

Run from the repository's root with PyTorch installed: python tests/data/block/make.py
"""

from pathlib import Path

import numpy as np
import torch

torch.manual_seed(41)
layer = torch.nn.TransformerEncoderLayer(
    d_model=4, nhead=2, dim_feedforward=8, dropout=0.0, batch_first=True, dtype=torch.float64
)
with torch.no_grad():  # every parameter random, the biases and LayerNorm's γ, β too
    for name, parameter in layer.named_parameters():
        if parameter.ndim == 1:
            base = 1.0 if "norm" in name and name.endswith("weight") else 0.0
            parameter.copy_(base + 0.1 * torch.randn_like(parameter))
state = {key: value.numpy().round(4) for key, value in layer.state_dict().items()}
np.savez(Path(__file__).with_name("encoder-layer.npz"), **state)
