"""Checks and words the lessons share: whole-number options, counts with their noun, row names."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from attn_cli.core.errors import UserError, param
from attn_cli.core.numbers import whole_text

if TYPE_CHECKING:
    from attn_cli.course.lesson import LessonRun


def is_whole(value: object) -> TypeGuard[int]:
    """Whether an option is a whole number (a lesson file's ``true`` is not 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def counted(count: int, word: str, plural: str | None = None) -> str:
    """A count and its noun, singular for exactly one: 1 head, 2 heads."""
    return f"{whole_text(count)} {word if count == 1 else plural or word + 's'}"


def whole_option(value: object, keyword: str) -> int:
    """An option that must be a whole number, else a UserError naming it, the parameter
    ``keyword``, as given."""
    if not is_whole(value):
        raise UserError(f"{param(keyword, repr(value))}: give a whole number.")
    return value


def whole_at_least(value: object, name: str, minimum: int = 1, meaning: str = "") -> int:
    """An option that must be a whole number >= ``minimum``, else a UserError naming it,
    ``name`` (core.errors.param of its keyword, as a door spells it), and what the number
    counts (``meaning``)."""
    if not is_whole(value) or value < minimum:
        counts = f" ({meaning})" if meaning else ""
        raise UserError(f"{name} must be a whole number >= {minimum}{counts}, not {value!r}.")
    return value


def kv_heads_option(value: object, heads: int) -> int | None:
    """--kv-heads g as given (None: not given), checked: a whole number that divides h, the
    query heads, so that each key/value head serves h/g of them (grouped-query attention)."""
    if value is None:
        return None
    g = whole_at_least(value, f"{param('kv_heads')} (options.kv_heads)", meaning="key/value heads")
    if g > heads or heads % g:
        divisors = ", ".join(str(k) for k in range(1, heads + 1) if heads % k == 0)
        raise UserError(
            f"{param('kv_heads', g)} does not divide {param('heads', heads)}: each key/value head serves h/g "
            f"query heads; give one of {divisors}."
        )
    return g


def check_causal_square(m: int, n: int) -> None:
    """--causal pairs query i with keys 1..i: it needs as many queries as keys."""
    if m != n:
        raise UserError(
            f"{param('causal')} needs as many queries as keys (query i sees keys 1..i), but Q has "
            f"{counted(m, 'row')} and K has {n}."
        )


def same_positions(q_shape: tuple[int, ...], k_shape: tuple[int, ...], position: str) -> None:
    """A positional lesson's Q and K (ALiBi, RoPE): row ``position`` of each is the query and the
    key at that position, so they have the same rows n, and the same width d."""
    if q_shape[0] != k_shape[0]:
        raise UserError(
            f"Q has {q_shape[0]} rows but K has {k_shape[0]}: row {position} of each is the query "
            f"and the key at position {position}, so give Q and K the same number of rows n."
        )
    if q_shape[1] != k_shape[1]:
        raise UserError(
            f"Q has {q_shape[1]} columns but K has {k_shape[1]}: Q and K must share d (each "
            "score is a dot product of a query row with a key row)."
        )


def positional_shapes(sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Random inputs of a positional lesson: Q and K, n × d_k each."""
    n, d = sizes["n"], sizes["dk"]
    return {"Q": (n, d), "K": (n, d)}


def labels(prefix: str, count: int) -> tuple[str, ...]:
    """Row or column labels: q1, q2, ... (1-based, as on the slides)."""
    return tuple(f"{prefix}{index}" for index in range(1, count + 1))


def column_names(run: LessonRun, key: str, count: int) -> tuple[str, ...] | None:
    """The names an example gives the ``count`` columns of its inputs (``labels.KEY``: their
    features), or None (numbered); a lesson file's example with the wrong count is refused."""
    names = run.labels.get(key)
    if not names:
        return None
    if len(names) != count:
        raise UserError(
            f"the example's labels.{key} gives {counted(len(names), 'name')} but the inputs "
            f"have {counted(count, 'column')}; give one name per column."
        )
    return tuple(names)


def row_names(run: LessonRun, key: str, count: int, prefix: str, option: str) -> tuple[str, ...]:
    """The names given for ``count`` rows (``run.labels[key]``), else prefix1, prefix2, ...;
    ``option``: what gives them, as messages name it (core.errors.param("tokens"))."""
    names = run.labels.get(key)
    if not names:
        return labels(prefix, count)
    if len(names) != count:
        raise UserError(
            f"{option} (or the example's labels.{key}) gives {counted(len(names), 'name')} but "
            f"there {'is' if count == 1 else 'are'} {counted(count, 'row')}; give one name per row."
        )
    return tuple(names)
