"""Options shared by the lesson commands, declared once as Annotated types for Typer."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from attn_cli.lesson_specs import INPUTS, InputSpec
from attn_cli.render import Format

if TYPE_CHECKING:
    from attn_cli.runner import RunRequest

INPUT_PANEL = "Inputs"
SIZE_PANEL = "Random inputs of any size"
OUTPUT_PANEL = "Output"
BACKEND_PANEL = "Backend"


class BackendName(StrEnum):
    numpy = "numpy"
    torch = "torch"


class DeviceName(StrEnum):
    cpu = "cpu"
    cuda = "cuda"
    mps = "mps"


class DtypeName(StrEnum):
    float64 = "float64"
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"


def complete_example(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """TAB completion for --example: the examples of the --lesson file given before it (when it
    has any), else those of this command's bundled lesson."""
    from attn_cli.errors import UserError
    from attn_cli.lesson_files import load_bundled, load_lesson_file

    own = ctx.params.get("lesson")
    try:
        lesson = load_lesson_file(Path(own)) if own else None
        if lesson is None or not lesson.examples:
            lesson = load_bundled(ctx.info_name or "")
    except (OSError, UserError):  # no readable lesson file: nothing to offer
        return []
    return [
        (example.name, " ".join(example.description.split())[:60])
        for example in lesson.examples
        if example.name.startswith(incomplete)
    ]


def input_option(flag: str, help_text: str) -> object:
    """An option in the Inputs panel: a matrix, or a lesson setting such as --positions."""
    return typer.Option(flag, help=help_text, rich_help_panel=INPUT_PANEL, show_default=False)


