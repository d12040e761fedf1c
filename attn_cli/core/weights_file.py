"""Arrays in a .npz file, written and read without pickle: the weights attn learn saves
(``--save``) and reads back (``--weights``), and the decoder step attn bahdanau reads from such a
file. Every problem with a file is one line (a UserError) naming the flag and the file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attn_cli.core.errors import UserError

if TYPE_CHECKING:
    import numpy as np


def save_arrays(path: Path, arrays: Mapping[str, np.ndarray], flag: str = "--save") -> None:
    """Write ``arrays`` to ``path`` as .npz (numpy's zip of .npy files: no pickle), whole or not
    at all (written beside it, then renamed into place)."""
    import io

    import numpy as np

    from attn_cli.core.outputs import write_bytes

    if path.suffix.lower() != ".npz":
        raise UserError(f"{flag} {path}: the file name must end in .npz; e.g. {flag} model.npz.")
    buffer = io.BytesIO()
    named: dict[str, Any] = {name: np.asarray(value) for name, value in arrays.items()}
    np.savez(buffer, allow_pickle=False, **named)
    write_bytes(path, buffer.getvalue(), flag)


def check_save_path(path: Path, flag: str = "--save") -> None:
    """Refuse, before training, a file the weights could not be written to."""
    from attn_cli.core.outputs import check_writable

    if path.suffix.lower() != ".npz":
        raise UserError(f"{flag} {path}: the file name must end in .npz; e.g. {flag} model.npz.")
    check_writable(path, flag)


def load_arrays(
    path: Path, shapes: Mapping[str, Sequence[int | None]], flag: str
) -> dict[str, np.ndarray]:
    """The arrays ``shapes`` names from the .npz file ``path``, read without pickle, each float64
    and of the given number of dimensions (None in a shape: any size; equal sizes across arrays
    are the caller's to check). A missing file, another kind of file, a missing array, an array
    of the wrong kind or shape: one line, a UserError."""
    import zipfile

    import numpy as np

    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"{flag} {path}: no such file.") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise UserError(
            f"{flag} {path}: not a weights file written by attn learn --save (.npz): {error}."
        ) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise UserError(f"{flag} {path}: a single .npy array, not the .npz that --save writes.")
    with archive:
        missing = [name for name in shapes if name not in archive.files]
        if missing:
            raise UserError(
                f"{flag} {path}: it has no {', '.join(missing)}; write it with "
                "attn learn translate --save FILE."
            )
        found: dict[str, np.ndarray] = {}
        for name, shape in shapes.items():
            try:
                value = archive[name]
            except ValueError as error:  # an object array (it would need pickle)
                raise UserError(f"{flag} {path}: {name} cannot be read safely: {error}.") from None
            if value.dtype.kind not in "fiu":
                raise UserError(f"{flag} {path}: {name} holds {value.dtype}, not numbers.")
            fits = value.ndim == len(shape) and all(
                want is None or want == got for want, got in zip(shape, value.shape, strict=True)
            )
            if not fits:
                wanted = " × ".join("n" if want is None else str(want) for want in shape) or "one"
                raise UserError(
                    f"{flag} {path}: {name} is {' × '.join(map(str, value.shape)) or 'a number'},"
                    f" expected {wanted} ({len(shape)}-D)."
                )
            array = np.asarray(value, dtype=np.float64)
            if not np.all(np.isfinite(array)):
                raise UserError(f"{flag} {path}: {name} has entries that are not finite.")
            found[name] = array
        return found


def load_words(path: Path, name: str, flag: str) -> tuple[str, ...] | None:
    """The words stored as array ``name`` of the .npz file ``path`` (a 1-D array of text, read
    without pickle), or None where it has none or they are not plain words."""
    import numpy as np

    with np.load(path, allow_pickle=False) as archive:
        if name not in archive.files:
            return None
        try:
            value = archive[name]
        except ValueError:  # an object array: never read (it would need pickle)
            return None
    if value.ndim != 1 or value.dtype.kind != "U":
        return None
    words = tuple(str(word) for word in value)
    if not all(word and word.isprintable() and "," not in word for word in words):
        return None
    return words
