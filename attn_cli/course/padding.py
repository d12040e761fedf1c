"""--valid-len: the padding mask that scaled, causal and multihead share.

Sentences of a batch are padded to one length; the keys at positions >= a sentence's valid
length are padding and must get no weight. The mask is its own step: the additive P (0 where a
key is valid, -inf where it is padding) with the same mask in PyTorch's boolean conventions
(see mechanisms/masks.py), then the scores with P added.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from attn_cli.core.backend import namespace_of
from attn_cli.core.errors import UserError, param
from attn_cli.core.matrices import shortened, whole_number
from attn_cli.core.model import Part
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import masks

KEYWORD = "valid_len"
# The padding step's texts: "padding" (one length for every row) and "padding_rows" (one per
# row); each reads these names on top of the lesson's own.
TEXTS = ("padding", "padding_rows")
STEP_NAMES = ("lengths", "causal_sdpa")
# What --valid-len and options.valid_len accept: one length, or one per query row.
_EXAMPLES = '"2" for every query row, or one per row such as "2,3,1"'


def valid_lengths(value: Any, rows: int, keys: int) -> tuple[int, ...] | None:
    """One valid length per query row (``rows`` of them), checked against ``keys``; None: none.

    ``value`` is what was given: an int, "2" or "2,3,1" (the command line), or a list (a lesson
    file or the Python API). One length applies to every row.
    """
    if value is None:
        return None
    lengths = _parse(value)
    if len(lengths) not in (1, rows):
        raise UserError(
            f"{param(KEYWORD)} gives {len(lengths)} lengths but there are {rows} query rows: give one "
            f"length for all rows or exactly one per row ({_EXAMPLES})."
        )
    for row, length in enumerate(lengths, start=1):
        where = f" (row {row})" if len(lengths) > 1 else ""
        if length < 1:
            raise UserError(
                f"{param(KEYWORD, length)}{where} leaves the row no visible key, and such a row has no "
                "softmax (every score is −∞, so it is 0 / 0 = NaN); give lengths of 1 or more."
            )
        if length > keys:
            raise UserError(
                f"{param(KEYWORD, length)}{where} is past the {keys} keys: a valid length counts keys "
                f"from the first, so it is at most {keys}, the number of keys."
            )
    return lengths * rows if len(lengths) == 1 else lengths


def _parse(value: Any) -> tuple[int, ...]:
    if isinstance(value, np.ndarray):  # from the Python API
        value = value.tolist()
    if isinstance(value, bool):
        raise UserError(f"{param(KEYWORD, shortened(value))}: give whole numbers, {_EXAMPLES}.")
    if isinstance(value, int | np.integer):
        return (int(value),)
    if isinstance(value, str):
        parts = [part for part in re.split(r"[,\s]+", value.strip().strip("[]")) if part]
        if parts and all(re.fullmatch(r"[+-]?\d+", part) for part in parts):
            return tuple(whole_number(part, param(KEYWORD)) for part in parts)
        raise UserError(f"{param(KEYWORD, shortened(value))}: give whole numbers, {_EXAMPLES}.")
    if isinstance(value, list | tuple):
        whole = [
            isinstance(item, int | np.integer) and not isinstance(item, bool) for item in value
        ]
        if value and all(whole):
            return tuple(int(item) for item in value)
    raise UserError(f"{param(KEYWORD, shortened(value))}: give whole numbers, {_EXAMPLES}.")


def describe(lengths: tuple[int, ...]) -> str:
    """'2' when every row has the same length, else the lengths row by row: '2, 3, 1'."""
    return str(lengths[0]) if len(set(lengths)) == 1 else ", ".join(map(str, lengths))


def record_padding(
    record: StepRecorder,
    like: Any,
    lengths: tuple[int, ...],
    grid: Grid,
    *,
    causal: bool,
) -> Any:
    """The padding step: P (0 / −∞, shaped like the scores ``like``) with its boolean spellings.

    Returns P on the backend, to be added to the scores.
    """
    allowed = masks.valid_allowed(like, lengths)  # (m, n) True = key before the valid length
    blocked = masks.negate(allowed)  # (m, n) True = padding key
    one_length = len(set(lengths)) == 1
    if one_length:
        # key_padding_mask is (batch, n): one row per sentence, the same for every query.
        parts = [Part("key_padding_mask (True = pad)", record.to_numpy(blocked)[:1])]
    else:
        parts = [Part("MHA attn_mask (True = blocked)", blocked)]
    xp = namespace_of(like)
    sdpa = xp.logical_and(masks.causal_allowed(like), allowed) if causal else allowed
    label = "SDPA attn_mask (True = may attend)" + (", causal included" if causal else "")
    parts.append(Part(label, sdpa))
    context = {
        **grid.context,
        "lengths": describe(lengths),
        "causal_sdpa": _CAUSAL_SDPA if causal else "",
    }
    return record.compute(
        "padding",
        lambda: masks.additive(allowed, like),
        parts=tuple(parts),
        text="padding" if one_length else "padding_rows",
        grid=Grid(grid.rows, grid.cols, context=context),
    )


_CAUSAL_SDPA = (
    " SDPA refuses is_causal=True together with an attn_mask, so its mask here holds the causal "
    "mask as well."
)
