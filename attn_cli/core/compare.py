"""Two runs of a lesson compared (``--compare "FLAGS"``): the steps whose values differ, each as
given and then with FLAGS, as one walkthrough that every renderer shows (rich: side by side).

Which steps differ is decided from the values themselves (exactly equal arrays, records and
texts are the same), so the sentence that says how many differ is true of them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from attn_cli.core.brief import with_brief_whys
from attn_cli.core.model import COMPARED, InputValue, Step, Walkthrough


def same_value(a: Any, b: Any) -> bool:
    """Whether two values are equal: arrays of one shape and the same entries (NaN equal to
    NaN), records and texts equal."""
    if isinstance(a, dict | list | str) or isinstance(b, dict | list | str):
        try:
            return bool(a == b)
        except ValueError:  # records holding arrays
            return repr(a) == repr(b)
    left, right = np.asarray(a), np.asarray(b)
    if left.shape != right.shape:
        return False
    if left.dtype.kind in "biuf" and right.dtype.kind in "biuf":
        return bool(np.array_equal(left, right, equal_nan=True))
    return bool(np.array_equal(left, right))


def _titled(step: Step, words: str, key: str | None = None) -> Step:
    """The step with ``words`` after its title (as a template: braces escaped)."""
    escaped = words.replace("{", "{{").replace("}", "}}")
    return replace(step, key=key or step.key, title_template=f"{step.title_template} · {escaped}")


def compared(first: Walkthrough, second: Walkthrough, flags: str) -> Walkthrough:
    """One walkthrough of what differs: the steps whose values differ (a step only one run has
    counts as differing), each as given and then with ``flags``, its why in one line (as
    --brief says it); the inputs of the first run, and those of the second that differ."""
    first, second = with_brief_whys(first), with_brief_whys(second)
    theirs = {step.key: step for step in second.steps}
    ours = {step.key for step in first.steps}
    steps: list[Step] = []
    changed = 0
    for step in first.steps:
        other = theirs.get(step.key)
        if other is not None and same_value(step.value, other.value):
            continue
        changed += 1
        steps.append(_titled(step, "as given" if other else "as given (not in the other run)"))
        if other is not None:
            steps.append(_titled(other, f"with {flags}", step.key + COMPARED))
    for step in second.steps:
        if step.key not in ours:
            changed += 1
            steps.append(
                _titled(step, f"with {flags} (not in the run as given)", step.key + COMPARED)
            )
    given = {item.name: item for item in first.inputs}
    inputs: list[InputValue] = list(first.inputs)
    for item in second.inputs:
        mine = given.get(item.name)
        if mine is None or not same_value(mine.value, item.value):
            inputs.append(replace(item, name=f"{item.name} (with {flags})"))
    total = len(ours | set(theirs))
    same = total - changed
    others = "the other one is" if same == 1 else f"the other {same} are"
    said = (
        f"The lesson as given, and again with {flags}: {changed} of its {total} steps differ, "
        f"each shown as given and then with {flags}"
        + (f"; {others} the same in both runs." if same else ".")
        if changed
        else f"The lesson as given, and again with {flags}: all {total} steps are the same."
    )
    return replace(
        first,
        title=f"{first.title} · compared with {flags}",
        intro=said,
        inputs=tuple(inputs),
        steps=tuple(steps),
        notes=(),
        items=(),
        compared=flags,
    )
