"""attn rope --rope-scaling: the options checked, the steps that show each pair's frequency
before and after the scaling, YaRN's temperature, and a score past the original context; and
the conditions of their notes (claims), read from the values shown."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attn_cli.core.backend import EPSILON, EXACT_INTEGERS
from attn_cli.core.errors import UserError, param
from attn_cli.core.model import Walkthrough
from attn_cli.course.checks import is_whole
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import rope_scaling, rotary

# Each scaling's own parameters, as the configs name them, beside the two every one takes.
OWN = {
    "linear": (),
    "ntk": (),
    "yarn": ("beta_fast", "beta_slow"),
    "llama3": ("low_freq_factor", "high_freq_factor"),
}
PARAMETERS = (
    "factor",
    "original_max_position_embeddings",
    "low_freq_factor",
    "high_freq_factor",
    "beta_fast",
    "beta_slow",
)
# Meta's apply_scaling (llama-models) defaults to Llama 3.1's factor and trained context.
LLAMA31_FACTOR, LLAMA31_CONTEXT = 8.0, 8192
OWNER = {"beta_fast": "yarn", "beta_slow": "yarn"} | {
    "low_freq_factor": "llama3",
    "high_freq_factor": "llama3",
}


def _number(options: Mapping[str, Any], name: str) -> float | None:
    value = options.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{param(name, repr(value))}: give a finite number.")
    return float(value)


def parse(options: Mapping[str, Any], rotary_dim: int) -> rope_scaling.Scaling | None:
    """The scaling the options ask for (None: plain RoPE); every problem one line naming its
    fix."""
    kind = options.get("rope_scaling")
    given = [name for name in PARAMETERS if options.get(name) is not None]
    if kind is None:
        if given:
            raise UserError(
                f"{param(given[0])} is a RoPE scaling parameter: give {param('rope_scaling')} "
                f"({', '.join(rope_scaling.SCALINGS)}) with it, or leave it out."
            )
        return None
    if kind not in rope_scaling.SCALINGS:
        raise UserError(
            f"{param('rope_scaling', repr(kind))}: choose one of {', '.join(rope_scaling.SCALINGS)}."
        )
    for name in given:
        owner = OWNER.get(name)
        if owner is not None and owner != kind:
            raise UserError(
                f"{param(name)} is a parameter of {param('rope_scaling', owner)}, not of "
                f"{kind}; leave it out."
            )
    factor = _number(options, "factor")
    if factor is None and kind == "llama3":
        factor = LLAMA31_FACTOR  # Meta's apply_scaling's defaults (Llama 3.1)
    if factor is None:
        raise UserError(
            f"{param('rope_scaling', kind)} needs {param('factor', 'S')}, the factor the context "
            "grows by (Llama 3.1: 8; Qwen2.5 with YaRN: 4)."
        )
    if factor <= 1:
        raise UserError(
            f"{param('factor', format(factor, 'g'))}: the factor must be greater than 1 (each "
            "frequency is divided by up to s, and 1 changes none; Llama 3.1's is 8, Qwen2.5's "
            "YaRN 4)."
        )
    context = options.get("original_max_position_embeddings")
    if context is None and kind == "llama3":
        context = LLAMA31_CONTEXT
    if context is None:
        raise UserError(
            f"{param('rope_scaling', kind)} needs {param('original_max_position_embeddings', 'L')}, "
            "the context the model was trained on (Llama 3.1: 8192; Qwen2.5: 32768)."
        )
    if not is_whole(context) or context < 1:
        raise UserError(
            f"{param('original_max_position_embeddings')} must be a whole number >= 1 (the "
            f"trained context L), not {context!r}."
        )
    if kind == "ntk" and rotary_dim < 4:
        raise UserError(
            f"{param('rope_scaling', 'ntk')} raises the base to base · s^(r/(r − 2)), which needs "
            f"r >= 4 turned dimensions; r is {rotary_dim}: give a wider {param('rotary_dim')} "
            "or d."
        )
    low = _number(options, "low_freq_factor")
    high = _number(options, "high_freq_factor")
    low = rope_scaling.LOW_FREQ_FACTOR if low is None else low
    high = rope_scaling.HIGH_FREQ_FACTOR if high is None else high
    if kind == "llama3":
        if low <= 0:
            raise UserError(
                f"{param('low_freq_factor', format(low, 'g'))}: give a number > 0 (Llama 3.1: 1)."
            )
        if low >= high:
            raise UserError(
                f"{param('low_freq_factor', format(low, 'g'))} is not below "
                f"{param('high_freq_factor', format(high, 'g'))}: pairs slower than L / low are "
                "interpolated and faster than L / high kept, so low must be less than high "
                "(Llama 3.1: 1 and 4)."
            )
    fast = _number(options, "beta_fast")
    slow = _number(options, "beta_slow")
    fast = rope_scaling.BETA_FAST if fast is None else fast
    slow = rope_scaling.BETA_SLOW if slow is None else slow
    if kind == "yarn":
        if slow <= 0:
            raise UserError(
                f"{param('beta_slow', format(slow, 'g'))}: give a number of turns > 0 (the "
                "paper's: 1)."
            )
        if fast <= slow:
            raise UserError(
                f"{param('beta_fast', format(fast, 'g'))} is not above "
                f"{param('beta_slow', format(slow, 'g'))}: pairs turning more than beta_fast "
                "times in L are kept and fewer than beta_slow interpolated (the paper's: 32 "
                "and 1)."
            )
    return rope_scaling.Scaling(kind, factor, context, low, high, fast, slow)


def far_position(scaling: rope_scaling.Scaling) -> int:
    """Where the query of the last step sits: twice the original context, past it."""
    return 2 * scaling.original_max_position_embeddings


def check_positions(scaling: rope_scaling.Scaling, dtype: str) -> None:
    far = far_position(scaling)
    if far > EXACT_INTEGERS[dtype]:
        raise UserError(
            f"{dtype} holds whole numbers exactly only up to {EXACT_INTEGERS[dtype]}, and the "
            f"query past the original context sits at position {far} (2L); use "
            f"{param('dtype', 'float32')} or float64, or a smaller "
            f"{param('original_max_position_embeddings')}."
        )


def context_of(scaling: rope_scaling.Scaling, rotary_dim: int, base: float) -> dict[str, Any]:
    """The values the scaling steps' texts read."""
    s, context = scaling.factor, scaling.original_max_position_embeddings
    low, high = rope_scaling.yarn_correction_range(
        scaling.beta_fast, scaling.beta_slow, rotary_dim, base, context
    )
    attention = rope_scaling.yarn_attention_factor(s) if scaling.rope_type == "yarn" else 1.0
    return {
        "kind": scaling.rope_type,
        "factor": s,
        "L": context,
        "far": far_position(scaling),
        "ntk_base": rope_scaling.ntk_base(base, s, rotary_dim) if rotary_dim > 2 else base,
        "low_freq_factor": scaling.low_freq_factor,
        "high_freq_factor": scaling.high_freq_factor,
        "high_wavelength": context / scaling.high_freq_factor,
        "low_wavelength": context / scaling.low_freq_factor,
        "beta_fast": scaling.beta_fast,
        "beta_slow": scaling.beta_slow,
        "ramp_low": low,
        "ramp_high": high,
        "attention_factor": attention,
        "on_scores": attention * attention,
    }


