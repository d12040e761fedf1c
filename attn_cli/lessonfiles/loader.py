"""Lesson files: a lesson's examples and step explanations, as TOML data.

Schema (every field but ``lesson`` optional in a lecturer's own file)::

    lesson = "scaled"                  # which computation: scaled, bahdanau, selfattn, ...
    title = "Scaled dot-product attention"
    intro = "One paragraph shown before the steps."
    default_example = "two-tokens"

    [steps.scores]                     # one table per step key
    title = "Scores  S = Q Kᵀ"
    explanation = "Text; {placeholders} are filled by the lesson (e.g. {dk})."
    latex = "S = QK^\\top"

    [notes]                            # the words of the lesson's notes, by key
    no_scale = "Scores are not scaled here (--no-scale)."

    [headings]                         # the display heading of a table column, by key
    max_abs_diff = "max |Δ|"

    [[examples]]
    name = "two-tokens"
    description = "..."
    source = "where it comes from (slide, page)"
    options = { scale = true }         # lesson options
    [examples.inputs]                  # numbers, lists, or strings in the matrix grammar
    Q = [[1, 0], [0, 1]]
    [examples.printed]                 # what the slide printed, as text (decimals matter)
    weights = "0.33,0.67; 0.67,0.33"
    [examples.labels]                  # optional names for rows (each lesson says which)
    keys = ["the", "cat", "slept"]

The keys each table may hold are defined once, as pydantic models, in
:mod:`attn_cli.lessonfiles.grammar`: the loader refuses any other key in a lecturer's file (with a
did-you-mean), and :mod:`attn_cli.lessonfiles.schema` generates the JSON Schema editors validate
with from the same models.

The bundled files live in ``lessons/`` at the top of the repository and inside the wheel at
``attn_cli/lessons``; the tests check them against the format (tests/test_lesson_strict.py), so a
run reads them without (:func:`load_bundled`). A lecturer's own file (``--lesson``, ``attn check``) takes what it leaves
out from the bundled file of its lesson (:func:`own_lesson_file`). A lecturer's step texts and
notes are checked against the texts its lesson declares (their keys and placeholders,
:mod:`attn_cli.lessonfiles.texts`) before it runs; the bundled ones by the tests. The full description, with
the rounding rule for printed values, is docs/lesson-files.md.
"""

from __future__ import annotations

import os
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from attn_cli.core.errors import UserError
from attn_cli.core.matrices import as_matrix_or_batch
from attn_cli.core.paths import not_a_file
from attn_cli.core.templates import template_fields
from attn_cli.core.usertext import printable
from attn_cli.lessonfiles.texts import Names, Texts, check_placeholders

if TYPE_CHECKING:  # the lessons import this module; the caller hands it their declarations
    from collections.abc import Mapping, Sequence

    from attn_cli.core.card import Card, InputSpec


class DeclaredLesson(Protocol):
    """What the loader reads of a lesson's declaration (attn_cli.course.lesson.Lesson is one;
    the loader sits below the lessons, which import it)."""

    @property
    def name(self) -> str: ...

    @property
    def card(self) -> Card: ...

    @property
    def inputs(self) -> tuple[InputSpec, ...]: ...

    @property
    def labels(self) -> tuple[str, ...]: ...

    @property
    def options(self) -> dict[str, Any]: ...

    @property
    def texts(self) -> Texts: ...


class Declarations(Protocol):
    """The lessons the loader checks a file against, handed to it by its caller (the course's
    registry, attn_cli.course, is one): their names, and each one's declaration."""

    def lesson_names(self) -> Sequence[str]: ...

    def get_lesson(self, name: str) -> DeclaredLesson: ...


# What a lesson file may hold: a course's examples fit easily; more is a mistake or an attack
# (a 10 MB file took attn check past 20 s before these limits).
MAX_LESSON_FILE_BYTES = 2 * 2**20
MAX_EXAMPLES = 500


@dataclass(frozen=True)
class StepWords:
    """The words a step is shown with (LessonFile.text): title and explanation always given."""

    title: str
    explanation: str
    latex: str | None
    brief: str | None = None  # the why in one line (--brief); None: the explanation's first
    detail: bool = False  # --brief shows the step without its value


