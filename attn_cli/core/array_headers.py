"""Arrays in files judged from their headers, before any of them is read.

A file's header says what it holds (a .npy's shape and dtype; a .npz's, member by member): a few
hundred bytes that can declare 46 TiB, or zeros that compress a thousandfold. Every reader of
arrays from a file (``@file`` inputs, ``--weights``, the model files a command reads) asks here
first:

* :func:`npy_declared`, :func:`npz_declared`: what a file declares, as :class:`Declared`
  (name, shape, dtype, and the bytes the file holds for it), reading headers only (a bounded
  number of bytes, whatever the file);
* :func:`check_declared`: refuse, in one line, an array whose header does not parse, whose
  dtype is not numbers, whose data the file does not hold (a truncated file or a lying
  header), or whose shape is not one the reader accepts (naming the array, its declared shape
  and what is accepted), before anything is allocated for it.

Model files read with torch (``.pt``): :func:`pt_storage_sizes` judges the zip before
``torch.load(..., weights_only=True, mmap=True)`` (which reads no tensor's data), and
:func:`check_pt_storages` the storages it maps against what the zip holds. A .safetensors file's
header is checked by the safetensors package (attn_cli.core.tensor_file). Every problem is a
UserError: one line, exit 2.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from attn_cli.core.errors import UserError
from attn_cli.core.numbers import format_bytes, shape_text

# A .npy header is at most this long (numpy's own limit when it reads one): a longer one is
# refused unread.
MAX_HEADER_BYTES = 10_000
# A .npz (a zip) read by attn has at most this many members.
MAX_MEMBERS = 1_000


@dataclass(frozen=True)
class Declared:
    """One array as its file's header declares it: its name (in the file; a .npy's file name),
    shape and dtype, and the bytes of data the file holds for it (where the file says: the
    rest of a .npy, a zip member's uncompressed size)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    held: int

    @property
    def entries(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.entries * self.dtype.itemsize


def npy_header(stream: IO[bytes], name: str, where: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """The shape and dtype a .npy header declares, read from ``stream`` (at its start; left at
    the first byte of data). ``where`` names the file in an error."""
    import tokenize  # numpy parses the header's dict with it

    npy = np.lib.format
    try:
        version = npy.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = npy.read_array_header_1_0(stream, max_header_size=MAX_HEADER_BYTES)
        elif version == (2, 0):
            shape, _, dtype = npy.read_array_header_2_0(stream, max_header_size=MAX_HEADER_BYTES)
        else:
            raise UserError(
                f"{where}: {name} is a version {version[0]}.{version[1]} .npy array, which attn "
                "does not read; save it with np.save."
            )
    except (ValueError, EOFError, SyntaxError, tokenize.TokenError, OverflowError) as error:
        detail = " ".join(str(error).split())[:120]
        raise UserError(
            f"{where}: {name} is not a valid .npy file ({detail}); write it with np.save."
        ) from None
    return tuple(int(size) for size in shape), dtype


def npy_declared(path: Path, where: str) -> Declared:
    """What the .npy file at ``path`` declares (its header only is read)."""
    try:
        with path.open("rb") as file:
            shape, dtype = npy_header(file, path.name, where)
            start = file.tell()
        size = path.stat().st_size
    except OSError as error:
        raise UserError(f"{where}: cannot read it ({error.strerror or error}).") from None
    return Declared(path.name, shape, dtype, size - start)


def npz_declared(path: Path, names: Sequence[str], where: str) -> dict[str, Declared]:
    """What the .npz file at ``path`` declares for each of ``names`` that it has (a member
    ``NAME.npy``): its header only is read, through the zip's own bookkeeping (a member's
    uncompressed size is what the file holds for it, whatever it compresses to)."""
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise UserError(f"{where}: no such file.") from None
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as error:
        raise UserError(f"{where}: not a .npz file (a zip of .npy arrays): {error}.") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise UserError(
                f"{where}: {len(members):,} arrays in one file; attn reads files of at most "
                f"{MAX_MEMBERS:,}."
            )
        found = {}
        by_name = {member.filename: member for member in members}
        for name in names:
            member = by_name.get(f"{name}.npy")
            if member is None:
                continue
            try:
                with archive.open(member) as stream:
                    shape, dtype = npy_header(stream, name, where)
                    start = stream.tell()
            except (OSError, zipfile.BadZipFile, EOFError, NotImplementedError) as error:
                raise UserError(f"{where}: {name} cannot be read: {error}.") from None
            found[name] = Declared(name, shape, dtype, member.file_size - start)
        return found


def check_pt_storages(tensors: Iterable[Any], stored: list[int], where: str) -> None:
    """Refuse tensors (loaded with mmap=True, so none of their data is read yet) whose
    storages are not, in size, the data members of the zip (:func:`pt_storage_sizes`)."""
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    if sorted(size for size in storages.values() if size) != stored:
        raise UserError(
            f"{where}: its tensors declare storages of {sum(storages.values()):,} bytes but the "
            f"file holds {sum(stored):,}; the file is truncated or its header is wrong."
        )


def pt_storage_sizes(path: Path, where: str) -> list[int]:
    """The sizes of a torch.save zip's data members, in order, after refusing one that is not
    a zip, has too many members, or has a compressed one (torch.save stores them as they are)."""
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise UserError(f"{where}: no such file.") from None
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as error:
        raise UserError(
            f"{where}: not a PyTorch file (a zip, as torch.save writes): {error}."
        ) from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise UserError(
                f"{where}: {len(members):,} members; attn reads at most {MAX_MEMBERS:,}."
            )
        if any(member.compress_type != zipfile.ZIP_STORED for member in members):
            raise UserError(
                f"{where}: holds compressed members, which torch.save never writes; save the "
                "tensors again with torch.save."
            )
        return sorted(  # empty storages aside (mapped, they may share an address)
            member.file_size
            for member in members
            if member.file_size and "/data/" in member.filename and "/.data/" not in member.filename
        )


def accepted_text(accepts: Sequence[int | None], largest: int) -> str:
    """What a reader accepts, as words: "24 × n (2-D), each n at most 256"; a number: "one
    number"."""
    if not accepts:
        return "one number"
    sizes = " × ".join("n" if size is None else str(size) for size in accepts)
    free = any(size is None for size in accepts)
    return f"{sizes} ({len(accepts)}-D)" + (f", each n at most {largest:,}" if free else "")


def check_declared(
    declared: Declared, accepts: Sequence[int | None], largest: int, where: str, reader: str
) -> None:
    """Refuse, before anything is read or allocated, an array that is not what ``reader``
    accepts: numbers (float or int) of ``accepts``' shape (an int: exactly that size; None:
    any size up to ``largest``), whose data the file holds. ``where`` names the file and the
    flag ("--weights model.npz"); ``reader`` what accepts it ("attn learn induction"). The
    error names the array, its declared shape and what is accepted."""
    name, dtype = declared.name, declared.dtype
    if dtype.hasobject:
        raise UserError(
            f"{where}: {name} holds Python objects (a pickled array), which attn never loads."
        )
    if dtype.kind not in "fiu":
        raise UserError(f"{where}: {name} holds {dtype} values, not numbers (float or int).")
    fits = len(declared.shape) == len(accepts) and all(
        size <= largest if want is None else size == want
        for want, size in zip(accepts, declared.shape, strict=True)
    )
    if not fits:
        raise UserError(
            f"{where}: {name} is {_shape_said(declared.shape)}, as its header declares; "
            f"{reader} accepts {accepted_text(accepts, largest)}."
        )
    check_held(declared, where)


def check_held(declared: Declared, where: str) -> None:
    """Refuse an array whose declared data is more than the file holds for it."""
    if declared.nbytes > declared.held:
        raise UserError(
            f"{where}: {declared.name} is declared {_shape_said(declared.shape)} of "
            f"{declared.dtype} ({format_bytes(declared.nbytes)}) but the file holds "
            f"{format_bytes(max(declared.held, 0))} of data for it; the file is truncated or "
            "its header is wrong."
        )


def check_all_declared(
    declared: Mapping[str, Declared],
    accepts: Mapping[str, Sequence[int | None]],
    largest: int,
    where: str,
    reader: str,
) -> None:
    """:func:`check_declared` for each array ``accepts`` names that the file declares (a
    missing one is the caller's to report, in its own words)."""
    for name, shape in accepts.items():
        if name in declared:
            check_declared(declared[name], shape, largest, where, reader)


def _shape_said(shape: tuple[int, ...]) -> str:
    """A declared shape as an error says it: its sizes (a scalar: "a single number"), and
    its entries when it has several dimensions and they are many."""
    if not shape:
        return "a single number"
    text = shape_text(shape)
    entries = math.prod(shape)
    if len(shape) == 1 or entries < 10**6:
        return text
    exponent = math.log10(entries)  # any int, however large (no float() of it)
    whole = math.floor(exponent)
    return f"{text} ({10 ** (exponent - whole):.1f}e+{whole:02d} entries)"
