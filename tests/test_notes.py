"""Notes are keyed templates of the lesson files, filled by the renderers at --precision; records
tables have snake_case keys, headed by the lesson files' [headings] words."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.lessonfiles.loader import load_bundled
from attn_cli.render.json_render import schema
from tests.conftest import assert_user_error, data, softmax_rows

jsonschema = pytest.importorskip("jsonschema")


def flat(text: str) -> str:
    """The words of an output with line breaks and runs of spaces made single spaces."""
    return " ".join(text.split())


def step_of(doc: dict, key: str) -> dict:
    return next(step for step in doc["steps"] if step["key"] == key)


def texts(notes: list[dict]) -> list[str]:
    return [note["text"] for note in notes]


def worst_leak() -> tuple[str, float]:
    """The three-tokens example with fill 0: the row that puts most weight on its future, and
    that weight, computed here from the example's scores."""
    scores = load_bundled("causal").example("three-tokens").inputs["S"]
    future = np.triu(np.ones(scores.shape, dtype=bool), k=1)
    weights = softmax_rows(np.where(future, 0.0, scores))
    leak = np.sum(np.where(future, weights, 0.0), axis=-1)
    worst = int(np.argmax(leak))
    return f"t{worst + 1}", float(leak[worst])


# --- --precision in notes ---------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["rich", "markdown", "latex", "html", "json"])
def test_fill_zero_prints_the_leaked_weight_at_the_precision_asked(invoke, fmt):
    token, leak = worst_leak()
    result = invoke("causal", "--fill", "zero", "--precision", "2", "--format", fmt)
    assert result.exit_code == 0, result.output
    sentence = f"Worst row: {token} puts {leak:.2f} of its weight on tokens after it"
    if fmt == "json":  # the values keep full precision; the text is as the terminal shows it
        (note,) = step_of(json.loads(result.stdout), "leak")["notes"]
        assert note["text"].startswith(sentence)
        return
    assert sentence in flat(result.stdout)
    assert f"{leak:.4f}" not in result.stdout


def test_the_svg_shows_the_leak_at_the_precision_asked(invoke):
    _, leak = worst_leak()
    svg = invoke("causal", "--fill", "zero", "--precision", "2", "--format", "svg").stdout
    # rich writes each space of the picture's text as a non-breaking one
    words = flat(svg.replace("&#160;", " "))
    assert f"puts {leak:.2f} of its weight" in words and f"{leak:.4f}" not in words


def test_without_precision_the_note_has_the_lessons_default_decimals(invoke):
    token, leak = worst_leak()
    text = flat(invoke("causal", "--fill", "zero").stdout)
    assert f"Worst row: {token} puts {leak:.4f} of its weight" in text


def test_the_python_api_fills_notes_at_its_precision():
    token, leak = worst_leak()
    walk = attn.causal(fill="zero")
    (note,) = walk.find("leak").notes
    assert note.key == "worst_leak" and note.values["leaked"] == pytest.approx(leak, abs=1e-15)
    assert str(note) == note.text(4) and f"puts {leak:.4f} of" in str(note)
    shown = f"{token} puts {leak:.3f} of its weight"
    for text in (
        walk.to_markdown(precision=3),
        walk.to_latex(precision=3),
        walk.to_html(precision=3),
        walk.to_svg(precision=3).replace("&#160;", " "),
    ):
        assert shown in flat(text)


def test_json_notes_are_objects_with_full_precision_values(invoke_json):
    token, leak = worst_leak()
    doc = invoke_json("causal", "--fill", "zero", "--precision", "2")
    (note,) = step_of(doc, "leak")["notes"]
    assert set(note) == {"key", "text", "values"} and note["key"] == "worst_leak"
    assert note["values"]["token"] == token
    assert note["values"]["leaked"] == pytest.approx(leak, abs=1e-15)
    assert note["values"]["masked"] == 0
    assert f"puts {leak:.2f} of" in note["text"]
    assert texts(doc["notes"]) == [
        "The scores are used as given, with no scaling by √d_k, as the slide does."
    ]
    jsonschema.validate(doc, schema())


def test_an_explicit_spec_is_kept_whatever_the_precision(invoke_json):
    doc = invoke_json("causal", "--precision", "2")
    weights = np.array(data(step_of(doc, "weights")["value"]), dtype=float)
    drift = float(np.max(np.abs(weights.sum(axis=-1) - 1.0)))
    (note,) = step_of(doc, "weights")["notes"][:1]
    assert note["key"] == "zero_future"
    assert note["text"] == (
        "3 of the 3 weights above the diagonal are exactly 0; every row sums to 1 (largest "
        f"|row sum − 1| = {drift:.1e})."
    )