@dataclass(frozen=True)
class StepText:
    """The words of one step; a field a lecturer's file leaves out is None (the bundled one is
    used, see :meth:`LessonFile.over`)."""

    title: str | None = None
    explanation: str | None = None
    latex: str | None = None
    brief: str | None = None
    detail: bool | None = None

    def over(self, base: StepText | None) -> StepText:
        """These words, with each field left out taken from ``base``."""
        if base is None:
            return self
        return StepText(
            title=base.title if self.title is None else self.title,
            explanation=base.explanation if self.explanation is None else self.explanation,
            latex=base.latex if self.latex is None else self.latex,
            brief=base.brief if self.brief is None else self.brief,
            detail=base.detail if self.detail is None else self.detail,
        )


@dataclass(frozen=True)
class Example:
    name: str
    description: str = ""
    source: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    printed: dict[str, str] = field(default_factory=dict)
    # Names for rows, e.g. {"keys": ["the", "cat", "slept"]}; each lesson says which it reads.
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class LessonFile:
    lesson: str
    title: str
    intro: str
    steps: dict[str, StepText]
    examples: tuple[Example, ...]
    default_example: str | None
    path: Path | None = None
    # The top-level fields the file itself gives (the rest are defaults).
    fields: frozenset[str] = frozenset()
    # Note key -> its words (a template); column key of a records table -> its heading.
    notes: dict[str, str] = field(default_factory=dict)
    headings: dict[str, str] = field(default_factory=dict)

    def example(self, name: str | None) -> Example | None:
        """The named example (or the default one); a UserError lists the names."""
        name = name or self.default_example
        if name is None:
            return self.examples[0] if self.examples else None
        for example in self.examples:
            if example.name == name:
                return example
        names = ", ".join(example.name for example in self.examples) or "none"
        raise UserError(f"no example {name!r} in lesson {self.lesson!r}; choose one of: {names}.")

    def over(self, base: LessonFile) -> LessonFile:
        """This file, with what it leaves out (title, intro, step texts, notes, headings,
        examples) from ``base``."""
        own_examples = bool(self.examples)
        return replace(
            self,
            title=self.title if "title" in self.fields else base.title,
            intro=self.intro if "intro" in self.fields else base.intro,
            steps={
                **base.steps,
                **{key: text.over(base.steps.get(key)) for key, text in self.steps.items()},
            },
            notes={**base.notes, **self.notes},
            headings={**base.headings, **self.headings},
            examples=self.examples if own_examples else base.examples,
            default_example=self.default_example if own_examples else base.default_example,
        )

    def text(self, key: str) -> StepWords:
        """The words for step ``key``, every field filled: a step without a title is headed by
        its key, one without an explanation has none."""
        words = self.steps.get(key) or StepText()
        return StepWords(
            title=key if words.title is None else words.title,
            explanation=words.explanation or "",
            latex=words.latex,
            brief=words.brief,
            detail=bool(words.detail),
        )


