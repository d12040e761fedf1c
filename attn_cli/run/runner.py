"""From parsed command-line values to a computed walkthrough, the same way for every lesson."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from attn_cli import course
from attn_cli.core.backend import LARGEST, Backend
from attn_cli.core.backend_choice import get_backend
from attn_cli.core.batch import check_item, select_item, split_batch, split_options
from attn_cli.core.card import InputSpec
from attn_cli.core.errors import PYTHON, Door, UserError, param, params
from attn_cli.core.matrices import as_matrix_or_batch, as_vector_or_batch
from attn_cli.core.model import Note, Walkthrough
from attn_cli.core.whole import check_whole_size
from attn_cli.course import get_lesson
from attn_cli.course.lesson import Inputs, Lesson, LessonRun, Shapes
from attn_cli.lessonfiles.loader import (
    Example,
    LessonFile,
    is_bundled_file,
    load_bundled,
    missing_input,
    own_lesson_file,
)


@dataclass
class RunRequest:
    """What the user asked a lesson command for (None = not given)."""

    lesson: str
    # input name -> the option's text, or (from the Python API) an array, tensor or nested list
    inputs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)  # lesson option -> value or None
    sizes: dict[str, int | None] = field(default_factory=dict)  # e.g. {"n": 512, "dk": 64}
    example: str | None = None
    lesson_file: Path | None = None
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seed: int = 0
    backend: str | None = None
    device: str = "cpu"
    dtype: str = "float64"
    time_steps: bool = False
    # Keep what the lesson draws at random for the next run in this process (the explorer, whose
    # edits run a lesson again and again); never with time_steps, whose times must be measured.
    keep: bool = False
    item: int = 0  # the batch item shown (--item)
    python: bool = False  # asked by a Python call (attn_cli.api): errors name its arguments
    # How the door that asked names parameters in what the walkthrough says (a note naming the
    # inputs, an example run with options changed): keywords unless the door says otherwise.
    door: Door = PYTHON
    # How the command line will write the walkthrough ("rich", "json", ... as --format names
    # it; None: not written here, as for a Python call or attn check), and whether with --full:
    # the work guards count what writing it costs (a stack's tables, every number of --full).
    shown: str | None = None
    full: bool = False


def lesson_data(request: RunRequest) -> LessonFile:
    """The bundled lesson file, or the user's own (which must be for this lesson)."""
    if request.lesson_file is None:
        return load_bundled(request.lesson)  # checked by the tests, not on each run
    return own_lesson_file(request.lesson_file, course, request.lesson)


def listed_examples(request: RunRequest) -> LessonFile:
    """The lesson file whose examples --list-examples lists (:func:`lesson_data`), each
    example's description with the parameters it names spelt by the door that asked."""
    from dataclasses import replace

    from attn_cli.core.templates import spell_parameters

    data = lesson_data(request)
    examples = tuple(
        replace(example, description=spell_parameters(example.description, request.door))
        for example in data.examples
    )
    return replace(data, examples=examples)


def prepare(request: RunRequest) -> LessonRun:
    """Resolve inputs (random, user's, or an example), validate them, and check memory.

    Of a batch, the first item's run (``prepare_items`` gives every item's).
    """
    return prepare_items(request)[0][0]


