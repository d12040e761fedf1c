"""The multi-head lesson: h heads on column blocks of W_Q, W_K, W_V, concatenated, projected."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attn_cli.errors import UserError
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import multihead as mh
from attn_cli.model import InputValue, Part, Walkthrough
from attn_cli.walkthroughs.base import InputSpec, LessonRun, StepRecorder, row_names

INPUTS = (
    InputSpec("X", "--x", "matrix", "tokens", required=False),
    InputSpec("W_Q", "--wq", "matrix", "query weights", required=False),
    InputSpec("W_K", "--wk", "matrix", "key weights", required=False),
    InputSpec("W_V", "--wv", "matrix", "value weights", required=False),
    InputSpec("W_O", "--wo", "matrix", "output weights", required=False),
)
OPTIONS: dict[str, Any] = {"heads": 2}
# The example labels (lesson files' labels = {...}) this lesson reads, by row_names.
LABELS: tuple[str, ...] = ("tokens",)
WEIGHT_NAMES = ("W_Q", "W_K", "W_V", "W_O")
# Per head: scores, scaled, softmax intermediates and weights, (n × n) each.
_SCORE_MATRICES = 6


def _flag(name: str) -> str:
    return next(spec.option for spec in INPUTS if spec.name == name)


def _heads(options: dict[str, Any]) -> int:
    """The number of heads, checked: a lesson file's options may hold any TOML value."""
    heads = options.get("heads")
    if not isinstance(heads, int) or isinstance(heads, bool) or heads < 1:
        raise UserError(f"--heads (options.heads) must be a whole number >= 1, not {heads!r}.")
    return heads


def validate(inputs: dict[str, np.ndarray], options: dict[str, Any]) -> None:
    heads = _heads(options)
    given = [name for name in WEIGHT_NAMES if name in inputs]
    if "X" not in inputs:
        needs = f"{_flag(given[0])} needs --x" if given else "X is missing; give --x"
        raise UserError(f"{needs}: the heads project the tokens X (Q = X W_Q).")
    d_model = inputs["X"].shape[1]
    if d_model % heads:
        raise UserError(
            f"X has d_model = {d_model} columns, which {heads} heads cannot share: --heads must "
            f"divide d_model (each head gets d_model / h columns of W_Q, W_K and W_V)."
        )
    if given and len(given) < len(WEIGHT_NAMES):
        missing = ", ".join(_flag(name) for name in WEIGHT_NAMES if name not in given)
        raise UserError(
            f"missing {missing}: give all four weights (--wq, --wk, --wv, --wo) or none of them "
            "(then they are drawn from --seed)."
        )
    for name in given:
        rows, cols = inputs[name].shape
        if (rows, cols) != (d_model, d_model):
            raise UserError(
                f"{_flag(name)} is {rows} × {cols} but must be d_model × d_model = {d_model} × "
                f"{d_model} (X has {d_model} columns; W_Q, W_K, W_V are split column-wise "
                f"into {heads} heads of {d_model // heads})."
            )


