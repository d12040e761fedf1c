"""attn check and the slide comparison: the rounding rule, errata, notes in every lesson."""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from attn_cli import __version__
from attn_cli.core import slides
from attn_cli.core.errors import UserError
from attn_cli.core.model import Step, Walkthrough
from attn_cli.core.rounding import parse_rounded
from attn_cli.core.slides import Erratum
from attn_cli.course import lesson_names
from attn_cli.lessonfiles.loader import bundled_lesson_names, bundled_lessons_dir, load_bundled
from attn_cli.render import RenderOptions
from attn_cli.render.json_render import SCHEMA_VERSION
from attn_cli.render.rich_render import walkthrough_renderable
from attn_cli.run.check import check_bundled
from attn_cli.run.quiz import parse_answer
from attn_cli.run.runner import RunRequest, compute
from tests.conftest import assert_user_error, render_plain, softmax_rows

DOC_EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "four-dims.toml"


def _walkthrough(**values: np.ndarray) -> Walkthrough:
    steps = tuple(Step(key, key, "", np.asarray(value)) for key, value in values.items())
    return Walkthrough("t", "t", "", None, "numpy", "cpu", "float64", (), steps, steps[-1].value)


# --- the rounding rule -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("printed", "exact", "right"),
    [
        ("0.24", 0.2449, True),
        ("0.24", 0.245, True),  # exactly half-way: within half a unit
        ("0.24", 0.235, True),
        ("0.24", 0.2451, False),
        ("0.24", 0.2349, False),
        ("1", 1.49, True),
        ("1", 0.5, True),
        ("1", 1.51, False),
        ("1.0", 1.04, True),
        ("1.0", 1.06, False),
        ("0", 0.4, True),
        ("0", -0.4, True),
        ("0", 0.6, False),
        ("0.0", 0.06, False),
        ("-0.5", -0.54, True),
        ("-0.5", 0.5, False),  # the sign counts
        ("−1.01", -1.0149, True),  # a typographic minus
        ("4e-5", 4.4e-5, True),
        ("4e-5", 4.6e-5, False),
        ("0.000000", 4e-7, True),
        ("0.000000", 6e-7, False),
        ("5.00", 4.9951, True),
        ("-inf", -np.inf, True),
        ("0", -np.inf, False),
    ],
)
def test_a_printed_value_is_right_within_half_a_unit_of_its_last_decimal(printed, exact, right):
    written = parse_rounded(printed)
    assert written.matches(exact) is right
    walkthrough = _walkthrough(value=np.array([[exact]]))
    comparison = slides.compare(walkthrough, {"value": printed}, "test.toml", 4)
    assert comparison.checked == 1
    # In a step, a whole number is no free ±0.5: right only for a value whole to 4 decimals.
    whole = not written.has_decimals and math.isfinite(written.value)
    in_a_step = right and not (whole and abs(exact - written.value) > 0.5e-4)
    assert (not comparison.errata) is in_a_step


def test_a_whole_number_for_a_value_with_decimals_is_wrong_and_asks_for_them(invoke, tmp_path):
    """A student's 1 for 0.7071 was "right" (±0.5); 1 for 0.99999 still is (whole to the 4
    decimals the lesson shows), and 0 for exactly 0."""
    exact = np.array([[0.70710678, 0.99999, 0.0, 1.41421356]])
    comparison = slides.compare(
        _walkthrough(scaled=exact), {"scaled": "1, 1, 0, 1.41"}, "x.toml", 4
    )
    (erratum,) = comparison.errata
    assert (erratum.cell, erratum.printed, erratum.whole) == ((1, 1), "1", True)
    assert erratum.tolerance_text() == "its decimals"
    assert erratum.note() == (
        "The slide prints 1 for (1, 1), a whole number, where the exact value is 0.7071: write "
        "it with the step's decimals."
    )
    homework = tmp_path / "homework.toml"
    homework.write_text(
        'lesson = "scaled"\ntitle = "My working"\n\n[[examples]]\nname = "mine"\n'
        'description = "My working."\n'
        'inputs = { Q = "1,0;0,1", K = "1,1;2,0", V = "0.1,0.2;0.3,0.4" }\n'
        '[examples.printed]\nscaled = "1, 1.41; 0.71, 0"\nweights = "0.33, 0.67; 0.67, 0.33"\n',
        encoding="utf-8",
    )
    result = invoke("check", str(homework))
    assert result.exit_code == 1, result.output
    text = " ".join(result.stdout.split())
    assert (
        "1 of 8 printed values is a whole number where the exact value has decimals (write the "
        "step's decimals)." in text
    )


