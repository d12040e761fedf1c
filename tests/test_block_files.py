"""attn block --weights FILE (issue 41): a PyTorch model built and saved in the test, read back
by the command line, gives PyTorch's numbers; every bad file is one line and exit 2, and a
pickled object in a .pt file is refused without running it."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.core.errors import UserError
from attn_cli.core.tensor_file import read_named_arrays
from attn_cli.course.block.parameters import draw_weights
from attn_cli.course.block.pytorch import state_dict_of
from attn_cli.course.lesson import draw_standard_normal
from tests.conftest import assert_user_error, unwrap
from tests.test_block import WEIGHTS_FILE

TOLERANCE = 1e-12


def write_safetensors(path: Path, arrays: dict[str, np.ndarray], dtype: str = "F64") -> None:
    """A .safetensors file written by hand, as the format's description has it: an 8-byte
    little-endian header length, the JSON header (padded with spaces to 8 bytes), the data."""
    kinds = {"F64": "<f8", "F32": "<f4"}
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, value in arrays.items():
        blob = np.ascontiguousarray(value, dtype=kinds[dtype]).tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(value.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(blobs))


def torch_model(torch: Any, kind: str, d: int = 4, heads: int = 2, d_ff: int = 6) -> Any:
    """An nn module of ``kind`` with every parameter random."""
    nn = torch.nn
    torch.manual_seed(5)
    decoder = "Decoder" in kind
    layer_type = nn.TransformerDecoderLayer if decoder else nn.TransformerEncoderLayer
    layer = layer_type(d, heads, d_ff, dropout=0.0, batch_first=True, dtype=torch.float64)
    module = layer
    if kind in ("TransformerEncoder", "TransformerDecoder"):
        norm = nn.LayerNorm(d, dtype=torch.float64)
        stack = nn.TransformerDecoder if decoder else nn.TransformerEncoder
        extra = {} if decoder else {"enable_nested_tensor": False}
        module = stack(layer, 2, norm=norm, **extra)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn_like(parameter) * 0.4 + (parameter.ndim == 1) * 0.1)
    return module.eval()


def torch_output(torch: Any, module: Any, x: np.ndarray, memory: np.ndarray | None) -> np.ndarray:
    with torch.no_grad():
        if memory is None:
            return module(torch.tensor(x)[None])[0].numpy()
        n = x.shape[0]
        causal = torch.nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64)
        return module(torch.tensor(x)[None], torch.tensor(memory)[None], tgt_mask=causal)[0].numpy()


KINDS = [
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerDecoder",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("suffix", [".pt", ".safetensors", ".npz"])
def test_a_saved_model_read_back_gives_pytorchs_numbers(torch, tmp_path, invoke_json, kind, suffix):
    module = torch_model(torch, kind)
    state = {key: value.numpy() for key, value in module.state_dict().items()}
    path = tmp_path / f"model{suffix}"
    if suffix == ".pt":
        torch.save(module.state_dict(), path)
    elif suffix == ".safetensors":
        write_safetensors(path, state)
    else:
        np.savez(path, **state)
    rng = np.random.default_rng(3)
    x, memory = rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "memory.npy", memory)
    decoder = "Decoder" in kind
    args = ["block", "--weights", str(path), "--x", f"@{tmp_path / 'x.npy'}", "--no-posenc"]
    if decoder:
        args += ["--memory", f"@{tmp_path / 'memory.npy'}"]
    doc = invoke_json(*args, "--full")
    expected = torch_output(torch, module, x, memory if decoder else None)
    got = np.array(unwrap(doc["output"]), dtype=float)
    assert np.max(np.abs(got - expected)) <= TOLERANCE
    assert doc["meta"]["module"] == f"nn.{kind}"
    assert doc["meta"]["decoder"] is decoder
    assert doc["meta"]["layers"] == (2 if kind.endswith(("Encoder", "Decoder")) else 1)
    parameters = {row["parameter"]: row for row in unwrap(doc["steps"][0]["value"])}
    assert doc["steps"][0]["key"] == "parameters"
    assert parameters["W_K"]["key"].endswith("self_attn.in_proj_weight")
    assert parameters["W_K"]["how"] == "rows 5–8, transposed"
    assert parameters["W_1"]["how"] == "transposed" and parameters["gamma_1"]["how"] == "as it is"


def test_the_safetensors_package_writes_what_attn_reads(torch, tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    module = torch_model(torch, "TransformerEncoderLayer")
    path = tmp_path / "layer.safetensors"
    safetensors.save_file(module.state_dict(), str(path))
    read = read_named_arrays(path)
    for key, value in module.state_dict().items():
        assert np.array_equal(read[key], value.numpy()), key
    walk = attn.block(x=np.eye(4), weights=str(path), posenc=False)
    np.testing.assert_allclose(
        walk.output, torch_output(torch, module, np.eye(4), None), rtol=0, atol=TOLERANCE
    )


def test_float32_and_bfloat16_files_widen_exactly(torch, tmp_path):
    module = torch_model(torch, "TransformerEncoderLayer").to(torch.bfloat16)
    path = tmp_path / "half.pt"
    torch.save(module.state_dict(), path)
    read = read_named_arrays(path)
    for key, value in module.state_dict().items():
        assert np.array_equal(read[key], value.double().numpy()), key
    arrays = {"linear1.weight": np.arange(6.0).reshape(2, 3) / 3}
    write_safetensors(tmp_path / "f32.safetensors", arrays, "F32")
    read = read_named_arrays(tmp_path / "f32.safetensors")
    assert np.array_equal(read["linear1.weight"], arrays["linear1.weight"].astype(np.float32))


def test_a_state_dict_from_python_and_the_lessons_own_names(torch):
    module = torch_model(torch, "TransformerEncoder")
    x = np.random.default_rng(1).standard_normal((3, 4))
    walk = attn.block(x, weights=module.state_dict(), posenc=False)
    np.testing.assert_allclose(
        walk.output, torch_output(torch, module, x, None), rtol=0, atol=TOLERANCE
    )
    assert walk.meta["options"]["weights"] == "a state_dict of 26 arrays"
    # The walkthrough's parameters, written back as PyTorch's state_dict, are the module's.
    named = {item.name: item.value for item in walk.inputs if item.name in walk.meta["sources"]}
    state = state_dict_of(named, layers=2, stacked=True)
    for key, value in module.state_dict().items():
        assert np.array_equal(state[key], value.numpy()), key


def test_a_file_in_the_lessons_own_names_reads_as_given(tmp_path):
    w_q = np.arange(16.0).reshape(4, 4) / 10
    np.savez(tmp_path / "own.npz", W_Q=w_q, gamma_1=np.full(4, 2.0))
    walk = attn.block(weights=str(tmp_path / "own.npz"))
    inputs = {item.name: item for item in walk.inputs}
    assert np.array_equal(inputs["W_Q"].value, w_q)
    assert "own.npz: W_Q, as it is" in inputs["W_Q"].description
    assert walk.meta["sources"]["W_K"] == "drawn" and walk.meta["sources"]["gamma_1"] == "file"
    assert np.array_equal(inputs["W_K"].value, draw_weights(0, 4, 8, decoder=False)["W_K"])


# --- bad files: one line each, exit 2 ---------------------------------------------------------


class Payload:
    """An object whose unpickling writes a file: what a hostile .pt could run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:  # what unpickling would call: it must never run
        return (Path.write_text, (self.marker, "it ran"))


