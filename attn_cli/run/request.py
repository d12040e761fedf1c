"""What a lesson run is asked for, from whichever door asked: one builder for all of them.

The command line's parsed parameters, a Python call's arguments (``attn_cli.scaled(...)``) and
the explorer's screen all name what they give by the same keywords: each input by its card's
keyword (``q``, ``wq``), each option and size by its name, and the run settings below. From
them :func:`request_for` makes the :class:`~attn_cli.run.runner.RunRequest`, checking what the
card declares (an option's least value), so that a value is refused in the same words whichever
door it came through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attn_cli.core.errors import PYTHON, Door, UserError, param

if TYPE_CHECKING:
    from attn_cli.core.card import Card, Option
    from attn_cli.run.runner import RunRequest

# The settings of a run that every lesson takes besides its own inputs, options and sizes, with
# their defaults: the one list (the command line's shared options and the Python functions'
# keywords are made from it). Where a lesson draws nothing (no --seed), takes no batch (no
# --item) or names no rows (no --tokens), it does not take the setting (run_settings).
RUN_SETTINGS: dict[str, Any] = {
    "example": None,
    "item": 0,
    "lesson": None,
    "tokens": None,
    "seed": 0,
    "backend": None,
    "device": "cpu",
    "dtype": "float64",
    "time": False,
}

# What each run setting does, for every door's help (the command line's --help and the Python
# functions' docstrings): a parameter named as {seed} is spelt by the door (core.card.help_words).
# Only the command line's own words (a flag Python has no keyword for) are added there.
RUN_SETTING_HELP: dict[str, str] = {
    "example": "Lecture example to run.",
    "item": "With batched inputs (a leading batch dimension: JSON nested one level deeper, a "
    '3-D .npy, items separated by "|"): the item shown, from 0. The JSON holds every item.',
    "lesson": "A lesson file of your own (TOML; the format: attn check --help).",
    "tokens": 'Names for the tokens (rows), e.g. "the,cat,slept".',
    "seed": "Seed for random inputs: the same N, the same inputs.",
    "backend": "Array library (default: numpy; torch for a GPU device).",
    "device": "Where to compute (torch only off the CPU).",
    "dtype": "Floating-point type of the computation.",
    "time": "Show each step's time: the device's time for the step's computation alone (never "
    "the copy to the host, the statistics or the checks), warm (after one untimed run), the "
    "median of {runs} runs.",
}
# Where the lesson has dropout, the seed draws its mask too.
DROPOUT_SEED_HELP = (
    "Seed for random inputs and for the {dropout} mask (each generator starts afresh from it)."
)


def run_settings(card: Card) -> dict[str, Any]:
    """The run settings lesson ``card`` takes, with their defaults, in RUN_SETTINGS' order."""
    left_out = {
        "seed": not card.seed,
        "item": not card.batches,
        "tokens": card.rows is None,
    }
    return {name: value for name, value in RUN_SETTINGS.items() if not left_out.get(name)}


def request_for(
    card: Card,
    given: Mapping[str, Any],
    *,
    python: bool = False,
    keep: bool = False,
    door: Door = PYTHON,
) -> RunRequest:
    """The run of ``card``'s lesson that ``given`` asks for (a keyword not given takes its
    default). ``python``: a Python call asked (its errors name its arguments); ``keep``: keep
    what the lesson draws for the next run (the explorer); ``door``: how the door that asks
    names parameters in what the walkthrough says."""
    from attn_cli.run.runner import RunRequest

    settings = {**run_settings(card), **{k: v for k, v in given.items() if k in RUN_SETTINGS}}
    options = {
        option.name: plain_option(given[option.name], option)
        for option in card.options
        if option.lesson and option.name in given
    }
    for option in card.options:
        check_least(option, options.get(option.name))
    lesson_file = settings["lesson"]
    return RunRequest(
        lesson=card.name,
        inputs={spec.name: given.get(spec.keyword) for spec in card.inputs},
        options=options,
        sizes={size.name: given.get(size.name) for size in card.sizes},
        labels=row_labels(settings.get("tokens"), card.rows),
        example=settings["example"],
        item=settings.get("item", 0),
        lesson_file=None if lesson_file is None else Path(lesson_file),
        seed=settings.get("seed", 0),
        backend=_text(settings["backend"]),
        device=str(_text(settings["device"])),
        dtype=str(_text(settings["dtype"])),
        time_steps=bool(settings["time"]),
        keep=keep,
        python=python,
        door=door,
    )


def plain_option(value: Any, option: Option) -> Any:
    """An option as the lesson reads it: a choice as its text, an array (valid_len=np.array
    ([2, 3])) as the list it holds, and a flag not given as None (the example's or the lesson's
    default: a flag's False from the command line means it was not given)."""
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return value.tolist()
    flag = option.type is bool and not option.switch
    return None if flag and not value else value


def check_least(option: Option, value: Any) -> None:
    """Refuse a number below the option's least value (Option.minimum), in one line."""
    least = option.minimum
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if least is not None and number and value < least:
        raise UserError(f"{param(option.name)} must be at least {least}, not {value}.")


def row_labels(tokens: str | Sequence[str] | None, rows: str | None) -> dict[str, tuple[str, ...]]:
    """--tokens as the labels of the lesson's rows: "a,b,c" (the command line's text) or, from
    Python, a list of names."""
    if tokens is None or rows is None:
        return {}
    if isinstance(tokens, str):
        from attn_cli.core.matrices import parse_names

        return {rows: parse_names(tokens, param("tokens"))}
    from attn_cli.core.usertext import printable

    names = tuple(printable(str(token)) for token in tokens)
    if not names or not all(names):
        raise UserError(
            f'{param("tokens")} needs one non-empty name per row, e.g. ["the", "cat", "slept"].'
        )
    return {rows: names}


def _text(value: Any) -> Any:
    """A choice as its text (the command line hands over enum members)."""
    return value.value if isinstance(value, Enum) else value
