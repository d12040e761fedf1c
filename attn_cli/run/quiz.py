"""Quiz mode (``--quiz`` on any lesson command): the learner computes, the tool marks.

It shows the inputs and what the run was asked for (the example's description, the options
changed from the lesson's defaults), then each step's title and shape, and asks for the values
one row at a time, to the decimals of ``--precision`` (said at the start). An answer is right
when every number agrees with the exact value to those decimals: within half a unit of the last
of them (0.2361 for 0.23614 at 4 decimals; 1 for exactly 1). An answer that is right only to
fewer decimals ("0.2, 0.5, 0.2" for 0.2361, 0.5254, 0.2385, asked to 4) is not counted, and
the mark says to how many decimals it was right. Steps too large to type, and tables or text,
are shown rather than asked.

With nobody at the terminal (stdin or stdout a pipe or a file) it prints a handout: the blanks,
then, after a page break (a form feed: printed, the key starts on a page of its own), the answer
key. The Console does all printing; this module decides what to print.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from attn_cli.core.errors import PYTHON, Door, UserError
from attn_cli.core.matrices import split_rows
from attn_cli.core.model import Step, Walkthrough
from attn_cli.core.numbers import format_number
from attn_cli.core.rounding import OutOfRange, Rounded, parse_rounded
from attn_cli.render import RenderOptions
from attn_cli.render.rich_render import (
    inputs_renderables,
    notes_renderables,
    step_notes,
    step_rule,
    step_value,
)

# A step larger than this is shown in full rather than typed in.
MAX_ROWS = 12
MAX_COLS = 8
BLANK = "______"
QUIT = "q"


@dataclass(frozen=True)
class Question:
    """A step to fill in: its number, the step, and its value as rows (None: shown only)."""

    number: int
    step: Step
    rows: np.ndarray | None  # float64, 2-D
    row_names: tuple[str, ...] = ()

    @property
    def asked(self) -> bool:
        return self.rows is not None


@dataclass(frozen=True)
class Mark:
    right: bool
    wrong_entries: tuple[int, ...] = ()  # 1-based positions that are off
    # Not right to the decimals asked, but every number right to the decimals it was typed
    # with: the fewest of those (0.2 for 0.2361 is right to 1 decimal); None otherwise.
    right_to: int | None = None


@dataclass
class Score:
    right: int = 0
    asked: int = 0
    stopped: bool = False
    followed: int = 0  # rows wrong, but right for the student's own earlier answer
    # Each step's rows as typed (NaN where skipped or not parsed), by step key: what a later
    # step follows from.
    typed: dict[str, np.ndarray] = field(default_factory=dict)
    walkthrough: Walkthrough | None = None  # what is asked: its steps, exact
    # The steps with a row wrong to the decimals it was typed with (not a rounding): what a
    # later step can follow from.
    slipped: set[str] = field(default_factory=set)


def questions(walkthrough: Walkthrough) -> list[Question]:
    """One question per step; numeric steps small enough to type are asked row by row."""
    out = []
    for number, step in enumerate(walkthrough.steps, start=1):
        rows = _rows(step)
        if rows is None:
            out.append(Question(number, step, None))
            continue
        names: tuple[str, ...]
        if rows.shape[0] == 1 and np.ndim(step.value) < 2:
            names = ("value",) if np.ndim(step.value) == 0 else ("values",)
        elif step.row_labels and len(step.row_labels) == rows.shape[0]:
            names = tuple(f"row {label}" for label in step.row_labels)
        else:
            names = tuple(f"row {index}" for index in range(1, rows.shape[0] + 1))
        out.append(Question(number, step, rows, names))
    if not any(question.asked for question in out):
        raise UserError(
            "--quiz needs a step small enough to type in (at most "
            f"{MAX_ROWS} rows of {MAX_COLS} numbers); run a lecture example or choose smaller "
            "sizes."
        )
    return out


def _rows(step: Step) -> np.ndarray | None:
    if step.kind in ("records", "histogram", "text"):
        return None
    try:
        value = np.asarray(step.value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if value.ndim > 2:
        return None
    rows = value.reshape(1, -1) if value.ndim < 2 else value
    if rows.shape[0] > MAX_ROWS or rows.shape[1] > MAX_COLS or rows.size == 0:
        return None
    return rows


def parse_answer(line: str, width: int) -> list[Rounded] | str:
    """The numbers of one typed row, or what is wrong with the line."""
    try:
        cells = [cell for row in split_rows(line, "your answer") for cell in row]
    except UserError as error:
        return str(error)
    try:
        numbers = [parse_rounded(cell) for cell in cells]
    except OutOfRange as error:
        return f"{error}; type the numbers of this row."
    bad = [cell for cell, number in zip(cells, numbers, strict=True) if number is None]
    if bad:
        return f"{bad[0]!r} is not a number; type {width} number(s) separated by commas."
    if len(numbers) != width:
        return f"that is {len(numbers)} number(s); this row has {width}."
    return [number for number in numbers if number is not None]


def mark(answer: list[Rounded], exact: np.ndarray, precision: int) -> Mark:
    """Right when every number agrees with the exact one to ``precision`` decimals; else the
    entries that do not, and whether the answer is right to the decimals it was typed with."""
    asked = replace(answer[0], half_unit=0.5 * 10.0**-precision) if answer else None
    wrong = []
    for position, (number, value) in enumerate(zip(answer, exact, strict=True), start=1):
        assert asked is not None
        if not replace(asked, value=number.value).matches(float(value)):
            wrong.append(position)
    if not wrong:
        return Mark(True)
    # Right to the decimals typed? Not for a whole number where the value has decimals: "1"
    # says the value is whole, not that it is 0.7071 to no decimals.
    own = all(
        number.says(float(value), precision) for number, value in zip(answer, exact, strict=True)
    )
    typed = min((number.decimals for number in answer if number.has_decimals), default=0)
    return Mark(False, tuple(wrong), typed if own and typed < precision else None)


def run_quiz(
    walkthrough: Walkthrough,
    console: Console,
    *,
    precision: int,
    interactive: bool,
    read_line: Callable[[str], str | None],
    door: Door = PYTHON,
    answers: Console | None = None,
) -> Score:
    """Ask (at a terminal) or print a handout with an answer key (otherwise); ``door``: how
    the options given are named; ``answers``: where the answer key goes instead (a file of its
    own: the handout then holds the blanks alone), after the quiz's title and setting."""
    options = RenderOptions(precision=precision)
    items = questions(walkthrough)
    role = "asked" if interactive else "handout" if answers is None else "blanks"
    for shown, said in ((console, role), (answers, "key")):
        if shown is None:
            continue
        shown.print(_title(walkthrough, precision, said))
        shown.print(_setting(walkthrough, door))
        shown.print(Group(*inputs_renderables(walkthrough, options)))
    if answers is not None:
        _key(walkthrough, items, answers, options, after_blanks=False)
    if not interactive:
        _blanks_of(items, console, options)
        if answers is None:
            _key(walkthrough, items, console, options, after_blanks=True)
        return Score()
    score = Score(walkthrough=walkthrough)
    for item in items:
        console.print(Text(""), step_rule(item.step, item.number, precision))
        if not item.asked:
            console.print(Text("  (not asked: shown for reading)", style="dim"))
            _show_value(item.step, console, options)
        elif not score.stopped:
            _ask(item, console, precision, read_line, score)
            if score.stopped:
                _show_value(item.step, console, options)
        else:
            _show_value(item.step, console, options)
        _print_notes(item.step, console, precision)
    if walkthrough.notes:
        console.print(Group(*notes_renderables(walkthrough, precision)))
    console.print()
    console.print(_score_line(score))
    return score


