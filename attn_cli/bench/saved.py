"""A sweep saved with ``attn bench --format json``, read back (``attn bench --from FILE``).

The rows, the config and the machine are read; the fits and the readings in the file are
not: they are made again by today's rules (attn_cli.bench.fit), so an old sweep is read as a
new one would be. The file is read as the project reads files: a size limit, the nesting of
its brackets checked before it is parsed, numbers beyond float64 refused, nothing evaluated,
every text in it written printable (a control character as an escape, never sent to the
terminal), every problem one line naming the file. torch is never imported.
"""

from __future__ import annotations

import json
import math
import re
import types
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from attn_cli.bench.config import BenchConfig, BenchResult, Row
from attn_cli.bench.machine import Load
from attn_cli.core.errors import UserError
from attn_cli.core.matrices import nesting_depth
from attn_cli.core.usertext import printable
from attn_cli.core.variants import DEVICES

# A sweep of every implementation at a dozen sizes is some 50 KB; a file of more is not one.
MAX_SWEEP_BYTES = 16 * 2**20
# The deepest a bench document nests (the document, "fit", an implementation, a list of n).
MAX_SWEEP_NESTING = 6
# The contract versions this attn reads: major 2 (a later minor only adds keys, ignored here).
READ_MAJOR = 2
_VERSION = re.compile(r"^(\d+)\.(\d+)$")
# The keys of a row and of a config that a sweep must have (the others have defaults).
ROW_REQUIRED = ("impl", "n", "d", "heads", "batch", "dtype", "causal")
CONFIG_REQUIRED = ("device", "sizes", "impls", "d", "heads", "batch", "dtype", "causal")
POSITIVE = ("n", "d", "heads", "batch", "block")
# What a measurement gives: never below 0 (a negative one is a damaged file, not a reading).
MEASURED = ("ms_median", "ms_spread", "tflops", "peak_fraction", "peak_mem_bytes", "max_abs_err")


@dataclass(frozen=True)
class SavedSweep:
    """A sweep read from a file, and what wrote it."""

    result: BenchResult
    schema_version: str
    attn_version: str

    def describe(self, path: Path) -> str:
        """Where the sweep comes from, for the rich header."""
        return (
            f"saved sweep {path} (attn {self.attn_version}, schema {self.schema_version}), "
            "fitted and read again here"
        )


def load_sweep(path: Path) -> SavedSweep:
    """The sweep saved in ``path``; a UserError (one line) for anything that is not one."""
    where = f"--from {path}"
    document = _read_json(path, where)
    if not isinstance(document, dict) or document.get("kind") != "bench":
        kind = document.get("kind") if isinstance(document, dict) else None
        found = f"its kind is {kind!r}" if isinstance(kind, str) else "it has no kind 'bench'"
        raise UserError(
            f"{where}: not a bench sweep ({found}); give a file written by attn bench "
            "--format json."
        )
    version = document.get("schema_version")
    match = _VERSION.match(version) if isinstance(version, str) else None
    if match is None:
        raise UserError(f"{where}: its schema_version {version!r} is not MAJOR.MINOR.")
    if int(match[1]) != READ_MAJOR:
        raise UserError(
            f"{where}: schema {version}, and this attn reads {READ_MAJOR}.x; read it with the "
            "attn that wrote it."
        )
    config = _config(_mapping(document, "config", where), where)
    rows = document.get("rows")
    if not isinstance(rows, list):
        raise UserError(f"{where}: 'rows' must be a list of rows.")
    machine = _mapping(document, "machine", where)
    info = {key: value for key, value in machine.items() if key not in ("threads", "load")}
    interrupted = document.get("interrupted", False)
    if not isinstance(interrupted, bool):
        raise UserError(f"{where}: 'interrupted' must be true or false.")
    assert isinstance(version, str)  # matched above
    result = BenchResult(
        config=config,
        device_info=info,
        rows=[_row(row, index, where) for index, row in enumerate(rows)],
        interrupted=interrupted,
        load=_load(machine, config.device, where),
    )
    attn_version = document.get("attn_version")
    return SavedSweep(result, version, attn_version if isinstance(attn_version, str) else "?")


