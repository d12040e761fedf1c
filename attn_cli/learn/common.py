"""What every `attn learn` task shares.

A task is a module ``attn_cli.learn.<task>`` that ends with its declaration, ``TASK =
Task(...)`` (:class:`Task`, found by attn_cli.learn.tasks.get_task, as a lesson's ``LESSON``
is by get_lesson): its texts, the function that trains and returns the walkthrough, and the program
of ``--code``. A task records its walkthrough with the lessons' step recorder (:func:`recorder`:
declared texts, notes, claims withheld when false) and the lessons' renderers show it, --plot
included (attn_cli.render.heatmap).

Also here: :class:`LearnOptions`, :func:`pin_kernels` and :func:`seeded` (data, initialisation
and batches from the seed; deterministic algorithms; a fixed thread count; the CPU kernels
pinned), :func:`reproducibility` (what the numbers depend on), the :class:`Progress` callback,
:func:`reporter` (a model's training telling it) and :func:`progress_bar` (rich's progress on a
terminal, nothing otherwise), :func:`sized` (the
task's default sizes; --weights refusing sizes), :func:`too_small` (the "budget too small to say
anything" error) and :func:`require_torch`. Light at import (no numpy, no torch): the command
imports it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from attn_cli.core.errors import UserError, param
from attn_cli.core.usertext import clipped

if TYPE_CHECKING:
    import numpy as np
    from rich.console import Console

    from attn_cli.core.model import Note, Walkthrough
    from attn_cli.course.recorder import StepRecorder
    from attn_cli.lessonfiles.texts import Texts

# Threads torch trains with: the same on every machine, so the same command prints the same
# numbers (a reduction split over another number of threads sums in another order). One: the
# models are small enough that a second thread gains little, and on a shared machine (the other
# core busy) two threads wait on each other and train several times slower (docs/learn.md).
THREADS = 1

# The CPU kernels torch trains with, pinned so that a seed gives the same numbers on more x86-64
# machines with the same versions (not on all: see below). Left to itself, torch picks its kernels by the CPU's vector
# instructions (AVX-512 on one machine, AVX2 on another) and so does MKL, its matrix library:
# the same sums in another order, last digits apart, and training amplifies them (translate's
# default: alignment score 0.973 with AVX-512 kernels, 0.952 with AVX2 ones, on one machine
# with ATEN_CPU_CAPABILITY set). AVX2 is on every x86-64 CPU of the last ten years; MKL_CBWR is
# MKL's conditional numerical reproducibility (the same results on every CPU that has the code
# path named). Both are read when torch first runs a kernel and when MKL starts: set before
# torch is imported (:func:`pin_kernels`), or too late to count for this process. Pinned, one
# CI machine still trained translate's default (two determiners then) to 0.896 where this
# project's machines gave 0.960: another CPU model can still sum in another order, so the note
# claims the same numbers on the same machine only, and the defaults meet their targets with a
# margin over seeds rather than by one seed's luck (docs/learn.md).
KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}
# The kernels torch reports when they are pinned (torch.backends.cpu.get_cpu_capability()).
PINNED_CAPABILITY = "AVX2"
# Whether this process set KERNELS before it imported torch (pin_kernels).
_pinned_before_torch: list[bool] = []


@dataclass(frozen=True)
class LearnOptions:
    """What `attn learn TASK` was asked: the seed (data, initialisation, batches), the training
    budget and sizes (None: the task's default; each task says what --max-len means for it),
    and the file to save the trained weights to."""

    task: str
    seed: int = 0
    steps: int | None = None
    hidden: int | None = None
    max_len: int | None = None
    save: Path | None = None
    # A file written by --save to evaluate instead of training (a task that reads_weights).
    weights: Path | None = None
    # A sentence of the task's language to show instead of its own (a task that reads_sentence).
    sentence: str | None = None

    def __post_init__(self) -> None:
        """A number larger than any attn takes is refused before anything uses it (a seed of
        2**64 overflows torch's generator; a width of 2**64, numpy's)."""
        from attn_cli.core.whole import check_whole_size

        for keyword, value in (
            ("seed", self.seed),
            ("steps", self.steps),
            ("hidden", self.hidden),
            ("max_len", self.max_len),
        ):
            check_whole_size(value, keyword)

    def resolved(self, *, steps: int, hidden: int, max_len: int) -> LearnOptions:
        """These options with each one not given set to the task's default."""
        return replace(
            self,
            steps=steps if self.steps is None else self.steps,
            hidden=hidden if self.hidden is None else self.hidden,
            max_len=max_len if self.max_len is None else self.max_len,
        )

    def sizes(self) -> tuple[int, int, int]:
        """The steps, hidden and max_len of options :meth:`resolved` (every size set)."""
        assert self.steps is not None and self.hidden is not None and self.max_len is not None
        return self.steps, self.hidden, self.max_len


class Progress(Protocol):
    """Told after each evaluation while a model trains: which model (its name as the output
    says it), the step reached of ``total``, the training loss, and the held-out accuracy
    (None between evaluations)."""

    def __call__(
        self, model: str, step: int, total: int, loss: float, accuracy: float | None
    ) -> None: ...


@dataclass(frozen=True)
class Task:
    """A task, declared once at the bottom of its module ``attn_cli.learn.<task>``:
    ``TASK = Task(...)``, as a lesson declares ``LESSON = Lesson(...)``. Its figure (--plot) is
    drawn from the walkthrough (attn_cli.learn.figures), by the lessons' renderer."""

    name: str
    # Every step text and note it records, with the names each hands over, and the claims.
    texts: Texts
    # Generate the data from options.seed, train (telling ``progress``), evaluate on held-out
    # data only, and record the walkthrough (:func:`recorder`); with options.save also write
    # the trained weights (:func:`save_arrays`).
    run: Callable[[LearnOptions, Progress | None], Walkthrough]
    # --code: the training program with the options written in (printing it needs no torch).
    program: Callable[[LearnOptions], str]
    # --plot: the walkthrough and a precision in, a matplotlib figure out.
    figure: Callable[[Walkthrough, int], Any] | None = None
    # --weights FILE: evaluate a file written by --save instead of training.
    reads_weights: bool = False
    # --sentence "...": a sentence of the task's language, shown instead of its own.
    reads_sentence: bool = False


# --- torch, seeding and determinism ----------------------------------------------------------


def require_torch(task: str) -> None:
    """A one-line UserError naming what to install when PyTorch is missing (or unusable); the
    CPU kernels pinned first (:func:`pin_kernels`)."""
    pin_kernels()
    try:
        import torch  # noqa: F401
    except ImportError:
        from attn_cli.core.install import install_command

        raise UserError(
            f"attn learn {task} trains with PyTorch, which is not installed; install it with: "
            f"{install_command('torch')}."
        ) from None


def pin_kernels() -> None:
    """Pin torch's and MKL's CPU kernels (KERNELS) in this process's environment, when torch
    has not been imported yet (afterwards it would be too late to count, and the output says
    what the numbers depend on instead: :func:`reproducibility`)."""
    if _pinned_before_torch or "torch" in sys.modules:
        return
    os.environ.update(KERNELS)
    _pinned_before_torch.append(True)


def reproducibility() -> dict[str, Any]:
    """What a run's numbers depend on, as this process trains: the versions, torch's CPU
    kernels, MKL's code path, the threads, and whether the kernels are pinned (set before torch
    was imported and reported by torch as AVX2), so that a machine prints the same numbers for
    the same seed and versions again (another CPU may not: docs/learn.md)."""
    import numpy as np
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    return {
        "torch": torch.__version__,
        "numpy": np.__version__,
        "kernels": capability,
        "mkl_cbwr": os.environ.get("MKL_CBWR"),
        "threads": torch.get_num_threads(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "pinned": bool(_pinned_before_torch) and capability == PINNED_CAPABILITY,
    }


# --- what a user gave, quoted in a message ---------------------------------------------------

# A --sentence quoted in an error: its first words, enough to find it, never a 40 KB line.
QUOTED_WORDS = 8
QUOTED_CHARACTERS = 80


def quoted_sentence(text: str) -> str:
    """``--sentence``'s text as an error quotes it (repr: a control character shows escaped):
    whole when short, else its first QUOTED_WORDS words and how many it has."""
    words = text.split()
    if len(words) <= QUOTED_WORDS and len(text) <= QUOTED_CHARACTERS:
        return repr(text)
    head = clipped(" ".join(words[:QUOTED_WORDS]), QUOTED_CHARACTERS)
    return f"{head!r} ({len(words):,} word{'' if len(words) == 1 else 's'})"


# --- weights read with --weights -------------------------------------------------------------


def check_float32(weights: Mapping[str, Any], key: str, flag: str, written_by: str) -> None:
    """Refuse weights that float32, the models' dtype, cannot hold (they would be ∞, and every
    score NaN): training never makes them. ``key`` names the model in the file ("two",
    "model"), ``flag`` the file ("--weights m.npz:"), ``written_by`` what writes one."""
    import numpy as np

    largest = float(np.finfo(np.float32).max)
    for name, value in weights.items():
        peak = float(np.max(np.abs(value))) if value.size else 0.0
        if peak > largest:
            raise UserError(
                f"{flag} {key}.{name} has an entry of {peak:.3g}, beyond the largest float32 "
                f"({largest:.3g}), the dtype the models compute in; write the file with "
                f"{written_by}."
            )


def overflow_note(names: Iterable[str], held: str, task: str) -> tuple[Note, ...]:
    """Said when a model's attention on the held-out ``held`` ("sequences", "sentences") is not
    finite (``names``: those models; weights from a file that overflow float32 in the models'
    sums): the NaN shown is what it computes. Nothing when ``names`` is empty."""
    import numpy as np

    from attn_cli.core.model import Note

    broken = list(names)
    if not broken:
        return ()
    largest = float(np.finfo(np.float32).max)
    return (
        Note.fixed(
            "overflow",
            f"The {' and '.join(broken)} model's attention weights are NaN on the held-out "
            f"{held}: its weights are so large that the scores overflow float32 (largest "
            f"{largest:.3g}), the dtype the models compute in, so the scores and heatmaps below "
            f"show NaN, not attention. Weights trained by attn learn {task} stay far below this.",
        ),
    )


def reproducibility_note(found: dict[str, Any]) -> Note:
    """The sentence that says what the numbers depend on (``found``: :func:`reproducibility`):
    a note whose words are made here, the same for every task, from the facts it states."""
    from attn_cli.core.model import Note

    versions = f"torch {found['torch']} and numpy {found['numpy']}"
    threads = f"{found['threads']} thread{'s' if found['threads'] != 1 else ''}"
    if found["pinned"]:
        text = (
            f"Reproducible on this machine: with {versions}, the same seed prints these "
            f"numbers again (torch's and MKL's CPU kernels pinned to AVX2, {threads}, "
            "deterministic algorithms). Another CPU can differ in the last digits, and "
            "training can carry that into the scores."
        )
    else:
        text = (
            f"These numbers depend on {versions}, this CPU's kernels ({found['kernels']}; "
            f"attn learn pins them to AVX2 only when it imports torch itself) and {threads}: "
            "another CPU may differ in the last digits, and training can carry that into the "
            "scores."
        )
    return Note.fixed("reproducibility", text)


def seeded(seed: int) -> None:
    """Same seed, same numbers on the same machine: torch's generator seeded, deterministic
    algorithms only, and a fixed number of threads (THREADS, or fewer on a one-core machine)."""
    import torch

    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(max(1, min(THREADS, os.cpu_count() or 1)))


Shape = TypeVar("Shape")


@dataclass
class TrainedModel(Generic[Shape]):
    """One of a task's models: its key in a --save file, its name, its shape, its weights before
    training (None: read from a file) and after, and its curve (empty for a file's)."""

    key: str
    name: str
    shape: Shape
    before: dict[str, np.ndarray] | None
    after: dict[str, np.ndarray]
    curve: list[dict[str, float]]


def saved_arrays(seed: int, steps: int, models: Iterable[Any]) -> dict[str, np.ndarray]:
    """The file of --save: each model's trained weights as ``<model key>.<weight>``, and the seed
    and steps it was trained with (its held-out examples are the seed's)."""
    import numpy as np

    arrays: dict[str, np.ndarray] = {"seed": np.array(seed), "steps": np.array(steps)}
    for m in models:
        arrays.update({f"{m.key}.{name}": value for name, value in m.after.items()})
    return arrays


def refuse_sizes_with_weights(options: LearnOptions) -> None:
    """--weights evaluates a saved model, whose file fixes its sizes: refuse the options that
    would set them (or save it again), naming each given."""
    given = [
        param(keyword)
        for keyword, value in (
            ("steps", options.steps),
            ("hidden", options.hidden),
            ("max_len", options.max_len),
            ("save", options.save),
        )
        if value is not None
    ]
    if given:
        raise UserError(
            f"{param('weights')} evaluates a trained model, whose file fixes its sizes; leave out "
            f"{', '.join(given)}."
        )


def sized(
    options: LearnOptions, task: str, *, steps: int, hidden: int, max_len: int, min_steps: int
) -> LearnOptions:
    """The options with the task's default (``steps``, ``hidden``, ``max_len``) for each size
    not given, or the error for fewer than ``min_steps`` steps; with --weights, the options as
    given, refused if they give a size (the file fixes them)."""
    if options.weights is not None:
        refuse_sizes_with_weights(options)
        return options
    resolved = options.resolved(steps=steps, hidden=hidden, max_len=max_len)
    assert resolved.steps is not None
    if resolved.steps < min_steps:
        raise too_small(
            task,
            f"{resolved.steps} training step{'' if resolved.steps == 1 else 's'}",
            f"give {param('steps', min_steps)} or more (default {steps})",
        )
    return resolved


def too_small(task: str, what: str, fix: str) -> UserError:
    """The error for a budget too small to say anything: ``what`` the run reached (as words),
    ``fix`` the options that would give it enough. Said instead of printing a heatmap of noise
    as if it had been learned."""
    return UserError(f"attn learn {task}: {what}: too small to say anything; {fix}.")


# --- progress --------------------------------------------------------------------------------


def reporter(
    progress: Progress | None, model: str, total: int
) -> Callable[[int, float, float], None]:
    """What a model's training tells after each evaluation (step, loss, held-out accuracy),
    passed on to ``progress`` as model ``model``'s, of ``total`` steps."""

    def report(step: int, loss: float, accuracy: float) -> None:
        if progress is not None:
            progress(model, step, total, loss, accuracy)

    return report


@contextlib.contextmanager
def progress_bar(console: Console) -> Iterator[Progress | None]:
    """A Progress that draws rich's progress bar on ``console`` (one bar per model: step, loss,
    held-out accuracy; gone when training ends), or None off a terminal (nothing is drawn)."""
    if not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    with RichProgress(
        TextColumn("{task.description:<14}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:>6}  held-out {task.fields[accuracy]:>6}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(model: str, step: int, total: int, loss: float, accuracy: float | None) -> None:
            if model not in tasks:
                tasks[model] = bar.add_task(model, total=total, loss="", accuracy="")
            shown = bar.tasks[tasks[model]].fields["accuracy"]
            if accuracy is not None:
                shown = f"{accuracy:.0%}"
            bar.update(tasks[model], completed=step, loss=f"{loss:.3f}", accuracy=shown)

        yield update


# --- recording: the lessons' recorder, the task's words --------------------------------------

# The decimals a task's walkthrough is shown with unless --precision says otherwise: the
# default of the command's --precision and of the walkthrough's Python hooks (attn_cli.api).
PRECISION = 3


def texts_path(task: str) -> Path:
    """The words of ``task``: ``lessons/learn/<task>.toml`` (below lessons/, so that attn check
    and the lesson registry, which read lessons/*.toml, never take it for a lesson)."""
    from attn_cli.lessonfiles.loader import bundled_lessons_dir

    return bundled_lessons_dir() / "learn" / f"{task}.toml"


def recorder(task: str, texts: Texts, options: Mapping[str, Any]) -> StepRecorder:
    """The lessons' step recorder for ``task``: its steps' and notes' words from its lesson
    file (``lesson = "learn-<task>"``, the lesson file's format), checked against ``texts``
    when loaded; a note whose words depend on the numbers is a claim (``Texts(claims=...)``),
    withheld by the finished walkthrough when its condition does not hold. The walkthrough says
    it was computed by torch in float32 on the CPU (where the models train), with ``options``
    (the options the run used, meta["options"])."""
    from attn_cli.core.backend_choice import get_backend
    from attn_cli.course.lesson import LessonRun
    from attn_cli.course.recorder import StepRecorder
    from attn_cli.lessonfiles.loader import load_lesson_file, with_checked_texts

    file = with_checked_texts(load_lesson_file(texts_path(task)), texts)
    run = LessonRun(
        file=file,
        example=None,
        inputs={},
        options=dict(options),
        backend=get_backend("torch", "cpu", "float32"),
    )
    return StepRecorder(run, texts=texts)


def curve_quantities(models: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    """The columns of a training curve that are one quantity, each models' side by side: their
    losses, their accuracies (one number format each, so that they compare digit by digit)."""
    names = tuple(models)
    return tuple(tuple(f"{name}_{what}" for name in names) for what in ("loss", "accuracy"))