def test_a_pickled_object_is_refused_without_running_it(torch, tmp_path, invoke):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    torch.save({"self_attn.in_proj_weight": Payload(marker)}, path)
    result = invoke("block", "--weights", str(path))
    assert_user_error(result, "evil.pt", "pickled Python object", "without running it")
    assert not marker.exists()
    whole = tmp_path / "module.pt"
    torch.save(torch_model(torch, "TransformerEncoderLayer"), whole)  # the module, not its weights
    assert_user_error(
        invoke("block", "--weights", str(whole)), "pickled Python object", "state_dict()"
    )


def test_missing_extra_and_misshaped_keys_are_named_in_one_line(tmp_path, invoke):
    with np.load(WEIGHTS_FILE) as archive:
        state = {name: archive[name] for name in archive.files}
    del state["linear2.bias"]
    state["norm1.weight"] = np.ones(5)
    state["encoder.extra"] = np.zeros(2)
    np.savez(tmp_path / "bad.npz", **state)
    result = invoke("block", "--weights", str(tmp_path / "bad.npz"))
    assert_user_error(
        result,
        "not the state_dict of nn.TransformerEncoderLayer",
        "missing linear2.bias",
        "unexpected encoder.extra",
        "norm1.weight is 5, expected d_model = 4",
    )