def test_errata_name_the_step_the_cell_printed_and_exact():
    exact = np.array([[0.2, 0.3], [0.25, 0.75]])
    walkthrough = _walkthrough(weights=exact)
    comparison = slides.compare(
        walkthrough, {"weights": "0.2, 0.4; 0.25, 0.69", "weights[2,2]": "0.75"}, "x.toml", 4
    )
    assert comparison.checked == 5
    assert [(e.step, e.cell, e.printed) for e in comparison.errata] == [
        ("weights", (1, 2), "0.4"),
        ("weights", (2, 2), "0.69"),
    ]
    erratum = comparison.errata[0]
    assert erratum.exact == 0.3
    assert erratum.tolerance == pytest.approx(0.05)
    assert (
        erratum.note() == "The slide prints 0.4 for (1, 2), a misprint: the exact value is 0.3000."
    )


def test_rows_cells_vectors_and_the_output_are_addressed_1_based():
    walkthrough = _walkthrough(
        scores=np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), vec=np.array([0.5, 0.25])
    )
    printed = {"scores[2]": "4, 5, 7", "scores[1,3]": "2", "vec": "0.5, 0.35", "output[2]": "0.31"}
    # "output" names the walkthrough's output when no step has that key (here: vec).
    errata = slides.compare(walkthrough, printed, "x.toml", 4).errata
    assert [(e.key, e.cell) for e in errata] == [
        ("scores[2]", (2, 3)),
        ("scores[1,3]", (1, 3)),
        ("vec", (2,)),
        ("output[2]", (2,)),
    ]
    assert (
        errata[2].note()
        == "The slide prints 0.35 for entry 2, a misprint: the exact value is 0.2500."
    )


def test_a_column_printed_as_a_row_is_the_same_vector():
    walkthrough = _walkthrough(col=np.array([[1.0], [2.0]]))
    assert slides.compare(walkthrough, {"col": "1, 2"}, "x.toml", 4).checked == 2
    assert slides.compare(walkthrough, {"col": "1; 2"}, "x.toml", 4).checked == 2


@pytest.mark.parametrize(
    ("printed", "fragment"),
    [
        ({"weights": "0.1, 0.2, 0.3"}, "the slide value is 1 × 3 but the value it names is 2 × 2"),
        ({"weights": "0.1, 0.2; 0.3"}, "row 2 has 1 entries but row 1 has 2"),
        ({"weights[3]": "0.1, 0.2"}, "has 2 rows, so index 3 is out of range"),
        ({"weights[1,2,3]": "1"}, "at most two"),
        ({"weights[0]": "1"}, "1-based"),
        ({"weights[a]": "1"}, "whole numbers"),
        ({"scores": "1, 2; 3, 4"}, "no step 'scores'; use one of its step keys (weights)"),
        ({"weights": "0.1, abc; 1, 2"}, "'abc' is not a number"),
        ({"weights": " "}, "is empty"),
    ],
)
def test_a_printed_value_that_cannot_be_compared_is_a_file_error(printed, fragment):
    walkthrough = _walkthrough(weights=np.eye(2))
    with pytest.raises(UserError) as error:
        slides.compare(walkthrough, printed, "mine.toml: example 'e'", 4)
    message = str(error.value)
    assert message.startswith("mine.toml: example 'e', printed.")
    assert fragment in message


# --- the bundled lessons -------------------------------------------------------------------


def test_cat_slept_errata_are_the_ones_computed_independently():
    """Which slide numbers are wrong, decided here with plain numpy and the rounding rule."""
    q = np.array([[0.1, 0.9]])
    states = np.array([[1.0, 0.0], [0.0, 1.0], [0.2, 0.1]])
    weights = softmax_rows(q @ states.T)
    context = weights @ states
    example = load_bundled("scaled").example("cat-slept")
    expected = set()
    for key, exact in (("weights", weights), ("output", context)):
        written = [float(x) for x in example.printed[key].split(",")]
        decimals = [len(x.strip().split(".")[1]) for x in example.printed[key].split(",")]
        for col, (value, k) in enumerate(zip(written, decimals, strict=True), start=1):
            if abs(exact[0, col - 1] - value) > 0.5 * 10.0**-k + 1e-12:
                expected.add((key, (1, col)))
    assert expected  # the slide has errata
    (scaled,) = [result for result in check_bundled() if result.lesson == "scaled"]
    (cat,) = [e for e in scaled.examples if e.name == "cat-slept"]
    assert {(e.step, e.cell) for e in cat.errata} == expected
    assert all(not e.errata for e in scaled.examples if e.name != "cat-slept")