def _title(walkthrough: Walkthrough, precision: int, role: str) -> RenderableType:
    """The quiz's title and what to do, for its ``role``: "asked" (at a terminal), "handout"
    (the blanks, the key after them), "blanks" (the key in a file of its own), "key" (that
    file)."""
    name = "Answer key" if role == "key" else "Quiz"
    title = Text(f"{name} · {walkthrough.title}", style="bold")
    if walkthrough.example:
        title.append(f" · example {walkthrough.example}", style="bold cyan")
    # A lesson without matrix inputs (variance, posenc) gives its numbers in each step's title.
    source = "the inputs" if walkthrough.inputs else "the numbers in its step's title"
    fill = f"Fill in every blank from {source}, each number to {_decimals(precision)} (--precision)"
    how = {
        "asked": "Type each row's numbers separated by commas or spaces and press Enter, each to "
        f"{_decimals(precision)} (--precision), the last one rounded. An empty line skips a "
        "row; q stops.",
        "handout": f"{fill}; the answer key follows the blanks, on a page of its own.",
        "blanks": f"{fill}; the answer key is in a file of its own.",
        "key": f"The quiz's answers: every step's value, to {_decimals(precision)}.",
    }[role]
    return Text.assemble(title, "\n", Text(how, style="italic"))


def _decimals(count: int) -> str:
    return f"{count} decimal{'' if count == 1 else 's'}"


