"""`attn bahdanau --weights FILE`: the inputs of one decoder step from a trained model.

`attn learn translate --save FILE` writes, without pickle (.npz), the learned W1, W2 and v of
its attention model, one held-out sentence's encoder states H and the decoder state s_t one of
its steps queries with (with the sentence's words); this hook reads them into the lesson's
inputs before it runs, so the lesson recomputes that step, term by term. A file of another
kind, with an array missing or of the wrong shape, is one line and exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attn_cli.core.errors import UserError

# The lesson's inputs the file gives: the file's array name -> the command's parameter.
FROM_FILE = {"s_t": "s", "H": "h", "W1": "w1", "W2": "w2", "v": "v"}
# What may not be given with --weights: the file gives the inputs (the decoder's over --steps
# would be drawn at random, beside learned ones).
CONFLICTS = {
    "s": "--s",
    "h": "--h",
    "w1": "--w1",
    "w2": "--w2",
    "v": "--v",
    "example": "--example",
    "n": "--n",
    "d": "--d",
    "da": "--da",
    "steps": "--steps",
    "ws": "--ws",
    "wy": "--wy",
    "wc": "--wc",
    "y": "--y",
    "tokens": "--tokens",
}
# The largest size of an array the file may declare (tokens, widths): a model attn learn
# translate trains is at most 24 words long and 512 wide; a larger one is refused from the
# file's headers, before anything is read.
LARGEST = 4096
WRITTEN_BY = "attn learn translate --save FILE"


def weights_into_inputs(given: dict[str, Any]) -> None:
    """With --weights FILE, the file's arrays become the inputs (and its words the tokens)."""
    path = given.get("weights")
    if path is None:
        return None
    for name, flag in CONFLICTS.items():
        if given.get(name) is not None:
            raise UserError(f"--weights gives the inputs of one decoder step; leave out {flag}.")
    if given.get("seed"):  # 0 is the default: nothing asked
        raise UserError(
            "--weights gives the inputs of one decoder step, nothing is drawn at random; "
            "leave out --seed."
        )
    given.update(load_step(Path(path)))


def load_step(path: Path) -> dict[str, Any]:
    """The command's parameters that the file at ``path`` gives, its shapes checked together."""
    from attn_cli.core.weights_file import load_arrays, load_words

    flag = f"--weights {path}"
    arrays = load_arrays(
        path,
        {"s_t": (None,), "H": (None, None), "W1": (None, None), "W2": (None, None), "v": (None,)},
        "--weights",
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
    words = load_words(path, "tokens", "--weights", largest=LARGEST)
    if words is not None and len(words) == n:
        found["tokens"] = ",".join(words)
    return found