@pytest.mark.parametrize("lesson", bundled_lesson_names())
def test_every_bundled_lesson_passes_check_or_notes_its_errata(lesson):
    assert lesson in lesson_names()  # every bundled lesson file has its computation
    (result,) = [r for r in check_bundled() if r.lesson == lesson]
    for example in result.examples:
        walkthrough = compute(RunRequest(lesson=lesson, example=example.name))
        noted = {str(note) for step in walkthrough.steps for note in step.notes}
        noted |= {str(note) for note in walkthrough.notes}
        slide_notes = {note for note in noted if note.startswith("The slide prints")}
        assert slide_notes == {erratum.note() for erratum in example.errata}, example.name
        if example.errata:
            rendered = render_plain(walkthrough_renderable(walkthrough, RenderOptions()), 200)
            text = " ".join(rendered.split())
            for erratum in example.errata:
                assert erratum.note() in text


def test_cat_slept_output_notes_the_slide_under_its_steps(invoke):
    result = invoke("scaled", "--example", "cat-slept", "--format", "json")
    steps = {step["key"]: step for step in json.loads(result.stdout)["steps"]}
    weights = softmax_rows(np.array([[0.1, 0.9, 0.11]]))
    expected = (
        f"The slide prints 0.54 for (s_t, cat), a misprint: the exact value is {weights[0, 1]:.4f}."
    )
    assert expected in [note["text"] for note in steps["weights"]["notes"]]
    assert "notes" not in steps["scores"]
    rich = " ".join(invoke("scaled", "--example", "cat-slept").stdout.split())
    assert expected in rich


def test_notes_use_exact_values_at_lower_precision_and_vanish_when_options_change(invoke):
    doc = json.loads(
        invoke("scaled", "-e", "cat-slept", "--dtype", "float32", "--format", "json").stdout
    )
    weights = softmax_rows(np.array([[0.1, 0.9, 0.11]]))
    notes = {s["key"]: s.get("notes", []) for s in doc["steps"]}
    assert f"the exact value is {weights[0, 2]:.4f}." in notes["weights"][1]["text"]
    # With --scale the example is no longer the slide's computation: no slide notes.
    doc = json.loads(invoke("scaled", "-e", "cat-slept", "--scale", "--format", "json").stdout)
    assert all("notes" not in step for step in doc["steps"])


# --- attn check ------------------------------------------------------------------------------


def test_check_all_reports_the_bundled_errata_and_exits_1(invoke):
    result = invoke("check", "--all")
    assert result.exit_code == 1, result.output
    text = " ".join(result.stdout.split())
    assert "cat-slept" in text and "0.54" in text and "(s_t, cat)" in text
    assert "Each is noted under its step when the example runs, e.g. attn " in text
    doc = json.loads(invoke("check", "--all", "--format", "json").stdout)
    assert doc["ok"] is False
    assert {f["lesson"] for f in doc["files"]} >= {"scaled"}
    (scaled,) = [f for f in doc["files"] if f["lesson"] == "scaled"]
    (cat,) = [e for e in scaled["examples"] if e["name"] == "cat-slept"]
    first = cat["errata"][0]
    assert set(first) >= {"step", "cell", "printed", "exact", "difference", "tolerance"}


def test_check_on_a_correct_file_exits_0(invoke):
    result = invoke("check", str(DOC_EXAMPLE))
    assert result.exit_code == 0, result.output
    assert "agree with the exact values" in result.stdout
    doc = json.loads(invoke("check", str(DOC_EXAMPLE), "-f", "json").stdout)
    assert doc == {
        "schema_version": SCHEMA_VERSION,
        "attn_version": __version__,
        "kind": "check",
        "ok": True,
        "errata": 0,
        "files": [
            {
                "file": str(DOC_EXAMPLE),
                "lesson": "scaled",
                "examples": [{"name": "four-dims", "checked": 12, "errata": [], "diagnoses": []}],
            }
        ],
    }


