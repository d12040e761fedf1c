"""The input grammar shared by every lesson: matrix and vector options, parsed to float64.

A matrix option accepts
  * text: rows separated by ``;`` (or new lines), entries by ``,`` or spaces: ``"1,0;0,1"``;
  * JSON: ``"[[1,0],[0,1]]"``;
  * ``@path`` to a ``.npy`` (read with ``allow_pickle=False``), ``.csv``, ``.txt`` or ``.json`` file.
A vector option accepts the same, as long as it is one row or one column: ``"1,3"``.

A batch (the leading dimension of the books' ``(B, n, d)`` tensors) is a matrix input nested one
level deeper: JSON ``[[[1,0],[0,1]], [[0,1],[1,0]]]``, a ``.npy`` of rank 3, a 3-D array, or
text with ``|`` between the items: ``"1,0;0,1 | 0,1;1,0"``. A batch of vectors is B rows of
several entries (``"1,2;3,4"``, a ``(B, d)`` array) or the same nesting as a batch of matrices
with one row each. :func:`as_matrix_or_batch` and :func:`as_vector_or_batch` accept these.

Every problem is a :class:`UserError` that names the option, the problem and the fix.
"""

from __future__ import annotations

import math
import numbers
import re
from pathlib import Path

import numpy as np

from attn_cli.core.backend import available_host_bytes, format_bytes
from attn_cli.core.errors import UserError
from attn_cli.core.numbers import shape_text
from attn_cli.core.paths import not_a_file
from attn_cli.core.rounding import plain_number
from attn_cli.core.usertext import printable
from attn_cli.core.whole import MAX_WHOLE_DIGITS

# Entries are separated by one comma (spaces around it allowed) or by spaces.
_ENTRY_SPLIT = re.compile(r"\s*,\s*|\s+")
_ROW_SPLIT = re.compile(r"[;\n]")
# Text: the items of a batch are separated by "|" ("1,0;0,1 | 0,1;1,0").
_ITEM_SEPARATOR = "|"
_FILE_SUFFIXES = (".npy", ".csv", ".txt", ".json")
# Rows of numbers are two levels of brackets; one more is allowed for a batch of matrices.
MAX_NESTING = 3
_JSON_STRUCTURE = re.compile(r'[\[\]{}"\\]')


def as_matrix(value: object, name: str) -> np.ndarray:
    """A matrix input from the command line's text or from Python (an array, a tensor, lists)."""
    return _matrix_shaped(_as_array(value, name), name)


def as_matrix_or_batch(value: object, name: str, minus_infinity: bool = False) -> np.ndarray:
    """A matrix (2-D) or a batch of matrices (3-D: batch × rows × columns), as float64;
    ``minus_infinity``: −∞ entries allowed (an additive mask)."""
    array = _as_array(value, name)
    if array.ndim == 3:
        return _checked(array, name, minus_infinity)
    if array.ndim > 3:
        raise UserError(
            f"{name} has {array.ndim} dimensions; give a matrix, or a batch of matrices (3 "
            "dimensions: batch × rows × columns)."
        )
    return _matrix_shaped(array, name, minus_infinity)


def as_vector_or_batch(value: object, name: str, minus_infinity: bool = False) -> np.ndarray:
    """A vector (1-D) or a batch of vectors (2-D: batch × entries), as float64.

    One row or one column is a vector; B rows of several entries are a batch of B vectors, and
    so is a batch of one-row (or one-column) matrices.
    """
    array = _as_array(value, name)
    if array.ndim == 3 and (array.shape[1] == 1 or array.shape[2] == 1):
        # a batch of one-row (or one-column) matrices: a batch, even of one-entry vectors
        return _checked(array.reshape(array.shape[0], -1), name, minus_infinity)
    if array.ndim == 2 and 1 not in array.shape:
        return _checked(array, name, minus_infinity)
    if array.ndim > 2:
        raise UserError(
            f'{name} has shape {shape_text(array.shape)}; give a vector such as "1,3", or a '
            'batch of vectors, one per row: "1,3;2,4".'
        )
    return _vector_shaped(array, name, minus_infinity)