def test_dropout_row_sums_follow_the_precision(invoke_json):
    doc = invoke_json("scaled", "--dropout", "0.5", "--seed", "3", "--precision", "2")
    value = np.array(data(step_of(doc, "dropout")["value"]), dtype=float)
    sums = value.sum(axis=-1)
    (note,) = step_of(doc, "dropout")["notes"]
    low, high = float(sums.min()), float(sums.max())
    if math.isclose(low, high):
        assert note["key"] == "dropout_sums_equal"
        assert f"The row sums are now {attn_number(low, 2)}, not 1" in note["text"]
    else:
        assert note["key"] == "dropout_sums"
        words = f"from {attn_number(low, 2)} to {attn_number(high, 2)}, not 1"
        assert words in note["text"]


def attn_number(x: float, precision: int) -> str:
    """A number as the tables write it: whole numbers bare, others to ``precision`` decimals."""
    return str(int(x)) if x == int(x) else f"{x:.{precision}f}"


def test_multihead_head_differences_follow_the_precision(invoke_json):
    doc = invoke_json("multihead", "--precision", "3")
    first, second = (
        np.array(data(step_of(doc, f"head{i}.weights")["value"]), dtype=float) for i in (1, 2)
    )
    most = float(np.max(np.abs(first - second)))
    assert texts(doc["notes"]) == [
        f"Heads 1 and 2 attend differently: their weights differ by up to {most:.3f}."
    ]
    assert doc["notes"][0]["values"]["most"] == pytest.approx(most, abs=1e-15)


def test_selfattn_asymmetric_weights_follow_the_precision(invoke_json):
    doc = invoke_json("selfattn", "--precision", "2")
    x = np.array(data(doc["inputs"]["X"]), dtype=float)  # identity weights: Q = K = V = X
    weights = softmax_rows(x @ x.T / math.sqrt(x.shape[1]))
    gap = np.abs(weights - weights.T)
    i, j = np.unravel_index(np.argmax(gap), gap.shape)
    (note,) = [n for n in doc["notes"] if n["key"] == "weights_asymmetric"]
    assert (
        f"weight[x{i + 1}, x{j + 1}] = {weights[i, j]:.2f} while weight[x{j + 1}, x{i + 1}] = "
        f"{weights[j, i]:.2f}"
    ) in note["text"]


def test_flash_check_keeps_its_scientific_spec(invoke_json):
    doc = invoke_json("flash", "--precision", "2")
    q, k, v = (np.array(data(doc["inputs"][name]), dtype=float) for name in ("Q", "K", "V"))
    scores = q @ k.T / (math.sqrt(q.shape[1]) if doc["options"]["scale"] else 1.0)
    if doc["options"]["causal"]:
        scores = np.where(np.triu(np.ones(scores.shape, dtype=bool), k=1), -np.inf, scores)
    plain = softmax_rows(scores) @ v
    output = np.array(data(doc["output"]), dtype=float)
    difference = float(np.max(np.abs(output - plain)))
    (note,) = step_of(doc, "check")["notes"]
    assert note["values"]["difference"] == pytest.approx(difference, abs=1e-15)
    assert note["text"].endswith(": the same numbers, up to rounding.")
    assert re.fullmatch(r"max \|tiled − plain\| = \d\.\de[-+]\d\d: .*", note["text"])


# U = W1 h + W2 s = [4, 0] and [-2, 0]: two of its four entries where tanh is flat.
SATURATED = ("--s", "1,0", "--h", "3,0;-3,0", "--w1", "1,0;0,1", "--w2", "1,0;0,1", "--v", "1,1")


def test_bahdanau_saturation_counts_the_flat_entries(invoke_json):
    doc = invoke_json("bahdanau", *SATURATED, "--precision", "2")
    summed = np.array(data(step_of(doc, "sum")["value"]), dtype=float)
    flat_entries = int(np.sum(np.abs(summed) >= 2))
    assert flat_entries == 2
    (note,) = step_of(doc, "tanh")["notes"]
    slope = 1 - math.tanh(2) ** 2
    assert note["text"].startswith(f"{flat_entries} of {summed.size} entries have |U| ≥ 2")
    assert f"below {slope:.3f}:" in note["text"]  # the bundled file's own spec


# --- a lecturer's words -----------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_lecturers_file_rewords_a_note_and_keeps_the_others(invoke, tmp_path):
    token, leak = worst_leak()
    path = write(
        tmp_path,
        'lesson = "causal"\n[notes]\nworst_leak = "Row {token} leaks {leaked} (should be '
        '{masked})."\n',
    )
    result = invoke("causal", "--lesson", str(path), "--fill", "zero", "--precision", "3")
    assert result.exit_code == 0, result.output
    text = flat(result.stdout)
    assert f"Row {token} leaks {leak:.3f} (should be 0)." in text
    assert "The scores are used as given" in text  # a note the file leaves to the bundled one


