"""Arrays in a .npz file, written and read without pickle: the weights attn learn saves
(``--save``) and reads back (``--weights``), and the decoder step attn bahdanau reads from such a
file. Every problem with a file is one line (a UserError) naming the flag and the file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attn_cli.core.errors import UserError, param
from attn_cli.core.paths import not_a_file

if TYPE_CHECKING:
    import numpy as np


def save_arrays(path: Path, arrays: Mapping[str, np.ndarray], keyword: str = "save") -> None:
    """Write ``arrays`` to ``path`` as .npz (numpy's zip of .npy files: no pickle), whole or not
    at all (written beside it, then renamed into place); messages name the parameter
    ``keyword``."""
    import io

    import numpy as np

    from attn_cli.core.outputs import write_bytes

    if path.suffix.lower() != ".npz":
        raise _not_npz(path, keyword)
    buffer = io.BytesIO()
    named: dict[str, Any] = {name: np.asarray(value) for name, value in arrays.items()}
    np.savez(buffer, allow_pickle=False, **named)
    write_bytes(path, buffer.getvalue(), param(keyword))


def check_save_path(path: Path, keyword: str = "save") -> None:
    """Refuse, before training, a file the weights could not be written to."""
    from attn_cli.core.outputs import check_writable

    if path.suffix.lower() != ".npz":
        raise _not_npz(path, keyword)
    check_writable(path, param(keyword))


def _not_npz(path: Path, keyword: str) -> UserError:
    return UserError(
        f"{param(keyword, path)}: the file name must end in .npz; e.g. "
        f"{param(keyword, 'model.npz')}."
    )


def load_arrays(
    path: Path,
    shapes: Mapping[str, Sequence[int | None]],
    keyword: str,
    *,
    largest: int,
    written_by: str,
) -> dict[str, np.ndarray]:
    """The arrays ``shapes`` names from the .npz file ``path``, read without pickle, each float64
    and of the given shape (an int: that size; None: any size up to ``largest``; equal sizes
    across arrays are the caller's to check). Each array is judged from its header before it is
    read (attn_cli.core.array_headers): a bomb of zeros or a header that lies is refused unread.
    A missing file, another kind of file, a missing array, an array of the wrong kind or shape:
    one line, a UserError, which says to write the file with ``written_by`` ("attn learn
    translate --save FILE"); messages name the file as the parameter ``keyword`` gave it."""
    import zipfile

    import numpy as np

    from attn_cli.core.array_headers import check_all_declared, npz_declared

    where = param(keyword, path)
    kind = not_a_file(path)
    if kind is not None:
        raise UserError(f"{where}: that is {kind}, not a file; give the weights file itself.")
    if not path.is_file():
        raise UserError(f"{where}: no such file.")
    _check_npz(path, where, written_by)
    declared = npz_declared(path, list(shapes), where)
    missing = [name for name in shapes if name not in declared]
    if missing:
        raise UserError(f"{where}: it has no {', '.join(missing)}; write it with {written_by}.")
    check_all_declared(
        declared, shapes, largest, where, f"{param(keyword)} (a file of {written_by})"
    )
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise UserError(f"{where}: not a weights file written by {written_by}: {error}.") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise UserError(f"{where}: a single .npy array, not the .npz that --save writes.")
    with archive:
        found: dict[str, np.ndarray] = {}
        for name in shapes:
            try:
                value = archive[name]
            except (ValueError, OSError, zipfile.BadZipFile, EOFError) as error:
                raise UserError(f"{where}: {name} cannot be read safely: {error}.") from None
            array = np.asarray(value, dtype=np.float64)
            if not np.all(np.isfinite(array)):
                raise UserError(f"{where}: {name} has entries that are not finite.")
            found[name] = array
        return found


def _check_npz(path: Path, where: str, written_by: str) -> None:
    """Refuse a file that is not a zip (a .npz is one) before reading it as one."""
    import zipfile

    try:
        with path.open("rb") as file:
            start = file.read(6)
        is_zip = zipfile.is_zipfile(path)
    except OSError as error:
        raise UserError(f"{where}: cannot read it ({error.strerror or error}).") from None
    if start == b"\x93NUMPY":
        raise UserError(f"{where}: a single .npy array, not the .npz that --save writes.")
    if not is_zip:
        raise UserError(f"{where}: not a weights file written by {written_by} (a .npz).")


def load_wholes(
    path: Path, names: Sequence[str], keyword: str, *, written_by: str
) -> dict[str, int]:
    """The whole numbers (a seed, a count of steps) stored as single numbers ``names`` in the
    .npz file ``path``, read exactly (never through a float64, which rounds past 2**53); each
    at least 0 and at most the largest whole number attn takes, else one line."""
    import numpy as np

    from attn_cli.core.whole import check_whole_size

    where = param(keyword, path)
    arrays = load_arrays(
        path, {name: () for name in names}, keyword, largest=1, written_by=written_by
    )
    found = {}
    with np.load(path, allow_pickle=False) as archive:
        for name in names:
            value = archive[name]
            if value.dtype.kind == "f" and float(arrays[name]) != int(arrays[name]):
                raise UserError(f"{where}: {name} is {float(arrays[name])}, not a whole number.")
            number = int(value) if value.dtype.kind in "iu" else int(arrays[name])
            if number < 0:
                raise UserError(
                    f"{where}: {name} is {number}, where {written_by} saves a whole number of 0 "
                    "or more; write the file again with it."
                )
            check_whole_size(number, name, label=f"{where}: {name}")
            found[name] = number
    return found


def load_words(path: Path, name: str, keyword: str, *, largest: int) -> tuple[str, ...] | None:
    """The words stored as array ``name`` of the .npz file ``path`` (a 1-D array of text, read
    without pickle), or None where it has none, or they are not plain words, or its header
    declares more than ``largest`` of them or more than the file holds (then it is not read)."""
    import numpy as np

    from attn_cli.core.array_headers import npz_declared

    declared = npz_declared(path, [name], param(keyword, path)).get(name)
    if declared is None or declared.dtype.kind != "U" or len(declared.shape) != 1:
        return None
    if declared.shape[0] > largest or declared.nbytes > declared.held:
        return None
    with np.load(path, allow_pickle=False) as archive:
        try:
            value = archive[name]
        except ValueError:  # an object array: never read (it would need pickle)
            return None
    words = tuple(str(word) for word in value)
    if not all(word and word.isprintable() and "," not in word for word in words):
        return None
    return words
