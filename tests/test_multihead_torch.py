"""attn multihead with separate query, key and value sequences (issue 41): against PyTorch's
nn.MultiheadAttention(query, key, value) in float64, packed (kdim = vdim = embed_dim) or with
kdim and vdim of their own, with and without biases, masks; its state_dict read by --weights
from .pt, .safetensors and .npz; and --code's PyTorch program run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attn_cli as attn
from attn_cli.course.multihead.pytorch import state_dict_of
from tests.conftest import assert_user_error, examples, unwrap
from tests.test_block_files import write_safetensors
from tests.test_multihead import MHA_FILE

torch = pytest.importorskip("torch")
TOLERANCE = 1e-12


def random_mha(embed: int, heads: int, kdim: int, vdim: int, bias: bool, seed: int) -> Any:
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(
        embed, heads, kdim=kdim, vdim=vdim, bias=bias, dtype=torch.float64
    )
    with torch.no_grad():
        for parameter in mha.parameters():
            parameter.copy_(torch.randn_like(parameter) * 0.5)
    return mha


@st.composite
def setups(draw: Any) -> dict[str, Any]:
    heads = draw(st.integers(1, 3))
    return {
        "embed": heads * draw(st.integers(1, 3)),
        "heads": heads,
        "kdim": draw(st.integers(1, 5)),
        "vdim": draw(st.integers(1, 5)),
        "same": draw(st.booleans()),  # kdim = vdim = embed_dim: the packed in_proj_weight
        "bias": draw(st.booleans()),
        "n": draw(st.integers(1, 5)),
        "m": draw(st.integers(1, 6)),
        "causal": draw(st.booleans()),
        "length": draw(st.integers(0, 6)),  # a valid length (0: none)
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


@settings(max_examples=examples(100))
@given(setups())
def test_cross_attention_equals_nn_multiheadattention(setup):
    embed, heads, n, m = setup["embed"], setup["heads"], setup["n"], setup["m"]
    kdim, vdim = (embed, embed) if setup["same"] else (setup["kdim"], setup["vdim"])
    mha = random_mha(embed, heads, kdim, vdim, setup["bias"], setup["seed"])
    rng = np.random.default_rng(setup["seed"] % 1000)
    x, keys, values = (rng.standard_normal(shape) for shape in ((n, embed), (m, kdim), (m, vdim)))
    blocked = np.zeros((n, m), dtype=bool)
    keywords: dict[str, Any] = {}
    if setup["causal"] and m >= n:  # every query keeps its first key: no empty row
        blocked |= np.triu(np.ones((n, m), dtype=bool), 1)
        keywords["causal"] = True
    length = setup["length"]
    if 0 < length <= m:
        blocked[:, length:] = True
        keywords["valid_len"] = length
    walk = attn.multihead(x, xk=keys, xv=values, heads=heads, weights=mha.state_dict(), **keywords)
    mask = torch.tensor(blocked) if blocked.any() else None
    output, weights = mha(
        torch.tensor(x),
        torch.tensor(keys),
        torch.tensor(values),
        attn_mask=mask,
        average_attn_weights=False,
    )
    np.testing.assert_allclose(walk.output, output.detach().numpy(), rtol=0, atol=TOLERANCE)
    for head in range(heads):
        np.testing.assert_allclose(
            walk.step(f"head{head + 1}.weights"),
            weights[head].detach().numpy(),
            rtol=0,
            atol=TOLERANCE,
        )
    packed = kdim == vdim == embed
    assert ("in_proj_weight" in mha.state_dict()) == packed
    description = {item.name: item.description for item in walk.inputs}["W_K"]
    assert ("in_proj_weight, rows" if packed else "k_proj_weight, transposed") in description


@pytest.mark.parametrize("suffix", [".pt", ".safetensors", ".npz"])
def test_a_saved_multiheadattention_reads_back(tmp_path, invoke_json, suffix):
    mha = random_mha(4, 2, 3, 5, True, 7)
    state = {key: value.detach().numpy() for key, value in mha.state_dict().items()}
    path = tmp_path / f"mha{suffix}"
    if suffix == ".pt":
        torch.save(mha.state_dict(), path)
    elif suffix == ".safetensors":
        write_safetensors(path, state)
    else:
        np.savez(path, **state)
    rng = np.random.default_rng(0)
    x, keys, values = (
        rng.standard_normal((2, 4)),
        rng.standard_normal((3, 3)),
        rng.standard_normal((3, 5)),
    )
    for name, value in (("x", x), ("k", keys), ("v", values)):
        np.save(tmp_path / f"{name}.npy", value)
    doc = invoke_json(
        "multihead",
        "--weights",
        str(path),
        "--x",
        f"@{tmp_path / 'x.npy'}",
        "--xk",
        f"@{tmp_path / 'k.npy'}",
        "--xv",
        f"@{tmp_path / 'v.npy'}",
        "--full",
    )
    expected, _ = mha(torch.tensor(x), torch.tensor(keys), torch.tensor(values))
    got = np.array(unwrap(doc["output"]), dtype=float)
    assert np.max(np.abs(got - expected.detach().numpy())) <= TOLERANCE
    assert "file_weights" in [note["key"] for note in doc["notes"]]


def test_the_lessons_weights_written_back_are_the_modules():
    for kdim, vdim in ((4, 4), (3, 2)):
        mha = random_mha(4, 2, kdim, vdim, True, 3)
        walk = attn.multihead(
            np.eye(4), xk=np.ones((2, kdim)), xv=np.ones((2, vdim)), weights=mha.state_dict()
        )
        weights = {item.name: item.value for item in walk.inputs if item.name[:2] in ("W_", "b_")}
        state = state_dict_of(weights)
        assert set(state) == set(mha.state_dict())
        for key, value in mha.state_dict().items():
            assert np.array_equal(state[key], value.detach().numpy()), key


def test_bad_files_and_shapes_are_one_line(tmp_path, invoke):
    state = dict(np.load(MHA_FILE))
    state["bias_k"] = np.zeros((1, 1, 4))
    del state["out_proj.bias"]
    np.savez(tmp_path / "bad.npz", **state)
    assert_user_error(
        invoke("multihead", "--weights", str(tmp_path / "bad.npz"), "--x", "1,0,0,1"),
        "not the state_dict of nn.MultiheadAttention",
        "missing out_proj.bias",
        "bias_k (add_bias_kv=True's extra key row, which attn does not compute)",
    )
    assert_user_error(
        invoke("multihead", "--weights", MHA_FILE, "--x", "1,0,0,1", "--wq", "1,0;0,1"),
        "gives the weights; leave out --wq",
    )
    assert_user_error(
        invoke(
            "multihead",
            "--weights",
            MHA_FILE,
            "--x",
            "1,0,0,1",
            "--xk",
            "1,2;3,4",
            "--xv",
            "1,0;0,1",
        ),
        "--wk is 3 × 4 but must be kdim × d_out = 2 × 4",
    )
    assert_user_error(
        invoke("multihead", "--x", "1,0;0,1", "--xk", "1,2,3", "--xv", "1,0;0,1"),
        "--xv has 2 rows but --xk has 1",
    )
    block_file = str(Path(__file__).parent / "data" / "block" / "encoder-layer.npz")
    assert_user_error(
        invoke("multihead", "--weights", block_file, "--x", "1,0,0,1"), "attn block --weights"
    )


def test_the_torch_program_reproduces_cross_attention(tmp_path):
    from tests.test_code import expected, run_programs

    mha = random_mha(4, 2, 3, 2, True, 11)
    rng = np.random.default_rng(4)
    walks = [
        attn.multihead(
            rng.standard_normal((3, 4)),
            xk=rng.standard_normal((5, 3)),
            xv=rng.standard_normal((5, 2)),
            weights=mha.state_dict(),
            causal=True,
        ),
        attn.multihead(rng.standard_normal((2, 4)), xk=rng.standard_normal((3, 4)), valid_len=2),
    ]
    for backend, rtol in (("numpy", 1e-12), ("torch", 1e-10)):
        printed = run_programs([walk.to_code(backend) for walk in walks])
        for walk, values in zip(walks, printed, strict=True):
            assert "output" in values
            for name, value in values.items():
                np.testing.assert_allclose(value, expected(walk, name), rtol=rtol, atol=1e-14)