ExampleOpt = Annotated[
    str | None,
    typer.Option(
        "--example",
        "-e",
        help="Lecture example to run (see --list-examples).",
        rich_help_panel=INPUT_PANEL,
        show_default=False,
        autocompletion=complete_example,
    ),
]
ListExamplesOpt = Annotated[
    bool,
    typer.Option(
        "--list-examples", help="List this lesson's examples and exit.", rich_help_panel=INPUT_PANEL
    ),
]
LessonFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--lesson",
        help="A lesson file of your own (TOML; the format: attn check --help).",
        rich_help_panel=INPUT_PANEL,
        show_default=False,
        dir_okay=False,
    ),
]
SeedOpt = Annotated[
    int,
    typer.Option("--seed", min=0, help="Seed for random inputs.", rich_help_panel=SIZE_PANEL),
]
FormatOpt = Annotated[
    Format, typer.Option("--format", "-f", help="Output format.", rich_help_panel=OUTPUT_PANEL)
]
PrecisionOpt = Annotated[
    int,
    typer.Option(
        "--precision",
        min=0,
        max=15,
        help="Decimals shown (rich, markdown, latex).",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
FullOpt = Annotated[
    bool,
    typer.Option(
        "--full",
        help="JSON: write every entry, even of matrices over 10,000.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="Write the output to FILE instead of the terminal (checked before computing).",
        rich_help_panel=OUTPUT_PANEL,
        show_default=False,
        dir_okay=False,
        readable=False,  # written, not read
    ),
]
PlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        metavar="FILE",
        help="Also draw the lesson's figure (the weights heatmap; posenc: the encoding; "
        "variance: the spread by d_k) to FILE.png, .svg or .pdf (needs matplotlib).",
        rich_help_panel=OUTPUT_PANEL,
        show_default=False,
        dir_okay=False,
        readable=False,  # written, not read
    ),
]
TimeOpt = Annotated[
    bool,
    typer.Option(
        "--time",
        help="Show each step's wall time (synchronised on a GPU).",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
BackendOpt = Annotated[
    BackendName | None,
    typer.Option(
        "--backend",
        help="Array library (default: numpy; torch for a GPU device).",
        rich_help_panel=BACKEND_PANEL,
        show_default=False,
    ),
]
DeviceOpt = Annotated[
    DeviceName,
    typer.Option(
        "--device", help="Where to compute (torch only off the CPU).", rich_help_panel=BACKEND_PANEL
    ),
]
DtypeOpt = Annotated[
    DtypeName,
    typer.Option(
        "--dtype", help="Floating-point type of the computation.", rich_help_panel=BACKEND_PANEL
    ),
]


def size_option(flag: str, help_text: str) -> object:
    # No min=1 here: the runner checks sizes, so a bad one is our one-line error, not a usage box.
    return typer.Option(flag, help=help_text, rich_help_panel=SIZE_PANEL, show_default=False)


QuizOpt = Annotated[
    bool,
    typer.Option(
        "--quiz",
        help="Quiz mode: show the inputs and each step's title and shape, ask "
        "for the values (an answer key after blanks when not at a terminal).",
        rich_help_panel=OUTPUT_PANEL,
    ),
]
TokensOpt = Annotated[
    str | None,
    typer.Option(
        "--tokens",
        help='Names for the tokens (rows), e.g. "the,cat,slept".',
        rich_help_panel=INPUT_PANEL,
        show_default=False,
    ),
]
ValidLenOpt = Annotated[
    str | None,
    typer.Option(
        "--valid-len",
        help="Padding mask: keys at positions ≥ the valid length get no weight; one length for "
        'every query row ("2") or one per row ("2,3,1"), as masked_softmax(valid_lens) or '
        'key_padding_mask; with a batch, one per item separated by "|" ("2|3").',
        rich_help_panel=INPUT_PANEL,
        show_default=False,
    ),
]
DropoutOpt = Annotated[
    float | None,
    typer.Option(
        "--dropout",
        metavar="P",
        help="Dropout on the weights, as in training: keep each with probability 1 − P, scale "
        "the kept by 1/(1 − P); 0 ≤ P < 1. The mask is seeded by --seed: --backend torch draws "
        "torch.manual_seed(seed) then nn.Dropout(P), exactly PyTorch's mask; numpy draws "
        "np.random.default_rng(seed) (uniform < 1 − P keeps), a different mask.",
        rich_help_panel=INPUT_PANEL,
        show_default=False,
    ),
]
DropoutSeedOpt = Annotated[
    int,
    typer.Option(
        "--seed",
        min=0,
        help="Seed for random inputs and for the --dropout mask (each generator starts afresh "
        "from it).",
        rich_help_panel=SIZE_PANEL,
    ),
]
ItemOpt = Annotated[
    int,
    typer.Option(
        "--item",
        help="With batched inputs (a leading batch dimension: JSON nested one level deeper, a "
        '3-D .npy, items separated by "|"): the item shown, from 0. The JSON holds every item.',
        rich_help_panel=OUTPUT_PANEL,
    ),
]


@dataclass(frozen=True)
class SharedOptions:
    """The options every lesson command shares, as parsed (None: the command has no such
    option)."""

    example: str | None
    list_examples: bool
    quiz: bool
    lesson: Path | None
    fmt: Format
    precision: int
    full: bool
    output: Path | None
    plot: Path | None
    time: bool
    backend: BackendName | None
    device: DeviceName
    dtype: DtypeName
    seed: int = 0
    item: int = 0


# The options every lesson command takes after its own, in this order: name -> (type, default).
SHARED: dict[str, tuple[object, object]] = {
    "seed": (SeedOpt, 0),
    "example": (ExampleOpt, None),
    "item": (ItemOpt, 0),
    "list_examples": (ListExamplesOpt, False),
    "quiz": (QuizOpt, False),
    "lesson": (LessonFileOpt, None),
    "fmt": (FormatOpt, Format.rich),
    "precision": (PrecisionOpt, 4),
    "full": (FullOpt, False),
    "output": (OutputOpt, None),
    "plot": (PlotOpt, None),
    "time": (TimeOpt, False),
    "backend": (BackendOpt, None),
    "device": (DeviceOpt, DeviceName.cpu),
    "dtype": (DtypeOpt, DtypeName.float64),
}


# Each lesson command's parsed parameters (click's ``ctx.params``) to its request and shared
# options, by lesson: filled as the command modules are imported (`attn tour` reads it).
LESSON_REQUESTS: dict[str, Callable[..., tuple[RunRequest, SharedOptions]]] = {}


def lesson_command(
    lesson: str,
    *,
    rows: str = "tokens",
    seed: bool = True,
    item: bool = True,
    precision: int = 4,
) -> Callable[[Callable[..., dict[str, Any] | None]], Callable[..., None]]:
    """Make a lesson's command from the function declaring its own options.

    The command takes, in this order: the lesson's inputs (from its InputSpecs), the function's
    parameters (its lesson options in the Inputs panel, its random sizes in the sizes panel,
    --tokens), then the shared options (without --seed or --item when told so; --seed says
    it seeds --dropout too when the lesson has it). Its request maps each input's option to
    the input's name, each lesson option and size to its own name, --tokens to the row labels
    `rows`. The function is called with its own parameters and may return lesson options
    converted from their text (e.g. a parsed --permute).
    """

    def declare(own: Callable[..., dict[str, Any] | None]) -> Callable[..., None]:
        specs = INPUTS[lesson]
        own_params = inspect.signature(own, eval_str=True).parameters.values()
        sizes = [p.name for p in own_params if _panel(p.annotation) == SIZE_PANEL]
        flags = {p.name for p in own_params if p.default is False}  # given or not: no "off"
        options = [p.name for p in own_params if p.name not in sizes and p.name != "tokens"]
        shared = {
            name: value
            for name, value in SHARED.items()
            if (seed or name != "seed") and (item or name != "item")
        }
        if "dropout" in options:
            shared["seed"] = (DropoutSeedOpt, 0)
        shared["precision"] = (PrecisionOpt, precision)
        params = [
            _keyword(spec.keyword, Annotated[str | None, _input(spec)], None) for spec in specs
        ]
        params += [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own_params]
        params += [_keyword(name, *value) for name, value in shared.items()]

        def parse(**given: Any) -> tuple[RunRequest, SharedOptions]:
            from attn_cli.runner import RunRequest

            converted = own(**{p.name: given[p.name] for p in own_params}) or {}
            request = RunRequest(
                lesson=lesson,
                inputs={spec.name: given[spec.keyword] for spec in specs},
                options={
                    name: converted.get(name, _plain(given[name], name in flags))
                    for name in options
                },
                sizes={name: given[name] for name in sizes},
                labels=_labels(given.get("tokens"), rows),
                example=given["example"],
                item=given.get("item", 0),
                lesson_file=given["lesson"],
                seed=given.get("seed", 0),
                backend=given["backend"],
                device=given["device"],
                dtype=given["dtype"],
                time_steps=given["time"],
            )
            return request, SharedOptions(**{n: given[n] for n in shared})

        def command(**given: Any) -> None:
            from attn_cli.commands.common import run_lesson_command

            run_lesson_command(*parse(**given))

        LESSON_REQUESTS[lesson] = parse
        command.__name__ = command.__qualname__ = own.__name__
        command.__doc__ = own.__doc__
        command.__module__ = own.__module__
        command.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return declare


def _input(spec: InputSpec) -> object:
    return input_option(spec.option, spec.help)


def _keyword(name: str, annotation: object, default: object) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def _panel(annotation: object) -> str | None:
    """The --help panel of an Annotated[..., typer.Option(...)] parameter."""
    metadata = getattr(annotation, "__metadata__", ())
    return next((getattr(meta, "rich_help_panel", None) for meta in metadata), None)


def _plain(value: object, flag: bool) -> object:
    """A lesson option as the lesson reads it: a choice as its text, a flag not given as None
    (the example's or the lesson's default)."""
    if isinstance(value, StrEnum):
        return value.value
    return None if flag and not value else value


def _labels(tokens: str | None, rows: str) -> dict[str, tuple[str, ...]]:
    if tokens is None:
        return {}
    from attn_cli.matrices import parse_names

    return {rows: parse_names(tokens, "--tokens")}
