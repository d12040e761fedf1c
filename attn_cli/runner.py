"""From parsed command-line values to a computed walkthrough, the same way for every lesson."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from attn_cli import slides
from attn_cli.backend import LARGEST, get_backend
from attn_cli.batch import check_item, select_item, split_batch, split_options
from attn_cli.errors import UserError
from attn_cli.lesson_files import Example, LessonFile, load_bundled, load_lesson_file
from attn_cli.matrices import as_matrix_or_batch, as_vector_or_batch
from attn_cli.model import Note, Walkthrough
from attn_cli.walkthroughs.base import (
    LESSON_MODULES,
    InputSpec,
    LessonRun,
    lesson_module,
    option_of,
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
    item: int = 0  # the batch item shown (--item)


def lesson_data(request: RunRequest) -> LessonFile:
    """The bundled lesson file, or the user's own (which must be for this lesson)."""
    if request.lesson_file is None:
        return load_bundled(request.lesson)
    return own_lesson_file(request.lesson_file, request.lesson)


def own_lesson_file(path: Path, lesson: str | None = None) -> LessonFile:
    """A lecturer's lesson file, checked against its lesson and completed from the bundled one.

    What the file leaves out (title, intro, step texts, even the examples) comes from the
    bundled lesson; every input, option and step it names must exist in the lesson.
    """
    own = load_lesson_file(path)  # parsed once per run (cached by the loader)
    done = _COMPLETED.get((id(own), lesson))
    if done is not None and done[0] is own:
        return done[1]
    completed = _complete_own_lesson_file(own, path, lesson)
    _COMPLETED[(id(own), lesson)] = (own, completed)
    return completed


# Lecturers' files already checked and completed in this run: `attn check` runs every example
# of a file, and each run asks for the file again (checking it each time was quadratic).
_COMPLETED: dict[tuple[int, str | None], tuple[LessonFile, LessonFile]] = {}


def _complete_own_lesson_file(own: LessonFile, path: Path, lesson: str | None) -> LessonFile:
    if own.lesson not in LESSON_MODULES:
        known = ", ".join(sorted(LESSON_MODULES))
        raise UserError(
            f'{path}: lesson = "{own.lesson}" is not a lesson attn knows; set lesson to one of: '
            f"{known}."
        )
    if lesson is not None and own.lesson != lesson:
        raise UserError(
            f"{path}: it is a lesson for {own.lesson!r}; run it with "
            f"'attn {own.lesson} --lesson {path}' (or 'attn check {path}')."
        )
    module = lesson_module(own.lesson)
    try:
        bundled: LessonFile | None = load_bundled(own.lesson)
    except UserError:
        bundled = None
    if bundled is not None and bundled.steps:
        unknown = sorted(set(own.steps) - set(bundled.steps))
        if unknown:
            raise UserError(
                f"{path}: [steps.{unknown[0]}]: lesson {own.lesson!r} has no step {unknown[0]!r}; "
                f"its steps are: {', '.join(bundled.steps)}."
            )
    if bundled is not None:
        for table, own_keys, names in (
            ("notes", own.notes, bundled.notes),
            ("headings", own.headings, bundled.headings),
        ):
            unknown = sorted(set(own_keys) - set(names))
            if unknown:
                raise UserError(
                    f"{path}: [{table}] {unknown[0]}: lesson {own.lesson!r} has no "
                    f"{table.rstrip('s')} {unknown[0]!r}; its {table} are: "
                    f"{', '.join(names) or 'none'}."
                )
    for example in own.examples:
        _check_example_fields(module, example, f"{path}: example {example.name!r}")
    return own.over(bundled) if bundled is not None else own


def _check_example_fields(module: Any, example: Example, where: str) -> None:
    """Every input, label and option an example names must be one the lesson takes."""
    names = [spec.name for spec in module.INPUTS]
    for name in example.inputs:
        if name not in names:
            raise UserError(
                f"{where}, inputs.{name}: lesson {module.__name__.rsplit('.', 1)[-1]!r} takes no "
                f"input {name!r}; its inputs are: {', '.join(names)}."
            )
    for spec in module.INPUTS:
        if spec.required and spec.name not in example.inputs:
            raise _missing_input(spec, where)
    for name in example.labels:
        if name not in module.LABELS:
            lesson = module.__name__.rsplit(".", 1)[-1]
            known = ", ".join(module.LABELS) or "none"
            raise UserError(
                f"{where}, labels.{name}: lesson {lesson!r} reads no labels {name!r}; the labels "
                f"it reads are: {known}."
            )
    for name, value in example.options.items():
        if name not in module.OPTIONS:
            known = ", ".join(module.OPTIONS) or "none"
            raise UserError(
                f"{where}, options.{name}: this lesson has no option {name!r}; its options are: "
                f"{known}."
            )
        default = module.OPTIONS[name]
        if isinstance(default, bool) and not isinstance(value, bool):
            raise UserError(
                f"{where}, options.{name}: expected true or false, got {value!r}; e.g. "
                f"options = {{ {name} = {str(default).lower()} }}."
            )