def test_a_lecturers_plain_placeholder_follows_the_precision(invoke, tmp_path):
    path = write(
        tmp_path,
        'lesson = "bahdanau"\n[notes]\nsaturated = "{flat} flat; slope below {slope}."\n',
    )
    slope = 1 - math.tanh(2) ** 2
    doc = json.loads(
        invoke(
            "bahdanau", "--lesson", str(path), *SATURATED, "--precision", "2", "-f", "json"
        ).stdout
    )
    (note,) = step_of(doc, "tanh")["notes"]
    assert note["text"] == f"2 flat; slope below {slope:.2f}."


@pytest.mark.parametrize(
    ("lesson", "table", "key", "what", "known"),
    [
        ("causal", "notes", "worst_leek", "note", "worst_leak"),
        ("variance", "headings", "var_qk", "heading", "var_raw"),
    ],
)
def test_an_unknown_note_or_heading_key_is_a_user_error(
    invoke, tmp_path, lesson, table, key, what, known
):
    path = write(tmp_path, f'lesson = "{lesson}"\n[{table}]\n{key} = "x"\n')
    assert_user_error(
        invoke(lesson, "--lesson", str(path)),
        f"{path}: [{table}] {key}: lesson '{lesson}' has no {what} '{key}'",
        known,  # the keys it has are listed
    )


def test_an_unknown_placeholder_in_a_note_is_a_user_error(invoke, tmp_path):
    path = write(tmp_path, 'lesson = "causal"\n[notes]\nworst_leak = "{leakd}"\n')
    assert_user_error(
        invoke("causal", "--lesson", str(path), "--fill", "zero"),
        "[notes] worst_leak: unknown placeholder {leakd}",
        "{leaked}",
    )


def test_a_note_placeholder_with_attribute_access_is_refused_when_loaded(invoke, tmp_path):
    path = write(tmp_path, 'lesson = "causal"\n[notes]\nworst_leak = "{leaked.real}"\n')
    assert_user_error(invoke("causal", "--lesson", str(path)), "[notes] worst_leak")


def test_a_lecturers_heading_is_shown_and_the_json_keeps_the_key(invoke, tmp_path):
    path = write(tmp_path, 'lesson = "variance"\n[headings]\nvar_raw = "Var[q·k]"\n')
    args = ("variance", "--lesson", str(path), "--dk", "4", "--samples", "20")
    rich = invoke(*args)
    assert rich.exit_code == 0, rich.output
    assert "Var[q·k]" in rich.stdout and "var q·k" not in rich.stdout
    doc = json.loads(invoke(*args, "--format", "json").stdout)
    assert "var_raw" in step_of(doc, "moments")["value"][0]


# --- snake_case records, headings unchanged ----------------------------------------------

RECORDS = {
    ("variance", "--dk", "4,16", "--samples", "50"): {
        "moments": (
            ["d_k", "mean_raw", "var_raw", "std_raw", "mean_scaled", "var_scaled"],
            ["var_scaled_se"],
            ["d_k", "mean q·k", "var q·k", "std q·k", "mean scaled", "var scaled", "± s.e."],
        ),
        "softmax": (
            ["d_k", "max_weight_raw", "max_weight_scaled", "entropy_raw", "entropy_scaled"],
            [],
            ["max w raw", "max w scaled", "H raw", "H scaled"],
        ),
        "gradient": (
            ["d_k", "grad_raw", "grad_scaled", "grad_ratio"],
            [],
            ["w(1−w) raw", "w(1−w) scaled", "scaled / raw"],
        ),
    },
    ("bahdanau", "--example", "cat-slept", "--all-scores"): {
        "compare.table": (
            ["state", "additive_e", "additive_alpha", "dot_e", "dot_alpha"],
            ["general_e", "general_alpha"],
            ["state", "additive e", "additive α", "dot e", "dot α", "general e", "general α"],
        ),
        "compare.cost": (
            ["score", "formula", "parameters", "multiply_adds", "tanh"],
            [],
            ["score", "formula", "parameters", "multiply-adds", "tanh"],
        ),
    },
    ("multihead",): {
        "split": (
            ["head", "qkv_columns", "d_k", "concat_wo_rows"],
            [],
            ["head", "columns of W_Q, W_K, W_V", "d_k = d_v", "concat columns = W_O rows"],
        ),
    },
    ("causal", "--conventions"): {
        "agree": (
            ["convention", "attend", "blocked", "call", "max_abs_diff"],
            [],
            ["convention", "attend", "blocked", "call", "max |Δ|"],
        ),
    },
}


