"""JSON: one document per run, full precision, non-finite numbers as strings.

Every document the tool writes (a lesson, ``attn bench``, ``attn check``, ``attn kinds``, a
lesson's ``--list-examples``) starts with the same envelope: ``schema_version``, ``attn_version``
and ``kind``. Every array is an object ``{"shape": [...], "data": [...]}``, or ``{"shape": [...],
"summary": {...}}`` when it has more than MAX_ENTRIES entries and --full was not given. The contract is docs/json.md; the JSON Schema
is attn_cli/schema/output.schema.json (a copy in docs/).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextvars import ContextVar
from importlib import resources
from typing import Any, Literal

import numpy as np

from attn_cli.core.model import Note, Step, Summary, Walkthrough, summary
from attn_cli.render.options import RenderOptions
from attn_cli.version import __version__

# major.minor: the major changes when a field is removed, renamed or changes meaning or type;
# the minor when something is added (a field, a document kind, a step kind). See docs/json.md.
SCHEMA_VERSION = "2.8"

# A matrix with more entries than this becomes {"shape", "summary"} unless --full.
MAX_ENTRIES = 10_000

DocumentKind = Literal["lesson", "bench", "check", "kinds", "kernel", "examples", "comparison"]
ARRAY_KINDS = frozenset({"matrix", "weights", "heatmap"})


def envelope(kind: DocumentKind) -> dict[str, Any]:
    """The keys every document starts with."""
    return {"schema_version": SCHEMA_VERSION, "attn_version": __version__, "kind": kind}


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, allow_nan=False)


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every document validates against."""
    text = resources.files("attn_cli").joinpath("schema/output.schema.json").read_text("utf-8")
    return json.loads(text)


def to_json(walkthrough: Walkthrough, options: RenderOptions) -> str:
    return dumps(to_document(walkthrough, options))


def comparison_json(
    first: Walkthrough, second: Walkthrough, flags: str, options: RenderOptions
) -> str:
    """``--compare FLAGS --format json``: both runs, each the whole lesson document."""
    runs = [to_document(first, options), to_document(second, options)]
    return dumps({**envelope("comparison"), "flags": flags, "runs": runs})


# Numbers per piece of a streamed array: a few hundred kB of text at a time.
STREAM_NUMBERS = 1 << 15


def json_chunks(
    walkthrough: Walkthrough, options: RenderOptions, ensure_ascii: bool = False
) -> Iterator[str]:
    """The text of ``to_json`` in pieces, for writing as they come: the document's frame is
    built with each large array (--full) standing as a marker, and each array's numbers are
    written a block of rows at a time. Memory then stays the arrays the walkthrough already
    holds plus one block's text, whatever the size of the document; a reader that goes away
    (``| head -c 10``) stops the writing at the next piece."""
    streamed: list[np.ndarray] = []
    document = to_document(walkthrough, options, streamed)
    text = json.dumps(document, ensure_ascii=ensure_ascii, allow_nan=False)
    for index, array in enumerate(streamed):
        head, text = text.split(json.dumps(_marker(index)), 1)
        yield head
        yield from _array_chunks(array, ensure_ascii)
    yield text


def _marker(index: int) -> str:
    """A string no document holds (it begins with a NUL), standing for streamed array ``index``."""
    return f"\0attn-array-{index}\0"


def _array_chunks(array: np.ndarray, ensure_ascii: bool) -> Iterator[str]:
    """``{"shape": [...], "data": [...]}`` as ``array_value`` gives it, a block at a time."""
    yield f'{{"shape": {json.dumps(list(array.shape))}, "data": '
    yield from _nested_chunks(array, ensure_ascii)
    yield "}"