def prepare(request: RunRequest) -> LessonRun:
    """Resolve inputs (random, user's, or an example), validate them, and check memory.

    Of a batch, the first item's run (``prepare_items`` gives every item's).
    """
    return prepare_items(request)[0][0]


def prepare_items(request: RunRequest) -> tuple[list[LessonRun], bool, dict[str, Any]]:
    """The run of every item of a batch, or the one run of unbatched inputs; whether the
    inputs were a batch (a 3-D matrix input: even a batch of one is one); and the options as
    given (an option with one value per item, "2|3", split into the items' runs)."""
    module = lesson_module(request.lesson)
    lesson = lesson_data(request)
    backend = get_backend(request.backend, request.device, request.dtype)
    given_sizes = {key: value for key, value in request.sizes.items() if value is not None}
    given_inputs = {name: text for name, text in request.inputs.items() if text is not None}
    given_options = {key: value for key, value in request.options.items() if value is not None}
    example = None
    labels: dict[str, tuple[str, ...]] = {}
    # Inputs a lesson lets the user give on top of an example (e.g. W_a for bahdanau --compare).
    overrides = set(getattr(module, "EXAMPLE_OVERRIDES", ()))
    on_example = bool(given_inputs) and set(given_inputs) <= overrides
    for key, value in given_sizes.items():
        if value < 1:
            raise UserError(f"--{key.replace('_', '-')} must be at least 1, not {value}.")
    if given_sizes:
        if given_inputs:
            flags = ", ".join(option_of(module.INPUTS, name) for name in given_inputs)
            raise UserError(f"give either sizes for random inputs or {flags}, not both.")
        shapes = module.random_shapes(given_sizes)
        inputs = None
    elif given_inputs and not on_example:
        inputs = _parse_inputs(module, given_inputs)
        shapes = {name: array.shape for name, array in inputs.items()}
    elif not module.INPUTS and given_options and request.example is None:
        # A lesson without matrix inputs (posenc, variance) takes its options as the user's
        # inputs: given any, the run is the user's own, not the default example.
        inputs, shapes = {}, {}
    else:
        try:
            example = lesson.example(request.example)
        except UserError as error:
            if request.lesson_file is None:
                raise
            raise UserError(f"{request.lesson_file}: {error}") from None
        if example is None:
            raise UserError(f"{lesson.path}: has no examples; add one, or give the inputs.")
        inputs = _example_inputs(module, example, _where(lesson, example))
        inputs.update(_parse_inputs(module, given_inputs, check_missing=False))
        shapes = {name: array.shape for name, array in inputs.items()}
        labels = dict(example.labels)
    if request.example is not None and example is None:
        raise UserError("--example picks a lecture example; leave it out with your own inputs.")
    options = dict(module.OPTIONS)
    if example is not None:
        options.update(example.options)
    options.update(given_options)
    batch = None if inputs is None else split_batch(module, inputs)
    items = [inputs] if batch is None else batch
    item_options = split_options(options, None if batch is None else len(batch))
    if inputs is not None:
        for item, settings in zip(items, item_options, strict=True):
            try:
                module.validate(item, settings)
            except UserError as error:
                if example is None or given_inputs or given_options:
                    raise  # the user's own inputs or options are at fault, not the lesson file
                raise UserError(f"{_where(lesson, example)}, inputs: {error}") from None
    if inputs:
        _check_representable(module, inputs, backend.dtype)
    input_bytes = sum(int(np.prod(shape)) for shape in shapes.values()) * (8 + backend.itemsize)
    item_shapes = shapes if batch is None else {k: v.shape for k, v in batch[0].items()}
    needed = input_bytes + len(items) * module.estimate_bytes(
        item_shapes, options, backend.itemsize
    )
    fix = getattr(module, "MEMORY_FIX", "choose smaller sizes")
    backend.ensure_fits(needed, f"this {request.lesson} walkthrough", fix)
    drawn: frozenset[str] = frozenset()
    if inputs is None:
        inputs = _draw_random(module, shapes, request.seed)
        drawn = frozenset(inputs)
        module.validate(inputs, options)
        items = [inputs]
    labels.update(request.labels)
    runs = [
        LessonRun(
            lesson,
            example,
            item,
            settings,
            backend,
            request.time_steps,
            labels,
            request.seed,
            drawn,
        )
        for item, settings in zip(items, item_options, strict=True)
    ]
    return runs, batch is not None, options


def _draw_random(module: Any, shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, Any]:
    """Random inputs of the given shapes: N(0, 1) from default_rng(seed), unless the lesson
    draws its own (multihead scales its weights and draws them from a separate stream)."""
    draw = getattr(module, "draw_random", None)
    if draw is not None:
        return dict(draw(shapes, seed))
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape) for name, shape in shapes.items()}