def _setting(walkthrough: Walkthrough, door: Door) -> RenderableType:
    """What the run was asked for, said before the blanks: the example's description and the
    options that differ from the lesson's defaults (spelt by ``door``: the command line's
    flags)."""
    from attn_cli.course import card, is_lesson

    lines = []
    if walkthrough.example_description:
        lines.append(Text(" ".join(walkthrough.example_description.split())))
    if is_lesson(walkthrough.lesson):
        declared = card(walkthrough.lesson)
        changed = declared.changed_options(walkthrough.meta.get("options", {}), declared.defaults)
        if changed:
            lines.append(Text("Options: " + door.words(changed)))
    return Group(*lines)


def _blanks_of(items: list[Question], console: Console, options: RenderOptions) -> None:
    """The handout's blanks: each step's title, and a blank for each number asked."""
    for item in items:
        console.print(Text(""), step_rule(item.step, item.number, options.precision))
        if item.asked:
            console.print(_blanks(item))
        else:
            console.print(Text("  (not asked: see the answer key)", style="dim"))


def _key(
    walkthrough: Walkthrough,
    items: list[Question],
    console: Console,
    options: RenderOptions,
    after_blanks: bool,
) -> None:
    """The answer key: every step's value and notes; ``after_blanks``, on the blanks' own
    output, after a page break, on a page of its own, never beside them."""
    if after_blanks:
        page_break(console)
    console.print(Rule("Answer key", style="bold"))
    for item in items:
        console.print(Text(""), step_rule(item.step, item.number, options.precision))
        _show_value(item.step, console, options)
        _print_notes(item.step, console, options.precision)
    if walkthrough.notes:
        console.print(Group(*notes_renderables(walkthrough, options.precision)))


# A form feed: a printer (and a PDF made from the text) starts a new page at it.
PAGE_BREAK = "\f"


def page_break(console: Console) -> None:
    """A page break in what ``console`` writes. Ours because rich strips control characters
    from all it prints (a form feed among them), so the Console's file takes it, between
    whole lines."""
    console.file.write(PAGE_BREAK)
    console.file.flush()


def _print_notes(step: Step, console: Console, precision: int) -> None:
    for note in step_notes(step, precision):
        console.print(note)


def _blanks(item: Question) -> RenderableType:
    assert item.rows is not None
    step = item.step
    n_rows, n_cols = item.rows.shape
    columns = step.col_labels if step.col_labels and len(step.col_labels) == n_cols else None
    table = Table(box=box.ROUNDED, header_style="bold")
    table.add_column("", style="bold", justify="right")
    for col in range(n_cols):
        table.add_column(Text(columns[col] if columns else str(col + 1)), justify="right")
    for row in range(n_rows):
        table.add_row(Text(item.row_names[row].removeprefix("row ")), *([BLANK] * n_cols))
    return Padding(table, (0, 0, 0, 2))


