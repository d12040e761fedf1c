"""Files that lie, built in a few KB: .npy headers declaring any shape, .npz archives whose
members declare any shape (or hold gigabytes of zeros in a megabyte or two), .safetensors
tables. Used by the hostile-input tests (tests/test_hostile_files.py, the property test in
tests/test_hostile_limits.py)."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np


def npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    """A version 1.0 .npy header (magic, length, the dict) declaring ``shape``, padded to 64."""
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    total = 10 + len(text) + 1
    text += " " * (-total % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin-1")


def npy_with_header(
    path: Path, shape: tuple[int, ...], descr: str = "<f8", data: bytes = b""
) -> Path:
    """A .npy file whose header declares ``shape``, followed by ``data`` (a header can lie)."""
    path.write_bytes(npy_header(shape, descr) + data)
    return path


def _zip(path: Path, members: list[tuple[str, bytes, int, int, int]]) -> Path:
    """A zip written by hand: each member (name, stored bytes, method 0 or 8, CRC-32, the
    uncompressed size its headers declare), then the central directory."""
    local, central = b"", b""
    for name, stored, method, crc, size in members:
        encoded = name.encode()
        offset = len(local)
        fields = (20, 0, method, 0, 0x21, crc, len(stored), size, len(encoded), 0)
        local += struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + encoded + stored
        central += (
            struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, *fields, 0, 0, 0, 0, offset) + encoded
        )
    end = struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(local), 0
    )
    path.write_bytes(local + central + end)
    return path


def npz_of(path: Path, arrays: dict[str, np.ndarray], lying: dict[str, tuple[int, ...]]) -> Path:
    """A .npz with ``arrays`` as they are and, for each name in ``lying``, a member that is a
    bare header declaring that shape (no data: a file that says more than it holds)."""
    members = []
    for name, array in arrays.items():
        import io

        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        data = buffer.getvalue()
        members.append((f"{name}.npy", data, 0, zlib.crc32(data), len(data)))
    for name, shape in lying.items():
        header = npy_header(shape)
        members.append((f"{name}.npy", header, 0, zlib.crc32(header), len(header)))
    return _zip(path, members)


def zero_bomb(path: Path, name: str, shape: tuple[int, ...], others: dict[str, np.ndarray]) -> Path:
    """A .npz whose member ``name`` is a true float64 array of ``shape``, all zeros, deflated:
    4,000,000 × 64 (1.9 GiB) is about 2 MB on disk. Built from one deflated MiB of zeros
    repeated (a full flush makes each copy stand alone); its CRC is computed (about a second for
    2 GB), so that the member is valid to the last byte: reading it is what must never happen."""
    header = npy_header(shape)
    size = int(np.prod(shape)) * 8
    chunk = 1 << 20
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = compressor.compress(header) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(bytes(chunk)) + compressor.flush(zlib.Z_FULL_FLUSH)
    whole, rest = divmod(size, chunk)
    tail = compressor.compress(bytes(rest)) + compressor.flush(zlib.Z_FINISH)
    crc = zlib.crc32(header)
    zeros = bytes(chunk)
    for _ in range(whole):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(bytes(rest), crc)
    data = stream + block * whole + tail
    members = [(f"{name}.npy", data, 8, crc, len(header) + size)]
    for other, array in others.items():
        import io

        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        raw = buffer.getvalue()
        members.append((f"{other}.npy", raw, 0, zlib.crc32(raw), len(raw)))
    return _zip(path, members)


def safetensors_of(path: Path, table: dict[str, object], data: bytes = b"") -> Path:
    """A .safetensors file: 8 bytes of header length, the JSON table, then ``data``."""
    header = json.dumps(table).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path
