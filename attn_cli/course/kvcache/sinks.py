"""attn kvcache --sinks S --window W: attention sinks (Xiao et al., StreamingLLM, 2023).

Softmax gives every row weights that sum to 1, so a query that matches nothing well must still
put its weight somewhere; trained models park it on the first tokens, which every later query
can see (the "sink"). A cache that keeps only the last W tokens evicts the sink, and the
weight it held is spread over the recent keys: the outputs move. StreamingLLM's cache keeps the
first S tokens as well as the last W, and the outputs stay near full attention's.

Three weight matrices, row t the query of token t over the keys its cache holds then: full
causal attention, the window's cache (keys t − W + 1 … t) and the sinks' cache (keys 1 … S and
t − W + 1 … t); a table per token of what each cache evicted and how far its output moved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core.errors import UserError, param, params
from attn_cli.core.model import Note, Walkthrough
from attn_cli.course.checks import counted, whole_at_least
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import attention as mech

# Two outputs closer than this are equally near full attention (rounding, not the cache).
_SAME = 1e-12


def settings(options: Mapping[str, Any]) -> tuple[int, int] | None:
    """(S, W) when --sinks is given (checked), else None."""
    sinks = options.get("sinks")
    if sinks is None:
        return None
    whole_at_least(sinks, param("sinks"), meaning="the first tokens the cache keeps")
    window = options.get("window")
    if window is None:
        raise UserError(
            f"{param('sinks', sinks)} needs {param('window', 'W')}: the cache keeps the first {sinks} and the last W "
            f"tokens (e.g. {params(('sinks', 1), ('window', 3))})."
        )
    whole_at_least(window, param("window"), meaning="the last tokens the cache keeps")
    return sinks, window


def kept(n: int, window: int, sinks: int = 0) -> np.ndarray:
    """(n, n) booleans: row t's cache holds key j (the last ``window`` keys up to t, and the
    first ``sinks``)."""
    i, j = np.indices((n, n))
    seen = j <= i
    return seen & ((j > i - window) | (j < sinks))


def record_sinks(
    record: StepRecorder,
    qkv: tuple[Any, Any, Any],
    labels: tuple[tuple[str, ...], tuple[str, ...]],
    base: dict[str, Any],
    sizes: tuple[int, int],
) -> None:
    """The three weight matrices and the evictions table, with their notes."""
    q, k, v = qkv
    queries, keys = labels
    sinks, window = sizes
    n, d_k = q.shape
    backend = record.run.backend
    context = {**base, "sinks": sinks, "window": window, "sinks_text": counted(sinks, "token")}
    grid = Grid(queries, keys, context)
    scaled = mech.scale(mech.scores(q, k), d_k)
    policies = {
        "causal_weights": kept(n, n),
        "window_weights": kept(n, window),
        "sink_weights": kept(n, window, sinks),
    }
    weights = {}
    for key, cache in policies.items():
        mask = backend.asarray(np.where(cache, 0.0, -np.inf))
        notes_of = (lambda shown: _sink_note(record, shown)) if key == "causal_weights" else None
        weights[key] = record.to_numpy(
            record.softmax(key, scaled + mask, grid=grid, notes_of=notes_of)
        )
    values = np.asarray(record.to_numpy(v), dtype=np.float64)
    outputs = {key: np.asarray(w, dtype=np.float64) @ values for key, w in weights.items()}
    full = np.asarray(weights["causal_weights"], dtype=np.float64)
    rows = []
    for t in range(n):
        row: dict[str, Any] = {"token": t + 1}
        for name, key in (("window", "window_weights"), ("sinks", "sink_weights")):
            evicted = policies["causal_weights"][t] & ~policies[key][t]
            row[f"{name}_keeps"] = int(np.sum(policies[key][t]))
            row[f"{name}_lost"] = float(np.sum(full[t][evicted]))
            row[f"{name}_moved"] = float(
                np.max(np.abs(outputs[key][t] - outputs["causal_weights"][t]))
            )
        rows.append(row)
    record.add(
        "evictions",
        rows,
        kind="records",
        grid=Grid(context=context),
        notes=(_eviction_note(record, rows, n, sinks, window),),
    )


def _eviction_note(
    record: StepRecorder, rows: list[dict[str, Any]], n: int, sinks: int, window: int
) -> Note:
    if n <= window:
        return record.note("nothing_evicted", n=n, window=window)
    window_moved = max(row["window_moved"] for row in rows)
    sinks_moved = max(row["sinks_moved"] for row in rows)
    values = {
        "sinks": counted(sinks, "token"),
        "window_moved": window_moved,
        "sinks_moved": sinks_moved,
        "lost": max(row["window_lost"] for row in rows),
    }
    key = "sinks_closer" if sinks_moved < window_moved - _SAME else "sinks_not_closer"
    return record.note(key, **values)


def _column_shares(weights: np.ndarray) -> np.ndarray:
    """Per key j, its average weight over the rows past the first that can see it (i ≥ j)."""
    n = weights.shape[0]
    shares = np.full(n, np.nan)
    for j in range(n):
        rows = weights[max(j, 1) :, j]
        if rows.size:
            shares[j] = float(np.mean(rows))
    return shares


def _sink_note(record: StepRecorder, shown: np.ndarray) -> tuple[Note, ...]:
    """first_is_sink: the first key takes the largest average weight (a claim), when it does."""
    shares = _column_shares(np.asarray(shown, dtype=np.float64))
    if shares.size < 2 or not np.all(np.isfinite(shares)) or np.argmax(shares) != 0:
        return ()
    rest = float(np.max(shares[1:]))
    if shares[0] <= rest:
        return ()
    return (record.note("first_is_sink", share=float(shares[0]), next=rest),)


# --- the claims -------------------------------------------------------------------------------


def first_is_sink(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """In full causal attention the first key's average weight (over the rows past the first) is
    the largest of every key's, the note's share, and the next largest is the note's next."""
    try:
        weights = np.asarray(walkthrough.step("causal_weights"), dtype=np.float64)
    except (KeyError, ValueError, TypeError):
        return False
    shares = _column_shares(weights)
    if shares.size < 2 or not np.all(np.isfinite(shares)):
        return False
    share, rest = values.get("share"), values.get("next")
    return (
        isinstance(share, float)
        and isinstance(rest, float)
        and math.isclose(float(shares[0]), share, rel_tol=1e-12, abs_tol=0.0)
        and math.isclose(float(np.max(shares[1:])), rest, rel_tol=1e-12, abs_tol=0.0)
        and share > rest
    )


