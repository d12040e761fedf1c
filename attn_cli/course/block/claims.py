"""The block lesson's claims: each note's condition, read from the finished walkthrough (a note
whose condition fails is withheld, attn_cli.course.recorder.keep_true_claims)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attn_cli.core.model import Walkthrough
from attn_cli.course.block.parameters import drawn_value
from attn_cli.course.block.settings import Settings


def _tolerance(walkthrough: Walkthrough) -> float:
    return 1e-9 if walkthrough.dtype == "float64" else 1e-3


def rows_normalised(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Every row of x̂ has mean 0 and variance σ²/(σ² + ε) (σ² > 0 in every row), to rounding;
    the note's largest |mean| and variance range are those of the rows shown."""
    try:
        key = str(values["norm"])
        stats = np.asarray(walkthrough.step(f"{key}.stats"), dtype=np.float64)
        hat = np.asarray(walkthrough.step(f"{key}.normalised"), dtype=np.float64)
        eps = float(walkthrough.meta["eps"])
    except (KeyError, ValueError, TypeError):
        return False
    with np.errstate(all="ignore"):
        if not (np.all(np.isfinite(stats)) and np.all(np.isfinite(hat))):
            return False
        variance = stats[:, 1]
        means = np.mean(hat, axis=-1)
        spread = np.mean((hat - means[:, None]) ** 2, axis=-1)
        expected = variance / (variance + eps)
    tol = _tolerance(walkthrough)
    return bool(
        np.all(variance > 0)
        and np.max(np.abs(means)) <= tol
        and np.max(np.abs(spread - expected)) <= tol
        and np.all(spread < 1)
        and math.isclose(values.get("low", math.nan), float(np.min(spread)), abs_tol=tol)
        and math.isclose(values.get("high", math.nan), float(np.max(spread)), abs_tol=tol)
    )