CONTEXT = (
    *("kind", "factor", "L", "far", "ntk_base", "low_freq_factor", "high_freq_factor"),
    *("high_wavelength", "low_wavelength", "beta_fast", "beta_slow", "ramp_low", "ramp_high"),
    *("attention_factor", "on_scores"),
)


def record_frequencies(
    record: StepRecorder,
    scaling: rope_scaling.Scaling,
    theta: Any,
    pairs: Any,
    rotary_dim: int,
    base: float,
    context: Mapping[str, Any],
) -> rope_scaling.Scaled:
    """The step "scaling": each pair's θᵢ, wavelength, turns in L, θ'ᵢ, θᵢ / θ'ᵢ and what the
    scaling does to it, in words; and YaRN's temperature."""
    scaled, took = record.run.timed(
        lambda: rope_scaling.scale(theta, pairs, rotary_dim, base, scaling)
    )
    before = np.asarray(record.to_numpy(theta), dtype=np.float64)
    after = np.asarray(record.to_numpy(scaled.theta), dtype=np.float64)
    shares = np.asarray(record.to_numpy(scaled.interpolated), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        turns = scaling.original_max_position_embeddings / (2 * math.pi / before)  # L / λᵢ
        divided = before / after
    rows = [
        {
            "pair": i,
            "turns": float(turns[i]),
            "scaled_theta": float(after[i]),
            "divided": float(divided[i]),
            "regime": rope_scaling.regime(float(shares[i])),
        }
        for i in range(len(before))
    ]
    words = [rope_scaling.regime(float(share)) for share in shares]
    counts = {word: words.count(word) for word in ("kept", "blended", "interpolated")}
    record.add(
        "scaling",
        rows,
        kind="records",
        grid=Grid(context=context),
        seconds=took,
        text=f"scaling_{scaling.rope_type}",
        notes=(
            record.note(
                "regimes",
                pairs=len(rows),
                factor=scaling.factor,
                order=in_order(words),
                **counts,
            ),
        ),
    )
    if scaling.rope_type == "yarn":
        record.add(
            "temperature",
            [
                {
                    "factor": scaling.factor,
                    "attention_factor": scaled.attention_factor,
                    "on_scores": scaled.attention_factor**2,
                }
            ],
            kind="records",
            grid=Grid(context=context),
        )
    return scaled


def record_far(
    record: StepRecorder,
    *,
    scaling: rope_scaling.Scaling,
    q: Any,
    k: Any,
    plain: Any,
    scaled: rope_scaling.Scaled,
    layout: rotary.Layout,
    keys: tuple[str, ...],
    context: Mapping[str, Any],
) -> None:
    """The step "far": the first query at position 2L against every key at its own position,
    scored with the plain frequencies and with the scaled ones (and YaRN's 1/t)."""
    backend = record.run.backend
    far = far_position(scaling)
    n = k.shape[0]
    at = backend.asarray(np.array([float(far)]))
    positions = backend.asarray(np.arange(n, dtype=np.float64))

    def score(theta: Any) -> Any:
        turned_q = rotary.rotate(q[0:1], rotary.angles(at, theta), layout)  # (1, d)
        return mech.scores(turned_q, rotary.rotate(k, rotary.angles(positions, theta), layout))

    (before, after), took = record.run.timed(
        lambda: (score(plain), score(scaled.theta) * scaled.attention_factor**2)
    )
    old = np.asarray(record.to_numpy(before), dtype=np.float64)[0]
    new = np.asarray(record.to_numpy(after), dtype=np.float64)[0]
    rows = [
        {
            "key": keys[j],
            "position": j,
            "offset": far - j,
            "plain": float(old[j]),
            "scaled": float(new[j]),
        }
        for j in range(n)
    ]
    theta = np.asarray(record.to_numpy(plain), dtype=np.float64)
    unseen_plain = unseen(theta, theta, scaling.original_max_position_embeddings, far)
    unseen_scaled = unseen(
        theta,
        np.asarray(record.to_numpy(scaled.theta), dtype=np.float64),
        scaling.original_max_position_embeddings,
        far,
    )
    record.add(
        "far",
        rows,
        kind="records",
        grid=Grid(context=context),
        seconds=took,
        text="far_yarn" if scaling.rope_type == "yarn" else "far",
        notes=(
            record.note(
                "far_unseen",
                far=far,
                L=scaling.original_max_position_embeddings,
                pairs=len(theta),
                plain=unseen_plain,
                scaled=unseen_scaled,
            ),
        ),
    )


def in_order(words: list[str]) -> str:
    """Each run of one word over the pairs, in pair order: "0–28 kept, 29–34 blended"."""
    runs: list[tuple[int, int, str]] = []
    for i, word in enumerate(words):
        if runs and runs[-1][2] == word:
            runs[-1] = (runs[-1][0], i, word)
        else:
            runs.append((i, i, word))
    return ", ".join(
        f"{first} {word}" if first == last else f"{first}–{last} {word}"
        for first, last, word in runs
    )


def unseen(trained: np.ndarray, used: np.ndarray, context: int, offset: int) -> int:
    """How many pairs an offset turns to an angle they never reached in training: a pair
    whose L positions swept less than a full turn, (L − 1)·θᵢ < 2π, turned at this offset past
    that sweep (the angle taken modulo a full turn)."""
    sweep = (context - 1) * trained
    angle = np.mod(offset * used, 2 * math.pi)
    return int(np.sum((sweep < 2 * math.pi) & (angle > sweep)))


# --- the claims: each note's words checked on the values shown ------------------------------


def _records(walkthrough: Walkthrough, key: str) -> list[dict[str, Any]] | None:
    try:
        value = walkthrough.step(key)
    except KeyError:
        return None
    return value if isinstance(value, list) else None


def _agrees(theta: float, row: Mapping[str, Any], factor: float, tolerance: float) -> bool:
    """A row's word matches its frequencies: kept θ' = θ, interpolated θ' = θ / s, blended
    strictly between (each to the rounding of the run's dtype, a relative ``tolerance``)."""
    after, word = row["scaled_theta"], row["regime"]
    if word == "kept":
        return math.isclose(after, theta, rel_tol=tolerance)
    if word == "interpolated":
        return math.isclose(after, theta / factor, rel_tol=tolerance)
    return word == "blended" and theta / factor < after < theta and factor > 1


def regimes_counted(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The note's counts are the words of the scaling step, and each word holds of its pair's
    frequencies."""
    rows, plain = _records(walkthrough, "scaling"), _records(walkthrough, "frequencies")
    if rows is None or plain is None or len(rows) != len(plain):
        return False
    words = [row["regime"] for row in rows]
    factor = float(values["factor"])
    tolerance = 16 * EPSILON[walkthrough.dtype]  # θ'ᵢ and θᵢ / s each rounded in the run's dtype
    return (
        len(rows) == values["pairs"]
        and all(words.count(word) == values[word] for word in ("kept", "blended", "interpolated"))
        and values["order"] == in_order(words)
        and all(
            _agrees(p["theta"], row, factor, tolerance) for p, row in zip(plain, rows, strict=True)
        )
    )


def far_counted(walkthrough: Walkthrough, values: Mapping[str, Any]) -> bool:
    """The pairs turned past their trained sweep at offset 2L, counted again from the scaling
    step's frequencies."""
    rows, plain = _records(walkthrough, "scaling"), _records(walkthrough, "frequencies")
    if rows is None or plain is None or not len(rows) == len(plain) == values["pairs"]:
        return False
    theta = np.array([row["theta"] for row in plain], dtype=np.float64)
    after = np.array([row["scaled_theta"] for row in rows], dtype=np.float64)
    context, far = int(values["L"]), int(values["far"])
    return (
        unseen(theta, theta, context, far) == values["plain"]
        and unseen(theta, after, context, far) == values["scaled"]
    )