def test_a_misshaped_weight_by_hand_names_it_and_both_shapes(invoke):
    result = invoke("block", "--wq", "1,2,3;4,5,6;7,8,9", "--b1", "1,2")
    assert_user_error(
        result,
        "--wq is 3 × 3 but must be d_model × d_model = 4 × 4",
        "--b1 has 2 entries but must be d_ff = 8",
    )


def test_non_finite_weights_are_refused_like_non_finite_inputs(tmp_path, invoke):
    with np.load(WEIGHTS_FILE) as archive:
        state = {name: archive[name] for name in archive.files}
    state["linear1.weight"][0, 0] = np.nan
    state["norm2.bias"][1] = np.inf
    np.savez(tmp_path / "nan.npz", **state)
    assert_user_error(
        invoke("block", "--weights", str(tmp_path / "nan.npz")),
        "linear1.weight, norm2.bias have entries that are not finite",
    )
    assert_user_error(
        invoke("block", "--wq", "nan,0,0,0;0,1,0,0;0,0,1,0;0,0,0,1"), "--wq has nan", "finite"
    )


def test_a_forged_or_truncated_safetensors_file_is_refused(tmp_path, invoke):
    path = tmp_path / "layer.safetensors"
    write_safetensors(path, {"norm1.weight": np.ones(4)})
    whole = path.read_bytes()
    path.write_bytes(whole[:-8])  # the last entry cut off
    refused = "not a .safetensors file the safetensors package can read"
    fix = "it is truncated or damaged: save the state_dict again with safetensors.torch.save_file"
    result = invoke("block", "--weights", str(path))
    assert_user_error(result, refused, "(incomplete metadata, file not fully covered)", fix)
    path.write_bytes((10**9).to_bytes(8, "little") + whole[8:])
    assert_user_error(invoke("block", "--weights", str(path)), refused, "(header too large)")
    header = json.dumps(
        {"norm1.weight": {"dtype": "F64", "shape": [4], "data_offsets": [0, 64]}}
    ).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + bytes(64))
    assert_user_error(
        invoke("block", "--weights", str(path)), refused, "invalid shape, data type, or offset"
    )


def test_options_that_contradict_the_file_are_refused(tmp_path, invoke, torch):
    assert_user_error(
        invoke("block", "--weights", WEIGHTS_FILE, "--decoder"), "--decoder", "holds an encoder"
    )
    assert_user_error(
        invoke("block", "--weights", WEIGHTS_FILE, "--wq", "1,0;0,1"),
        "gives the weights; leave out --wq",
    )
    assert_user_error(
        invoke("block", "--weights", WEIGHTS_FILE, "--d-ff", "3"), "--d-ff 3", "d_ff = 8"
    )
    assert_user_error(
        invoke("block", "--weights", WEIGHTS_FILE, "--x", "1,2;3,4"), "d_model = 4", "2 columns"
    )
    assert_user_error(
        invoke("block", "--weights", WEIGHTS_FILE, "--layers", "2"), "--shared-weights"
    )
    mha = torch.nn.MultiheadAttention(4, 2, dtype=torch.float64)
    torch.save(mha.state_dict(), tmp_path / "mha.pt")
    assert_user_error(
        invoke("block", "--weights", str(tmp_path / "mha.pt")),
        "nn.MultiheadAttention",
        "attn multihead --weights",
    )
    assert_user_error(invoke("block", "--weights", str(tmp_path / "none.pt")), "no such file")
    (tmp_path / "w.txt").write_text("1")
    assert_user_error(invoke("block", "--weights", str(tmp_path / "w.txt")), ".safetensors")


