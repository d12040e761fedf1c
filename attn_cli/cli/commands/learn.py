"""attn learn: small models trained on the spot, their attention shown as it emerges.

Parsing and dispatch only: each task is the module ``attn_cli.learn.<task>``, whose declaration
(``TASK``, attn_cli.learn.common.Task; imported by name when its command runs) trains and
returns a Walkthrough that the lessons' renderers lay out, --plot's figure included. Nothing
heavy (numpy, torch, the task) is imported until the command runs, so the start-up of every
other command is unaffected.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeAlias

import typer

from attn_cli.cli.options import FLAG, OUTPUT_PANEL, PrecisionOpt, choice, help_text, metavar_of
from attn_cli.cli.parsing import in_range
from attn_cli.learn.common import PRECISION

if TYPE_CHECKING:
    from attn_cli.learn.common import LearnOptions

TRAIN_PANEL = "Training"

# The tasks, each the module attn_cli.learn.<task> (imported by name when its command runs).
TASKS: tuple[str, ...] = ("translate", "grammar", "induction")

if TYPE_CHECKING:  # a checker sees the choices as enum members: their .value is the text
    Task: TypeAlias = StrEnum
else:
    Task = choice("Task", TASKS)


class LearnFormat(StrEnum):
    rich = "rich"
    json = "json"
    markdown = "markdown"
    latex = "latex"


TaskArg = Annotated[
    Task,
    typer.Argument(
        metavar="TASK",
        help="translate: a toy translation task, the fixed-vector encoder-decoder beside "
        "Bahdanau's attention; grammar: the lectures' opening heatmap, a self-attention "
        "encoder on a language whose words take endings from their head words, beside one "
        "whose attention is frozen even; induction: a two-layer attention-only Transformer on "
        "repeated sequences, beside a one-layer one.",
        show_default=False,
    ),
]
SeedOpt = Annotated[
    int,
    typer.Option(
        "--seed",
        metavar="N",
        callback=in_range(0),
        help="Seed of the data, the initial weights and the batches: the same N, the same "
        "numbers on the same machine, with the same versions of torch and numpy (another CPU "
        "may differ in the last digits, and training can carry that into the scores).",
        rich_help_panel=TRAIN_PANEL,
    ),
]
StepsOpt = Annotated[
    int | None,
    typer.Option(
        "--steps",
        metavar="N",
        callback=in_range(1),
        help=help_text("Training steps (one batch each) for every model (default: the task's)."),
        rich_help_panel=TRAIN_PANEL,
        show_default=False,
    ),
]
HiddenOpt = Annotated[
    int | None,
    typer.Option(
        "--hidden",
        metavar="N",
        callback=in_range(1),
        help=help_text("Width of the models' states (default: the task's)."),
        rich_help_panel=TRAIN_PANEL,
        show_default=False,
    ),
]
MaxLenOpt = Annotated[
    int | None,
    typer.Option(
        "--max-len",
        metavar="N",
        callback=in_range(1),
        help=help_text(
            "Longest sequence trained on: source sentence (translate, grammar), repeated half "
            "(induction) (default: the task's)."
        ),
        rich_help_panel=TRAIN_PANEL,
        show_default=False,
    ),
]
SaveOpt = Annotated[
    Path | None,
    typer.Option(
        "--save",
        metavar="FILE",
        help="Also write the trained weights to FILE (.npz, no pickle); attn bahdanau "
        "--weights FILE reads translate's.",
        rich_help_panel=OUTPUT_PANEL,
        show_default=False,
        dir_okay=False,
        readable=False,
    ),
]
WeightsOpt = Annotated[
    Path | None,
    typer.Option(
        "--weights",
        metavar="FILE",
        help="Evaluate the weights FILE written by --save instead of training (grammar, "
        "induction), on the held-out data of the seed it was trained with.",
        rich_help_panel=TRAIN_PANEL,
        show_default=False,
        dir_okay=False,
    ),
]
SentenceOpt = Annotated[
    str | None,
    typer.Option(
        "--sentence",
        metavar="TEXT",
        help="A sentence of the task's language to show instead of its own (translate: the "
        "source language; grammar: its language), its words checked against the vocabulary; "
        'e.g. --sentence "the dog sat on the red mat".',
        rich_help_panel=OUTPUT_PANEL,
        show_default=False,
    ),
]
LearnFullOpt = Annotated[
    bool,
    typer.Option(
        "--full",
        metavar=FLAG,
        help="Show every row and column of every table (in column groups that fit the width), "
        "and with --format json every entry.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
LearnFormatOpt = Annotated[
    LearnFormat,
    typer.Option(
        "--format",
        "-f",
        metavar=metavar_of(LearnFormat),
        help="Output format.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
LearnPlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        metavar="FILE",
        help="Also draw the heatmaps before and after training and the accuracy figure, to "
        "FILE: .png, .svg or .pdf (needs matplotlib).",
        rich_help_panel=OUTPUT_PANEL,
        show_default=False,
        dir_okay=False,
        readable=False,
    ),
]
CodeOpt = Annotated[
    bool,
    typer.Option(
        "--code",
        metavar=FLAG,
        help="Print the training program instead (PyTorch), with these options written in.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]


def learn(
    task: TaskArg,
    seed: SeedOpt = 0,
    steps: StepsOpt = None,
    hidden: HiddenOpt = None,
    max_len: MaxLenOpt = None,
    save: SaveOpt = None,
    weights: WeightsOpt = None,
    sentence: SentenceOpt = None,
    fmt: LearnFormatOpt = LearnFormat.rich,
    precision: PrecisionOpt = PRECISION,
    full: LearnFullOpt = False,
    plot: LearnPlotOpt = None,
    code: CodeOpt = False,
) -> None:
    """Train small models on the spot and watch attention emerge: attention that was learned,
    not written.

    Generates the task's data from --seed, trains the models on the same batches with the same
    budget (a progress bar on a terminal), then shows what they learned, measured only on
    held-out data: accuracy, the attention heatmaps before and after training, and how well the
    learned attention matches the true pattern. Needs PyTorch.
    """
    from attn_cli.cli.commands.streams import start_up_done
    from attn_cli.learn.common import LearnOptions

    start_up_done()
    options = LearnOptions(
        task=task.value,
        seed=seed,
        steps=steps,
        hidden=hidden,
        max_len=max_len,
        save=save,
        weights=weights,
        sentence=sentence,
    )
    if code:
        print_program(options, fmt, plot, full)
    else:
        train_and_show(options, fmt, precision, plot, full)


def print_program(options: LearnOptions, fmt: LearnFormat, plot: Path | None, full: bool) -> None:
    """--code: the task's training program, nothing trained (and no torch needed)."""
    from attn_cli.cli.commands.streams import stdout_console
    from attn_cli.core.errors import UserError
    from attn_cli.learn.tasks import get_task

    given = {
        f"--format {fmt.value}": fmt is not LearnFormat.rich,
        "--plot": plot is not None,
        "--save": options.save is not None,
        "--weights": options.weights is not None,
        "--sentence": options.sentence is not None,
        "--full": full,
    }
    for flag, on in given.items():
        if on:
            raise UserError(f"--code prints the training program; leave out {flag}.")
    program = get_task(options.task).program(options)
    stdout_console().out(program.rstrip("\n"), highlight=False)