def _with_printed(tmp_path: Path, **printed: str) -> Path:
    """The documented example with some printed values replaced."""
    text = DOC_EXAMPLE.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    for key, value in printed.items():
        old = data["examples"][0]["printed"][key]
        text = text.replace(f'"{old}"', f'"{value}"', 1)
    path = tmp_path / "slide.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_check_on_an_erroneous_file_reports_each_wrong_value_and_exits_1(invoke, tmp_path):
    # Exact values, computed here: weights = softmax([2, 1, 0] / 2); output = weights V.
    weights = softmax_rows(np.array([1.0, 0.5, 0.0]))
    wrong_weight = f"{round(weights[2], 2) + 0.01:.2f}"  # off by more than half a unit
    edge_weight = f"{weights[1]:.1f}"  # one decimal: checked to ±0.05 only
    path = _with_printed(
        tmp_path, weights=f"{weights[0]:.2f}, {edge_weight}, {wrong_weight}", scores="2, 1, 1"
    )
    result = invoke("check", str(path), "--format", "json")
    assert result.exit_code == 1, result.output
    (example,) = json.loads(result.stdout)["files"][0]["examples"]
    found = {(e["step"], tuple(e["cell"]), e["printed"]) for e in example["errata"]}
    assert found == {("weights", (1, 3), wrong_weight), ("scores", (1, 3), "1")}
    (weight_erratum,) = [e for e in example["errata"] if e["step"] == "weights"]
    assert weight_erratum["exact"] == pytest.approx(weights[2], abs=1e-15)
    assert weight_erratum["tolerance"] == pytest.approx(0.005)
    rich = invoke("check", str(path))
    assert rich.exit_code == 1
    text = " ".join(rich.stdout.split())
    assert "2 of 12 printed values differ" in text
    assert "--lesson" in text and "--example four-dims" in text


def test_check_of_a_malformed_file_exits_2(invoke, tmp_path):
    path = _with_printed(tmp_path, weights="0.5, 0.3")
    assert_user_error(invoke("check", str(path)), str(path), "printed.weights", "1 × 2", "1 × 3")
    assert_user_error(invoke("check"), "give a lesson file")
    assert_user_error(invoke("check", str(DOC_EXAMPLE), "--all"), "not both")
    assert_user_error(invoke("check", str(tmp_path / "none.toml")), "not found")


# The exit status as the help and the README state it: "0 if every printed value agrees ...;
# 1 if some printed values differ ...; 2 on a usage error ..." (issue 25: a lecturer read
# `attn check --all`'s 1 as a crash).
EXIT_STATUS = re.compile(
    r"(\d) if every printed value agrees.*?(\d) if some\s+(?:printed values\s+)?differ"
    r".*?(\d) on a\s+usage error",
    re.S,
)


def _documented_exit_codes(text: str) -> tuple[int, int, int]:
    found = EXIT_STATUS.search(" ".join(text.split()))
    assert found, text
    agree, differ, usage = (int(code) for code in found.groups())
    return agree, differ, usage


def test_check_exits_as_its_help_and_the_readme_say(invoke):
    help_text = invoke("check", "--help").stdout
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    agree, differ, usage = _documented_exit_codes(help_text)
    assert (agree, differ, usage) == _documented_exit_codes(readme) == (0, 1, 2)
    assert invoke("check", str(DOC_EXAMPLE)).exit_code == agree
    assert invoke("check", "--all").exit_code == differ  # the bundled slides' errata
    assert invoke("check", "--all", str(DOC_EXAMPLE)).exit_code == usage
    assert invoke("check", "--format", "xml").exit_code == usage
    # and --all's own help warns that it exits 1
    assert "exit 1" in " ".join(help_text.split()).split("--all", 1)[1]


def test_the_bundled_lesson_files_are_where_check_looks():
    assert (bundled_lessons_dir() / "scaled.toml").is_file()
    assert "scaled" in bundled_lesson_names()


def test_a_slip_in_a_bundled_record_is_for_check_not_for_the_lesson(invoke, tmp_path, monkeypatch):
    import attn_cli.lessonfiles.loader as lesson_files

    text = (bundled_lessons_dir() / "scaled.toml").read_text(encoding="utf-8")
    (tmp_path / "scaled.toml").write_text(
        text.replace('weights = "0.33,0.67; 0.67,0.33"', 'weights = "0.33,0.67"'), encoding="utf-8"
    )
    monkeypatch.setattr(lesson_files, "bundled_lessons_dir", lambda: tmp_path)
    assert invoke("scaled").exit_code == 0
    assert_user_error(invoke("check", "--all"), "scaled.toml: example 'two-tokens'", "weights")