def prepare_items(request: RunRequest) -> tuple[list[LessonRun], bool, dict[str, Any]]:
    """The run of every item of a batch, or the one run of unbatched inputs; whether the
    inputs were a batch (a 3-D matrix input: even a batch of one is one); and the options as
    given (an option with one value per item, "2|3", split into the items' runs)."""
    lesson = get_lesson(request.lesson)
    data = lesson_data(request)
    backend = get_backend(request.backend, request.device, request.dtype, python=request.python)
    given = Given.of(request)
    source = resolve_inputs(lesson, data, request, given)
    options = lesson.options_with(source.example_options, given.options)
    check_whole_sizes(options, request)
    if source.inputs is not None and lesson.arrange is not None:
        arranged = lesson.arrange(source.inputs, options)
        source = replace(source, inputs=arranged, shapes=_shapes(arranged))
    batch = None if source.inputs is None else split_batch(lesson.inputs, source.inputs)
    item_options = split_options(options, None if batch is None else len(batch))
    if source.inputs is not None:
        items = [source.inputs] if batch is None else batch
        validate_inputs(
            lesson, data, source, items, item_options, backend.dtype, given.any, request.shown
        )
    shapes = (
        source.shapes if source.inputs is not None else lesson.option_shapes(source.shapes, options)
    )
    if source.inputs is None:
        check_on_top(lesson, given, options, shapes, source.on_top)
    guard_memory(lesson, backend, {**shapes, **_shapes(source.on_top)}, batch, options)
    if request.full and request.shown == "json":
        guard_full_json(lesson, {**shapes, **_shapes(source.on_top)}, batch, options)
    drawn: frozenset[str] = frozenset()
    if source.inputs is None:
        # Every input of the sizes is drawn, so that the others are the seed's own, whatever
        # is given on top.
        random = draw_inputs(lesson, shapes, request.seed, options, request.shown)
        items = [{**random, **source.on_top}]
        drawn = frozenset(random) - frozenset(source.on_top)
        if source.on_top:
            try:
                validate_inputs(
                    lesson, data, source, items, item_options, backend.dtype, True, request.shown
                )
            except UserError as error:  # a drawn input may be at odds with one given on top
                raise _unfitted(lesson, given, options, shapes, source.on_top) or error from None
            _check_representable(lesson, source.on_top, backend.dtype)
    labels = {**source.example_labels, **request.labels}
    runs = [
        LessonRun(
            data,
            source.example,
            item,
            settings,
            backend,
            request.time_steps,
            labels,
            request.seed,
            drawn,
            request.keep and not request.time_steps,
            request.shown,
            request.door,
        )
        for item, settings in zip(items, item_options, strict=True)
    ]
    return runs, batch is not None, options


def check_whole_sizes(options: dict[str, Any], request: RunRequest) -> None:
    """Refuse a whole number larger than any attn takes (LARGEST_WHOLE) in an option (from any
    door: the command line, Python, a lesson file), the seed or the item, before it reaches
    arithmetic that would overflow or allocate for it."""
    for name, value in options.items():
        check_whole_size(value, name)
    check_whole_size(request.seed, "seed")
    check_whole_size(request.item, "item")


@dataclass(frozen=True)
class Given:
    """What a request gives: the sizes, inputs and options that are not None."""

    sizes: dict[str, int]
    inputs: dict[str, Any]
    options: dict[str, Any]

    @classmethod
    def of(cls, request: RunRequest) -> Given:
        """The given values, each size checked to be at least 1."""
        sizes = {key: value for key, value in request.sizes.items() if value is not None}
        for key, value in sizes.items():
            if value < 1:
                raise UserError(f"{param(key)} must be at least 1, not {value}.")
            check_whole_size(value, key)
        return cls(
            sizes,
            {name: text for name, text in request.inputs.items() if text is not None},
            {key: value for key, value in request.options.items() if value is not None},
        )

    @property
    def any(self) -> bool:
        """Whether the user gave inputs or options of their own (on top of an example or not)."""
        return bool(self.inputs or self.options)


@dataclass(frozen=True)
class Source:
    """Where a run's inputs come from, resolved."""

    inputs: Inputs | None  # None: drawn at random (of ``shapes``) once they are known to fit
    shapes: Shapes
    example: Example | None = None  # the lecture example they come from
    # Drawn at random (inputs None): the inputs the user gave on top, in place of the drawn
    # ones of their names (each of the shape the sizes draw) or beside them.
    on_top: Inputs = field(default_factory=dict)

    @property
    def example_options(self) -> dict[str, Any]:
        return {} if self.example is None else self.example.options

    @property
    def example_labels(self) -> dict[str, tuple[str, ...]]:
        return {} if self.example is None else dict(self.example.labels)


