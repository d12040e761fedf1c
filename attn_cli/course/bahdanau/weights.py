"""`attn bahdanau --weights FILE`: the inputs of one decoder step from a trained model.

`attn learn translate --save FILE` writes, without pickle (.npz), the learned W1, W2 and v of
its attention model, one sentence's encoder states H and the decoder state s_t one of its steps
queries with (with the sentence's words), and the decoder state of every step (``queries``,
T × d_s, with the reference's words, ``target``); this hook reads them into the lesson's inputs
before it runs, so the lesson recomputes that step, or step ``--decoder-step T``, term by term.
A file of another kind, with an array missing or of the wrong shape, is one line and exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attn_cli.core.errors import UserError, param

# The lesson's inputs the file gives: the file's array name -> the command's parameter.
FROM_FILE = {"s_t": "s", "H": "h", "W1": "w1", "W2": "w2", "v": "v"}
# What may not be given with --weights (by keyword): the file gives the inputs (the decoder's over --steps
# would be drawn at random, beside learned ones).
CONFLICTS = (
    "s",
    "h",
    "w1",
    "w2",
    "v",
    "example",
    "n",
    "d",
    "da",
    "steps",
    "ws",
    "wy",
    "wc",
    "y",
    "tokens",
)
# The largest size of an array the file may declare (tokens, widths): a model attn learn
# translate trains is at most 24 words long and 512 wide; a larger one is refused from the
# file's headers, before anything is read.
LARGEST = 4096
WRITTEN_BY = "attn learn translate --save FILE"


def weights_into_inputs(given: dict[str, Any]) -> None:
    """With --weights FILE, the file's arrays become the inputs (and its words the tokens);
    with --decoder-step T, those of step T."""
    path, step = given.get("weights"), given.get("decoder_step")
    if path is None:
        if step is not None:
            raise UserError(
                f"{param('decoder_step')} picks a step of the model saved in "
                f"{param('weights', 'FILE')}; give "
                f"{param('weights', 'FILE')} (written by attn learn translate --save FILE) or leave it out."
            )
        return None
    for name in CONFLICTS:
        if given.get(name) is not None:
            raise UserError(
                f"{param('weights')} gives the inputs of one decoder step; leave out {param(name)}."
            )
    if given.get("seed"):  # 0 is the default: nothing asked
        raise UserError(
            f"{param('weights')} gives the inputs of one decoder step, nothing is drawn at random; "
            f"leave out {param('seed')}."
        )
    given.update(load_step(Path(path), step))


def load_step(path: Path, step: int | None = None) -> dict[str, Any]:
    """The command's parameters that the file at ``path`` gives, its shapes checked together;
    ``step`` (1-based): the decoder state of that step instead of the one the file was saved
    at."""
    from attn_cli.core.weights_file import load_arrays, load_words

    flag = param("weights", path)
    arrays = load_arrays(
        path,
        {"s_t": (None,), "H": (None, None), "W1": (None, None), "W2": (None, None), "v": (None,)},
        "weights",
        largest=LARGEST,
        written_by=WRITTEN_BY,
    )
    (d_s,), (n, d_h), (d_a, d_w1), (d_a2, d_w2), (d_v,) = (
        arrays[name].shape for name in ("s_t", "H", "W1", "W2", "v")
    )
    if d_w1 != d_h or d_w2 != d_s or not d_a == d_a2 == d_v:
        raise UserError(
            f"{flag}: its shapes do not fit together (H {n} × {d_h}, s_t {d_s}, W1 {d_a} × "
            f"{d_w1}, W2 {d_a2} × {d_w2}, v {d_v}): W1 must be d_a × d_h, W2 d_a × d_s and v "
            f"d_a; write it again with {WRITTEN_BY}."
        )
    found: dict[str, Any] = {FROM_FILE[name]: value for name, value in arrays.items()}
    if step is not None:
        found["s"] = _step_state(path, step, d_s)
    words = load_words(path, "tokens", "weights", largest=LARGEST)
    if words is not None and len(words) == n:
        found["tokens"] = ",".join(words)
    return found


def _step_state(path: Path, step: int, d_s: int) -> Any:
    """The decoder state decoder step ``step`` queries with (row ``step`` of ``queries``)."""
    from attn_cli.core.weights_file import load_arrays, load_words

    flag = param("weights", path)
    try:
        queries = load_arrays(
            path,
            {"queries": (None, d_s)},
            "weights",
            largest=LARGEST,
            written_by=WRITTEN_BY,
        )["queries"]
    except UserError:
        raise UserError(
            f"{flag}: it holds one decoder step only (no queries, each step's state); write it "
            f"again with attn learn translate --save FILE to replay any step, or leave out "
            f"{param('decoder_step')}."
        ) from None
    steps = queries.shape[0]
    if step > steps:
        target = load_words(path, "target", "weights", largest=LARGEST)
        words = f" ({' '.join(target)})" if target is not None and len(target) == steps else ""
        raise UserError(
            f"{param('decoder_step', step)}: the saved sentence has {steps} decoder steps{words}; give "
            f"1 to {steps}."
        )
    return queries[step - 1]
