"""From parsed command-line values to a computed walkthrough, the same way for every lesson."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attn_cli.backend import get_backend
from attn_cli.errors import UserError
from attn_cli.lesson_files import LessonFile, load_bundled, load_lesson_file
from attn_cli.matrices import parse_matrix, parse_vector
from attn_cli.model import Walkthrough
from attn_cli.walkthroughs.base import LessonRun, lesson_module


@dataclass
class RunRequest:
    """What the user asked a lesson command for (None = not given)."""

    lesson: str
    inputs: dict[str, str | None] = field(default_factory=dict)  # input name -> option text
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


def lesson_data(request: RunRequest) -> LessonFile:
    """The bundled lesson file, or the user's own (which must be for this lesson)."""
    if request.lesson_file is None:
        return load_bundled(request.lesson)
    lesson = load_lesson_file(request.lesson_file)
    if lesson.lesson != request.lesson:
        raise UserError(
            f"{request.lesson_file}: it is a lesson for {lesson.lesson!r}; run it with "
            f"'attn {lesson.lesson} --lesson {request.lesson_file}'."
        )
    return lesson


def prepare(request: RunRequest) -> LessonRun:
    """Resolve inputs (random, user's, or an example), validate them, and check memory."""
    module = lesson_module(request.lesson)
    lesson = lesson_data(request)
    backend = get_backend(request.backend, request.device, request.dtype)
    given_sizes = {key: value for key, value in request.sizes.items() if value is not None}
    given_inputs = {name: text for name, text in request.inputs.items() if text is not None}
    example = None
    labels: dict[str, tuple[str, ...]] = {}
    # Inputs a lesson lets the user give on top of an example (e.g. W_a for bahdanau --compare).
    overrides = set(getattr(module, "EXAMPLE_OVERRIDES", ()))
    on_example = bool(given_inputs) and set(given_inputs) <= overrides
    if given_sizes:
        if given_inputs:
            flags = ", ".join(_flag(module, name) for name in given_inputs)
            raise UserError(f"give either sizes for random inputs or {flags}, not both.")
        shapes = module.random_shapes(given_sizes)
        inputs = None
    elif given_inputs and not on_example:
        inputs = _parse_inputs(module, given_inputs)
        shapes = {name: array.shape for name, array in inputs.items()}
    else:
        example = lesson.example(request.example)
        if example is None:
            raise UserError(f"{lesson.path}: has no examples; add one, or give the inputs.")
        inputs = _example_inputs(module, example.inputs, lesson)
        inputs.update(_parse_inputs(module, given_inputs, check_missing=False))
        shapes = {name: array.shape for name, array in inputs.items()}
        labels = dict(example.labels)
    if request.example is not None and example is None:
        raise UserError("--example picks a lecture example; leave it out with your own inputs.")
    options = dict(module.OPTIONS)
    if example is not None:
        options.update(example.options)
    options.update({key: value for key, value in request.options.items() if value is not None})
    if inputs is not None:
        module.validate(inputs, options)
    input_bytes = sum(int(np.prod(shape)) for shape in shapes.values()) * (8 + backend.itemsize)
    needed = input_bytes + module.estimate_bytes(shapes, options, backend.itemsize)
    backend.ensure_fits(needed, f"this {request.lesson} walkthrough", "choose smaller sizes")
    if inputs is None:
        rng = np.random.default_rng(request.seed)
        inputs = {name: rng.standard_normal(shape) for name, shape in shapes.items()}
        module.validate(inputs, options)
    labels.update(request.labels)
    return LessonRun(
        lesson, example, inputs, options, backend, request.time_steps, labels, request.seed
    )


def compute(request: RunRequest) -> Walkthrough:
    run = prepare(request)
    return lesson_module(request.lesson).build(run)


def _flag(module: Any, name: str) -> str:
    return next(spec.option for spec in module.INPUTS if spec.name == name)


def _parse_inputs(
    module: Any, given: dict[str, str], check_missing: bool = True
) -> dict[str, np.ndarray]:
    missing = [spec.option for spec in module.INPUTS if spec.name not in given and spec.required]
    if missing and check_missing:
        raise UserError(
            f"{', '.join(missing)} missing: give every input ({', '.join(s.option for s in module.INPUTS)})"
            " or none of them to run the lecture example."
        )
    parsed = {}
    for spec in module.INPUTS:
        if spec.name in given:
            parse = parse_matrix if spec.shape == "matrix" else parse_vector
            parsed[spec.name] = parse(given[spec.name], spec.option)
    return parsed


def _example_inputs(
    module: Any, raw: dict[str, np.ndarray], lesson: LessonFile
) -> dict[str, np.ndarray]:
    """An example's inputs with each reshaped as its spec says (matrix 2-D, vector 1-D)."""
    inputs = {}
    for spec in module.INPUTS:
        if spec.name not in raw:
            if spec.required:
                raise UserError(
                    f"{lesson.path}: an example lacks input {spec.name!r}; add it under "
                    "[examples.inputs]."
                )
            continue
        array = np.asarray(raw[spec.name], dtype=np.float64)
        if spec.shape == "vector":
            if array.ndim == 2 and 1 in array.shape:
                array = array.reshape(-1)
            if array.ndim != 1:
                raise UserError(f"{lesson.path}: input {spec.name} must be a vector (one row).")
        else:
            array = np.atleast_2d(array)
            if array.ndim != 2:
                raise UserError(f"{lesson.path}: input {spec.name} must be a matrix (rows).")
        inputs[spec.name] = array
    return inputs