def _read_json(path: Path, where: str) -> Any:
    if not path.exists():
        raise UserError(f"{where}: no such file; check the path.")
    if not path.is_file():
        raise UserError(f"{where}: not a file; give the .json that attn bench --format json wrote.")
    try:
        size = path.stat().st_size
        if size > MAX_SWEEP_BYTES:
            raise UserError(
                f"{where}: {size / 2**20:.1f} MiB is more than a saved sweep holds "
                f"({MAX_SWEEP_BYTES // 2**20} MiB at most); is it the right file?"
            )
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not part of it
    except OSError as error:
        raise UserError(f"{where}: cannot read it ({error.strerror}).") from None
    except UnicodeDecodeError:
        raise UserError(f"{where}: not JSON (not even UTF-8 text).") from None
    depth = nesting_depth(text)
    if depth > MAX_SWEEP_NESTING:
        raise UserError(
            f"{where}: nested {depth} levels deep, and a bench sweep nests {MAX_SWEEP_NESTING} "
            "at most; give a file written by attn bench --format json."
        )
    try:
        document = json.loads(
            text, parse_constant=_refuse_constant, parse_int=_whole, parse_float=_finite
        )
    except json.JSONDecodeError as error:
        raise UserError(
            f"{where}: not JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
            "give a file written by attn bench --format json."
        ) from None
    except (ValueError, RecursionError) as error:  # _refuse_constant, _whole, _finite
        raise UserError(f"{where}: not a bench sweep ({error}).") from None
    return _printable(document)


