"""What a lesson hands its texts: each step text and note it records, and the placeholder names
each one may read.

A lesson declares them once, ``LESSON = Lesson(..., texts=Texts(steps={...}, notes={...}))``,
mapping each text key to the names it hands over (shared sets are constants of the lesson
module, ``dropout.STEP_NAMES`` of the modules shared by several lessons). The declaration is the
reference for every reader:

* the loader's ``check_texts`` (:mod:`attn_cli.lessonfiles.loader`), when a lesson file is loaded for a run or a check (bundled or a
  lecturer's, the same way): a ``[steps.KEY]`` or ``[notes]`` key the lesson does not declare,
  or a placeholder a title, explanation or note reads that is not declared for its key, is a
  UserError naming the file and the field;
* the step recorder, while the lesson runs: a text key that is not declared, or a declared
  name the code does not hand over, is a bug in the lesson (TypeError), never a lecturer's;
* the lesson schema (its step and note keys) and the table of docs/lesson-files.md
  (:func:`markdown`, regenerated with ``python tools/regenerate.py``).

Every note is one of three kinds, declared beside it (a note of none, or of two, is a bug the
declaration refuses), so that each sentence about the numbers says how it is kept true
(docs/sentences.md lists them, generated):

* **measured**: it states values of this run, measured from its numbers and handed to it (a
  count, a size, a largest gap), with words that hold for any such values;
* **general**: it says what the run was asked for (an option, an input not given and drawn) or
  something true of every input (a definition), not a property of these numbers;
* **claim**: it states a property of the numbers on screen (falls, flatter, zero, largest,
  symmetric, grows with), and so can be false.

A note that states a property of the numbers on screen is a **claim**: the lesson declares, beside the note's key, the condition
under which its words are true, ``Texts(notes={...}, claims={"falls": falls_with_distance})``.
The condition reads the finished walkthrough (the values a reader sees) and the note's own
values; when the walkthrough is finished, a note whose condition does not hold is withheld
(:attr:`~attn_cli.core.model.Walkthrough.withheld`), never printed. The words stay in the lesson file,
next to the others; the condition is code, so a lecturer's rewording cannot remove it. A step's
explanation says only what is true of every input (or states its assumption); a sentence about
this input's numbers is a note.

This module is light (no numpy): the lessons import it, and the loader reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attn_cli.core.templates import template_fields, unknown_placeholder

if TYPE_CHECKING:
    from attn_cli.core.model import Walkthrough

Names = tuple[str, ...]

# A claim's condition: (the finished walkthrough, the note's values) -> whether its words hold.
Claim = Callable[["Walkthrough", Mapping[str, Any]], bool]


def _names(names: Iterable[str]) -> Names:
    """The names once each, in the order given."""
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Texts:
    """A lesson's texts: step text key -> the placeholder names it hands over; note key -> the
    values it hands over. Keys in the order the bundled file lists them."""

    steps: Mapping[str, Names] = field(default_factory=dict)
    notes: Mapping[str, Names] = field(default_factory=dict)
    # Note key -> the condition under which its words are true of the walkthrough (a claim).
    claims: Mapping[str, Claim] = field(default_factory=dict)
    # The notes that state values measured from the run and handed to them (see the module).
    measured: Iterable[str] = ()
    # The notes that say what was asked, or what holds for every input (see the module).
    general: Iterable[str] = ()

    def __post_init__(self) -> None:
        # Accept any iterable of names (a tuple constant, a set expression) and keep a tuple.
        for table in ("steps", "notes"):
            given: Mapping[str, Iterable[str]] = getattr(self, table)
            object.__setattr__(self, table, {key: _names(n) for key, n in given.items()})
        for kind in ("measured", "general"):
            object.__setattr__(self, kind, _names(getattr(self, kind)))
        kinds = {"claims": set(self.claims), "measured": set(self.measured)}
        kinds["general"] = set(self.general)
        for kind, keys in kinds.items():
            undeclared = sorted(keys - set(self.notes))
            if undeclared:
                raise TypeError(f"{kind} {undeclared} name no declared note")
        counted = [key for keys in kinds.values() for key in keys]
        twice = sorted({key for key in counted if counted.count(key) > 1})
        unsaid = [key for key in self.notes if key not in counted]
        if twice or unsaid:
            raise TypeError(
                f"every note is one kind of sentence (claims, measured or general): "
                f"{'of two: ' + str(twice) if twice else ''}{'of none: ' + str(unsaid) if unsaid else ''}"
            )

    def kind(self, note: str) -> str:
        """How note ``note`` is kept true: "claim", "measured" or "general"."""
        if note in self.claims:
            return "claim"
        return "measured" if note in self.measured else "general"


def check_placeholders(template: str, names: Iterable[str], where: str) -> None:
    """Every placeholder of ``template`` must be one of ``names``; else a UserError at ``where``."""
    known = set(names)
    for _literal, name, _spec, _ in template_fields(template, where):
        if name is not None and not name.startswith("@") and name not in known:
            raise unknown_placeholder(name, known, where)


# --- the table of docs/lesson-files.md -------------------------------------------------------

BEGIN = "<!-- BEGIN texts: generated by python tools/regenerate.py -->"
END = "<!-- END texts -->"


def markdown(declared: Mapping[str, Texts]) -> str:
    """Each lesson's step texts and notes with their placeholders, as Markdown tables: the keys
    that hand over the same names share a row."""
    lines: list[str] = []
    for lesson, texts in declared.items():
        lines += ["", f"#### `{lesson}`", "", "| Texts | Placeholders |", "|---|---|"]
        for table, keys in (("steps", texts.steps), ("notes", texts.notes)):
            groups: dict[Names, list[str]] = {}
            for key, names in keys.items():
                groups.setdefault(names, []).append(key)
            for names, members in groups.items():
                shown = ", ".join(
                    f"`[steps.{key}]`" if table == "steps" else f"`[notes] {key}`"
                    for key in members
                )
                placeholders = " ".join(f"`{{{name}}}`" for name in names) or "none"
                lines.append(f"| {shown} | {placeholders} |")
        if texts.claims:
            claimed = ", ".join(f"`{key}`" for key in texts.claims)
            lines += ["", f"Printed only when what they say holds for the numbers: {claimed}."]
    return "\n".join(lines[1:])


# What each kind of note is, as docs/sentences.md says it.
KINDS = {
    "claim": "a claim: printed only when its condition holds for the numbers on screen",
    "measured": "measured: it states values of this run, handed to it",
    "general": "general: what the run was asked for, or true of every input",
}


def sentence_audit(declared: Mapping[str, Texts], words: Mapping[str, Mapping[str, str]]) -> str:
    """docs/sentences.md: every note of every lesson, its words (``words``: lesson -> note key
    -> the bundled text) and how it is kept true: a claim's condition (its docstring's first
    sentence), or why it needs none."""
    lines = [
        "# Every sentence about the numbers, and what keeps it true",
        "",
        "<!-- Generated by python tools/regenerate.py: do not edit by hand. -->",
        "",
        "Each note a lesson can print is one of three kinds, declared beside it in the lesson's",
        "code (`Texts(claims=..., measured=..., general=...)`; a note of no kind, or of two, is",
        "refused when the lesson loads):",
        "",
        *(f"- **{kind}**: {what.split(': ', 1)[1]}." for kind, what in KINDS.items()),
        "",
        "A step's explanation says only what is true of every input; a sentence about these",
        "numbers is a note. The tests run every claim on the lessons' examples, their option",
        "variants and seeded random and degenerate inputs (tests/test_claims.py): a claim shown",
        "must hold, and every claim must be shown at least once.",
    ]
    for lesson, texts in declared.items():
        lines += ["", f"## `{lesson}`", "", "| note | words | kept true by |", "|---|---|---|"]
        for key in texts.notes:
            said = " ".join(words.get(lesson, {}).get(key, "").split()).replace("|", "\\|")
            kind = texts.kind(key)
            how = kind
            if kind == "claim":
                condition = texts.claims[key]
                doc = " ".join((condition.__doc__ or "").split())
                first = doc.split(": ", 1)[-1] if doc.startswith("Claim of") else doc
                how = f"claim `{condition.__name__}`: {first}"
            lines.append(f"| `{key}` | {said} | {how} |")
    return "\n".join(lines) + "\n"


def with_table(document: str, table: str) -> str:
    """``document`` with the text between the BEGIN and END markers replaced by ``table``."""
    head, begin, rest = document.partition(BEGIN)
    _old, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"the document lacks the markers {BEGIN!r} and {END!r}")
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"