def _as_array(value: object, name: str) -> np.ndarray:
    """Text (parsed) or a Python value, as float64 of whatever rank it has."""
    return _parse_any(value, name) if isinstance(value, str) else _from_object(value, name)


def _matrix_shaped(array: np.ndarray, name: str, minus_infinity: bool = False) -> np.ndarray:
    if array.ndim == 1:
        array = array[np.newaxis, :]
    if array.ndim != 2:
        raise UserError(f"{name} has {array.ndim} dimensions; give a matrix (rows of numbers).")
    return _checked(array, name, minus_infinity)


def _vector_shaped(array: np.ndarray, name: str, minus_infinity: bool = False) -> np.ndarray:
    if array.ndim == 2 and 1 in array.shape:
        array = array.reshape(-1)
    if array.ndim != 1:
        raise UserError(
            f'{name} has shape {shape_text(array.shape)}; give a vector, one row such as "1,3".'
        )
    return _checked(array, name, minus_infinity)


def whole_number(text: str, name: str) -> int:
    """``text`` ("12", "+3", "-1") as an int; a UserError when it has more digits than any size
    takes (MAX_WHOLE_DIGITS); ValueError, as int() raises, when it is not a whole number."""
    digits = len(text.strip().lstrip("+-"))
    if digits > MAX_WHOLE_DIGITS and text.strip().lstrip("+-").isdigit():
        raise UserError(
            f"{name}: a whole number of {digits:,} digits is beyond any count or position attn "
            f"takes (at most {MAX_WHOLE_DIGITS} digits); give a smaller number."
        )
    return int(plain_number(text))


def parse_int_list(text: str, name: str) -> list[int]:
    """Parse ``"1,4,16"`` into integers (used for sizes and permutations)."""
    if not text.strip():
        raise UserError(f'{name} is empty; give whole numbers separated by commas, e.g. "1,4,16".')
    parts = _entries(text, name, "")
    values = []
    for part in parts:
        try:
            values.append(whole_number(part, name))
        except ValueError:
            raise UserError(
                f"{name}: {shortened(part)} is not a whole number; give whole numbers such as "
                '"1,4,16".'
            ) from None
    return values


def parse_names(text: str, name: str) -> tuple[str, ...]:
    """Parse ``"the,cat,slept"`` into row names (commas separate; spaces around them go)."""
    names = tuple(printable(part.strip()) for part in text.split(","))
    if not any(names):
        raise UserError(f'{name} is empty; give names separated by commas, e.g. "the,cat,slept".')
    if not all(names):
        raise UserError(f'{name} has an empty name; write names like "the,cat,slept".')
    return names


def _parse_any(text: str, name: str) -> np.ndarray:
    stripped = text.strip()
    if not stripped:
        raise UserError(f'{name} is empty; give at least one row, e.g. {name} "1,0;0,1".')
    if stripped.startswith("@"):
        return _read_file(Path(stripped[1:]), name)
    if stripped.startswith("["):
        return _from_json_text(stripped, name, where="")
    return _from_rows_text(stripped, name, where="")


def _from_rows_text(text: str, name: str, where: str) -> np.ndarray:
    if _ITEM_SEPARATOR in text:
        parts = text.split(_ITEM_SEPARATOR)
        for index, part in enumerate(parts):
            if not part.strip():
                raise UserError(
                    f"{name}{where}: batch item {index} is empty (nothing between two '|', or a "
                    "'|' at an end); write a batch like \"1,0;0,1 | 0,1;1,0\"."
                )
        return _stacked(
            [
                _one_rows_text(part, name, f"{where} (batch item {index})")
                for index, part in enumerate(parts)
            ],
            name,
            where,
        )
    return _one_rows_text(text, name, where)


