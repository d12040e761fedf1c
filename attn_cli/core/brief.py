"""The brief walkthrough (``--brief``, ``Walkthrough.brief()``): a lesson at a projector's pace.

The same data model, less of it: the introduction's first sentence, the inputs once (without
the learned weights unless asked), each step with its first sentence of why and its value, and
nothing that repeats what is already on the screen. A table that repeats the step before it,
or that holds only the 0s and 1s of a softmax with a single key, is said in one line instead;
each such line is computed from the values it describes, so it is true of them.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np

from attn_cli.core.model import Note, Step, Walkthrough

# A sentence ends at a full stop (or ! ?) followed by white space and a capital letter, or by
# the end of the text; an abbreviation ("e.g.", "i.e.", "et al.", "vs.") ends none.
_END = re.compile(r"[.!?](?=\s+[A-Z(\"“]|\s*$)")
_ABBREVIATIONS = ("e.g", "i.e", "et al", "vs", "cf", "Fig", "Eq", "No")


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (a lesson file's template: ``{name}`` placeholders are
    never cut), on one line; the whole text where it is one sentence."""
    flat = " ".join(text.split())
    for match in _END.finditer(flat):
        before = flat[: match.start()]
        if before.endswith(_ABBREVIATIONS) or before.count("{") != before.count("}"):
            continue
        if before.count("(") != before.count(")"):  # a full stop inside brackets
            continue
        return flat[: match.end()]
    return flat


def _numbers(value: Any) -> np.ndarray | None:
    """The value as a float array, or None where it is not numbers (records, text, ...)."""
    if isinstance(value, dict | list | str):
        return None
    array = np.asarray(value)
    if array.dtype.kind not in "biuf" or array.ndim == 0:
        return None
    return array.astype(np.float64)


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return a is not None and b is not None and a.shape == b.shape and bool(np.array_equal(a, b))


def _sums_to_one(sums: Any) -> bool:
    """Whether every row sum is 1 exactly, or within float64 rounding."""
    if sums is None:
        return False
    array = np.asarray(sums, dtype=np.float64)
    return bool(array.size) and bool(np.all(np.abs(array - 1.0) <= 1e-12))


def _text_step(step: Step, text: str) -> Step:
    """The step with its value said in one line (``text``, shown as it is), in place of its
    table."""
    return replace(
        step,
        value=text,
        kind="text",
        row_labels=None,
        col_labels=None,
        row_sums=None,
        summary=None,
        quantities=None,
        headings={},
    )


def _said_in_a_line(step: Step, number: int, steps: tuple[Step, ...]) -> str | None:
    """What the step's table shows, in one line, where a table would add nothing: it repeats
    an earlier step's (the last one of its shape), or it is a softmax over a single key."""
    values = _numbers(step.value)
    if values is None:
        return None
    single_key = step.kind == "weights" and values.shape[-1] == 1
    if single_key and np.all(values == 1):
        count = f"{values.size} weight" + ("s, each" if values.size > 1 else ",")
        return f"A single key, so the softmax gives it all the weight: {count} exactly 1."
    first = None  # the first of the steps just before with these values, back to a change
    for earlier in range(number - 2, -1, -1):
        before = _numbers(steps[earlier].value)
        if before is None or before.shape != values.shape:
            continue
        if not _same(values, before):
            break
        if steps[earlier].detail:  # its table is not shown in brief: this one is
            return None
        first = earlier
    if first is None:
        return None
    return (
        f"The same {' × '.join(map(str, values.shape))} values as step {first + 1} "
        f"({' '.join(steps[first].title.split())}): its table is not repeated."
    )


def brief_steps(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """Each step with its why in one line (the lesson file's ``brief``, else the explanation's
    first sentence), its value, no intermediates and no notes; a step the lesson file calls a
    ``detail`` without its value (an empty text) unless it is the last, and a table that would
    add nothing said in one line (:func:`_said_in_a_line`)."""
    shortened = []
    for number, step in enumerate(steps, start=1):
        why = step.brief_template or first_sentence(step.explanation_template)
        step = replace(step, explanation_template=why, parts=(), notes=())
        if step.kind == "weights" and _sums_to_one(step.row_sums):  # a column of 1s
            step = replace(step, row_sums=None)
        # A detail, between the main steps: its heading and why say it. The last step is the
        # walkthrough's result (a pre-norm layer's residual sum): shown, detail or not.
        if step.detail and number < len(steps):
            shortened.append(_text_step(step, ""))
            continue
        said = _said_in_a_line(step, number, steps)
        shortened.append(step if said is None else _text_step(step, said))
    return tuple(shortened)


def with_brief_whys(walkthrough: Walkthrough) -> Walkthrough:
    """The walkthrough whole, but for its words: the introduction's first sentence and each
    step's why in one line, as :func:`brief` has them (slides: ``--format beamer``)."""
    steps = tuple(
        replace(
            step,
            explanation_template=step.brief_template or first_sentence(step.explanation_template),
        )
        for step in walkthrough.steps
    )
    intro = first_sentence(walkthrough.intro) if walkthrough.intro else ""
    return replace(walkthrough, intro=intro, steps=steps)


def brief(walkthrough: Walkthrough, *, weights: bool = False) -> Walkthrough:
    """The walkthrough in brief (``weights``: the learned weights among the inputs too)."""
    inputs = tuple(item for item in walkthrough.inputs if weights or not item.weight)
    left_out = [
        item.name for item in walkthrough.inputs if not any(item is kept for kept in inputs)
    ]
    notes: tuple[Note, ...] = ()
    if left_out:
        text = f"Not shown in brief: the learned weights {', '.join(left_out)}."
        notes = (Note.fixed("brief_weights", text),)
    items = tuple(brief(item, weights=weights) for item in walkthrough.items)
    return replace(
        walkthrough,
        intro=first_sentence(walkthrough.intro) if walkthrough.intro else "",
        example_description=first_sentence(walkthrough.example_description),
        inputs=inputs,
        steps=brief_steps(walkthrough.steps),
        notes=notes,
        items=items,
        is_brief=True,
    )