def test_a_pt_file_without_pytorch_says_what_to_do(without_torch, invoke, tmp_path):
    path = tmp_path / "layer.pt"
    path.write_bytes(pickle.dumps({"a": 1}))
    assert_user_error(invoke("block", "--weights", str(path)), "needs PyTorch", ".safetensors")


def test_one_layers_file_in_every_layer_with_shared_weights(invoke_json):
    doc = invoke_json("block", "--weights", WEIGHTS_FILE, "--layers", "3", "--shared-weights")
    assert doc["meta"]["layers"] == 3 and doc["meta"]["shared_weights"]
    keys = [step["key"] for step in doc["steps"]]
    assert "layer3.norm2" in keys and "shared" in [note["key"] for note in doc["notes"]]
    with pytest.raises(UserError, match="add shared_weights to use them"):
        attn.block(weights=WEIGHTS_FILE, layers=2, shared_weights=False)


# --- a row whose every key is masked ----------------------------------------------------------


def test_a_fully_masked_row(torch):
    """attn gives the row NaN weights and says why, as PyTorch's attention with
    need_weights=True and its layer's inference fast path do; PyTorch's reference path
    (scaled_dot_product_attention, gradients on) gives the row an attention output of 0."""
    module = torch_model(torch, "TransformerEncoderLayer")
    x = np.random.default_rng(2).standard_normal((3, 4))
    blocked = np.zeros((3, 3))
    blocked[1] = 1  # query 2 may attend no key
    walk = attn.block(x, weights=module.state_dict(), attn_mask=blocked, posenc=False)
    weights = walk.step("self.head1.weights")
    assert np.all(np.isnan(weights[1])) and np.all(np.isfinite(weights[[0, 2]]))
    (note,) = [n for n in walk.find("self.head1.weights").notes if n.key == "empty_rows"]
    assert note.values["rows"] == "t2" and "NaN" in note.text()
    mask = torch.tensor(blocked).bool()
    with torch.no_grad():  # the fast path: NaN in the row, as attn
        fast = module(torch.tensor(x)[None], src_mask=mask)[0].numpy()
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(walk.output))
    good = [0, 2]
    np.testing.assert_allclose(walk.output[good], fast[good], rtol=0, atol=TOLERANCE)
    reference = module(torch.tensor(x)[None], src_mask=mask)[0].detach().numpy()  # gradients on
    assert np.all(np.isfinite(reference[1]))  # 0 for the attention, not NaN: where they differ
    np.testing.assert_allclose(walk.output[good], reference[good], rtol=0, atol=TOLERANCE)


def test_a_batch_in_pytorchs_default_layout_reads_with_sequence_first(torch, tmp_path, invoke_json):
    """A 3-D input file of n × batch × d_model (batch_first=False, PyTorch's default), with one
    padding mask per item (batch × n either way): each item is PyTorch's."""
    module = torch_model(torch, "TransformerEncoderLayer")  # built batch_first=True
    layer = torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, dtype=torch.float64)
    layer.load_state_dict(module.state_dict())  # the same weights, batch_first=False
    x = np.random.default_rng(8).standard_normal((5, 3, 4))  # (n, B, d)
    padding = np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [0, 1, 1, 1, 1]], dtype=float)
    np.save(tmp_path / "x.npy", x)
    torch.save(module.state_dict(), tmp_path / "layer.pt")
    expected = (
        layer.eval()(torch.tensor(x), src_key_padding_mask=torch.tensor(padding).bool())
        .detach()
        .numpy()
    )  # (n, B, d): gradients on, PyTorch's reference path
    for item in range(3):
        doc = invoke_json(
            "block",
            "--weights",
            str(tmp_path / "layer.pt"),
            "--x",
            f"@{tmp_path / 'x.npy'}",
            "--sequence-first",
            "--padding",
            "0,0,0,1,1 | 0,0,0,0,0 | 0,1,1,1,1",
            "--no-posenc",
            "--item",
            str(item),
            "--full",
        )
        got = np.array(unwrap(doc["output"]), dtype=float)
        assert np.max(np.abs(got - expected[:, item])) <= TOLERANCE


