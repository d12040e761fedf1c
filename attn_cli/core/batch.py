"""A batch: the leading dimension of the books' ``(B, n, d)`` inputs, computed item by item.

A matrix input of three dimensions (a vector input of two) is a batch of B items; the inputs
of one call either share B or are single matrices (vectors) that every item uses, as a model's
weights are shared across a batch of sentences. Each item is an ordinary 2-D run of its lesson
(the mechanisms stay 2-D), so a batch's walkthrough is simply every item's walkthrough; the
one shown is ``--item``'s, and the JSON holds them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from attn_cli.core.card import InputSpec
from attn_cli.core.errors import PYTHON, Door, UserError, param
from attn_cli.core.model import Note, Walkthrough

# Each item is a whole walkthrough (about 10-20 KiB of steps and texts beyond its arrays, and
# about half a millisecond to compute): a batch is for reading a few items, not for a dataset.
MAX_BATCH = 1024


def split_batch(
    specs: Sequence[InputSpec], inputs: dict[str, np.ndarray]
) -> list[dict[str, np.ndarray]] | None:
    """Each item's inputs (a batched input sliced, a shared one as given), or None when no
    input is a batch (``specs``: the lesson's inputs)."""
    batched = {
        spec.name: param(spec.keyword)
        for spec in specs
        if spec.name in inputs and inputs[spec.name].ndim == (3 if spec.shape == "matrix" else 2)
    }
    if not batched:
        return None
    sizes = {name: inputs[name].shape[0] for name in batched}
    first = next(iter(batched))
    for name, size in sizes.items():
        if size != sizes[first]:
            raise UserError(
                f"{batched[first]} holds a batch of {sizes[first]} but {batched[name]} a batch of "
                f"{size}; give every batched input the same batch size (or one matrix, shared by "
                "every item)."
            )
    if sizes[first] > MAX_BATCH:
        raise UserError(
            f"{batched[first]} holds a batch of {sizes[first]:,} items; attn computes at most "
            f"{MAX_BATCH:,}, each a whole walkthrough: give fewer items."
        )
    return [
        {name: array[index] if name in batched else array for name, array in inputs.items()}
        for index in range(sizes[first])
    ]


def split_options(options: dict[str, Any], size: int | None) -> list[dict[str, Any]]:
    """Each item's options: an option's text with "|" holds one value per item (``--valid-len
    "2|3"``: the books' one valid length per sentence); every other option is shared."""
    per_item = {
        key: [part.strip() for part in value.split("|")]
        for key, value in options.items()
        if isinstance(value, str) and "|" in value
    }
    for key, parts in per_item.items():
        given = param(key, repr(options[key]))
        if size is None:
            raise UserError(
                f"{given}: '|' separates the values of batch items, but the "
                "inputs are not a batch; give one value, or batched inputs."
            )
        if len(parts) != size:
            raise UserError(
                f"{given} gives {len(parts)} values separated by '|' but the "
                f"batch has {size} item{'s' * (size != 1)}; give one value per item."
            )
    return [
        {**options, **{key: parts[index] for key, parts in per_item.items()}}
        for index in range(size or 1)
    ]


def check_item(item: int, size: int | None) -> None:
    """Refuse an --item the inputs do not have (``size``: the batch size, None unbatched)."""
    if size is None:
        if item != 0:
            raise UserError(
                f"{param('item', item)}: the inputs are not a batch; give a batched input (JSON nested "
                f'one level deeper, a 3-D .npy, or items separated by "|") or leave out {param("item")}.'
            )
        return
    if not 0 <= item < size:
        raise UserError(
            f"{param('item', item)} is out of range: the batch has {size} "
            f"item{'s' * (size != 1)} ({_range_text(size)})."
        )


def select_item(
    items: tuple[Walkthrough, ...], item: int, options: dict[str, Any], door: Door = PYTHON
) -> Walkthrough:
    """Item ``item``'s walkthrough, holding every item's (``items``); ``options`` as given
    (an option with one value per item keeps its "|"); ``door``: the door that asked, which
    spells the batch line's parameter."""
    shown = items[item]
    notes = shown.notes
    if options.get("dropout") and len(items) > 1:
        notes = (*notes, Note.fixed("dropout_in_a_batch", DROPOUT_IN_A_BATCH))
    return replace(
        shown,
        items=items,
        item_index=item,
        notes=notes,
        meta={**shown.meta, "options": options},
        door=door,
    )


# Each item is its own run, so each draws its dropout mask afresh from the seed.
DROPOUT_IN_A_BATCH = (
    "Dropout in a batch: each item draws its mask afresh from the seed, so every item gets the "
    "same mask; torch.nn.Dropout applied to the whole batch at once would draw a different mask "
    "for each item."
)


def batch_line(walkthrough: Walkthrough) -> str:
    """The line renderers show under the header of a batch's walkthrough ('' unbatched); its
    parameter spelt by the door that asked for the walkthrough (``item`` or ``--item``)."""
    size = len(walkthrough.items)
    if not size:
        return ""
    item = walkthrough.door.words(param("item"))
    return (
        f"batch item {walkthrough.item_index} shown, of {size} ({_range_text(size)}); {item} "
        "picks another; the JSON holds every item."
    )


def _range_text(size: int) -> str:
    return "item 0" if size == 1 else f"items 0 to {size - 1}"