def split_rows(text: str, name: str, where: str = "") -> list[list[str]]:
    """The rows of one matrix written as text, each a list of its entries' texts: rows by ``;``
    or new lines (blank ones skipped), entries by ``,`` or spaces; an empty entry is refused.

    The one grammar of matrix text: inputs (``--q "1,0;0,1"``) and the values a lesson file
    says a slide printed (read by ``attn check``) and a learner's answers both use it.
    """
    lines = [line.strip() for line in _ROW_SPLIT.split(text)]
    return [_entries(line, name, where) for line in lines if line]


def _one_rows_text(text: str, name: str, where: str) -> np.ndarray:
    rows_text = split_rows(text, name, where)
    if not rows_text:
        raise UserError(f'{name}{where} is empty; give at least one row, e.g. "1,0;0,1".')
    rows: list[list[float]] = []
    for row_index, entries in enumerate(rows_text, start=1):
        row = []
        for column_index, entry in enumerate(entries, start=1):
            plain = plain_number(entry)  # "−1" (U+2212) is -1, as in printed values and answers
            try:
                number = float(plain)
            except ValueError:
                raise UserError(
                    f"{name}{where}: {shortened(entry)} (row {row_index}, entry {column_index}) "
                    'is not a number; write rows like "1,0;0,1".'
                ) from None
            if math.isinf(number) and "inf" not in plain.lower():
                raise _too_large(name, where, entry)
            row.append(number)
        rows.append(row)
    return _rectangular(rows, name, where)


def _entries(text: str, name: str, where: str) -> list[str]:
    """Split one row into its entries; an empty entry ("1,,2" or "1,2,") is a typo, not a skip."""
    entries = _ENTRY_SPLIT.split(text.strip())
    if "" in entries:
        raise UserError(
            f"{name}{where}: {text.strip()!r} has an empty entry (two commas in a row, or a comma "
            'at an end); write entries like "1,0".'
        )
    return entries


def _from_json_text(text: str, name: str, where: str) -> np.ndarray:
    import json  # only JSON input needs it: keeps start-up light

    depth = nesting_depth(text)
    if depth > MAX_NESTING:
        raise UserError(
            f"{name}{where} is nested {depth} levels deep; a matrix is a list of rows, two levels "
            "of brackets: [[1,0],[0,1]] (three for a batch of matrices)."
        )
    try:
        # Numbers beyond float64 are refused as they are read: an integer of over 4,300 digits
        # would make int() raise, and 1e400 would read as inf.
        data = json.loads(
            text,
            parse_int=lambda digits: _json_number(digits, name, where, whole=True),
            parse_float=lambda digits: _json_number(digits, name, where, whole=False),
        )
    except RecursionError:  # not reached after the depth check; kept as a guard
        raise UserError(
            f"{name}{where} is nested too deeply; write it like [[1,0],[0,1]]."
        ) from None
    except json.JSONDecodeError as error:
        raise UserError(
            f"{name}{where} is not valid JSON ({error.msg} at character {error.pos + 1}); "
            "write it like [[1,0],[0,1]]."
        ) from None
    if isinstance(data, list) and data and any(_is_matrix(item) for item in data):
        return _batch_of(data, name, where)
    if isinstance(data, list) and data and all(isinstance(row, list) for row in data):
        return _rectangular(data, name, where)
    if isinstance(data, list):
        return _rectangular([data], name, where)[0] if data else _rectangular([], name, where)
    raise UserError(f"{name}{where} must be a JSON list of rows, like [[1,0],[0,1]].")


def _json_number(text: str, name: str, where: str, *, whole: bool) -> float | int:
    """One number of JSON input, refused when float64 cannot hold it."""
    if whole and len(text.lstrip("-")) <= 308:  # below 1e308: a float64 holds it
        return int(text)
    number = float(text)  # float() reads any number of digits (int() stops at 4,300)
    if math.isinf(number):
        raise _too_large(name, where, text)
    return number


def _too_large(name: str, where: str, text: str) -> UserError:
    return UserError(
        f"{name}{where}: {shortened(text)} is too large for a float64 (over 1.8e308); use "
        "smaller numbers."
    )


