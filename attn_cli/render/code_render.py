"""``--code``: the program behind a walkthrough's numbers.

A lesson's programs are its folder's ``program`` module (``attn_cli/course/<name>/program.py``,
handed in by the caller): ``numpy_program(walkthrough)`` and, where PyTorch has the thing,
``torch_program(walkthrough)``, each returning the text of a short, self-contained program that
computes the lesson's output from the walkthrough's inputs and options, written into it as
literals (every float as its full repr, so the numbers reproduce exactly). The program prints
its results one a line as ``name = [...]`` (a Python literal; ``inf`` and ``nan`` as Python
writes them), so that a reader (and the tests) can read them back.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import TYPE_CHECKING, Any

from attn_cli.core.errors import UserError, param

if TYPE_CHECKING:
    from attn_cli.core.model import Walkthrough

CODE_BACKENDS = ("numpy", "torch")


def program_text(
    walkthrough: Walkthrough, programs: ModuleType | None, backend: str = "numpy"
) -> str:
    """The program of ``walkthrough`` for ``backend`` ("numpy" or "torch"), as text, written by
    ``programs`` (its lesson's program module; None: the lesson has none)."""
    if backend not in CODE_BACKENDS:
        raise UserError(f"--code writes numpy or torch programs, not {backend!r}.")
    lesson = walkthrough.lesson
    if programs is None:
        raise UserError(f"attn {lesson} has no --code program yet; leave out --code.")
    write = getattr(programs, f"{backend}_program", None)
    if write is None:
        raise UserError(
            f"attn {lesson} --code has a numpy program only; leave out {param('backend', backend)}."
        )
    text: str = write(walkthrough)
    return text.strip("\n") + "\n"


# --- literals --------------------------------------------------------------------------------


def number(value: Any) -> str:
    """A float (or int) as Python source that reads back the same float64."""
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    value = float(value)
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else '-float("inf")'
    return repr(value)


def nested(value: Any, indent: int = 4) -> str:
    """A vector or matrix (numpy array or nested lists) as a nested list literal, a matrix one
    row a line."""
    rows = value.tolist() if hasattr(value, "tolist") else value
    if not isinstance(rows, list):
        return number(rows)
    if not rows or not isinstance(rows[0], list):
        return "[" + ", ".join(number(x) for x in rows) + "]"
    pad = " " * (indent + 4)
    inner = ",\n".join(pad + nested(row, indent + 4) for row in rows)
    return "[\n" + inner + ",\n" + " " * indent + "]"


def array(value: Any, module: str = "np", indent: int = 0) -> str:
    """``np.array([...])`` (or ``torch.tensor([...], dtype=torch.float64)``) of ``value``."""
    literal = nested(value, indent)
    if module == "torch" and _whole(value):
        return f"torch.tensor({literal})"
    if module == "torch":
        return f"torch.tensor({literal}, dtype=torch.float64)"
    return f"np.array({literal})"


def _whole(value: Any) -> bool:
    """Whether ``value`` holds integers (positions, lengths, an adjacency) rather than floats."""
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind is not None:
        return bool(kind in "iub")
    return isinstance(value, list) and all(isinstance(x, int) for x in value)


def assignments(values: dict[str, Any], module: str = "np") -> str:
    """``name = np.array(...)`` lines, one input each."""
    return "\n".join(f"{name} = {array(value, module)}" for name, value in values.items())


def inputs_of(walkthrough: Walkthrough) -> dict[str, Any]:
    """The walkthrough's inputs by name."""
    return {item.name: item.value for item in walkthrough.inputs}


def options_of(walkthrough: Walkthrough) -> dict[str, Any]:
    """The options the walkthrough was computed with."""
    options: dict[str, Any] = walkthrough.meta.get("options", {})
    return options


def refuse(lesson: str, option: str, why: str = "") -> UserError:
    """The one-line refusal of an option the program does not cover: ``option`` names the
    parameter as given (core.errors.param, e.g. ``param("dropout")``), spelt by the door."""
    reason = f" ({why})" if why else ""
    return UserError(f"attn {lesson} --code does not cover {option}{reason}; leave it out.")


PRINT_HELPER = "def show(name, value):\n    print(name, '=', np.asarray(value).tolist())\n"
TORCH_PRINT_HELPER = "def show(name, value):\n    print(name, '=', value.tolist())\n"
