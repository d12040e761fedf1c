"""How ``attn check`` reports: a table per lesson file, the errata, and a verdict; or JSON."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from attn_cli.core.slides import FileCheck, cell_text
from attn_cli.render.json_render import dumps, envelope, plain
from attn_cli.render.rich_render import FitColumn, FittedTable


def check_renderable(results: list[FileCheck]) -> RenderableType:
    parts: list[RenderableType] = []
    for result in results:
        parts += [Text(f"{_shown(result.path)} · lesson {result.lesson}", style="bold")]
        if result.skipped:
            parts += [Padding(Text(f"skipped: {result.skipped}", style="dim"), (0, 0, 1, 2))]
            continue
        parts += [_examples_table(result)]
        if result.errata:
            parts += [_errata_table(result)]
        parts += [Text("")]
    parts.append(_verdict(results))
    return Group(*parts)


def _examples_table(result: FileCheck) -> RenderableType:
    names: list[Text] = []
    counts: list[Text] = []
    verdicts: list[Text] = []
    for example in result.examples:
        if not example.checked:
            verdict = Text("no printed values (inputs checked)", style="dim")
        elif example.errata:
            count = len(example.errata)
            verdict = Text(f"{count} {'erratum' if count == 1 else 'errata'}", style="bold red")
        else:
            verdict = Text("all within the slide's rounding", style="green")
        names.append(Text(example.name, style="cyan"))
        counts.append(Text(str(example.checked)))
        verdicts.append(verdict)
    if not result.examples:
        names, counts, verdicts = [Text("—")], [Text("0")], [Text("no examples", style="dim")]
    table = FittedTable(
        [
            FitColumn("example", tuple(names), (False,) * len(names), justify="left"),
            FitColumn("printed", tuple(counts), (True,) * len(counts)),
            FitColumn("result", tuple(verdicts), (False,) * len(verdicts), justify="left"),
        ]
    )
    return Padding(table, (0, 0, 0, 2))


def _errata_table(result: FileCheck) -> RenderableType:
    """The errata of each example: where (the step wraps at spaces if it must; the cell, a
    coordinate, never) and the numbers (never shortened)."""
    headers = ("step", "cell", "printed", "exact", "off by", "allowed")
    tables: list[RenderableType] = []
    for example in result.examples:
        if not example.errata:
            continue
        rows = [
            (
                erratum.step,
                cell_text(erratum.cell, erratum.names) or "—",
                erratum.printed,
                erratum.exact_text(),
                erratum.difference_text(),
                erratum.tolerance_text(),
            )
            for erratum in example.errata
        ]
        columns = [
            FitColumn(
                name,
                tuple(Text(row[index]) for row in rows),
                (index > 0,) * len(rows),
                justify="right" if index > 1 else "left",
            )
            for index, name in enumerate(headers)
        ]
        tables.append(FittedTable(columns, title=f"Errata · {example.name}", keys=2))
        tables += [_diagnosis_line(*diagnosed) for diagnosed in example.diagnoses]
    return Padding(Group(*tables), (0, 0, 0, 2))


def _diagnosis_line(step: str, row: int, kind: str, words: str) -> Text:
    """What a wrong row shows: a named mistake, or that it follows from the file's own step."""
    if kind == "follows":
        return Text(f"{step} row {row}: {words} (error carried forward).", style="green")
    return Text(f"{step} row {row}: {words}.", style="red")


def _shown(path: Path) -> str:
    """A path relative to the working directory when it lies under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _verdict(results: list[FileCheck]) -> RenderableType:
    errata = sum(result.errata for result in results)
    checked = sum(example.checked for result in results for example in result.examples)
    if errata:
        wrong = next(
            (result, example) for result in results for example in result.examples if example.errata
        )
        own = "" if wrong[0].bundled else f" --lesson {_shown(wrong[0].path)}"
        kinds = Counter(
            "wrong" if erratum.own and erratum.kind == "misprint" else erratum.kind
            for result in results
            for example in result.examples
            for erratum in example.errata
        )
        whole = (
            f"{'a whole number' if kinds['whole'] == 1 else 'whole numbers'} where the exact "
            "value has decimals (write the step's decimals)"
        )
        if set(kinds) == {"whole"}:
            verb = "is" if errata == 1 else "are"
            said = f"{errata} of {checked} printed values {verb} {whole}"
        else:
            parts = [
                f"{kinds['misprint']} misprint{'s' if kinds['misprint'] != 1 else ''}"
                if kinds["misprint"]
                else "",
                f"{kinds['wrong']} wrong" if kinds["wrong"] else "",
                f"{kinds['rounding']} rounding slip{'s' if kinds['rounding'] != 1 else ''} (one "
                "off in the last digit)"
                if kinds["rounding"]
                else "",
                f"{kinds['whole']} {whole}" if kinds["whole"] else "",
            ]
            said = (
                f"{errata} of {checked} printed values differ from the exact value: "
                + ", ".join(part for part in parts if part)
            )
        return Group(
            Text(said + ".", style="bold red"),
            Text(
                "Each is noted under its step when the example runs, e.g. "
                f"attn {wrong[0].lesson}{own} --example {wrong[1].name}",
                style="dim",
            ),
        )
    return Text(
        f"All {checked} printed values agree with the exact values to the slide's rounding.",
        style="bold green",
    )


def check_json(results: list[FileCheck]) -> str:
    return dumps(check_document(results))


def check_document(results: list[FileCheck]) -> dict[str, Any]:
    errata = sum(result.errata for result in results)
    return {
        **envelope("check"),
        "ok": errata == 0,
        "errata": errata,
        "files": [_file(r) for r in results],
    }


def _file(result: FileCheck) -> dict[str, Any]:
    item: dict[str, Any] = {"file": str(result.path), "lesson": result.lesson}
    if result.skipped:
        item["skipped"] = result.skipped
    item["examples"] = [
        {
            "name": example.name,
            "checked": example.checked,
            "errata": [
                {
                    "key": erratum.key,
                    "step": erratum.step,
                    "cell": list(erratum.cell),
                    "printed": erratum.printed,
                    "exact": plain(erratum.exact),
                    "difference": plain(erratum.difference),
                    "tolerance": erratum.tolerance,
                    "kind": erratum.kind,
                    "note": erratum.note(),
                }
                for erratum in example.errata
            ],
            "diagnoses": [
                {"step": step, "row": row, "kind": kind, "words": words}
                for step, row, kind, words in example.diagnoses
            ],
        }
        for example in result.examples
    ]
    return item
