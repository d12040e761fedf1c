"""attn window --layers L: how far a token's information travels through L layers of the window.

One layer lets query i read the keys its band allows; the next layer's query i reads those
positions' outputs, which already hold what they read. After l layers position i has heard from
every j joined to it by a chain of l allowed steps: the band composed with itself l times. For a
window of w keys before the token (no global tokens) that is every j ≥ i − l·w: the span grows
by w a layer, L·w after L (the Mistral 7B paper's "theoretical attention span": W = 4096 over 32
layers, about 131K tokens).

Two ways, checked against each other: the composition of the mask shown (boolean matrix powers,
on the walkthrough's n tokens), and the arithmetic max(0, i − l·w), which needs no n × n matrix
and so is shown at real positions (the span table).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Note, Walkthrough
from attn_cli.course.checks import counted, is_whole
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import local

# More layers than any model stacks; each is a row of the tables.
MAX_LAYERS = 256


def layers_of(options: Mapping[str, Any]) -> int | None:
    """--layers L: None when not given, else a whole number 1..MAX_LAYERS."""
    layers = options.get("layers")
    if layers is None:
        return None
    if not is_whole(layers) or not 1 <= layers <= MAX_LAYERS:
        raise UserError(
            f"{param('layers')} must be a whole number from 1 to {MAX_LAYERS} (the layers of "
            f"attention stacked), not {layers!r}."
        )
    return int(layers)


def layer_names(count: int) -> tuple[str, ...]:
    """Row labels: "1 layer", "2 layers", ..."""
    return tuple(counted(layer, "layer") for layer in range(1, count + 1))


def span_positions(layers: int, window: int) -> tuple[int, ...]:
    """Where the span table looks: one window in, the span L·w itself (the first position
    that hears from position 0 only after all L layers) and one window past it."""
    span = local.window_span(layers, window)
    chosen = {window, span, span + window}
    return tuple(sorted(position for position in chosen if position > 0))


def context_of(base: Mapping[str, Any], layers: int, window: int, shown: int) -> dict[str, Any]:
    """What the layer steps' texts read: L, the rows shown, the span L·w, and Mistral's count."""
    return {
        **base,
        "layers": layers,
        "layers_text": counted(layers, "layer"),
        "shown": shown,
        "span": local.window_span(layers, window),
        "mistral_w": window + 1,
        "paper_span": layers * (window + 1),
    }


def record_layers(
    record: StepRecorder,
    mask: np.ndarray,
    labels: tuple[tuple[str, ...], tuple[str, ...]],
    base: Mapping[str, Any],
    settings: tuple[int, int, bool, tuple[int, ...]],
) -> None:
    """The reach composed from the mask (earliest, and not causal latest, position heard per
    layer), the picture of the layers each pair needs, and (no global tokens) the span table."""
    layers, window, causal, chosen = settings
    queries, keys = labels
    reach = local.composed_reach(mask, layers)
    shown = reach.earliest.shape[0]
    context = context_of(base, layers, window, shown)
    rows = layer_names(shown)
    notes: list[Note] = []
    if not chosen:
        notes.append(record.note("reach_formula", w=window))
    if reach.settled is not None:
        notes.append(
            record.note(
                "settled",
                settled=reach.settled,
                settled_text=counted(reach.settled, "layer"),
                layers=layers,
            )
        )
    record.add(
        "reach",
        reach.earliest,
        grid=Grid(rows, queries, context),
        text="reach_causal" if causal else "reach",
        notes=tuple(notes),
    )
    if not causal:
        record.add("reach_latest", reach.latest, grid=Grid(rows, queries, context))
    record.add(
        "reach_picture", reach.layers_needed, kind="heatmap", grid=Grid(queries, keys, context)
    )
    if chosen:
        return
    positions = span_positions(layers, window)
    table = np.array(
        [
            [local.window_earliest(p, layer, window) for p in positions]
            for layer in range(1, layers + 1)
        ]
    )
    span_note = record.note(
        "span",
        layers=layers,
        w=window,
        span=context["span"],
        mistral_w=window + 1,
        paper_span=context["paper_span"],
    )
    record.add(
        "span",
        table,
        grid=Grid(layer_names(layers), tuple(f"position {p:,}" for p in positions), context),
        notes=(span_note,),
    )


# --- the claims -------------------------------------------------------------------------------


def _options(walkthrough: Walkthrough) -> tuple[int, bool] | None:
    options = walkthrough.meta.get("options", {})
    window = walkthrough.meta.get("window", options.get("window"))
    if not is_whole(window):
        return None
    return int(window), bool(walkthrough.meta.get("causal", options.get("causal")))


def _composed(walkthrough: Walkthrough) -> tuple[local.Reach, np.ndarray] | None:
    """The reach composed again from the band step on screen, and the reach step shown."""
    try:
        mask = np.asarray(walkthrough.step("band"), dtype=bool)
        shown = np.asarray(walkthrough.step("reach"))
    except (KeyError, ValueError, TypeError):
        return None
    if shown.ndim != 2:
        return None
    layers = int(walkthrough.meta.get("options", {}).get("layers") or shown.shape[0])
    return local.composed_reach(mask, layers), shown


def reach_follows_formula(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every shown row l of the reach is max(0, i − l·w) at every position i, and is what
    composing the band on screen l times gives."""
    found, settings = _composed(walkthrough), _options(walkthrough)
    if found is None or settings is None or settings[0] != values.get("w"):
        return False
    reach, shown = found
    window = settings[0]
    n = shown.shape[1]
    formula = np.array(
        [
            [local.window_earliest(i, layer, window) for i in range(n)]
            for layer in range(1, shown.shape[0] + 1)
        ]
    )
    return np.array_equal(reach.earliest, shown) and np.array_equal(formula, shown)


def settles(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Composing the band once more after the note's layer changes nothing, and it is the first
    such layer, before the L asked: the rows shown stop there."""
    found = _composed(walkthrough)
    if found is None:
        return False
    reach, shown = found
    settled = values.get("settled")
    return (
        reach.settled is not None
        and reach.settled == settled == shown.shape[0]
        and settled < int(values.get("layers", 0))
    )


def span_holds(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The span table's last row is L layers, and its earliest positions are p − L·w (at
    least 0), with the note's span L·w and L·(w + 1)."""
    settings = _options(walkthrough)
    try:
        table = np.asarray(walkthrough.step("span"))
        step = next(s for s in walkthrough.steps if s.key == "span")
        columns = step.col_labels or ()
        positions = [int(label.removeprefix("position ").replace(",", "")) for label in columns]
    except (KeyError, ValueError, TypeError, StopIteration):
        return False
    if settings is None or table.ndim != 2:
        return False
    window = settings[0]
    layers = int(values.get("layers", 0))
    expected = np.array(
        [[max(0, p - layer * window) for p in positions] for layer in range(1, layers + 1)]
    )
    return (
        values.get("w") == window
        and values.get("span") == layers * window
        and values.get("paper_span") == layers * (window + 1)
        and expected.shape == table.shape
        and np.array_equal(expected, table)
    )


STEPS = ("reach", "reach_causal", "reach_latest", "reach_picture", "span")
STEP_NAMES = ("layers", "layers_text", "shown", "span", "mistral_w", "paper_span")
NOTES = {
    "reach_formula": ("w",),
    "settled": ("settled", "settled_text", "layers"),
    "span": ("layers", "w", "span", "mistral_w", "paper_span"),
}
CLAIMS = {"reach_formula": reach_follows_formula, "settled": settles, "span": span_holds}