@pytest.mark.parametrize("args", list(RECORDS), ids=lambda args: " ".join(args))
def test_records_have_snake_case_keys_and_the_document_validates(invoke_json, args):
    doc = invoke_json(*args)
    jsonschema.validate(doc, schema())
    for key, (first, rest, _) in RECORDS[args].items():
        rows = step_of(doc, key)["value"]
        assert list(rows[0]) == first + rest, key
    for step in doc["steps"]:
        if step["kind"] == "records":
            for name in step["value"][0]:
                assert re.fullmatch(r"[a-z][a-z0-9_]*", name), (step["key"], name)
    for note in [*doc["notes"], *(n for s in doc["steps"] for n in s.get("notes", []))]:
        assert set(note) == {"key", "text", "values"}


def test_the_schema_refuses_a_heading_as_a_record_key(invoke_json):
    doc = invoke_json("causal", "--conventions")
    rows = step_of(doc, "agree")["value"]
    rows[0]["max |Δ|"] = rows[0].pop("max_abs_diff")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema())


@pytest.mark.parametrize("args", list(RECORDS), ids=lambda args: " ".join(args))
def test_the_terminal_shows_the_same_headings_as_before(invoke, args):
    result = invoke(*args, "--precision", "3")
    assert result.exit_code == 0, result.output
    header_lines = [line for line in result.stdout.splitlines() if "│" in line]
    headings = {cell.strip() for line in header_lines for cell in line.split("│")}
    for key, (_, _, shown) in RECORDS[args].items():
        for heading in shown:
            assert heading in headings, (key, heading)
        snake = [name for name in RECORDS[args][key][0] if "_" in name and name != "d_k"]
        assert not any(name in headings for name in snake), key


def test_markdown_and_latex_tables_are_headed_by_the_lesson_words(invoke):
    markdown = invoke("causal", "--conventions", "--format", "markdown").stdout
    assert "| convention | attend | blocked | call | max \\|Δ\\| |" in markdown.splitlines()
    latex = invoke("variance", "--dk", "4", "--samples", "20", "--format", "latex").stdout
    heading = (
        "d\\texttt{\\char95}k & mean q$\\cdot$k & var q$\\cdot$k & std q$\\cdot$k & mean scaled & "
        "var scaled & $\\pm$ s.e. \\\\"
    )
    assert heading in latex.splitlines()


def test_the_quiz_handout_fills_notes_at_its_precision(invoke):
    token, leak = worst_leak()
    result = invoke("causal", "--fill", "zero", "--quiz", "--precision", "2")
    assert result.exit_code == 0, result.output
    assert f"Worst row: {token} puts {leak:.2f} of its weight" in flat(result.stdout)


# --- step texts: a plain {x} number follows --precision too ---------------------------------


def test_a_computed_number_in_an_explanation_follows_precision(invoke, invoke_json):
    """scaled.toml writes √d_k as a plain {sqrt_dk}: every exit shows it at --precision."""
    root = math.sqrt(2)  # the default example has d_k = 2
    for precision in (2, 4, 6):
        shown = f"√d_k = √2 = {root:.{precision}f}."
        rich = invoke("scaled", "--precision", str(precision))
        assert rich.exit_code == 0 and shown in flat(rich.stdout), precision
        for fmt in ("markdown", "latex"):
            out = invoke("scaled", "--precision", str(precision), "--format", fmt).stdout
            assert f"{root:.{precision}f}" in out, (fmt, precision)
        doc = invoke_json("scaled", "--precision", str(precision))
        assert shown in step_of(doc, "scaled")["explanation"], precision
    walkthrough = attn.scaled()
    assert f"{root:.4f}" in walkthrough.find("scaled").explanation  # the lesson's default
    assert f"√2 = {root:.3f}." in flat(walkthrough.to_markdown(precision=3))
    assert f"√2 = {root:.3f}." in flat(walkthrough.find("scaled").explanation_at(3))


def test_an_explicit_spec_in_a_step_text_is_kept_at_any_precision(invoke, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'lesson = "scaled"\n[steps.scaled]\nexplanation = "Divided by {sqrt_dk:.1f}."\n',
        encoding="utf-8",
    )
    for precision in ("2", "6"):
        result = invoke("scaled", "--lesson", str(path), "--precision", precision)
        assert result.exit_code == 0 and "Divided by 1.4." in result.stdout, precision


def test_an_integer_in_a_step_text_prints_as_the_tables_print_it(invoke_json):
    """d_k = 4 gives √d_k = 2 exactly: written 2, as a table cell writes an exact integer."""
    doc = invoke_json("scaled", "--n", "2", "--dk", "4", "--precision", "3")
    assert "√d_k = √4 = 2." in step_of(doc, "scaled")["explanation"]