def resolve_inputs(lesson: Lesson, data: LessonFile, request: RunRequest, given: Given) -> Source:
    """Where the inputs come from: sizes (random), the user's own, the options alone (a lesson
    without matrix inputs), or a lecture example (with inputs the lesson lets one give on top)."""
    if given.sizes:
        source = _random_source(lesson, given, lesson.options_with(given.options))
    elif given.inputs and not set(given.inputs) <= lesson.example_overrides:
        inputs = _parse_inputs(lesson, given.inputs)
        source = Source(inputs, _shapes(inputs))
    elif not lesson.inputs and given.options and request.example is None:
        # A lesson without matrix inputs (posenc, variance) takes its options as the user's
        # inputs: given any, the run is the user's own, not the default example.
        source = Source({}, {})
    else:
        return _example_source(lesson, data, request, given)
    if request.example is not None:
        raise UserError(
            f"{param('example')} picks a lecture example; leave it out with your own inputs."
        )
    return source


def _random_source(lesson: Lesson, given: Given, options: dict[str, Any]) -> Source:
    """Inputs drawn of the sizes given (the card's defaults for the others), with the inputs
    given on top: one matrix or vector each, no batch (a batch gives every input)."""
    on_top = _parse_inputs(lesson, given.inputs, check_missing=False)
    if split_batch(lesson.inputs, on_top) is not None:
        flags = ", ".join(lesson.param(name) for name in given.inputs)
        raise UserError(
            f"{flags}: a batch with sizes for random inputs; give every input of the batch, "
            "or one matrix (or vector) each on top of the drawn ones."
        )
    shapes = _sized_shapes(lesson, given.sizes, options)
    return Source(None, shapes, on_top=on_top)


def _sized_shapes(lesson: Lesson, sizes: dict[str, int], options: dict[str, Any]) -> Shapes:
    """The shapes of the random inputs: the sizes given, the card's defaults for the rest."""
    sized = lesson.option_sizes(sizes, options)
    return lesson.random_shapes(lesson.card.with_size_defaults(sized))


def check_on_top(
    lesson: Lesson, given: Given, options: dict[str, Any], shapes: Shapes, on_top: Inputs
) -> None:
    """Each input given on top of random ones has the shape the sizes draw for it; else one
    line naming the sizes that would fit it (when one or two sizes do), or the way out."""
    for name, value in on_top.items():
        drawn = shapes.get(name)
        if drawn is None or tuple(drawn) == value.shape:
            continue
        flag = lesson.param(name)
        fits = _sizes_that_fit(lesson, given.sizes, options, name, value.shape)
        sized = ", ".join(param(key, size) for key, size in given.sizes.items())
        fix = f"give {fits}" if fits else "give sizes that fit it"
        raise UserError(
            f"{flag} is {_shape_words(value.shape)}, where the random inputs of {sized} draw "
            f"{name} {_shape_words(tuple(drawn))}: {fix}, or leave out {flag} to draw it too."
        )


def _unfitted(
    lesson: Lesson, given: Given, options: dict[str, Any], shapes: Shapes, on_top: Inputs
) -> UserError | None:
    """Where the inputs given on top and the drawn ones do not go together (the lesson refused
    them): the first one given that the sizes do not draw, with the sizes that would draw it of
    its shape, and so draw the others to fit it ("--xk is 1 × 1, which the random inputs of
    --n 3 do not draw: give --m 1 --kdim 1"); None when no size fits (the lesson's own message
    is then the one to show)."""
    sized = ", ".join(param(key, size) for key, size in given.sizes.items())
    for name, value in on_top.items():
        if name in shapes:
            continue
        fits = _sizes_that_fit(lesson, given.sizes, options, name, value.shape)
        if fits:
            flag = lesson.param(name)
            return UserError(
                f"{flag} is {_shape_words(value.shape)}, which the random inputs of {sized} do "
                f"not draw to fit: give {fits}, or leave out {flag}."
            )
    return None