def random_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Random tokens X (n × d_model); the weights are drawn by build() from the same seed."""
    return {"X": (sizes.get("n") or 6, sizes.get("d_model") or 8)}


def estimate_bytes(
    shapes: dict[str, tuple[int, ...]], options: dict[str, Any], itemsize: int
) -> int:
    n, d_model = shapes["X"]
    heads = _heads(options)  # random inputs are sized before validate() runs
    per_head = _SCORE_MATRICES * n * n + 3 * n * (d_model // heads or 1)
    return (heads * per_head + 8 * d_model * d_model + 3 * n * d_model) * itemsize


def draw_weights(seed: int, d_model: int) -> dict[str, np.ndarray]:
    """W_Q, W_K, W_V, W_O with N(0, 1/d_model) entries, so Q = X W_Q keeps X's scale.

    They come from a child of numpy's default_rng(seed), independent of the stream that draws
    random tokens X from the same seed.
    """
    if seed < 0:
        raise UserError(f"--seed {seed}: give a seed of 0 or more.")
    rng = np.random.default_rng(seed).spawn(1)[0]
    return {
        name: rng.standard_normal((d_model, d_model)) / math.sqrt(d_model) for name in WEIGHT_NAMES
    }


def build(run: LessonRun) -> Walkthrough:
    backend = run.backend
    heads: int = run.options["heads"]  # checked by validate()
    x_in = run.inputs["X"]
    (n, d_model), d_k = x_in.shape, x_in.shape[1] // heads
    drawn = not all(name in run.inputs for name in WEIGHT_NAMES)
    weights_in = (
        draw_weights(run.seed, d_model)
        if drawn
        else {name: run.inputs[name] for name in WEIGHT_NAMES}
    )
    x = backend.asarray(x_in)
    wq, wk, wv, wo = (backend.asarray(weights_in[name]) for name in WEIGHT_NAMES)
    tokens = row_names(run, "tokens", n, "t", "--tokens")
    base = {"n": n, "h": heads, "d_model": d_model, "dk": d_k, "sqrt_dk": math.sqrt(d_k)}
    record = StepRecorder(run)
    record.add(
        "split",
        _split_records(heads, d_k),
        kind="records",
        context=base,
        notes=_split_notes(heads, d_model, d_k),
    )
    head_weights = []
    outputs = []
    for index in range(heads):
        weights, output = _head_steps(record, index, heads, x, (wq, wk, wv), tokens, base)
        head_weights.append(weights)
        outputs.append(output)
    head_names = tuple(f"head {i}" for i in range(1, heads + 1))
    differences = record.compute(
        "differences",
        lambda: mh.weight_differences(head_weights),
        row_labels=head_names,
        col_labels=head_names,
        context=base,
    )
    concat_labels = _split_labels(d_model, d_k)
    joined = record.compute(
        "concat",
        lambda: mh.concat(outputs),
        row_labels=tokens,
        col_labels=concat_labels,
        context=base,
    )
    output = record.compute(
        "output", lambda: mh.project(joined, wo), row_labels=tokens, context=base
    )
    inputs = _labelled_inputs(run, weights_in, tokens, d_k, drawn)
    notes = _difference_notes(record.to_numpy(differences))
    if drawn:
        notes += (
            f"The weights were drawn from seed {run.seed} (N(0, 1/d_model) entries); they are "
            "listed with the inputs, so the run can be recomputed from them.",
        )
    return record.walkthrough(
        output, inputs=inputs, notes=notes, meta={"parameters": mh.parameter_count(d_model)}
    )


def _split_records(heads: int, d_k: int) -> list[dict[str, Any]]:
    return [
        {
            "head": index + 1,
            "columns of W_Q, W_K, W_V": _span(index, d_k),
            "d_k = d_v": d_k,
            "concat columns = W_O rows": _span(index, d_k),
        }
        for index in range(heads)
    ]


def _span(index: int, d_k: int) -> str:
    first, last = index * d_k + 1, (index + 1) * d_k
    return str(first) if first == last else f"{first}–{last}"


def _split_notes(heads: int, d_model: int, d_k: int) -> tuple[str, ...]:
    count = mh.parameter_count(d_model)
    return (
        f"d_k = d_v = d_model / h = {d_model} / {heads} = {d_k}.",
        f"Parameters: W_Q, W_K, W_V and W_O are each {d_model} × {d_model}, so 4 · {d_model}² = "
        f"{count:,} without biases, for any number of heads: more heads are narrower, not "
        "more expensive.",
    )


def _head_steps(
    record: StepRecorder,
    index: int,
    heads: int,
    x: Any,
    projections: tuple[Any, Any, Any],
    tokens: tuple[str, ...],
    base: dict[str, Any],
) -> tuple[Any, Any]:
    """Head i: its column blocks of W_Q, W_K, W_V; Q, K, V; weights; output."""
    d_k = base["dk"]
    context = {**base, "head": index + 1, "cols": _span(index, d_k)}
    rows = {"row_labels": tokens, "context": context}
    prefix = f"head{index + 1}"
    qkv = [
        record.compute(
            f"{prefix}.{letter}",
            lambda w=w: mh.project(x, mh.head_block(w, index, heads)),
            text=f"head_{letter}",
            **rows,
        )
        for letter, w in zip("QKV", projections, strict=True)
    ]
    # Inside the head: plain scaled dot-product attention on its Q, K, V. Its time (scores,
    # softmax and A V together) is shown on the head's output, the last value it computes.
    result, seconds = record.run.backend.timed(lambda: mech.attention(*qkv))
    record.add(
        f"{prefix}.weights",
        result.weights,
        kind="weights",
        row_sums=True,
        parts=(Part("scaled scores Q Kᵀ / √d_k", result.scaled),),
        text="head_weights",
        col_labels=tokens,
        **rows,
    )
    record.add(
        f"{prefix}.output",
        result.output,
        seconds=seconds if record.run.time_steps else None,
        text="head_output",
        **rows,
    )
    return result.weights, result.output


def _difference_notes(differences: np.ndarray) -> tuple[str, ...]:
    heads = differences.shape[0]
    if heads < 2:
        return ("One head: nothing to compare; with h = 1 this is plain self-attention.",)
    pairs = [(differences[i, j], i + 1, j + 1) for i in range(heads) for j in range(i + 1, heads)]
    most, least = max(pairs), min(pairs)
    if least[0] == 0:
        return (
            f"Heads {least[1]} and {least[2]} have exactly the same weights: their blocks of "
            "W_Q and W_K match the tokens the same way.",
        )
    if heads == 2:
        return (f"Heads 1 and 2 attend differently: their weights differ by up to {most[0]:.4f}.",)
    return (
        f"Every pair of heads attends differently: the most different pair (heads {most[1]} and "
        f"{most[2]}) differs by up to {most[0]:.4f}, the most alike (heads {least[1]} and "
        f"{least[2]}) still by {least[0]:.4f}.",
    )


def _labelled_inputs(
    run: LessonRun, weights: dict[str, np.ndarray], tokens: tuple[str, ...], d_k: int, drawn: bool
) -> tuple[InputValue, ...]:
    """X and every weight used; W_Q, W_K, W_V columns and W_O rows named by head (h2·1, ...)."""
    split = _split_labels(run.inputs["X"].shape[1], d_k)
    descriptions = {spec.name: spec.description for spec in INPUTS}
    items = [InputValue("X", run.inputs["X"], row_labels=tokens, description="tokens")]
    for name in WEIGHT_NAMES:
        description = descriptions[name] + (f" (drawn, seed {run.seed})" if drawn else "")
        by_head = {"row_labels": split} if name == "W_O" else {"col_labels": split}
        items.append(InputValue(name, weights[name], description=description, **by_head))
    return tuple(items)


def _split_labels(d_model: int, d_k: int) -> tuple[str, ...]:
    """Column j of the concatenation (and of W_Q, W_K, W_V) as head·column: h1·1, h1·2, h2·1."""
    return tuple(f"h{j // d_k + 1}·{j % d_k + 1}" for j in range(d_model))
