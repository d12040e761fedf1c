"""Large walkthroughs cost what is shown, not n²: each step's statistics are computed once, where
the step was computed, and every renderer reads them; a table formats only the cells it shows.

The proofs are structural (no clock): a matrix of 10¹¹ entries that exists only as a broadcast
view renders in every format (any pass over every entry would have to allocate hundreds of
gigabytes first), formatting is counted, and the summaries a renderer computes are watched.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from attn_cli.core.backend import Backend
from attn_cli.core.model import Part, Step, Summary, Walkthrough, summary
from attn_cli.core.numbers import number_style
from attn_cli.render import cells, json_render, rich_render, show
from attn_cli.render.rich_render import MAX_RECORDS, RECORDS_CORNER, MatrixTable, records_table
from attn_cli.run import runner
from attn_cli.run.runner import RunRequest

RECORDED = Summary(10**11, min=-1.5, max=2.5, mean=0.25, std=0.75)


def huge_walkthrough() -> Walkthrough:
    """One step whose value is a 10⁶ × 10⁵ matrix of 0.5 that only a view holds, with
    statistics recorded for it that differ from its entries' (so that they show where read)."""
    value = np.broadcast_to(np.float64(0.5), (10**6, 10**5))
    step = Step("scores", "Scores", "", value, summary=RECORDED)
    return Walkthrough(
        lesson="scaled",
        title="Huge",
        intro="",
        example=None,
        backend="numpy",
        device="cpu",
        dtype="float64",
        inputs=(),
        steps=(step,),
        output=np.zeros(2),
    )


def rich_text(renderable: Any, width: int = 80) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_huge_matrix_renders_its_corner_and_its_recorded_statistics_in_every_format():
    walkthrough = huge_walkthrough()
    terminal = rich_text(show(walkthrough, "rich", precision=4), width=200)
    assert "shape 1000000 × 100000" in terminal
    assert "min -1.5000 · max 2.5000 · mean 0.2500 · std 0.7500" in terminal
    assert "0.5000" in terminal  # the corner's cells
    markdown = show(walkthrough, "markdown", precision=4)
    assert "min -1.5000, max 2.5000, mean 0.2500, std 0.7500" in markdown
    latex = show(walkthrough, "latex", precision=4)
    assert "min $-1.5000$, max $2.5000$, mean $0.2500$, std $0.7500$" in latex
    document = show(walkthrough, "dict", precision=4)
    assert document["steps"][0]["value"] == {
        "shape": [10**6, 10**5],
        "summary": {"count": 10**11, "min": -1.5, "max": 2.5, "mean": 0.25, "std": 0.75},
    }
    streamed = "".join(json_render.json_chunks(walkthrough, rich_render.RenderOptions(), True))
    assert json.loads(streamed)["steps"][0]["value"]["summary"]["count"] == 10**11


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the numbers that ``module.name`` (a formatter of many numbers) is handed."""
    counted: list[int] = []
    original = getattr(module, name)

    def counted_call(values: Any, *args: Any, **kwargs: Any) -> Any:
        counted.append(int(np.size(values)))
        return original(values, *args, **kwargs)

    monkeypatch.setattr(module, name, counted_call)
    return counted


def test_a_matrix_table_formats_only_the_cells_that_can_show(monkeypatch):
    formatted = counting(monkeypatch, rich_render, "format_column")
    value = np.random.default_rng(0).standard_normal((500, 400))
    table = MatrixTable(value, 4, row_sums=value.sum(axis=-1), summary=summary(value))
    text = rich_text(table)
    # 7 rows shown (6 and the last), of 7 columns that can show (6 and the last), and their sums
    assert sum(formatted) == 7 * 7 + 7
    assert "shape 500 × 400" in text


def test_a_long_records_table_formats_only_the_rows_shown_in_the_whole_columns_format(
    monkeypatch,
):
    formatted = counting(monkeypatch, rich_render, "format_column")
    records = [{"token": f"t{i}", "count": i, "share": 1} for i in range(10_000)]
    records[5000]["share"] = 0.5  # a hidden row: the column is not whole numbers
    text = rich_text(records_table(records, rich_render.RenderOptions(precision=2)))
    shown = RECORDS_CORNER + 1  # the first RECORDS_CORNER and the last
    assert sum(formatted) == 2 * shown  # the two number columns, the rows shown
    lines = [line for line in text.splitlines() if line.strip().startswith("│")]
    assert len(lines) == 1 + shown + 1  # the header, the rows, "⋮"
    assert "│ t9999 │  9999 │  1.00 │" in text and "1.00" in lines[1]  # the column's format
    assert f"10000 rows: the first {RECORDS_CORNER} and the last shown" in text
    short = [{"token": "a", "count": 1}] * MAX_RECORDS
    assert "rows: the first" not in rich_text(records_table(short, rich_render.RenderOptions()))


@dataclass(frozen=True)
class CountingBackend(Backend):
    """numpy's backend, keeping the arrays it summarises."""

    summarised: list[Any] = field(default_factory=list, compare=False)

    def summary(self, array: Any) -> Summary | None:
        self.summarised.append(array)
        return super().summary(array)


def arrays_of(walkthrough: Walkthrough) -> list[np.ndarray]:
    """Every array value of the steps and their parts."""
    values = [step.value for step in walkthrough.steps]
    values += [part.value for step in walkthrough.steps for part in step.parts]
    return [value for value in values if isinstance(value, np.ndarray) and value.ndim]