def _sizes_that_fit(
    lesson: Lesson,
    sizes: dict[str, int],
    options: dict[str, Any],
    name: str,
    shape: tuple[int, ...],
) -> str | None:
    """One or two size options, each set to a side of ``shape``, with which the sizes draw
    ``name`` of that shape ("--d-model 2", "--m 1 --kdim 1"), None when none do. Of those
    that do, the one that changes the fewest other drawn shapes, and then sizes not given
    before those given, so that the rest of the run stays as the user asked for it."""
    current = lesson.option_shapes(_sized_shapes(lesson, sizes, options), options)
    order = sorted(lesson.card.sizes, key=lambda size: size.name in sizes)
    singles = [(size.name, side) for size in order for side in dict.fromkeys(shape)]
    pairs = [
        (first, second)
        for index, first in enumerate(singles)
        for second in singles[index + 1 :]
        if first[0] != second[0]
    ]
    for tries in ([(single,) for single in singles], pairs):
        fits: list[tuple[int, tuple[tuple[str, int], ...]]] = []
        for changed in tries:
            try:
                drawn = lesson.option_shapes(
                    _sized_shapes(lesson, {**sizes, **dict(changed)}, options), options
                )
            except UserError:
                continue
            if tuple(drawn.get(name, ())) == shape:
                moved = sum(drawn.get(other) != was for other, was in current.items())
                fits.append((moved, changed))
        if fits:
            best = min(fits, key=lambda fit: fit[0])[1]  # the first of the least moved
            return params(*best)
    return None


def _shape_words(shape: tuple[int, ...]) -> str:
    return " × ".join(str(side) for side in shape) if len(shape) > 1 else f"{shape[0]} long"


def _example_source(lesson: Lesson, data: LessonFile, request: RunRequest, given: Given) -> Source:
    """The example --example names (else the file's default), with the inputs given on top."""
    try:
        example = data.example(request.example)
    except UserError as error:
        if request.lesson_file is None:
            raise
        raise UserError(f"{request.lesson_file}: {error}") from None
    if example is None:
        raise UserError(f"{data.path}: has no examples; add one, or give the inputs.")
    inputs = _example_inputs(lesson, example, _where(data, example))
    inputs.update(_parse_inputs(lesson, given.inputs, check_missing=False))
    return Source(inputs, _shapes(inputs), example)


def _shapes(inputs: Inputs) -> Shapes:
    return {name: array.shape for name, array in inputs.items()}


def validate_inputs(
    lesson: Lesson,
    data: LessonFile,
    source: Source,
    items: list[Inputs],
    item_options: list[dict[str, Any]],
    dtype: str,
    users_own: bool,
    shown: str | None = None,
) -> None:
    """Each item's inputs and options checked by the lesson (its work as ``shown``, the
    --format it is written in), then every input against the dtype's range. A lecture example
    the user changed nothing of is at fault itself: its error names the lesson file and the
    example."""
    for item, settings in zip(items, item_options, strict=True):
        try:
            lesson.check(item, settings, shown)
        except UserError as error:
            if source.example is None or users_own:
                raise  # the user's own inputs or options are at fault, not the lesson file
            raise UserError(f"{_where(data, source.example)}, inputs: {error}") from None
    if source.inputs:
        _check_representable(lesson, source.inputs, dtype)


def guard_memory(
    lesson: Lesson,
    backend: Backend,
    shapes: Shapes,
    batch: list[Inputs] | None,
    options: dict[str, Any],
) -> None:
    """Refuse a run whose inputs (with their float64 copies) and walkthrough, item by item,
    would not fit the backend's memory."""
    input_bytes = sum(int(np.prod(shape)) for shape in shapes.values()) * (8 + backend.itemsize)
    item_shapes = shapes if batch is None else _shapes(batch[0])
    count = 1 if batch is None else len(batch)
    needed = input_bytes + count * lesson.estimate_bytes(item_shapes, options, backend.itemsize)
    backend.ensure_fits(needed, f"this {lesson.name} walkthrough", lesson.memory_fix)