@pytest.mark.parametrize("fmt", ["rich", "json", "markdown", "latex"])
def test_slide_notes_appear_in_every_format(invoke, fmt):
    result = invoke("scaled", "--example", "cat-slept", "--format", fmt)
    assert result.exit_code == 0, result.output
    label = "s\\texttt{\\char95}t" if fmt == "latex" else "s_t"  # the row's label; LaTeX's _
    assert f"The slide prints 0.54 for ({label}, cat)" in " ".join(result.stdout.split())


def test_a_note_on_the_walkthrough_output_goes_with_the_walkthrough_notes():
    base = _walkthrough(scores=np.array([[1.0, 3.0]]))  # its output is the scores
    errata = slides.compare(base, {"output": "1, 2"}, "x.toml", 4).errata
    noted = slides.with_notes(base, errata)
    assert noted.steps[0].notes == ()
    assert [str(note) for note in noted.notes] == [
        "Output: The slide prints 2 for (1, 2), a misprint: the exact value is 3."
    ]


def test_an_erratum_shows_enough_digits_to_be_one(invoke, tmp_path):
    """The report: 0.504 against 0.50349 showed 'off by 0.0005 | allowed ±0.0005'."""
    # weights = softmax([0, x]) for one query against keys [0] and [x]; x chosen so that the
    # second weight, 1 / (1 + e^-x), is 0.503490: 0.00051 from a printed 0.504.
    x = 0.01396
    exact = 1.0 / (1.0 + math.exp(-x))  # e^x / (e^0 + e^x)
    assert 0.0005 < 0.504 - exact < 0.00052
    path = tmp_path / "edge.toml"
    path.write_text(
        'lesson = "scaled"\n[[examples]]\nname = "edge"\noptions = { scale = false }\n'
        f"[examples.inputs]\nQ = [[1]]\nK = [[0], [{x}]]\nV = [[1], [2]]\n"
        '[examples.printed]\nweights = "0.497, 0.504"\n',
        encoding="utf-8",
    )
    result = invoke("check", str(path))
    assert result.exit_code == 1, result.output
    (row,) = [line for line in result.stdout.splitlines() if "0.504" in line]
    cells = [cell.strip() for cell in row.split("│") if cell.strip()]
    assert cells == ["weights", "(q1, k2)", "0.504", f"{exact:.5f}", "0.00051", "±0.0005"]
    assert "1 of 2 printed values differ" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("printed", "exact", "shown", "allowed"),
    [
        ("0.504", 0.50349, "0.00051", "±0.0005"),
        ("0.504", 0.5034999, "0.0005001", "±0.0005"),  # as many digits as it takes
        ("0.54", 0.5254, "0.0146", "±0.005"),  # at least four decimals, as before
        ("0.999995", 0.9999983, "0.0000033", "±0.0000005"),  # fixed point, like the tolerance
        ("2e-7", 3.06e-7, "0.00000011", "±0.00000005"),
        ("-inf", 0.0, "inf", "±0.0"),
    ],
)
def test_the_difference_is_shown_to_exceed_the_tolerance(printed, exact, shown, allowed):
    erratum = Erratum("weights", "weights", (1, 1), parse_rounded(printed), exact)
    assert erratum.difference_text() == shown
    assert erratum.tolerance_text() == allowed
    if math.isfinite(erratum.difference):
        assert float(shown) > float(allowed[1:]) and erratum.difference > erratum.tolerance


@pytest.mark.parametrize("typo", ["1,,2", "1,2,", "1, ,2"])
def test_an_empty_entry_is_refused_alike_in_a_printed_value_an_input_and_an_answer(
    invoke, tmp_path, typo
):
    """One grammar of matrix text: a slide's printed value, --q and a quiz answer all refuse
    an empty entry (two commas in a row, or one at an end) instead of skipping it."""
    path = _with_printed(tmp_path, scores=typo.replace("1", "2", 1))
    checked = invoke("check", str(path))
    assert_user_error(checked, "printed.scores", "has an empty entry")
    given = invoke("scaled", "--q", typo, "--k", "1,0;0,1", "--v", "1,0;0,1")
    assert_user_error(given, "--q", "has an empty entry")
    assert "has an empty entry" in parse_answer(typo, 2)


