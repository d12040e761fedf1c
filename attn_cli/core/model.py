"""The walkthrough: what a lesson computed, as plain data that every renderer reads.

A lesson computes a :class:`Walkthrough` (its inputs, ordered :class:`Step` s and output);
renderers (rich, JSON, Markdown, LaTeX) only lay it out. Values are numpy arrays (already
moved off any GPU), Python numbers, or plain records (lists of dicts) for tables.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from attn_cli.core.errors import PYTHON, Door
from attn_cli.core.templates import fill
from attn_cli.core.variants import TIMED_RUNS

if TYPE_CHECKING:  # numpy is imported by what computes; the data model only names its arrays
    import numpy as np  # matplotlib is optional and imported only when a plot is drawn
    from matplotlib.figure import Figure

# How a value is meant to be shown:
#   matrix   a 1-D or 2-D array of numbers
#   weights  a matrix of attention weights: shaded as a heatmap, with row sums
#   heatmap  a signed matrix shaded by value (a compact block picture when large)
#   scalar   one number
#   records  a table: a list of dicts with the same keys
#   histogram  {"edges": [...], "series": {name: counts}}: bars per bin
#   text     a paragraph
Kind = Literal["matrix", "weights", "heatmap", "scalar", "records", "histogram", "text"]


@dataclass(frozen=True)
class Note:
    """A note shown with a step or under the walkthrough: the words of ``[notes] KEY`` in the
    lesson file, with the raw values its placeholders read.

    Renderers fill it when they show it (:meth:`text`), with the decimals they are handed (the
    command's ``--precision``): a plain ``{x}`` holding a float is written as the tables write
    numbers; a placeholder with a spec (``{x:.1e}``) as the lesson file wrote it. ``str(note)``
    is the text at 4 decimals.
    """

    key: str
    template: str
    values: Mapping[str, Any] = field(default_factory=dict)

    def text(self, precision: int = 4) -> str:
        """The note's words with its values filled in, floats to ``precision`` decimals."""
        return fill(self.template, dict(self.values), f"[notes] {self.key}", precision=precision)

    def __str__(self) -> str:
        return self.text()

    @classmethod
    def fixed(cls, key: str, text: str) -> Note:
        """A note whose words are made elsewhere (a slide's erratum, an overflow): the text as
        it is, with no placeholder."""
        return cls(key, text.replace("{", "{{").replace("}", "}}"))


# The label that opens a part of the paper's form of a step (a softmax's e^s and Σ e^s, with no
# maximum subtracted), shown before the program's form.
BY_HAND = "by hand: "


@dataclass(frozen=True)
class Part:
    """A labelled intermediate shown with a step (e.g. the row max inside a softmax)."""

    label: str
    value: Any
    kind: Kind = "matrix"
    # Its own row and column labels; None: the step's, where the shapes match.
    rows: tuple[str, ...] | None = None
    cols: tuple[str, ...] | None = None
    # The statistics of its value, computed where it was computed (None: not recorded).
    summary: Summary | None = None


# Groups of columns (records keys or matrix column labels), each one quantity: see Step.
Quantities = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Step:
    """One step of a walkthrough. Its title and explanation are the lesson file's templates with
    the values they read (``context``), filled when read: a renderer reads them with the
    decimals it is handed (:meth:`title_at`, :meth:`explanation_at`); ``title`` and
    ``explanation`` are the texts at 4 decimals, as ``str(note)``."""

    key: str
    title_template: str
    explanation_template: str
    value: Any
    kind: Kind = "matrix"
    row_labels: tuple[str, ...] | None = None
    col_labels: tuple[str, ...] | None = None
    parts: tuple[Part, ...] = ()
    # Facts computed with the value that the reader should see (e.g. weight row sums).
    row_sums: np.ndarray | None = None
    # The statistics of the value, computed once where it was computed (StepRecorder.add):
    # what a corner's caption and a summarised JSON array show. None: not recorded (a step
    # made by hand); a renderer then computes them from the value.
    summary: Summary | None = None
    # Notes shown under the value: where the slide and the exact value differ, and similar.
    notes: tuple[Note, ...] = ()
    # With --time: the device's time for the step's computation alone, warm (after an untimed
    # run), the median of a few runs (Backend.timed); never a copy to the host or a summary.
    seconds: float | None = None
    # LaTeX for the left-hand side, e.g. "S = QK^\\top" (LaTeX output only).
    latex: str | None = None
    # The values the title and explanation read.
    context: Mapping[str, Any] = field(default_factory=dict)
    # A records table's display heading of each (snake_case) key, from the lesson file.
    headings: Mapping[str, str] = field(default_factory=dict)
    # The columns that are one quantity, by records key or matrix column label: a quantity's
    # columns share one number format, chosen from their values. None: a matrix is one
    # quantity (one format for it and its row sums), a records table's columns each their own;
    # a column named in no group is a quantity of its own.
    quantities: Quantities | None = None
    # For --brief: the why in one line (the lesson file's; "": the explanation's first
    # sentence), and whether the step is a detail between the main ones, shown without its value.
    brief_template: str = ""
    detail: bool = False
    # A map that shows every column on a screen (attn learn's weights, for a projector): where
    # its table is too wide at the decimals asked, the terminal draws it with FIT_DECIMALS (and
    # without a Σ row column whose sums all read 1) before leaving any column out.
    fit: bool = False

    @property
    def title(self) -> str:
        return self.title_at(4)

    @property
    def explanation(self) -> str:
        return self.explanation_at(4)

    def title_at(self, precision: int) -> str:
        """The title with a plain ``{x}`` number written with ``precision`` decimals, as the
        tables write numbers (a ``{x:.3f}`` stays as written): what a renderer shows."""
        return self._filled(self.title_template, "title", precision)

    def explanation_at(self, precision: int) -> str:
        """The explanation, its numbers written as :meth:`title_at` writes them."""
        return self._filled(self.explanation_template, "explanation", precision)

    def _filled(self, template: str, field_name: str, precision: int) -> str:
        where = f"[steps.{self.key}] {field_name}"
        return fill(template, self.context, where, precision=precision)


@dataclass(frozen=True)
class InputValue:
    name: str
    value: Any
    row_labels: tuple[str, ...] | None = None
    col_labels: tuple[str, ...] | None = None
    description: str = ""
    # A learned parameter (W_Q, a bias, LayerNorm's γ): the brief walkthrough leaves it out.
    weight: bool = False


# The key of a compared run's step (attn_cli.core.compare), beside the first run's step of the
# same key: "weights" and "weights.compared".
COMPARED = ".compared"


@dataclass(frozen=True, repr=False)
class Walkthrough:
    """What a lesson computed: inputs, ordered steps and output, as plain data.

    In a notebook it shows as the terminal's tables (``_repr_html_``); ``step(key)`` gives a
    step's value, ``to_dict()`` the JSON document, ``to_markdown()`` and ``to_latex()`` text,
    ``plot()`` the heatmap of ``--plot``.

    Of a batch, it is one item's walkthrough (``item_index``, from ``--item``): ``items``
    holds every item's, in order, and ``item(i)`` gives item i's to show; unbatched, ``items``
    is empty.
    """

    lesson: str
    title: str
    intro: str
    example: str | None
    backend: str
    device: str
    dtype: str
    inputs: tuple[InputValue, ...]
    steps: tuple[Step, ...]
    output: Any
    example_description: str = ""
    notes: tuple[Note, ...] = ()
    # Anything else a machine reader needs (JSON only), e.g. options that were used.
    meta: dict[str, Any] = field(default_factory=dict)
    # A batch: every item's walkthrough (each unbatched), and which of them this one is.
    items: tuple[Walkthrough, ...] = ()
    item_index: int = 0
    # Notes whose claim does not hold for these numbers (lesson_texts.Texts.claims): never
    # shown by any renderer, kept so that a reader (and the tests) can see what was held back.
    withheld: tuple[Note, ...] = ()
    # How the door that asked names a parameter in what is shown of the walkthrough beside its
    # texts (a batch's line "--item picks another"): keywords unless that door says otherwise.
    door: Door = field(default=PYTHON, compare=False)
    # The walkthrough in brief (:meth:`brief`): renderers lay it out compactly.
    is_brief: bool = False
    # Two runs compared (attn_cli.core.compare): the flags of the second; its steps go in pairs,
    # each step as given and then with the flags (rich: side by side).
    compared: str = ""

    @functools.cached_property
    def _steps_by_key(self) -> dict[str, Step]:
        """Each key's first step: find() in one look-up (a stack of L layers has 25·L steps,
        and its claims look steps up per layer: scanning them made 1,000 layers quadratic)."""
        by_key: dict[str, Step] = {}
        for step in self.steps:
            by_key.setdefault(step.key, step)
        return by_key

    def numbered(self) -> list[tuple[int, Step]]:
        """Each step with its number as shown, from 1; two compared runs' pair of a step (the
        step as given, then the same step with the flags: key + COMPARED) share one number."""
        numbered: list[tuple[int, Step]] = []
        for index, step in enumerate(self.steps):
            previous = self.steps[index - 1] if index else None
            paired = previous is not None and step.key == previous.key + COMPARED
            number = numbered[-1][0] if paired else (numbered[-1][0] + 1 if numbered else 1)
            numbered.append((number, step))
        return numbered

    def item(self, index: int) -> Walkthrough:
        """Item ``index`` of a batch (counting from 0), shown as ``--item index`` shows it."""
        size = len(self.items) or 1
        if not 0 <= index < size:
            batch = f"the batch has {size} items" if self.items else "it is not a batch"
            raise IndexError(f"no item {index} in this {self.lesson} walkthrough: {batch}")
        if not self.items:
            return self
        return replace(self.items[index], items=self.items, item_index=index, door=self.door)

    def find(self, key: str) -> Step:
        """The step with this key (its title, explanation, value, notes...)."""
        step = self._steps_by_key.get(key)
        if step is not None:
            return step
        known = ", ".join(step.key for step in self.steps)
        raise KeyError(f"no step {key!r} in this {self.lesson} walkthrough; its steps are: {known}")

    def step(self, key: str) -> Any:
        """The value of the step with this key: a numpy array for a matrix."""
        return self.find(key).value

    def brief(self, *, weights: bool = False) -> Walkthrough:
        """The walkthrough as ``--brief`` shows it, for a projector: the first sentence of the
        introduction and of each step's why, each step's value, the inputs without the learned
        weights (``weights=True``: with them; ``--show-weights``), no intermediates or notes,
        and in one line a table that repeats the step before or is a single key's 1s."""
        return self._brief(self, weights=weights)

    # The thin hooks below (to_dict, to_markdown, plot, view, __str__, __rich__...) call
    # ``_render``, which the Python API (attn_cli/api.py) sets to attn_cli.render.show: the data
    # imports no renderer. A hook's ``precision`` is handed on as given; None: the view writes
    # the lesson's default.
    _render: ClassVar[Callable[..., Any]]
    # attn_cli.core.brief.brief, handed in by the Python API as _render is (it reads this
    # module: imported from here, the two would import each other).
    _brief: ClassVar[Callable[..., Walkthrough]]

    def view(self, *, precision: int | None = None) -> None:
        """Print the walkthrough as its command prints it at a terminal: every table, with the
        terminal's colours and shading (in Jupyter, the notebook's view of it)."""
        self._render(self, "print", precision=precision)

    def __str__(self) -> str:
        """The walkthrough's text as the terminal shows it, without colour: ``print(w)``."""
        return str(self._render(self, "text"))

    def to_dict(self, *, full: bool = False) -> dict[str, Any]:
        """The JSON document of ``--format json`` as Python data (``full``: no summaries)."""
        return self._render(self, "dict", full=full)

    def to_markdown(self, *, precision: int | None = None) -> str:
        """The walkthrough as ``--format markdown`` prints it (``precision``: decimals shown)."""
        return self._render(self, "markdown", precision=precision)

    def to_latex(self, *, precision: int | None = None, document: bool = False) -> str:
        """The walkthrough as ``--format latex --latex-fragment`` prints it, to paste into a
        document (``precision``: decimals shown); ``document=True``: a whole document that
        compiles as it is, as ``--format latex`` writes it."""
        return self._render(self, "latex", precision=precision, document=document)

    def to_beamer(self, *, precision: int | None = None) -> str:
        """The walkthrough as ``--format beamer`` writes it: slides that pdflatex compiles as
        they are, the inputs on the first frame, then a frame per step (its title, its why in
        one line, its matrices)."""
        return self._render(self, "beamer", precision=precision)

    def to_html(self, *, precision: int | None = None) -> str:
        """The walkthrough as ``--format html`` writes it: the terminal's tables, colours and
        shading as a whole HTML page."""
        return self._render(self, "html", precision=precision)

    def to_svg(self, *, precision: int | None = None) -> str:
        """The walkthrough as ``--format svg`` writes it: the terminal's tables, colours and
        shading as an SVG picture (for slides)."""
        return self._render(self, "svg", precision=precision)

    def to_code(self, backend: str = "numpy") -> str:
        """The program of ``--code``: a short, self-contained numpy (or ``backend="torch"``)
        program that computes this walkthrough's output from its inputs, written into it."""
        return self._render(self, "code", code_backend=backend)

    def plot(
        self, path: str | Path | None = None, *, precision: int | None = None
    ) -> Figure | None:
        """The figure of ``--plot`` (needs matplotlib): written to ``path`` (.png, .svg or .pdf)
        when given, else returned as a matplotlib Figure (a notebook shows it)."""
        return self._render(self, "plot", precision=precision, path=path)

    def __rich__(self) -> Any:
        """The terminal's tables, for ``rich.print(walkthrough)``."""
        return self._render(self, "rich")

    def _repr_html_(self) -> str:
        """Jupyter's view: the terminal's tables and shading, as HTML."""
        return self._render(self, "notebook")

    @property
    def time_legend(self) -> str | None:
        """What a step's time is, said once above the steps when some are timed (--time)."""
        timed = sum(step.seconds is not None for step in self.steps)
        if not timed:
            return None
        # Some steps are computed inside another (a loop's blocks, a process's merges): untimed.
        which = "Each step's time"
        if timed < len(self.steps):
            which = f"A step's time (shown on {timed} of the {len(self.steps)} steps)"
        return (
            f"{which}: its computation alone on the device (not the copy to the host, "
            f"the statistics or the checks), warm, the median of {TIMED_RUNS} runs."
        )

    def __repr__(self) -> str:
        example = f", example {self.example!r}" if self.example else ""
        keys = ", ".join(step.key for step in self.steps)
        batch = f"; batch item {self.item_index} of {len(self.items)}" if self.items else ""
        return f"<Walkthrough {self.lesson}{example}: {len(self.steps)} steps ({keys}){batch}>"


@dataclass(frozen=True)
class Summary:
    """Statistics that describe an array too large to print: its entry count, and the min,
    max, mean and std of its finite entries (None when it has none), how many are not finite
    and how many of those are +∞ (an overflow's trace; −∞ is a mask's).

    A lesson's step and its parts carry theirs (``Step.summary``, ``Part.summary``), computed
    once where the array was computed (``Backend.summary``, on the device): a renderer that
    shows a corner of a large matrix reads them instead of passing over every entry.
    """

    count: int
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    non_finite: int = 0
    positive_infinite: int = 0

    def as_dict(self) -> dict[str, float | int]:
        """What the JSON's ``summary`` object and the corners' captions show: count, then min,
        max, mean and std when there are finite entries, then non_finite when any."""
        stats: dict[str, float | int] = {"count": self.count}
        for name in ("min", "max", "mean", "std"):
            value = getattr(self, name)
            if value is not None:
                stats[name] = value
        if self.non_finite:
            stats["non_finite"] = self.non_finite
        return stats

    @property
    def largest_magnitude(self) -> float | None:
        """The largest |entry| among the finite entries (None when there are none)."""
        if self.min is None or self.max is None:
            return None
        return max(abs(self.min), abs(self.max))


def summary(array: Any) -> Summary:
    """The :class:`Summary` of a numpy array (or anything numpy reads as one), computed in
    float64, finite entries only.

    Mean and std are those of the entries divided by the largest magnitude, scaled back: a sum
    of entries near 1e308 would overflow, and the summary would say ∞ of finite numbers. When
    every entry is finite (min and max are: either would be NaN or ±∞ otherwise), no pass picks
    the finite ones out.
    """
    import numpy as np

    values = np.asarray(array, dtype=np.float64)
    count = int(values.size)
    if not count:
        return Summary(count)
    flat = values.reshape(-1)  # the entries in order (a copy only of a strided view)
    low, high = float(flat.min()), float(flat.max())
    non_finite = positive_infinite = 0
    if not (math.isfinite(low) and math.isfinite(high)):
        flat = flat[np.isfinite(flat)]
        non_finite = count - int(flat.size)
        positive_infinite = int(np.count_nonzero(np.isposinf(values)))
        if not flat.size:
            return Summary(count, non_finite=non_finite, positive_infinite=positive_infinite)
        low, high = float(flat.min()), float(flat.max())
    scale = max(abs(low), abs(high)) or 1.0
    scaled = flat / scale
    return Summary(
        count,
        min=low,
        max=high,
        mean=float(scaled.mean()) * scale,
        std=float(scaled.std()) * scale,
        non_finite=non_finite,
        positive_infinite=positive_infinite,
    )