def _moved(walkthrough: Walkthrough) -> tuple[float, float] | None:
    """(how far the window's outputs move from full attention's, the sinks' cache's), from the
    three weight matrices and V on screen."""
    try:
        given = {item.name: np.asarray(item.value, dtype=np.float64) for item in walkthrough.inputs}
        full, window, sinks = (
            np.asarray(walkthrough.step(key), dtype=np.float64)
            for key in ("causal_weights", "window_weights", "sink_weights")
        )
    except (KeyError, ValueError, TypeError):
        return None
    v = given.get("V")
    if v is None or full.shape[1] != v.shape[0]:
        return None
    out = full @ v
    return (
        float(np.max(np.abs(window @ v - out), initial=0.0)),
        float(np.max(np.abs(sinks @ v - out), initial=0.0)),
    )


def _lost(walkthrough: Walkthrough) -> float | None:
    """The most weight full attention gave, in one row, to keys the window evicted."""
    window = walkthrough.meta.get("options", {}).get("window")
    try:
        full = np.asarray(walkthrough.step("causal_weights"), dtype=np.float64)
    except (KeyError, ValueError, TypeError):
        return None
    if not isinstance(window, int) or full.ndim != 2:
        return None
    n = full.shape[0]
    evicted = kept(n, n) & ~kept(n, window)
    return float(np.max(np.sum(np.where(evicted, full, 0.0), axis=1), initial=0.0))


def _as_stated(
    found: tuple[float, float] | None, walkthrough: Walkthrough, values: Mapping[str, Any]
) -> bool:
    if found is None:
        return False
    window, sinks = found
    lost = _lost(walkthrough)
    said = values.get("window_moved"), values.get("sinks_moved"), values.get("lost")
    return lost is not None and all(
        isinstance(x, float) and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
        for x, y in zip(said, (window, sinks, lost), strict=True)
    )


def sinks_closer(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The sinks' cache's outputs are nearer full attention's than the window's, by the
    note's amounts."""
    found = _moved(walkthrough)
    return (
        _as_stated(found, walkthrough, values) and found is not None and found[1] < found[0] - _SAME
    )


def sinks_not_closer(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The sinks' cache's outputs are no nearer full attention's than the window's."""
    found = _moved(walkthrough)
    return (
        _as_stated(found, walkthrough, values)
        and found is not None
        and found[1] >= found[0] - _SAME
    )


STEP_NAMES = ("sinks", "window", "sinks_text")
STEPS = ("causal_weights", "window_weights", "sink_weights", "evictions")
NOTES = {
    "first_is_sink": ("share", "next"),
    "sinks_closer": ("sinks", "window_moved", "sinks_moved", "lost"),
    "sinks_not_closer": ("sinks", "window_moved", "sinks_moved", "lost"),
    "nothing_evicted": ("n", "window"),
}
CLAIMS = {
    "first_is_sink": first_is_sink,
    "sinks_closer": sinks_closer,
    "sinks_not_closer": sinks_not_closer,
}
GENERAL = ("nothing_evicted",)