@pytest.mark.parametrize("lesson", ["scaled", "causal", "multihead"])
def test_each_step_is_summarised_once_and_no_renderer_summarises_it_again(lesson, monkeypatch):
    backend = CountingBackend("numpy", "cpu", "float64")
    request = RunRequest(lesson, sizes={"n": 30})
    walkthrough = runner.build(replace_backend(runner.prepare(request), backend))
    recorded = arrays_of(walkthrough)
    assert len(backend.summarised) == len(recorded)  # one each, where it was computed
    for step in walkthrough.steps:
        for value, stats in [
            (step.value, step.summary),
            *((p.value, p.summary) for p in step.parts),
        ]:
            if isinstance(value, np.ndarray) and value.ndim:
                assert stats == summary(value)
    watched: list[int] = []

    def watching(array: Any) -> Summary:
        watched.append(id(array))
        return summary(array)

    for module in (rich_render, cells, json_render):  # cells: the Markdown and LaTeX captions
        monkeypatch.setattr(module, "summary", watching)
    rich_text(show(walkthrough, "rich", precision=4))
    for view in ("markdown", "latex", "dict"):
        show(walkthrough, view, precision=4)
    assert not {id(value) for value in recorded} & set(watched)  # inputs only, if any


def replace_backend(run: Any, backend: Backend) -> Any:
    from dataclasses import replace

    return replace(run, backend=backend)


def old_summary(array: Any) -> dict[str, float | int]:
    """The summary as it was computed before it was recorded with the steps (the reference)."""
    values = np.asarray(array, dtype=np.float64)
    finite = values[np.isfinite(values)]
    stats: dict[str, float | int] = {"count": int(values.size)}
    if finite.size:
        scale = float(np.max(np.abs(finite))) or 1.0
        scaled = finite / scale
        stats.update(
            min=float(finite.min()),
            max=float(finite.max()),
            mean=float(scaled.mean()) * scale,
            std=float(scaled.std()) * scale,
        )
    non_finite = int(values.size - finite.size)
    if non_finite:
        stats["non_finite"] = non_finite
    return stats


def sample_arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    wide = rng.standard_normal((37, 53)) * 1e3
    holes = rng.standard_normal((20, 30))
    holes[3, 4], holes[5, 6], holes[7, 8] = np.nan, np.inf, -np.inf
    return [
        wide,
        wide.T,  # not contiguous
        wide[::3, 1::2],  # strided
        wide.astype(np.float32),
        holes,
        np.full((4, 4), -np.inf),
        np.full((3, 3), 1e308),
        np.zeros((2, 5)),
        rng.random((9, 9)) < 0.5,  # booleans
        rng.integers(-5, 5, (6, 7)),
        np.array([]),
    ]


def test_the_summary_is_what_the_renderers_computed_before_to_the_last_bit():
    for array in sample_arrays():
        stats = summary(array)
        assert stats.as_dict() == old_summary(array), array
        assert stats.positive_infinite == int(np.count_nonzero(np.isposinf(array)))


def test_the_summary_on_torch_is_numpys_up_to_the_order_of_the_sums():
    torch = pytest.importorskip("torch")
    from attn_cli.core.torch_backend import tensor_summary

    for array in sample_arrays():
        on_device = tensor_summary(torch.from_numpy(np.ascontiguousarray(array)))
        reference = summary(array)
        assert (on_device.count, on_device.non_finite, on_device.positive_infinite) == (
            reference.count,
            reference.non_finite,
            reference.positive_infinite,
        )
        assert (on_device.min, on_device.max) == (reference.min, reference.max)
        for name in ("mean", "std"):
            got, expected = getattr(on_device, name), getattr(reference, name)
            assert (got is None) == (expected is None)
            if got is not None:
                assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-300), name


def old_number_style(values: Any, precision: int) -> str:
    """number_style as written number by number (the reference)."""
    from attn_cli.core.numbers import needs_scientific

    finite = [x for x in np.asarray(values, dtype=np.float64).ravel().tolist() if math.isfinite(x)]
    if all(x == int(x) and abs(x) < 1e15 for x in finite):
        return "integer"
    if any(needs_scientific(x, precision) for x in finite):
        return "scientific"
    return "fixed"


def test_number_style_on_whole_arrays_is_the_one_number_by_number():
    rng = np.random.default_rng(3)
    cases = [
        rng.standard_normal(50),
        rng.integers(-9, 9, 40).astype(float),
        np.array([1.0, 2.0, 1e15]),
        np.array([1.0, 3e-5]),
        np.array([2e7, 1.5]),
        np.array([0.0, -0.0, np.nan, np.inf]),
        np.array([0.00004, 0.5]),
        np.array([]),
    ]
    for values in cases:
        for precision in (0, 2, 4, 9):
            assert number_style(values, precision) == old_number_style(values, precision)


def test_a_step_without_recorded_statistics_still_shows_them():
    """A step made by hand (the Python API, a test) has none recorded: the renderer computes."""
    value = np.arange(300.0).reshape(20, 15)
    step = Step("v", "V", "", value, parts=(Part("p", value),))
    assert step.summary is None
    text = rich_text(rich_render.step_value(step, rich_render.RenderOptions()))
    assert "min 0 · max 299" in text