def shortened(value: object, limit: int = 24) -> str:
    """A value from the user as a message quotes it (its repr): at most ``limit`` characters
    of it, so that a 5,000-digit number is not echoed whole."""
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else repr(value[: limit - 1] + "…")
    text = repr(value)
    return text if len(text) <= limit + 2 else text[: limit + 1] + "…"


def _is_matrix(value: object) -> bool:
    """A list of rows (lists or tuples): one item of a batch."""
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(isinstance(row, list | tuple) for row in value)
    )


def _batch_of(items: list, name: str, where: str) -> np.ndarray:
    """A list of matrices (each a list of rows) as one 3-D array: a batch."""
    for index, item in enumerate(items):
        if not _is_matrix(item):
            raise UserError(
                f"{name}{where}: batch item {index} is not a list of rows; a batch is a list of "
                "matrices: [[[1,0],[0,1]], [[0,1],[1,0]]]."
            )
    return _stacked(
        [
            _rectangular([list(row) for row in item], name, f"{where} (batch item {index})")
            for index, item in enumerate(items)
        ],
        name,
        where,
    )


def _stacked(matrices: list[np.ndarray], name: str, where: str) -> np.ndarray:
    """The items of a batch as one array; every item must have the first one's shape."""
    first = matrices[0].shape
    for index, matrix in enumerate(matrices):
        if matrix.shape != first:
            raise UserError(
                f"{name}{where}: batch item {index} is {shape_text(matrix.shape)} but item 0 is "
                f"{shape_text(first)}; every item of a batch needs the same shape."
            )
    return np.stack(matrices)


def nesting_depth(text: str) -> int:
    """How deeply brackets nest in JSON text (outside strings), in one pass over the brackets."""
    depth = deepest = 0
    in_string = escaped = False
    for match in _JSON_STRUCTURE.finditer(text):
        char = match.group()
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _rectangular(rows: list, name: str, where: str) -> np.ndarray:
    if not rows or all(len(row) == 0 for row in rows):
        raise UserError(f'{name}{where} is empty; give at least one row, e.g. "1,0;0,1".')
    width = len(rows[0])
    for row_index, row in enumerate(rows, start=1):
        if len(row) != width:
            raise UserError(
                f"{name}{where}: row {row_index} has {len(row)} entries but row 1 has {width}; "
                "every row needs the same number of entries."
            )
        for column_index, entry in enumerate(row, start=1):
            if isinstance(entry, bool | np.bool_) or not isinstance(entry, numbers.Real):
                raise UserError(
                    f"{name}{where}: {entry!r} (row {row_index}, entry {column_index}) is not a "
                    "number."
                )
    try:
        return np.asarray(rows, dtype=np.float64)
    except OverflowError:
        raise UserError(
            f"{name}{where} has a number too large for a float64 (over 1.8e308); use smaller "
            "numbers."
        ) from None


def _from_object(value: object, name: str) -> np.ndarray:
    """A Python value as float64: a numpy array, nested lists or tuples of numbers, or a tensor.

    Every accepted dtype widens to float64 exactly (float16, bfloat16, float32, and integers up
    to 2**53), so the values computed on are the values given; the backend's dtype is applied
    later, explicitly.
    """
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor (torch not imported)
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":  # type: ignore[attr-defined]
            value = value.float()  # type: ignore[attr-defined]  # numpy has no bfloat16
    if isinstance(value, list | tuple):
        rows = list(value)
        if rows and any(_is_matrix(item) for item in rows):
            return _batch_of(rows, name, "")
        if rows and all(isinstance(row, list | tuple) for row in rows):
            return _rectangular([list(row) for row in rows], name, "")
        return _rectangular([rows], name, "")[0]
    if isinstance(value, np.ndarray | np.generic) or hasattr(value, "__array__"):
        array = np.asarray(value)
    else:
        raise UserError(
            f"{name}: a {type(value).__name__} is not a matrix; give a numpy array, a list of "
            'rows such as [[1, 0], [0, 1]], or text such as "1,0;0,1".'
        )
    if array.dtype.kind not in "iuf":
        raise UserError(f"{name} holds {array.dtype} values; give real numbers (float or int).")
    if array.size == 0:
        raise UserError(f"{name} is empty; give at least one row, e.g. [[1, 0], [0, 1]].")
    return array.astype(np.float64)