def compute(request: RunRequest) -> Walkthrough:
    """Prepare and build the walkthrough; a lecture example also gets its slide's errata noted.

    A batch is computed item by item (each a 2-D run of the lesson); the walkthrough returned
    is item ``request.item``'s, holding every item's (``Walkthrough.items``).
    """
    runs, batched, options = prepare_items(request)
    check_item(request.item, len(runs) if batched else None)
    if not batched:
        return with_slide_notes(_built(runs[0]), runs[0], request)
    return select_item(tuple(_built(run) for run in runs), request.item, options)


def _built(run: LessonRun) -> Walkthrough:
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is noted instead
        return with_overflow_note(build(run), run)


def with_overflow_note(walkthrough: Walkthrough, run: LessonRun) -> Walkthrough:
    """Say so when finite inputs gave a non-finite output: a number overflowed the dtype."""
    output = walkthrough.output
    if not isinstance(output, np.ndarray) or np.isfinite(output).all():
        return walkthrough
    dtype = run.backend.dtype
    fix = "smaller inputs" if dtype == "float64" else "--dtype float64 or smaller inputs"
    note = (
        f"The output has inf or NaN values: an intermediate exceeded the largest {dtype} "
        f"({LARGEST[dtype]:g}) and overflowed; use {fix}."
    )
    return replace(walkthrough, notes=(*walkthrough.notes, Note.fixed("overflow", note)))


def build(run: LessonRun) -> Walkthrough:
    return lesson_module(run.lesson.lesson).build(run)


def with_slide_notes(walkthrough: Walkthrough, run: LessonRun, request: RunRequest) -> Walkthrough:
    """Note under each step where the example's slide prints a value that is not right.

    Only for the example as the slide has it: options changed on the command line make the
    slide's numbers a different computation. The exact values come from float64 on numpy.
    """
    example = run.example
    if example is None or not example.printed:
        return walkthrough
    as_printed = {**lesson_module(request.lesson).OPTIONS, **example.options}
    if any(v is not None and as_printed.get(k) != v for k, v in request.options.items()):
        return walkthrough
    reference = walkthrough
    if (run.backend.name, run.backend.dtype) != ("numpy", "float64"):
        reference = build(replace(run, backend=get_backend("numpy"), time_steps=False))
    try:
        comparison = slides.compare(reference, example.printed, _where(run.lesson, example))
    except UserError:
        if request.lesson_file is not None:
            raise  # the lecturer's own file: say what to fix
        # A bundled file's record is checked by `attn check --all` and the tests; a slip in
        # it must not stop the lesson itself.
        return walkthrough
    return slides.with_notes(walkthrough, comparison.errata)


def _missing_input(spec: InputSpec, where: str) -> UserError:
    return UserError(
        f"{where}: input {spec.name!r} ({spec.description}) is missing; add "
        f"{spec.name} = {'[...]' if spec.shape == 'vector' else '[[...]]'} under [examples.inputs]."
    )


def _where(lesson: LessonFile, example: Example) -> str:
    return f"{lesson.path or lesson.lesson}: example {example.name!r}"


def _check_representable(module: Any, inputs: dict[str, np.ndarray], dtype: str) -> None:
    """Refuse an input that the chosen dtype would turn into infinity (never silently)."""
    for name, array in inputs.items():
        largest = float(np.max(np.abs(array))) if array.size else 0.0
        if largest > LARGEST[dtype]:
            flag = option_of(module.INPUTS, name)
            raise UserError(
                f"{flag} has {largest:g}, beyond the largest {dtype} ({LARGEST[dtype]:g}); use "
                "--dtype float32 or float64."
            )


def _parse_inputs(
    module: Any, given: dict[str, Any], check_missing: bool = True
) -> dict[str, np.ndarray]:
    missing = [spec.option for spec in module.INPUTS if spec.name not in given and spec.required]
    if missing and check_missing:
        required = ", ".join(spec.option for spec in module.INPUTS if spec.required)
        raise UserError(
            f"{', '.join(missing)} missing: give every required input ({required})"
            " or none of them to run the lecture example."
        )
    parsed = {}
    for spec in module.INPUTS:
        if spec.name in given:
            convert = as_matrix_or_batch if spec.shape == "matrix" else as_vector_or_batch
            parsed[spec.name] = convert(given[spec.name], spec.option)
    return parsed


def _example_inputs(module: Any, example: Example, where: str) -> dict[str, np.ndarray]:
    """An example's inputs with each reshaped as its spec says (matrix 2-D, vector 1-D; a batch
    one dimension more)."""
    inputs = {}
    for spec in module.INPUTS:
        if spec.name not in example.inputs:
            if spec.required:
                raise _missing_input(spec, where)
            continue
        array = np.asarray(example.inputs[spec.name], dtype=np.float64)
        convert = as_matrix_or_batch if spec.shape == "matrix" else as_vector_or_batch
        inputs[spec.name] = convert(array, f"{where}, inputs.{spec.name}")
    return inputs