def test_a_misprint_is_told_from_a_rounding_slip(invoke):
    """Issue 57: 0.504 for selfattn's 0.50349 (0.503 to 3 decimals) is one off in the last digit,
    a rounding slip; causal's 0.24 for 0.3543 is a misprint; each worded as what it is."""
    doc = json.loads(invoke("check", "--all", "--format", "json").stdout)
    errata = {
        (item["lesson"], example["name"], erratum["printed"]): erratum
        for item in doc["files"]
        for example in item["examples"]
        for erratum in example["errata"]
    }
    slip = errata[("selfattn", "identity", "0.504")]
    assert slip["kind"] == "rounding"
    assert slip["note"] == (
        "The slide prints 0.504 for (x3, x3), a rounding slip (one off in the last digit): the "
        "exact value 0.50349 is 0.503 to 3 decimals."
    )
    misprint = errata[("causal", "signals", "0.24")]
    assert misprint["kind"] == "misprint"
    assert (
        misprint["note"]
        == "The slide prints 0.24 for (t2, t1), a misprint: the exact value is 0.3543."
    )
    kinds = [erratum["kind"] for erratum in errata.values()]
    text = " ".join(invoke("check", "--all").stdout.split())
    assert (
        f"differ from the exact value: {kinds.count('misprint')} misprints, "
        f"{kinds.count('rounding')} rounding slips (one off in the last digit)."
    ) in text


@pytest.mark.parametrize(
    ("printed", "exact", "kind"),
    [
        ("0.504", 0.50349, "rounding"),
        ("0.3", 0.2, "misprint"),  # one whole unit off (0.09999999999999998 in floats)
        ("0.4", 0.3, "misprint"),
        ("2", 3.0, "misprint"),
        ("2", 1.4142, "misprint"),  # a whole unit off is no rounding slip: the unscaled score
        ("2", 2.4, "misprint"),  # whole numbers are never rounding slips
        ("0.29", 0.2838, "rounding"),
        ("1", 0.7071, "whole"),
    ],
)
def test_the_kind_of_an_erratum(printed, exact, kind):
    from attn_cli.core.rounding import parse_rounded
    from attn_cli.core.slides import Erratum

    written = parse_rounded(printed)
    assert written is not None
    erratum = Erratum("w", "w", (1, 1), written, exact, whole=kind == "whole")
    assert erratum.kind == kind


def test_ones_own_file_is_not_called_a_slide(invoke, tmp_path):
    """Homework (attn check FILE, --lesson FILE) is the user's file, not a slide: its notes say
    "Your file has", a value further off than a rounding is "wrong", and the verdict counts
    them so; a bundled slide keeps "The slide prints" and "a misprint"."""
    path = tmp_path / "mine.toml"
    path.write_text(
        'lesson = "scaled"\ntitle = "My working"\n\n[[examples]]\nname = "mine"\n'
        'description = "By hand."\ninputs = { Q = "1,0;0,1", K = "1,1;2,0", V = "0.1,0.2;0.3,0.4" }'
        '\n\n[examples.printed]\nscaled = "1, 2; 1, 0"\nweights = "0.33, 0.67; 0.6697, 0.3302"\n',
        encoding="utf-8",
    )
    text = " ".join(invoke("check", str(path)).stdout.split())
    assert (
        "4 of 8 printed values differ from the exact value: 1 wrong, 1 rounding slip (one off in "
        "the last digit), 2 whole numbers where the exact value has decimals"
    ) in text
    doc = json.loads(invoke("scaled", "--lesson", str(path), "--format", "json").stdout)
    notes = [n["text"] for step in doc["steps"] for n in step.get("notes", [])]
    errata = [n for n in notes if n.startswith(("Your file", "The slide"))]
    assert errata == [
        "Your file has 1 for (q1, k1), a whole number, where the exact value is 0.7071: write it "
        "with the step's decimals.",
        "Your file has 2 for (q1, k2), wrong: the exact value is 1.4142.",
        "Your file has 1 for (q2, k1), a whole number, where the exact value is 0.7071: write it "
        "with the step's decimals.",
        "Your file has 0.6697 for (q2, k1), a rounding slip (one off in the last digit): the "
        "exact value 0.669762 is 0.6698 to 4 decimals.",
    ]
    # A copy of a bundled file, as shipped, holds the slides: its words stay the slide's.
    from attn_cli.lessonfiles.loader import bundled_lessons_dir

    copy = tmp_path / "scaled.toml"
    copy.write_bytes((bundled_lessons_dir() / "scaled.toml").read_bytes())
    said = " ".join(invoke("check", str(copy)).stdout.split())
    assert "3 misprints, 1 rounding slip" in said and "wrong" not in said
    copy.write_bytes(copy.read_bytes() + b"\n")  # edited: the user's own file now
    assert "3 wrong, 1 rounding slip" in " ".join(invoke("check", str(copy)).stdout.split())