def _show_value(step: Step, console: Console, options: RenderOptions) -> None:
    console.print(step_value(step, options))


def _ask(
    item: Question,
    console: Console,
    precision: int,
    read_line: Callable[[str], str | None],
    score: Score,
) -> None:
    assert item.rows is not None
    typed = np.full(item.rows.shape, np.nan)
    score.typed[item.step.key] = typed
    for index, (name, exact) in enumerate(zip(item.row_names, item.rows, strict=True)):
        width = exact.size
        while True:
            prompt = f"  {name} ({width} number{'s' if width > 1 else ''}): "
            line = read_line(prompt)  # the reader writes the prompt (line editing redraws it)
            if line is None or line.strip().lower() == QUIT:
                score.stopped = True
                console.print(Text("\n  Stopped; the remaining steps are shown below.", "dim"))
                return
            if not line.strip():
                score.asked += 1
                console.print(Text(f"  skipped: the exact row is {_row_text(exact, precision)}"))
                break
            answer = parse_answer(line, width)
            if isinstance(answer, str):
                console.print(Text(f"  {answer} Try again.", style="yellow"))
                continue
            score.asked += 1
            typed[index] = [number.value for number in answer]
            result = mark(answer, exact, precision)
            own = result.right or result.right_to is not None  # right, to its own decimals
            if not own:
                score.slipped.add(item.step.key)
            found = None if own else _diagnosis(item, index, answer, score, precision)
            if found is not None and found[0] == "follows":
                score.followed += 1
                console.print(
                    Text(
                        f"  ↳ {found[1]}: this row follows from your own answer there (the "
                        f"exact row is {_row_text(exact, precision)})",
                        style="yellow",
                    )
                )
            elif result.right:
                score.right += 1
                console.print(Text(f"  ✓ right: {_row_text(exact, precision)}", style="green"))
            elif result.right_to is not None:
                console.print(
                    Text(
                        f"  ✗ right to {_decimals(result.right_to)}, but "
                        f"{_decimals(precision)} were asked: the exact row is "
                        f"{_row_text(exact, precision)}",
                        style="yellow",
                    )
                )
            else:
                off = ", ".join(str(position) for position in result.wrong_entries)
                which = f"entries {off} are" if len(result.wrong_entries) > 1 else f"entry {off} is"
                console.print(
                    Text(
                        f"  ✗ not right: the exact row is {_row_text(exact, precision)} "
                        f"({which} off)",
                        style="red",
                    )
                )
            if found is not None and found[0] == "mistake":
                console.print(Text(f"    {found[1]}.", style="red"))
            break


def _diagnosis(
    item: Question, index: int, answer: list[Rounded], score: Score, precision: int
) -> tuple[str, str] | None:
    """What a wrong row shows (attn_cli.course.mistakes): a named mistake, or that it follows
    from the student's own answer to the step before, where that was wrong."""
    from attn_cli import course
    from attn_cli.course.mistakes import before_key, diagnosis

    walkthrough = score.walkthrough
    if walkthrough is None or not course.is_lesson(walkthrough.lesson):
        return None
    steps = course.mistakes_of(walkthrough.lesson)
    after = before_key(steps, walkthrough, item.step.key)
    before = None
    if after is not None and after in score.slipped:  # the student's own, where wrong
        typed = score.typed[after]
        before = typed if not np.any(np.isnan(typed)) else None  # every row of it typed
    return diagnosis(steps, walkthrough, item.step.key, index, answer, before, precision)


def _row_text(row: np.ndarray, precision: int) -> str:
    return ", ".join(format_number(value, precision) for value in row)


def _score_line(score: Score) -> Text:
    if not score.asked:
        return Text("No rows answered.", style="bold")
    followed = (
        f"; {score.followed} more right for your own earlier answers (error carried forward)"
        if score.followed
        else ""
    )
    return Text(f"Score: {score.right} of {score.asked} rows right{followed}.", style="bold")