def bundled_lessons_dir() -> Path:
    """``attn_cli/lessons`` in an installed wheel; the repository's ``lessons/`` in a checkout."""
    package_dir = Path(__file__).resolve().parent.parent  # attn_cli/, above lessonfiles/
    for candidate in (package_dir / "lessons", package_dir.parent / "lessons"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("the bundled lesson files are missing: reinstall attn-cli")


def is_bundled_file(path: Path) -> bool:
    """Whether ``path`` holds one of the bundled lesson files as shipped, byte for byte (it, or
    a copy: ``attn check lessons/scaled.toml`` checks the slides, not the user's own working)."""
    try:
        shipped = bundled_lessons_dir() / path.name
        return path.suffix == ".toml" and shipped.read_bytes() == path.read_bytes()
    except OSError:  # FileNotFoundError included: no bundled file of that name
        return False


def bundled_lesson_names() -> list[str]:
    return sorted(path.stem for path in bundled_lessons_dir().glob("*.toml"))


def load_bundled(lesson: str, *, checked: bool = False) -> LessonFile:
    """The bundled file of ``lesson``, read. The tests check every bundled file as a lecturer's
    is checked (the format, its placeholders, its texts against the lesson's declaration), and
    so does ``attn check --all`` (``checked``); a run reads it without."""
    return load_lesson_file(bundled_lessons_dir() / f"{lesson}.toml", checked=checked)


def with_checked_texts(file: LessonFile, texts: Texts) -> LessonFile:
    """``file``, once its step texts and notes are checked against its lesson's declared
    ``texts`` (:func:`check_texts`; once per file read)."""
    if _TEXTS_CHECKED.get(id(file)) is not file:
        check_texts(file, texts)
        _TEXTS_CHECKED[id(file)] = file
    return file


# Files whose texts were checked in this run (kept, so that their ids stay theirs).
_TEXTS_CHECKED: dict[int, LessonFile] = {}


def check_texts(file: LessonFile, texts: Texts) -> None:
    """Check a lesson file's step texts and notes against its lesson's declaration ``texts``:
    every key declared, every placeholder one its key hands over. A UserError names the file,
    the field and what is allowed there."""
    path = file.path or f"{file.lesson}.toml"
    lesson = file.lesson
    for key, words in file.steps.items():
        declared = texts.steps.get(key)
        if declared is None:
            raise _unknown_key(path, lesson, "steps", key, texts.steps)
        for name in ("title", "explanation"):
            template = getattr(words, name)
            if template is not None:
                check_placeholders(template, declared, f"{path}: [steps.{key}] {name}")
    for key, template in file.notes.items():
        declared = texts.notes.get(key)
        if declared is None:
            raise _unknown_key(path, lesson, "notes", key, texts.notes)
        check_placeholders(template, declared, f"{path}: [notes] {key}")


def _unknown_key(
    path: object, lesson: str, table: str, key: str, declared: Mapping[str, Names]
) -> UserError:
    what = "step" if table == "steps" else "note"
    place = f"[steps.{key}]:" if table == "steps" else f"[notes] {key}:"
    return UserError(
        printable(
            f"{path}: {place} lesson {lesson!r} has no {what} {key!r}; its {table} are: "
            f"{', '.join(declared) or 'none'}."
        )
    )


# Parsed lesson files by (path, modification time, size, whether checked against the format): one
# run reads each file once, even when a check and the lessons it runs each ask for it.
_PARSED: dict[tuple[str, int, int, bool], LessonFile] = {}


def load_lesson_file(path: Path, *, checked: bool = True) -> LessonFile:
    """Read and check a lesson file; every problem names the file, the field and the fix.
    ``checked=False``: a file the tests have checked (a bundled one), read without the checks
    of the format and of its placeholders' form."""
    where = str(path)
    kind = not_a_file(path)
    if kind is not None:
        raise UserError(f"lesson file {where!r} is {kind}, not a file; give a .toml file.")
    if not path.is_file():
        raise UserError(f"lesson file {where!r} not found; check the path.")
    stat = path.stat()
    version = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, checked)
    if version not in _PARSED:
        _PARSED[version] = _read_lesson_file(path, stat.st_size, checked=checked)
    return _PARSED[version]


def own_lesson_file(
    path: Path, declarations: Declarations, lesson: str | None = None
) -> LessonFile:
    """A lecturer's lesson file, checked against its lesson's declaration (``declarations``
    knows the lessons and gives each one's, by name) and completed from the bundled file.

    What the file leaves out (title, intro, step texts, even the examples) comes from the
    bundled lesson; every input, option and step it names must exist in the lesson.
    """
    own = load_lesson_file(path)  # parsed once per run (cached by the loader)
    done = _COMPLETED.get((id(own), lesson))
    if done is not None and done[0] is own:
        return done[1]
    completed = _complete_own_lesson_file(own, path, lesson, declarations)
    _COMPLETED[(id(own), lesson)] = (own, completed)
    return completed


# Lecturers' files already checked and completed in this run: `attn check` runs every example
# of a file, and each run asks for the file again (checking it each time was quadratic).
_COMPLETED: dict[tuple[int, str | None], tuple[LessonFile, LessonFile]] = {}