def _read_file(path: Path, name: str) -> np.ndarray:
    where = f" (file {str(path)!r})"
    suffix = path.suffix.lower()
    if suffix not in _FILE_SUFFIXES:
        raise UserError(f"{name}: cannot read {str(path)!r}; use a .npy, .csv, .txt or .json file.")
    kind = not_a_file(path)
    if kind is not None:
        raise UserError(f"{name}: {str(path)!r} is {kind}, not a file; check the path after '@'.")
    if not path.is_file():
        raise UserError(f"{name}: file {str(path)!r} not found; check the path after '@'.")
    try:
        if suffix == ".npy":
            return _read_npy(path, name, where)
        # utf-8-sig: a byte-order mark (Excel and Notepad write one) is not part of the data
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise UserError(f"{name}: cannot read {str(path)!r} ({error.strerror}).") from None
    except UnicodeDecodeError:
        raise UserError(f"{name}: {str(path)!r} is not a UTF-8 text file.") from None
    if suffix == ".json":
        return _from_json_text(text, name, where)
    return _from_rows_text(text, name, where)


def _read_npy(path: Path, name: str, where: str) -> np.ndarray:
    _check_npy_header(path, name, where)
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as error:
        if "pickle" in str(error).lower():
            raise UserError(
                f"{name}{where} holds Python objects (a pickled array), which attn never loads; "
                "save a numeric array with np.save."
            ) from None
        raise UserError(f"{name}{where} is not a valid .npy file ({error}).") from None
    if not isinstance(array, np.ndarray):
        raise UserError(f"{name}{where} is an .npz archive; save one array with np.save.")
    if array.dtype.kind not in "iuf":
        raise UserError(
            f"{name}{where} holds {array.dtype} values; save a real numeric array (float or int)."
        )
    if array.size == 0:
        raise UserError(f"{name}{where} is empty; save an array with at least one entry.")
    return array.astype(np.float64)


def _check_npy_header(path: Path, name: str, where: str) -> None:
    """Read only the .npy header (attn_cli.core.array_headers, as every file of arrays is
    judged) and refuse, before any allocation, an array that the file cannot hold (a header
    that lies about its shape) or that memory cannot."""
    from attn_cli.core.array_headers import check_held, npy_declared

    declared = npy_declared(path, f"{name}{where}")
    dtype, shape = declared.dtype, declared.shape
    if dtype.hasobject:
        raise UserError(
            f"{name}{where} holds Python objects (a pickled array), which attn never loads; "
            "save a numeric array with np.save."
        )
    if dtype.kind not in "iuf":
        raise UserError(
            f"{name}{where} holds {dtype} values; save a real numeric array (float or int)."
        )
    check_held(declared, f"{name}{where}")
    needed = declared.entries * (dtype.itemsize + 8)  # the array as read, and its float64 copy
    available = available_host_bytes()
    if available is not None and needed > available:
        raise UserError(
            f"{name}{where} holds a {shape_text(shape)} array: reading it needs about "
            f"{format_bytes(needed)} but only {format_bytes(available)} is free; use a smaller "
            "array."
        )


def _checked(array: np.ndarray, name: str, minus_infinity: bool = False) -> np.ndarray:
    """Reject NaN and infinities (−∞ too unless ``minus_infinity``: an additive mask's "may not
    attend"), naming the first offending entry."""
    finite = np.isfinite(array)
    if minus_infinity:
        finite |= np.isneginf(array)
    if not finite.all():
        index = tuple(int(i) for i in np.argwhere(~finite)[0])
        position = ", ".join(str(i + 1) for i in index)
        bad = array[index]
        allowed = (
            "finite numbers, or -inf where a key is blocked"
            if minus_infinity
            else ("finite numbers")
        )
        raise UserError(f"{name} has {bad} at position ({position}); inputs must be {allowed}.")
    return array