def _nested_chunks(array: np.ndarray, ensure_ascii: bool) -> Iterator[str]:
    """The nested lists of ``array.tolist()`` as json.dumps writes them, in pieces."""
    if array.ndim <= 1 or array.size <= STREAM_NUMBERS:
        yield json.dumps(plain(array.tolist()), ensure_ascii=ensure_ascii, allow_nan=False)
        return
    per_row = max(1, array[0].size)
    if per_row > STREAM_NUMBERS:  # rows too large to write whole: each row in pieces
        yield "["
        for index, row in enumerate(array):
            yield ", " if index else ""
            yield from _nested_chunks(row, ensure_ascii)
        yield "]"
        return
    block = max(1, STREAM_NUMBERS // per_row)
    yield "["
    for start in range(0, array.shape[0], block):
        rows = plain(array[start : start + block].tolist())
        text = json.dumps(rows, ensure_ascii=ensure_ascii, allow_nan=False)
        yield (", " if start else "") + text[1:-1]
    yield "]"


def to_document(
    walkthrough: Walkthrough, options: RenderOptions, streamed: list[np.ndarray] | None = None
) -> dict[str, Any]:
    """The JSON document as plain Python data (what ``Walkthrough.to_dict`` returns).

    With ``streamed`` (a list), each array of more than MAX_ENTRIES entries under --full is
    appended to it and stands in the document as a marker string (see json_chunks)."""
    token = _STREAMED.set(streamed)
    try:
        return _document(walkthrough, options)
    finally:
        _STREAMED.reset(token)


# The list json_chunks collects large arrays into while to_document runs (None: inline them).
_STREAMED: ContextVar[list[np.ndarray] | None] = ContextVar("streamed", default=None)


def _document(walkthrough: Walkthrough, options: RenderOptions) -> dict[str, Any]:
    full = options.full
    settings = walkthrough.meta.get("options", {})
    document = {
        **envelope("lesson"),
        "lesson": walkthrough.lesson,
        "example": walkthrough.example,
        "backend": walkthrough.backend,
        "device": walkthrough.device,
        "dtype": walkthrough.dtype,
        "options": plain(settings, full),
        **_item_document(walkthrough, options),
    }
    if walkthrough.items:  # a batch: the item shown above, then every item (schema 1.1)
        document["batch"] = {"size": len(walkthrough.items), "item": walkthrough.item_index}
        document["items"] = [_item_document(item, options) for item in walkthrough.items]
    return document


def _item_document(walkthrough: Walkthrough, options: RenderOptions) -> dict[str, Any]:
    """What differs between the items of a batch: inputs, steps, output, notes, meta."""
    full = options.full
    meta = {key: value for key, value in walkthrough.meta.items() if key != "options"}
    return {
        "inputs": {item.name: array_value(item.value, full) for item in walkthrough.inputs},
        "steps": [_step(step, options) for step in walkthrough.steps],
        "output": _output(walkthrough.output, full),
        "notes": [note_object(note, options.precision) for note in walkthrough.notes],
        "meta": plain(meta, full),
    }


def note_object(note: Note, precision: int) -> dict[str, Any]:
    """A note as ``{"key", "text", "values"}``: its key in the lesson file, its words as the
    terminal shows them at ``precision``, and the values it reads at full precision (schema 2.0)."""
    return {"key": note.key, "text": note.text(precision), "values": plain(dict(note.values))}


def _step(step: Step, options: RenderOptions) -> dict[str, Any]:
    full = options.full
    item: dict[str, Any] = {
        "key": step.key,
        "title": step.title_at(options.precision),
        "explanation": step.explanation_at(options.precision),
        "kind": step.kind,
        "value": _step_value(step, full),
    }
    if step.row_labels:
        item["row_labels"] = list(step.row_labels)
    if step.col_labels:
        item["col_labels"] = list(step.col_labels)
    if step.row_sums is not None:
        item["row_sums"] = _number_or_array(step.row_sums, full)
    if step.parts:
        item["parts"] = {
            part.label: _number_or_array(part.value, full, part.summary) for part in step.parts
        }
    if step.notes:
        item["notes"] = [note_object(note, options.precision) for note in step.notes]
    if step.seconds is not None:
        item["seconds"] = step.seconds
    return item


def _step_value(step: Step, full: bool) -> Any:
    if step.kind in ARRAY_KINDS:
        return array_value(step.value, full, step.summary)
    if step.kind == "histogram":
        value = step.value
        document = {
            "edges": array_value(value["edges"], full),
            "series": {
                str(name): array_value(counts, full) for name, counts in value["series"].items()
            },
        }
        if value.get("edges_of"):  # series counted on bins of their own
            document["edges_of"] = {
                str(name): array_value(edges, full) for name, edges in value["edges_of"].items()
            }
        return document
    return plain(step.value, full)  # scalar, records, text


def _output(value: Any, full: bool) -> Any:
    """An array, or records (a list of dicts) for a lesson whose result is a table."""
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return plain(value, full)
    return array_value(value, full)


def _number_or_array(value: Any, full: bool, recorded: Summary | None = None) -> Any:
    """A 0-d value stays a number; anything with a shape becomes an array object."""
    if np.ndim(value) == 0:
        return plain(np.asarray(value).item())
    return array_value(value, full, recorded)


def array_value(value: Any, full: bool = False, recorded: Summary | None = None) -> dict[str, Any]:
    """{"shape", "data"} (nested lists, non-finite as strings), or {"shape", "summary"} if large:
    the statistics ``recorded`` with the array, else computed from it."""
    array = np.asarray(value)
    shape = list(array.shape)
    if array.size > MAX_ENTRIES and not full:
        return {"shape": shape, "summary": plain((recorded or summary(array)).as_dict())}
    streamed = _STREAMED.get()
    if streamed is not None and array.size > MAX_ENTRIES:
        streamed.append(array)
        return _marker(len(streamed) - 1)  # type: ignore[return-value]
    return {"shape": shape, "data": plain(array.tolist())}


def plain(value: Any, full: bool = False) -> Any:
    """JSON-ready data: arrays become array objects, numpy scalars numbers, inf/nan strings."""
    if isinstance(value, np.ndarray):
        return array_value(value, full)
    if isinstance(value, dict):
        return {str(key): plain(item, full) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, full) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value
