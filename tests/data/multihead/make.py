"""Writes mha-kdim.npz, the state_dict of a small nn.MultiheadAttention (embed_dim 4, 2 heads,
kdim 3, vdim 2: separate q/k/v_proj_weight, with biases) that the multihead lesson's tests read
with --weights (in CI's run without PyTorch too: .npz needs numpy only).

Run from the repository's root with PyTorch installed: python tests/data/multihead/make.py
"""

from pathlib import Path

import numpy as np
import torch

torch.manual_seed(41)
mha = torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=2, dtype=torch.float64)
with torch.no_grad():  # the biases random too (PyTorch starts them at 0)
    mha.in_proj_bias.copy_(0.1 * torch.randn(12, dtype=torch.float64))
    mha.out_proj.bias.copy_(0.1 * torch.randn(4, dtype=torch.float64))
state = {key: value.numpy().round(4) for key, value in mha.state_dict().items()}
np.savez(Path(__file__).with_name("mha-kdim.npz"), **state)
