"""JSON: one document per run, full precision, non-finite numbers as strings."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from attn_cli.model import Step, Walkthrough, summary
from attn_cli.render import RenderOptions

# A matrix with more entries than this becomes {"shape", "summary"} unless --full.
MAX_ENTRIES = 10_000


def to_json(walkthrough: Walkthrough, options: RenderOptions) -> str:
    return json.dumps(to_document(walkthrough, options), ensure_ascii=False, allow_nan=False)


def to_document(walkthrough: Walkthrough, options: RenderOptions) -> dict[str, Any]:
    """The JSON document as plain Python data (what ``Walkthrough.to_dict`` returns)."""
    document = {
        "lesson": walkthrough.lesson,
        "example": walkthrough.example,
        "backend": walkthrough.backend,
        "device": walkthrough.device,
        "dtype": walkthrough.dtype,
        "inputs": {item.name: plain(item.value, options.full) for item in walkthrough.inputs},
        "steps": [_step(step, options.full) for step in walkthrough.steps],
        "output": plain(walkthrough.output, options.full),
    }
    if walkthrough.notes:
        document["notes"] = list(walkthrough.notes)
    document.update({key: plain(value, options.full) for key, value in walkthrough.meta.items()})
    return document


def _step(step: Step, full: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "key": step.key,
        "title": step.title,
        "explanation": step.explanation,
        "kind": step.kind,
        "value": plain(step.value, full),
    }
    if isinstance(step.value, np.ndarray):
        item["shape"] = list(step.value.shape)
    if step.row_labels:
        item["row_labels"] = list(step.row_labels)
    if step.col_labels:
        item["col_labels"] = list(step.col_labels)
    if step.row_sums is not None:
        item["row_sums"] = plain(step.row_sums, full)
    if step.parts:
        item["parts"] = {part.label: plain(part.value, full) for part in step.parts}
    if step.notes:
        item["notes"] = list(step.notes)
    if step.seconds is not None:
        item["seconds"] = step.seconds
    return item


def plain(value: Any, full: bool = False) -> Any:
    """Turn arrays and numpy scalars into JSON-ready data (large matrices summarised)."""
    if isinstance(value, np.ndarray):
        if value.size > MAX_ENTRIES and not full:
            return {"shape": list(value.shape), "summary": plain(summary(value))}
        return plain(value.tolist())
    if isinstance(value, dict):
        return {str(key): plain(item, full) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, full) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value