def _complete_own_lesson_file(
    own: LessonFile, path: Path, lesson: str | None, declarations: Declarations
) -> LessonFile:
    if own.lesson not in declarations.lesson_names():
        known = ", ".join(sorted(declarations.lesson_names()))
        raise UserError(
            f'{path}: lesson = "{own.lesson}" is not a lesson attn knows; set lesson to one of: '
            f"{known}."
        )
    if lesson is not None and own.lesson != lesson:
        raise UserError(
            f"{path}: it is a lesson for {own.lesson!r}; run it with "
            f"'attn {own.lesson} --lesson {path}' (or 'attn check {path}')."
        )
    declared = declarations.get_lesson(own.lesson)
    with_checked_texts(own, declared.texts)  # its step and note keys, and their placeholders
    try:
        bundled: LessonFile | None = load_bundled(own.lesson)
    except UserError:  # not installed: the lecturer's file stands alone
        bundled = None
    if bundled is not None:
        unknown = sorted(set(own.headings) - set(bundled.headings))
        if unknown:
            raise UserError(
                f"{path}: [headings] {unknown[0]}: lesson {own.lesson!r} has no heading "
                f"{unknown[0]!r}; its headings are: {', '.join(bundled.headings) or 'none'}."
            )
    for example in own.examples:
        _check_example_fields(declared, example, f"{path}: example {example.name!r}")
    own = _with_paths_found(own, declared, path)
    return own.over(bundled) if bundled is not None else own


RELATIVE = "a relative path in a lesson file starts at the lesson file's folder"


def from_lesson_folder(value: str, lesson_file: Path | None) -> Path:
    """A path a lesson file names (an option's file, an input's ``@file``): a relative one is
    read from the lesson file's folder, where a lecturer keeps a lesson and its weights
    together (as an absolute path: the same file whatever the current directory later is);
    an absolute one, or one in data of no file, as it is."""
    given = Path(value)
    if lesson_file is None or given.is_absolute():
        return given
    return Path(os.path.abspath(lesson_file.parent / given))


def _with_paths_found(own: LessonFile, declared: DeclaredLesson, path: Path) -> LessonFile:
    """``own`` with each option that names a file (``Option.path``: block's and multihead's
    ``weights``) read from the lesson file's folder, and found there: a missing file is one
    line naming the path as resolved and the example and option that named it."""
    paths = {option.name for option in declared.card.options if option.path and option.lesson}
    examples = []
    for example in own.examples:
        options = dict(example.options)
        for name in paths & set(options):
            found = from_lesson_folder(options[name], path)
            kind = not_a_file(found)
            if kind is not None:
                raise UserError(
                    f"{path}: example {example.name!r}, options.{name}: {str(found)!r} is "
                    f"{kind}, not a file; name the file itself."
                )
            if not found.is_file():
                how = "" if Path(options[name]).is_absolute() else f" ({RELATIVE})"
                raise UserError(
                    f"{path}: example {example.name!r}, options.{name}: no file "
                    f"{str(found)!r}{how}; check the path."
                )
            options[name] = str(found)
        examples.append(replace(example, options=options))
    return replace(own, examples=tuple(examples))


def _check_example_fields(declared: DeclaredLesson, example: Example, where: str) -> None:
    """Every input, label and option an example names must be one the lesson takes."""
    from attn_cli.lessonfiles import grammar  # pydantic: only for a lecturer's file

    names = [spec.name for spec in declared.inputs]
    for name in example.inputs:
        if name not in names:
            raise UserError(
                f"{where}, inputs.{name}: lesson {declared.name!r} takes no "
                f"input {name!r}; its inputs are: {', '.join(names)}."
            )
    for name in example.labels:
        if name not in declared.labels:
            lesson = declared.name
            known = ", ".join(declared.labels) or "none"
            raise UserError(
                f"{where}, labels.{name}: lesson {lesson!r} reads no labels {name!r}; the labels "
                f"it reads are: {known}."
            )
    options = {option.name: option for option in declared.card.options if option.lesson}
    for name, value in example.options.items():
        if name not in declared.options:
            known = ", ".join(declared.options) or "none"
            raise UserError(
                f"{where}, options.{name}: this lesson has no option {name!r}; its options are: "
                f"{known}."
            )
        if name not in options:
            continue
        # The value against the option's type (its schema is the generated schema's), before
        # the lesson reads it: its type, shape and range, in one line.
        problem = grammar.option_problem(options[name], value)
        if problem is not None:
            raise UserError(grammar.mismatch(f"{where}, options.{name}", value, problem))
    for spec in declared.inputs:
        if spec.required and spec.name not in example.inputs:
            raise missing_input(spec, where)