def guard_full_json(
    lesson: Lesson, shapes: Shapes, batch: list[Inputs] | None, options: dict[str, Any]
) -> None:
    """Refuse, before any work, --format json --full that would take minutes to write: every
    number of the walkthrough (its inputs, every step, of every item) written out, counted
    from the shapes (Lesson.document_numbers)."""
    from attn_cli.render import check_document_work

    item_shapes = shapes if batch is None else _shapes(batch[0])
    count = 1 if batch is None else len(batch)
    inputs = sum(int(np.prod(shape)) for shape in shapes.values())
    check_document_work(inputs + count * lesson.document_numbers(item_shapes, options))


def draw_inputs(
    lesson: Lesson, shapes: Shapes, seed: int, options: dict[str, Any], shown: str | None = None
) -> Inputs:
    """Random inputs of the resolved shapes from ``seed`` (N(0, 1) unless the lesson draws its
    own), checked by the lesson (its work as ``shown``, the --format it is written in)."""
    inputs = dict(lesson.draw_random(shapes, seed))
    lesson.check(inputs, options, shown)
    return inputs


def compute(request: RunRequest) -> Walkthrough:
    """Prepare and build the walkthrough; a lecture example also gets its slide's errata noted.

    A batch is computed item by item (each a 2-D run of the lesson); the walkthrough returned
    is item ``request.item``'s, holding every item's (``Walkthrough.items``).
    """
    runs, batched, options = prepare_items(request)
    check_item(request.item, len(runs) if batched else None)
    if not batched:
        return with_slide_notes(built(runs[0]), runs[0], request)
    return select_item(tuple(built(run) for run in runs), request.item, options, request.door)


def built(run: LessonRun) -> Walkthrough:
    """The lesson built, a floating-point overflow noted on the walkthrough (never a
    RuntimeWarning on stderr: ``attn check`` builds through here too)."""
    overflows: list[str] = []

    def seen(kind: str, flag: int) -> None:  # numpy's report of a floating-point overflow
        overflows.append(kind)

    with np.errstate(over="call", invalid="ignore", call=seen):  # an overflow is noted instead
        walkthrough = build(run)
    overflowed = bool(overflows) or (run.backend.name != "numpy" and _holds_inf(walkthrough))
    return with_overflow_note(walkthrough, run, overflowed)


def _holds_inf(walkthrough: Walkthrough) -> bool:
    """Whether a step (or the output) of a run on another backend than numpy, which reports no
    overflow, holds +∞ (−∞ is a mask's), or the output ±∞: the trace an overflow leaves.

    A step's value and parts are read from their recorded summaries (which count the +∞
    entries), not passed over again; a value recorded without one is read itself."""
    output = walkthrough.output
    if isinstance(output, np.ndarray) and output.dtype.kind == "f" and np.isinf(output).any():
        return True
    for step in walkthrough.steps:
        values = [(step.value, step.summary), *((part.value, part.summary) for part in step.parts)]
        for value, recorded in values:
            if not (isinstance(value, np.ndarray) and value.dtype.kind == "f"):
                continue
            if recorded.positive_infinite if recorded else np.isposinf(value).any():
                return True
    return False


def with_overflow_note(
    walkthrough: Walkthrough, run: LessonRun, overflowed: bool = True
) -> Walkthrough:
    """Say so when finite inputs gave a non-finite output: that a number overflowed the dtype
    when one did (numpy reported it), else that 0 / 0, x / 0 or ∞ − ∞ arose without one."""
    output = walkthrough.output
    if not isinstance(output, np.ndarray) or np.isfinite(output).all():
        return walkthrough
    dtype = run.backend.dtype
    if overflowed:
        fix = (
            "smaller inputs"
            if dtype == "float64"
            else f"{run.door.words(param('dtype', 'float64'))} or smaller inputs"
        )
        note = Note.fixed(
            "overflow",
            f"The output has inf or NaN values: an intermediate exceeded the largest {dtype} "
            f"({LARGEST[dtype]:g}) and overflowed; what a step's text says of every row holds "
            f"only for the rows that stayed finite. Use {fix}.",
        )
    else:
        note = Note.fixed(
            "undefined",
            "The output has inf or NaN values although no number overflowed: a 0 / 0, x / 0 "
            "or ∞ − ∞ reached it; the steps above show where they first appear, and what a "
            "step's text says of every row holds only for the rows that stayed finite.",
        )
    return replace(walkthrough, notes=(*walkthrough.notes, note))