def _printable(value: Any) -> Any:
    """The document with every text in it (keys too) written printable: a sweep measured
    elsewhere is shown here (its implementations, notes and machine in the table, the CSV, the
    JSON and the plot), and a control character in it (ESC that clears the screen or retitles
    the window) must not reach the terminal; it is written as an escape, \\x1b."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, list):
        return [_printable(item) for item in value]
    if isinstance(value, dict):
        return {printable(key): _printable(item) for key, item in value.items()}
    return value


def _refuse_constant(name: str) -> float:
    """NaN and Infinity are not JSON, and attn bench never writes them."""
    raise ValueError(f"{name} is not a JSON number")


def _whole(digits: str) -> int:
    """A whole number, refused beyond float64 (an integer of 4,300 digits would stall int())."""
    if len(digits.lstrip("-")) > 308:
        raise ValueError(f"a number of {len(digits)} digits is beyond float64")
    return int(digits)


def _finite(digits: str) -> float:
    """A number, refused when float64 cannot hold it (1e400 would read as inf)."""
    number = float(digits)
    if math.isinf(number):
        raise ValueError(f"{digits[:20]} is beyond float64")
    return number


def _mapping(document: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = document.get(key)
    if not isinstance(value, dict):
        raise UserError(f"{where}: '{key}' must be an object; is it a file of attn bench?")
    return value


def _config(data: dict[str, Any], where: str) -> BenchConfig:
    values = _fields(BenchConfig, data, CONFIG_REQUIRED, f"{where}: config")
    if values["device"] not in DEVICES:
        raise UserError(f"{where}: config device {values['device']!r} is not one of {DEVICES}.")
    if not values["sizes"]:
        raise UserError(f"{where}: config sizes is empty.")
    return BenchConfig(**values)


def _row(data: Any, index: int, where: str) -> Row:
    if not isinstance(data, dict):
        raise UserError(f"{where}: row {index + 1} must be an object.")
    return Row(**_fields(Row, data, ROW_REQUIRED, f"{where}: row {index + 1}"))


def _load(machine: dict[str, Any], device: str, where: str) -> Load | None:
    """The load around the sweep, as the machine object has it (None when it has none)."""
    load, threads = machine.get("load"), machine.get("threads", {})
    if load is None:
        return None
    if not isinstance(load, dict) or not isinstance(threads, dict):
        raise UserError(f"{where}: machine 'load' and 'threads' must be objects.")
    cores = _value(load.get("cores"), int, f"{where}: machine load cores")
    before = _value(load.get("before"), float | None, f"{where}: machine load before")
    peak = _value(load.get("during_max"), float | None, f"{where}: machine load during_max")
    counts = {
        str(name): _value(count, int, f"{where}: machine threads {name}")
        for name, count in threads.items()
    }
    if cores < 1 or any(count < 1 for count in counts.values()):
        raise UserError(f"{where}: machine cores and threads must be positive.")
    return Load(cores, counts, before, [] if peak is None else [peak], device=device)


def _fields(
    cls: Any, data: dict[str, Any], required: tuple[str, ...], where: str
) -> dict[str, Any]:
    """The values of dataclass ``cls`` that ``data`` gives, each checked against the field's
    type; keys it does not know are ignored (a later minor version may add some)."""
    missing = [name for name in required if name not in data]
    if missing:
        raise UserError(f"{where} has no {', '.join(missing)}; is it a file of attn bench?")
    hints = get_type_hints(cls)
    values = {}
    for field in fields(cls):
        if field.name not in data:
            if field.default is MISSING and field.default_factory is MISSING:
                raise UserError(f"{where} has no {field.name}.")
            continue
        value = _value(data[field.name], hints[field.name], f"{where} {field.name}")
        if field.name in POSITIVE and value < 1:
            raise UserError(f"{where} {field.name}: {value} is not a positive whole number.")
        if field.name in MEASURED and value is not None and value < 0:
            raise UserError(
                f"{where} {field.name}: {value} is below 0, which no measurement gives; is the "
                "file damaged? Measure again with attn bench --format json."
            )
        values[field.name] = value
    return values


def _value(value: Any, hint: Any, where: str) -> Any:
    """``value`` as type ``hint`` (int, float, str, bool, None, unions, Literal, tuple[X, ...],
    list[X]), or a UserError naming what it should be."""
    found = _as_type(value, hint)
    if found is _WRONG:
        raise UserError(f"{where}: {_shown(value)} is not {_describe(hint)}.")
    return found


_WRONG = object()
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _as_type(value: Any, hint: Any) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in get_args(hint):
            found = _as_type(value, option)
            if found is not _WRONG:
                return found
        return _WRONG
    if origin is Literal:
        return value if value in get_args(hint) else _WRONG
    if origin in (tuple, list):
        if not isinstance(value, list):
            return _WRONG
        items = [_as_type(item, get_args(hint)[0]) for item in value]
        return _WRONG if any(item is _WRONG for item in items) else origin(items)
    if hint is type(None):
        return None if value is None else _WRONG
    if hint is bool:
        return value if isinstance(value, bool) else _WRONG
    if hint is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _WRONG
    if hint is float:
        if isinstance(value, str) and value in _NON_FINITE:  # as the JSON contract writes them
            return _NON_FINITE[value]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if number else _WRONG
    if hint is str:
        return value if isinstance(value, str) else _WRONG
    raise AssertionError(f"no reader for {hint!r}")


def _describe(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(option) for option in get_args(hint))
    if origin is Literal:
        return "one of " + ", ".join(repr(option) for option in get_args(hint))
    if origin in (tuple, list):
        return f"a list of {_plural(get_args(hint)[0])}"
    names = {int: "a whole number", float: "a number", str: "text", bool: "true or false"}
    return names.get(hint, "null")


def _plural(hint: Any) -> str:
    """What a list holds, in the plural: "whole numbers", "numbers", "texts"."""
    names = {int: "whole numbers", float: "numbers", str: "texts", bool: "trues or falses"}
    return names.get(hint) or f"items that are each {_describe(hint)}"


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"