def missing_input(spec: InputSpec, where: str) -> UserError:
    """The error for a required input an example leaves out."""
    return UserError(
        f"{where}: input {spec.name!r} ({spec.description}) is missing; add "
        f"{spec.name} = {'[...]' if spec.shape == 'vector' else '[[...]]'} under [examples.inputs]."
    )


def _utf8_text(path: Path) -> str:
    """The file's text, as UTF-8 (a byte-order mark, which some Windows editors write, is not
    part of it); a file in another encoding is one line naming the first byte that is not
    UTF-8 and where it is."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        raise UserError(
            f"{path}: not UTF-8 text: byte 0x{raw[error.start]:02x} at line {line}, column "
            f"{column} (a file saved as Latin-1 or Windows-1252?); save it as UTF-8."
        ) from None


def _read_lesson_file(path: Path, size: int, *, checked: bool) -> LessonFile:
    where = str(path)
    if size > MAX_LESSON_FILE_BYTES:
        raise UserError(
            f"{where}: {size / 2**20:.1f} MiB is more than a lesson file may hold "
            f"({MAX_LESSON_FILE_BYTES // 2**20} MiB); split it, or load large matrices from "
            '.npy files (Q = "@q.npy").'
        )
    try:
        data = tomllib.loads(_utf8_text(path))
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{where}: not valid TOML ({error}); fix the syntax there.") from None
    except ValueError as error:  # an integer of over 4,300 digits (Python's limit on int())
        if "integer string conversion" not in str(error):
            raise
        raise UserError(
            f"{where}: holds an integer of over 4,300 digits, far beyond a float64 (1.8e308); "
            "use smaller numbers."
        ) from None
    except RecursionError:
        raise UserError(
            f"{where}: arrays nested too deeply to read; a matrix is a list of rows, two levels "
            "of brackets: [[1, 0], [0, 1]]."
        ) from None
    except OSError as error:
        raise UserError(f"{where}: cannot read it ({error.strerror or error}).") from None
    return parse_lesson_data(data, where, path, checked=checked)


def parse_lesson_data(
    data: dict[str, Any], where: str, path: Path | None = None, *, checked: bool = True
) -> LessonFile:
    """A lesson file's data as a LessonFile; first checked against the format, and each text's
    placeholders for their form, unless ``checked`` is False (a bundled file, which the tests
    check)."""
    if checked:
        from attn_cli.lessonfiles.grammar import check_keys  # pydantic: only when checking

        check_keys(data, where)
    lesson = data.get("lesson")
    if not isinstance(lesson, str) or not lesson:
        raise UserError(f'{where}: field "lesson" is missing; add e.g. lesson = "scaled".')
    # check_keys has checked every key and the type of every value: the rest reads them. A
    # user's texts are made printable (control characters escaped); a bundled file's already
    # are (tests/test_lesson_declarations.py checks it), so they are read as they are.
    clean: Callable[[str], str] = printable if checked else str
    steps: dict[str, StepText] = {}
    for key, text in data.get("steps", {}).items():
        for name in ("title", "explanation", "brief") if checked else ():
            template_fields(text.get(name, ""), f"{where}: [steps.{key}] {name}")
        title, explanation, latex = text.get("title"), text.get("explanation"), text.get("latex")
        steps[key] = StepText(
            title=None if title is None else clean(title),
            explanation=None if explanation is None else clean(explanation.strip()),
            latex=None if latex is None else clean(latex),
            brief=None if text.get("brief") is None else clean(text["brief"].strip()),
            detail=text.get("detail"),
        )
    notes = _words_table(data, "notes", where, check_placeholders=checked, clean=clean)
    headings = _words_table(data, "headings", where, check_placeholders=False, clean=clean)
    raw_examples = data.get("examples", [])
    if len(raw_examples) > MAX_EXAMPLES:
        raise UserError(
            f"{where}: {len(raw_examples)} examples is more than a lesson file may hold "
            f"({MAX_EXAMPLES}); split them over several files."
        )
    examples = tuple(
        _parse_example(raw, f"{where}: examples[{index}]", path, clean)
        for index, raw in enumerate(raw_examples)
    )
    names = [example.name for example in examples]
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise UserError(f"{where}: example names must be unique; {repeated[0]!r} repeats.")
    default = data.get("default_example")
    if default is not None and default not in names:
        raise UserError(f"{where}: default_example {default!r} is not one of the examples.")
    return LessonFile(
        lesson=lesson,
        title=clean(str(data.get("title", lesson))),
        intro=clean(str(data.get("intro", "")).strip()),
        steps=steps,
        examples=examples,
        default_example=default,
        path=path,
        fields=frozenset(data),
        notes=notes,
        headings=headings,
    )


def _words_table(
    data: dict[str, Any],
    name: str,
    where: str,
    *,
    check_placeholders: bool,
    clean: Callable[[str], str] = printable,
) -> dict[str, str]:
    """[notes] or [headings]: key = "text", each text checked (and its placeholders, for notes)."""
    words = {}
    for key, text in data.get(name, {}).items():
        if check_placeholders:
            template_fields(text, f"{where}: [{name}] {key}")
        words[key] = clean(text.strip())
    return words


def _parse_example(
    raw: dict[str, Any], where: str, path: Path | None, clean: Callable[[str], str] = printable
) -> Example:
    """One [[examples]] table, its keys and value types already checked (check_keys); an
    input's ``@file`` is read from the folder of the lesson file (``path``)."""
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise UserError(f'{where}: field "name" is missing; give the example a name.')
    where = f"{where.rsplit(':', 1)[0]}: example {name!r}"
    inputs = {
        input_name: _input_array(value, f"{where}, inputs.{input_name}", path)
        for input_name, value in raw.get("inputs", {}).items()
    }
    printed = dict(raw.get("printed", {}))
    options = raw.get("options", {})
    raw_labels = raw.get("labels", {})
    return Example(
        name=clean(name),
        description=clean(str(raw.get("description", "")).strip()),
        source=clean(str(raw.get("source", ""))),
        inputs=inputs,
        options=dict(options),
        printed=printed,
        labels={key: tuple(map(clean, names)) for key, names in raw_labels.items()},
    )