def build(run: LessonRun) -> Walkthrough:
    return get_lesson(run.name).build(run)


def with_slide_notes(walkthrough: Walkthrough, run: LessonRun, request: RunRequest) -> Walkthrough:
    """Note under each step where the example's slide prints a value that is not right.

    Only for the example as the slide has it: options changed on the command line make the
    slide's numbers a different computation. The exact values come from float64 on numpy.
    """
    example = run.example
    if example is None or not example.printed:
        return walkthrough
    as_printed = get_lesson(request.lesson).options_with(example.options)
    if any(v is not None and as_printed.get(k) != v for k, v in request.options.items()):
        return walkthrough
    from attn_cli.core import slides  # only for an example that records its slide's values

    reference = walkthrough
    if (run.backend.name, run.backend.dtype) != ("numpy", "float64"):
        reference = build(replace(run, backend=get_backend("numpy"), time_steps=False))
    try:
        decimals = course.card(request.lesson).precision
        where = _where(run.file, example)
        own = request.lesson_file is not None and not is_bundled_file(request.lesson_file)
        comparison = slides.compare(reference, example.printed, where, decimals, own=own)
    except UserError:
        if request.lesson_file is not None:
            raise  # the lecturer's own file: say what to fix
        # A bundled file's record is checked by `attn check --all` and the tests; a slip in
        # it must not stop the lesson itself.
        return walkthrough
    return slides.with_notes(walkthrough, comparison.errata)


def _where(lesson: LessonFile, example: Example) -> str:
    return f"{lesson.path or lesson.lesson}: example {example.name!r}"


def _check_representable(lesson: Lesson, inputs: Inputs, dtype: str) -> None:
    """Refuse an input that the chosen dtype would turn into infinity (never silently)."""
    for name, array in inputs.items():
        finite = array[np.isfinite(array)]  # an additive mask's −∞ (where allowed) is no number
        largest = float(np.max(np.abs(finite))) if finite.size else 0.0
        if largest > LARGEST[dtype]:
            flag = lesson.param(name)
            raise UserError(
                f"{flag} has {largest:g}, beyond the largest {dtype} ({LARGEST[dtype]:g}); use "
                f"{param('dtype', 'float32')} or float64."
            )


def _parse_inputs(lesson: Lesson, given: dict[str, Any], check_missing: bool = True) -> Inputs:
    missing = [
        param(spec.keyword) for spec in lesson.inputs if spec.name not in given and spec.required
    ]
    if missing and check_missing:
        required = ", ".join(param(spec.keyword) for spec in lesson.inputs if spec.required)
        raise UserError(
            f"{', '.join(missing)} missing: give every required input ({required})"
            " or none of them to run the lecture example."
        )
    return {
        spec.name: _as_input(spec, given[spec.name], param(spec.keyword))
        for spec in lesson.inputs
        if spec.name in given
    }


def _example_inputs(lesson: Lesson, example: Example, where: str) -> Inputs:
    """An example's inputs with each reshaped as its spec says (matrix 2-D, vector 1-D; a batch
    one dimension more)."""
    inputs = {}
    for spec in lesson.inputs:
        if spec.name not in example.inputs:
            if spec.required:
                raise missing_input(spec, where)
            continue
        array = np.asarray(example.inputs[spec.name], dtype=np.float64)
        inputs[spec.name] = _as_input(spec, array, f"{where}, inputs.{spec.name}")
    return inputs


def _as_input(spec: InputSpec, value: Any, where: str) -> np.ndarray:
    """A matrix input 2-D, a vector input 1-D (a batch: one dimension more)."""
    convert = as_matrix_or_batch if spec.shape == "matrix" else as_vector_or_batch
    return convert(value, where, spec.minus_infinity)
