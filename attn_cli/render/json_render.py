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
from importlib import resources
from typing import Any, Literal

import numpy as np

from attn_cli.model import Note, Step, Walkthrough, summary
from attn_cli.render import RenderOptions
from attn_cli.version import __version__

# major.minor: the major changes when a field is removed, renamed or changes meaning or type;
# the minor when something is added (a field, a document kind, a step kind). See docs/json.md.
SCHEMA_VERSION = "2.2"

# A matrix with more entries than this becomes {"shape", "summary"} unless --full.
MAX_ENTRIES = 10_000

DocumentKind = Literal["lesson", "bench", "check", "kinds", "kernel", "examples"]
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


def to_document(walkthrough: Walkthrough, options: RenderOptions) -> dict[str, Any]:
    """The JSON document as plain Python data (what ``Walkthrough.to_dict`` returns)."""
    walkthrough = walkthrough.at_precision(options.precision)
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
        "title": step.title,
        "explanation": step.explanation,
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
        item["parts"] = {part.label: _number_or_array(part.value, full) for part in step.parts}
    if step.notes:
        item["notes"] = [note_object(note, options.precision) for note in step.notes]
    if step.seconds is not None:
        item["seconds"] = step.seconds
    return item


def _step_value(step: Step, full: bool) -> Any:
    if step.kind in ARRAY_KINDS:
        return array_value(step.value, full)
    if step.kind == "histogram":
        value = step.value
        return {
            "edges": array_value(value["edges"], full),
            "series": {
                str(name): array_value(counts, full) for name, counts in value["series"].items()
            },
        }
    return plain(step.value, full)  # scalar, records, text


def _output(value: Any, full: bool) -> Any:
    """An array, or records (a list of dicts) for a lesson whose result is a table."""
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return plain(value, full)
    return array_value(value, full)


def _number_or_array(value: Any, full: bool) -> Any:
    """A 0-d value stays a number; anything with a shape becomes an array object."""
    if np.ndim(value) == 0:
        return plain(np.asarray(value).item())
    return array_value(value, full)


def array_value(value: Any, full: bool = False) -> dict[str, Any]:
    """{"shape", "data"} (nested lists, non-finite as strings), or {"shape", "summary"} if large."""
    array = np.asarray(value)
    shape = list(array.shape)
    if array.size > MAX_ENTRIES and not full:
        return {"shape": shape, "summary": plain(summary(array))}
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