def _input_array(value: Any, where: str, path: Path | None) -> np.ndarray:
    """A TOML input: a number, a list, a list of rows, or a string in the matrix grammar
    (``"@q.npy"``: a file, read from the lesson file's folder)."""
    if isinstance(value, str):
        if value.strip().startswith("@"):
            value = "@" + str(from_lesson_folder(value.strip()[1:], path))
        return as_matrix_or_batch(value, where)
    flag = _first_flag(value)
    if flag is not None:  # numpy would take true as 1 (JSON inputs refuse it too)
        raise UserError(
            f"{where}: found {str(flag).lower()} (a boolean); expected numbers: write 1 or 0."
        )
    try:
        array = np.asarray(value, dtype=np.float64)
    except OverflowError:
        raise UserError(
            f"{where} has a number too large for a float64 (over 1.8e308); use smaller numbers."
        ) from None
    except (ValueError, TypeError):
        raise UserError(
            f"{where}: expected a number, a list of numbers or a list of equal-length rows."
        ) from None
    if array.size == 0:
        raise UserError(f"{where} is empty; give at least one number.")
    # −∞ may be an additive mask's entry: the lesson's own input refuses it where it is not
    # (attn_cli.run.runner reads each example input as its spec says).
    if not (np.isfinite(array) | np.isneginf(array)).all():
        raise UserError(f"{where} has NaN or +∞ entries; inputs must be finite numbers.")
    return array


def _first_flag(value: Any) -> bool | None:
    """The first true or false among a TOML input's entries (at any depth), if any."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, bool):
            return item
        if isinstance(item, list):
            pending.extend(reversed(item))
    return None
