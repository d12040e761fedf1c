"""Named arrays from a model file, read without running anything in it.

``--weights FILE`` reads a PyTorch ``state_dict`` (or any set of named arrays) from

* ``.pt`` / ``.pth``: what ``torch.save(model.state_dict(), FILE)`` writes, read only with
  ``torch.load(FILE, weights_only=True)``: tensors and plain containers, never an arbitrary
  pickled object (one is refused before it runs, and its class is named);
* ``.safetensors``: read with the safetensors package (in attn's torch extra), which checks
  the header against the file in Rust before any array is read (every range inside the data,
  the ranges tiling it without gap or overlap, its JSON however nested), so a truncated or
  forged file is refused instead of read past its end;
* ``.npz``: numpy's zip of ``.npy`` files, read with ``allow_pickle=False``;

or from a Python mapping of names to tensors or arrays (``attn.block(x, weights=layer.state_dict())``).

Every array comes back as float64 (float16, bfloat16, float32 and integers widen exactly); an
array that is not numbers, or holds NaN or an infinity, is refused like a non-finite input. Every
problem is one line (a UserError) naming the flag, the file and each array at fault.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attn_cli.core.errors import UserError, param
from attn_cli.core.paths import not_a_file

if TYPE_CHECKING:
    import numpy as np

SUFFIXES = (".pt", ".pth", ".safetensors", ".npz")
# The safetensors dtypes attn reads as numbers (each widens to float64 exactly). Booleans,
# complex numbers and the 8-, 6- and 4-bit floats are not weights a layer holds: refused by name.
SAFETENSORS_DTYPES = frozenset(
    {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "U16", "U32", "U64"}
)
# The most a weights file may hold, as the float64 arrays it is read into.
MAX_FLOAT64_BYTES = 4 * 2**30
# A .npz member that unpacks past BOMB_BYTES to more than BOMB_RATIO times its packed size is
# refused unread: trained weights are random-looking and compress about 1.1-fold; zeros 1000-fold.
BOMB_BYTES = 64 * 2**20
BOMB_RATIO = 20


def read_named_arrays(source: Any, keyword: str = "weights") -> dict[str, np.ndarray]:
    """The arrays of ``source`` by name, in the file's order, each float64 and finite.

    ``source``: a path (str or Path) to a ``.pt``, ``.pth``, ``.safetensors`` or ``.npz`` file,
    or a mapping of names to tensors, numpy arrays or nested lists (a ``state_dict``); its
    messages name it as the parameter ``keyword`` (core.errors.param)."""
    if isinstance(source, Mapping):
        where = f"{param(keyword)} (a mapping of {len(source)} arrays)"
        arrays = {str(name): _from_value(value, name, where) for name, value in source.items()}
        return _finite(arrays, where)
    if not isinstance(source, str | Path):
        raise UserError(
            f"{param(keyword)}: a {type(source).__name__} is neither a file name nor a mapping of arrays; "
            "give a .pt, .safetensors or .npz file, or a state_dict."
        )
    path = Path(source)
    where = param(keyword, path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise UserError(
            f"{where}: cannot read a {suffix or 'file without a suffix'}; give a .pt (torch.save "
            "of a state_dict), .safetensors or .npz file."
        )
    kind = not_a_file(path)
    if kind is not None:
        raise UserError(f"{where}: that is {kind}, not a file; give the weights file itself.")
    if not path.is_file():
        raise UserError(f"{where}: no such file.")
    if suffix == ".npz":
        _check_npz_headers(path, where)
        arrays = _read_npz(path, where)
    elif suffix == ".safetensors":
        arrays = _read_safetensors(path, where)
    else:
        arrays = _read_pt(path, where)
    if not arrays:
        raise UserError(f"{where}: the file holds no arrays.")
    return _finite(arrays, where)


def _finite(arrays: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
    """The arrays, every one finite; else one line naming each that is not."""
    import numpy as np

    bad = [name for name, array in arrays.items() if not np.all(np.isfinite(array))]
    if bad:
        raise UserError(
            f"{where}: {', '.join(bad)} {'has' if len(bad) == 1 else 'have'} entries that are "
            "not finite (NaN or ±∞); weights must be finite numbers, as inputs must."
        )
    return arrays


def _from_value(value: Any, name: object, where: str) -> np.ndarray:
    """One array of a mapping: a torch tensor (torch is not imported here), a numpy array or
    nested lists, as float64."""
    import numpy as np

    if not isinstance(name, str):
        raise UserError(f"{where}: the name {name!r} is not text; a state_dict's names are.")
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        check_tensor(value, name, where)
        value = value.detach().cpu()
        if str(value.dtype) not in ("torch.float32", "torch.float64"):
            value = value.float()  # bfloat16, float16 and the float8 kinds: exactly (no numpy)
        value = value.numpy()
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        raise UserError(f"{where}: {name} is not an array of numbers.") from None
    return _numbers(array, name, where)


def check_tensor(tensor: Any, name: str, where: str) -> None:
    """Refuse a torch tensor that is not a dense (strided) tensor of floating-point numbers,
    naming the parameter and what it is: sparse, quantized, nested, on the meta device (no
    numbers at all), or of integers, booleans or complex numbers. torch is not imported here."""
    kind = str(tensor.dtype).removeprefix("torch.")
    layout = str(tensor.layout).removeprefix("torch.")
    if tensor.is_nested:
        problem = "a nested tensor (rows of several lengths), not one matrix of weights"
    elif layout != "strided":
        problem = f"a {layout} tensor, not a dense one; save it dense (tensor.to_dense())"
    elif tensor.is_quantized:
        problem = f"a quantized tensor ({kind}); save it dequantized (tensor.dequantize())"
    elif tensor.is_meta:
        problem = "a tensor on the meta device, which holds no numbers; save a model that has them"
    elif not tensor.dtype.is_floating_point:
        problem = f"a tensor of {kind} values, not floating-point weights; save it as float"
    else:
        return
    raise UserError(f"{where}: {name} is {problem}.")


def _numbers(array: np.ndarray, name: str, where: str) -> np.ndarray:
    import numpy as np

    if array.dtype.kind not in "fiu":
        raise UserError(f"{where}: {name} holds {array.dtype} values, not real numbers.")
    return np.asarray(array, dtype=np.float64)


def _check_npz_headers(path: Path, where: str) -> None:
    """Each member judged from its header before any is read: numbers, held by the file, and
    all of them together at most MAX_FLOAT64_BYTES as float64 (a 2 MB .npz of zeros can
    declare gigabytes)."""
    import zipfile

    from attn_cli.core.array_headers import check_held, npz_declared
    from attn_cli.core.numbers import format_bytes

    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename.removesuffix(".npy"): info for info in archive.infolist()}
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as error:
        raise UserError(f"{where}: not a .npz file numpy can read ({error}).") from None
    declared = npz_declared(path, list(members), where)
    for array in declared.values():
        member = members[array.name]
        if member.file_size > BOMB_BYTES and member.file_size > BOMB_RATIO * member.compress_size:
            raise UserError(
                f"{where}: {array.name} is {format_bytes(member.compress_size)} in the file and "
                f"{format_bytes(member.file_size)} unpacked ({member.file_size // max(member.compress_size, 1):,}-fold), "
                "as weights never compress; save the weights again with np.savez."
            )
        if array.dtype.hasobject:
            raise UserError(
                f"{where}: {array.name} is an array of Python objects, which reading would "
                "unpickle; save arrays of numbers (np.savez)."
            )
        check_held(array, where)
    check_total(sum(array.entries for array in declared.values()), where)


def check_total(entries: int, where: str) -> None:
    """Refuse a file whose arrays, as float64, pass MAX_FLOAT64_BYTES."""
    from attn_cli.core.numbers import format_bytes

    if entries * 8 > MAX_FLOAT64_BYTES:
        raise UserError(
            f"{where}: its arrays declare {entries:,} numbers ({format_bytes(entries * 8)} as "
            f"float64); attn reads weight files of at most {format_bytes(MAX_FLOAT64_BYTES)} "
            "(a layer of d_model 4096 and d_ff 16384 is 1.6 GB)."
        )


def _read_npz(path: Path, where: str) -> dict[str, np.ndarray]:
    import zipfile

    import numpy as np

    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise UserError(f"{where}: not a .npz file numpy can read ({error}).") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise UserError(f"{where}: a single .npy array, not a .npz of named arrays.")
    with archive:
        arrays = {}
        for name in archive.files:
            try:
                value = archive[name]
            except ValueError:  # an object array: it would need pickle
                raise UserError(
                    f"{where}: {name} is an array of Python objects, which reading would "
                    "unpickle; save arrays of numbers (np.savez)."
                ) from None
            arrays[name] = _numbers(value, name, where)
        return arrays


def _read_pt(path: Path, where: str) -> dict[str, np.ndarray]:
    """A ``torch.save`` file, read with ``weights_only=True``: its unpickler builds tensors and
    plain containers only, and refuses any other class before creating it (nothing of the file
    runs)."""
    try:
        import torch
    except ImportError:
        from attn_cli.core.install import install_command

        raise UserError(
            f"{where}: reading a .pt file needs PyTorch; install it with: "
            f"{install_command('torch')}, or save the state_dict as .safetensors or .npz."
        ) from None
    import pickle

    from attn_cli.core.array_headers import check_pt_storages, pt_storage_sizes

    stored = pt_storage_sizes(path, where)  # a zip of stored members, as torch.save writes
    try:  # mmap: no tensor's data is read until the sizes are checked
        data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except pickle.UnpicklingError as error:
        found = re.search(r"GLOBAL (\S+)", str(error))
        what = f" ({found.group(1)})" if found else ""
        raise UserError(
            f"{where}: holds a pickled Python object{what}, which torch.load(weights_only=True) "
            "refuses without running it; save the state_dict: torch.save(model.state_dict(), "
            "FILE)."
        ) from None
    except (RuntimeError, EOFError, OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(f"{where}: not a file torch.save wrote ({first}).") from None
    if not isinstance(data, Mapping):
        raise UserError(
            f"{where}: holds a {type(data).__name__}, not a state_dict; save "
            "model.state_dict() (a mapping of names to tensors)."
        )
    nested = [str(name) for name, value in data.items() if isinstance(value, Mapping)]
    if nested:
        raise UserError(
            f"{where}: {', '.join(nested)} {'is a mapping' if len(nested) == 1 else 'are mappings'}"
            ", not tensors (a checkpoint with more than the model); save model.state_dict() "
            "itself."
        )
    for name, value in data.items():
        if isinstance(value, torch.Tensor):  # before its storage is asked for (sparse has none)
            check_tensor(value, str(name), where)
    tensors = [value for value in data.values() if isinstance(value, torch.Tensor)]
    check_pt_storages(tensors, stored, where)
    check_total(sum(int(tensor.numel()) for tensor in tensors), where)
    return {str(name): _from_value(value, name, where) for name, value in data.items()}


def _read_safetensors(path: Path, where: str) -> dict[str, np.ndarray]:
    """A .safetensors file, read with the safetensors package (its header checked in Rust
    before any array is read: a length past the file, ranges that leave a gap or overlap,
    nesting however deep), in the file's order; BF16 widened by hand (numpy has none)."""
    import numpy as np

    safetensors = _safetensors_package(where)
    try:
        with safetensors.safe_open(str(path), framework="numpy") as file:
            names = list(file.offset_keys())
            declared = {name: file.get_slice(name) for name in names}
            for name, tensor in declared.items():
                if tensor.get_dtype() not in SAFETENSORS_DTYPES:
                    raise UserError(
                        f"{where}: {name} holds {tensor.get_dtype()} values, not real numbers "
                        "attn reads."
                    )
            check_total(sum(math.prod(tensor.get_shape()) for tensor in declared.values()), where)
            arrays = {
                name: np.asarray(file.get_tensor(name), dtype=np.float64)
                for name, tensor in declared.items()
                if tensor.get_dtype() != "BF16"
            }
        if len(arrays) < len(names):  # the top half of a float32: shifted back into place
            for name, raw in safetensors.deserialize(path.read_bytes()):
                if raw["dtype"] == "BF16":
                    halves = np.frombuffer(raw["data"], dtype="<u2").astype(np.uint32) << 16
                    arrays[name] = halves.view(np.float32).astype(np.float64).reshape(raw["shape"])
    except safetensors.SafetensorError as error:
        detail = str(error).removeprefix("Error while deserializing header: ")[:160]
        raise UserError(
            f"{where}: not a .safetensors file the safetensors package can read ({detail}); "
            "it is truncated or damaged: save the state_dict again with "
            "safetensors.torch.save_file(state_dict, FILE)."
        ) from None
    return {name: arrays[name] for name in names}


def _safetensors_package(where: str) -> Any:
    """The safetensors package (attn's torch extra has it), or one line saying how to install
    it."""
    try:
        import safetensors
    except ImportError:
        from attn_cli.core.install import declared, install_command

        advice = install_command(packages=[declared("safetensors", "torch")])
        raise UserError(
            f"{where}: reading a .safetensors file needs the safetensors package; install it "
            f"with: {advice}, or save the state_dict as .npz."
        ) from None
    return safetensors