def test_a_weights_file_is_judged_from_its_headers_before_it_is_read(tmp_path, invoke):
    """A .npz member whose header declares more than the file holds, and one of zeros that
    unpacks a thousandfold, are each one line before any array is read (issue 43's rule for
    every file of arrays, here for --weights)."""
    from tests.hostile_files import npz_of, zero_bomb

    lying = npz_of(
        tmp_path / "lying.npz", {"norm1.weight": np.ones(4)}, {"linear1.weight": (10**11, 64)}
    )
    assert_user_error(invoke("block", "--weights", str(lying)), "linear1.weight", "truncated")
    bomb = zero_bomb(
        tmp_path / "bomb.npz", "linear1.weight", (600_000, 64), {"norm1.weight": np.ones(4)}
    )
    assert bomb.stat().st_size < 2**20
    assert_user_error(invoke("block", "--weights", str(bomb)), "linear1.weight", "-fold")


# --- --n (and --m) with --weights: random tokens of the file's width --------------------------


def test_n_with_a_weights_file_draws_x_of_the_files_d_model(invoke, invoke_json):
    walk = attn.block(n=3, weights=WEIGHTS_FILE, seed=2)  # a layer of d_model = 4
    x = draw_standard_normal({"X": (3, 4)}, 2)["X"]
    inputs = {item.name: item for item in walk.inputs}
    assert np.array_equal(inputs["X"].value, x)
    assert inputs["X"].description == (
        "token embeddings (drawn, random seed 2; d_model = 4 from encoder-layer.npz)"
    )
    given = attn.block(x, weights=WEIGHTS_FILE)  # the same tokens, given: the same layer
    assert np.array_equal(walk.output, given.output)
    doc = invoke_json("block", "--weights", WEIGHTS_FILE, "--n", "3", "--seed", "2", "--full")
    assert np.array_equal(np.array(unwrap(doc["output"])), walk.output)
    assert doc["meta"]["d_model"] == 4
    # --d-model that agrees is taken; one that does not is refused in one line.
    same = invoke_json("block", "--weights", WEIGHTS_FILE, "--n", "3", "--d-model", "4")
    assert same["meta"]["d_model"] == 4
    assert_user_error(
        invoke("block", "--weights", WEIGHTS_FILE, "--n", "3", "--d-model", "8"),
        "--d-model 8: --weights",
        "holds a layer of d_model = 4; leave out --d-model",
    )
    # --n's bounds and the work guards as without a file.
    assert_user_error(
        invoke("block", "--weights", WEIGHTS_FILE, "--n", "0"), "--n must be at least 1"
    )
    assert_user_error(invoke("block", "--weights", WEIGHTS_FILE, "--n", "10000000"), "--n")


def test_n_and_m_with_a_decoders_pt_file_draw_x_and_the_memory(torch, tmp_path):
    module = torch_model(torch, "TransformerDecoderLayer", d=6, heads=2, d_ff=5)
    torch.save(module.state_dict(), tmp_path / "decoder.pt")
    walk = attn.block(n=4, m=3, weights=str(tmp_path / "decoder.pt"), seed=7, posenc=False)
    drawn = draw_standard_normal({"X": (4, 6), "Memory": (3, 6)}, 7)
    inputs = {item.name: item for item in walk.inputs}
    assert np.array_equal(inputs["X"].value, drawn["X"])
    assert np.array_equal(inputs["Memory"].value, drawn["Memory"])
    assert "(drawn, random seed 7; d_model = 6 from decoder.pt)" in inputs["Memory"].description
    expected = torch_output(torch, module, drawn["X"], drawn["Memory"])
    assert np.max(np.abs(walk.output - expected)) <= TOLERANCE


def test_n_with_a_file_in_the_lessons_own_names_takes_its_width(tmp_path):
    w_2 = np.ones((8, 6)) / 8  # d_ff × d_model
    np.savez(tmp_path / "own.npz", W_2=w_2)
    walk = attn.block(n=2, weights=str(tmp_path / "own.npz"))
    assert walk.meta["d_model"] == 6 and walk.meta["d_ff"] == 8