def variance_beyond(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The named rows, and only those, show σ² = ∞ beside a finite √(σ² + ε)."""
    try:
        step = walkthrough.find(f"{values['norm']}.stats")
        stats = np.asarray(step.value, dtype=np.float64)
        labels = step.row_labels or ()
    except (KeyError, ValueError, TypeError):
        return False
    if stats.ndim != 2 or stats.shape[1] != 3 or len(labels) != stats.shape[0]:
        return False
    beyond = {
        labels[i]
        for i in range(stats.shape[0])
        if np.isinf(stats[i, 1]) and np.isfinite(stats[i, 2])
    }
    return bool(beyond) and beyond == set(str(values.get("rows", "")).split(", "))


def rows_flat(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The named rows, and only those, have every entry of the LayerNorm's input equal."""
    try:
        step = walkthrough.find(str(values["input_step"]))
        source = np.asarray(step.value, dtype=np.float64)
        labels = step.row_labels or ()
    except (KeyError, ValueError, TypeError):
        return False
    if source.ndim != 2 or len(labels) != source.shape[0]:
        return False
    with np.errstate(all="ignore"):
        flat = {labels[i] for i in range(source.shape[0]) if np.ptp(source[i]) == 0}
    named = set(str(values.get("rows", "")).split(", "))
    return bool(flat) and flat == named and values.get("count") == len(flat)


def causal_zero(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The head's weights are exactly 0 above the diagonal."""
    try:
        weights = np.asarray(walkthrough.step(str(values["step"])))
    except (KeyError, ValueError, TypeError):
        return False
    return bool(weights.ndim == 2 and np.all(np.triu(weights, 1) == 0))


def relu_zeros(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The hidden layer holds exactly the note's count of zeros, of its total."""
    try:
        hidden = np.asarray(walkthrough.step(str(values["step"])), dtype=np.float64)
    except (KeyError, ValueError, TypeError):
        return False
    return bool(
        not np.any(np.isnan(hidden))
        and values.get("zeros") == int(np.count_nonzero(hidden == 0))
        and values.get("total") == hidden.size
    )


def unit_patterns(hidden: np.ndarray, names: Sequence[str]) -> dict[str, str]:
    """The hidden units (columns) on (above 0) for every token, off (0) for every token, and
    the rest, each as "N (u1, u2)" or "none"."""
    on = hidden > 0
    groups = {
        "always": np.all(on, axis=0),
        "never": np.all(~on, axis=0),
        "mixed": np.any(on, axis=0) & np.any(~on, axis=0),
    }

    def said(chosen: np.ndarray) -> str:
        picked = [names[int(j)] for j in np.flatnonzero(chosen)]
        return f"{len(picked)} ({', '.join(picked)})" if picked else "none"

    return {group: said(chosen) for group, chosen in groups.items()}


def relu_units(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The note's three groups of hidden units are those of the hidden layer it names."""
    try:
        step = walkthrough.find(str(values["step"]))
        hidden = np.asarray(step.value, dtype=np.float64)
    except (KeyError, ValueError, TypeError):
        return False
    names = step.col_labels or ()
    if hidden.ndim != 2 or len(names) != hidden.shape[1] or np.any(np.isnan(hidden)):
        return False
    said = unit_patterns(hidden, names)
    return values.get("units") == hidden.shape[1] and all(
        values.get(group) == text for group, text in said.items()
    )


def unnormalised(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The output rows' variances run from the note's low to its high, and some row's exceeds 1
    (more than a LayerNorm with γ = 1, β = 0 lets out)."""
    output = np.asarray(walkthrough.output, dtype=np.float64)
    if output.ndim != 2 or not np.all(np.isfinite(output)):
        return False
    with np.errstate(all="ignore"):
        variances = np.var(output, axis=-1)
    if not np.all(np.isfinite(variances)):
        return False
    tol = _tolerance(walkthrough) * max(1.0, float(np.max(variances)))
    return bool(
        np.max(variances) > 1
        and math.isclose(values.get("low", math.nan), float(np.min(variances)), abs_tol=tol)
        and math.isclose(values.get("high", math.nan), float(np.max(variances)), abs_tol=tol)
    )


def empty_rows(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The named rows, and only those, have every entry of the mask at −∞, and the head's
    weights are NaN in each of them."""
    try:
        mask_step = walkthrough.find(str(values["mask_step"]))
        mask = np.asarray(mask_step.value, dtype=np.float64)
        weights = np.asarray(walkthrough.step(str(values["step"])), dtype=np.float64)
        labels = mask_step.row_labels or ()
    except (KeyError, ValueError, TypeError):
        return False
    if mask.ndim != 2 or weights.shape != mask.shape or len(labels) != mask.shape[0]:
        return False
    empty = [i for i in range(mask.shape[0]) if np.all(np.isneginf(mask[i]))]
    named = str(values.get("rows", "")).split(", ")
    return (
        bool(empty)
        and [labels[i] for i in empty] == named
        and values.get("count") == len(empty)
        and all(np.all(np.isnan(weights[i])) for i in empty)
    )


def _settings(meta: Mapping[str, Any]) -> Settings:
    """What the draws depend on, as the walkthrough's meta records it."""
    return Settings(
        heads=int(meta["heads"]),
        d_ff=int(meta["d_ff"]),
        eps=float(meta["eps"]),
        pre_norm=bool(meta["pre_norm"]),
        decoder=bool(meta["decoder"]),
        posenc=True,
        gamma_beta=bool(meta["gamma_beta"]),
        layers=int(meta["layers"]),
        kv_heads=int(meta["kv_heads"]) if "kv_heads" in meta else None,
    )


def drawn_as_said(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The parameters listed as drawn are what --seed draws (recomputed), the note's seed is
    the run's, and its counts (where it gives them) are those of the parameters listed."""
    meta = walkthrough.meta
    try:
        sources: Mapping[str, str] = meta["sources"]
        seed = int(meta["seed"])
        d_model = int(meta["d_model"])
        s = _settings(meta)
    except (KeyError, ValueError, TypeError):
        return False
    if values.get("seed") != seed:
        return False
    shown = {item.name: item.value for item in walkthrough.inputs}
    for name, source in sources.items():
        if source != "drawn":
            continue
        if name not in shown or not np.array_equal(
            shown[name], drawn_value(name, seed, s, d_model)
        ):
            return False
    counts = {kind: sum(1 for v in sources.values() if v == kind) for kind in ("drawn", "initial")}
    counts["given"] = len(sources) - counts["drawn"] - counts["initial"]
    if "given" not in values:  # the note for a run that was given nothing
        return counts["given"] == 0
    return all(values.get(kind) == count for kind, count in counts.items())


_SUBLAYER_STEP = re.compile(r"(?:layer\d+\.)?(?:self|cross)\.([QKV])")
_KV_INPUT = re.compile(r"(?:layer\d+\.)?W_[KV](?:_cross)?")


def kv_saving(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """Grouped-query heads' saving, from the shapes on screen: every attention sublayer's K and
    V are g·d_k wide and its Q d_model = h·d_k wide, every W_K and W_V d_model × g·d_k, and the
    note's counts and ratio are those widths'."""
    try:
        g, h, dk = int(values["g"]), int(values["h"]), int(values["dk"])
        d_model, kv_width = int(values["d_model"]), int(values["kv_width"])
        ratio = int(values["ratio"])
        widths: dict[str, set[int]] = {"Q": set(), "K": set(), "V": set()}
        for step in walkthrough.steps:
            found = _SUBLAYER_STEP.fullmatch(step.key)
            if found:
                widths[found.group(1)].add(int(np.shape(step.value)[-1]))
        weights = [
            tuple(np.shape(item.value))
            for item in walkthrough.inputs
            if _KV_INPUT.fullmatch(item.name)
        ]
    except (KeyError, ValueError, TypeError, IndexError):
        return False
    arithmetic = (
        g * dk == kv_width
        and h * dk == d_model
        and 0 < g < h
        and ratio * g == h
        and values.get("per_token") == 2 * kv_width
        and values.get("full_per_token") == 2 * d_model
        and values.get("params") == 2 * d_model * kv_width
        and values.get("full_params") == 2 * d_model * d_model
    )
    return bool(
        arithmetic
        and widths["Q"] == {d_model}
        and widths["K"] == widths["V"] == {kv_width}
        and weights
        and all(shape == (d_model, kv_width) for shape in weights)
    )