def train_and_show(
    options: LearnOptions, fmt: LearnFormat, precision: int, plot: Path | None, full: bool
) -> None:
    """Check the files and the task's needs, train (a progress bar on a terminal), then show
    the walkthrough, and draw its figure with --plot."""
    from attn_cli.cli.commands.streams import stderr_console, stdout_console
    from attn_cli.core.errors import UserError
    from attn_cli.learn.common import progress_bar, require_torch
    from attn_cli.learn.tasks import get_task
    from attn_cli.render import Format, RenderOptions, render

    require_torch(options.task)
    check_files(options, plot)
    task = get_task(options.task)
    if options.weights is not None and not task.reads_weights:
        raise UserError(f"attn learn {task.name} does not read --weights; it trains from scratch.")
    if options.sentence is not None and not task.reads_sentence:
        raise UserError(
            f"attn learn {task.name} has no sentences to show (--sentence is for translate and "
            "grammar); leave it out."
        )
    with progress_bar(stderr_console()) as progress:
        walkthrough = task.run(options, progress)
    if plot is not None:
        from attn_cli.core.outputs import write_bytes
        from attn_cli.render.heatmap import heatmap_file

        draw = get_task(options.task).figure
        write_bytes(plot, heatmap_file(walkthrough, draw, plot, precision), "--plot")
    shown = RenderOptions(precision=precision, full=full, whole_tables=full)
    render(walkthrough, Format(fmt.value), stdout_console(), shown)


def check_files(options: LearnOptions, plot: Path | None) -> None:
    """Refuse, before training (which takes a while), a figure that could not be drawn or
    written, the same file for two outputs, and a weights file that could not be written."""
    from attn_cli.core.weights_file import check_save_path

    if plot is not None:
        from attn_cli.core.outputs import check_distinct, require_matplotlib
        from attn_cli.render.heatmap import check_heatmap_path

        check_heatmap_path(plot)
        require_matplotlib()
        check_distinct({"--plot": plot, "--save": options.save})
    if options.save is not None:
        check_save_path(options.save)
