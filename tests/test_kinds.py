"""attn kinds: the lecture's table of the four kinds of attention, each row runnable."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from attn_cli.cli.app import is_command
from attn_cli.lessonfiles.kinds import COLUMNS, load_overview, overview_path
from attn_cli.render.json_render import schema
from tests.conftest import assert_user_error, data

# The slide's table, as the lecture prints it (kind, Q from, K and V from, used in).
SLIDE = [
    ("Encoder self-attention", "encoder", "encoder", "Transformer encoder"),
    ("Decoder self-attention (causal)", "decoder (past only)", "decoder (past only)",
     "GPT, decoder of Transformer"),
    ("Cross-attention", "decoder", "encoder", "Seq2Seq decoder, translation"),
    ("Masked/local attention", "input", "input (masked)", "Longformer, Reformer, etc."),
]  # fmt: skip
COMMAND_LINES = [command for row in load_overview().rows for command in row["commands"]]


def test_the_rows_are_the_slides():
    overview = load_overview()
    got = [
        (r["kind"], r["queries_from"], r["keys_values_from"], r["used_in"]) for r in overview.rows
    ]
    assert got == SLIDE
    assert list(overview.headings) == list(COLUMNS)


def weights_of(invoke_json, line: str, key: str = "weights") -> tuple[np.ndarray, dict]:
    """The weights step a row's command line shows, and its JSON document."""
    words = shlex.split(line)
    assert words[0] == "attn" and is_command(words[1]), line
    doc = invoke_json(*words[1:])
    steps = {step["key"]: step for step in doc["steps"]}
    return np.array(data(steps[key]["value"]), dtype=float), doc


def rows_of(kind: str) -> list[str]:
    (row,) = [row for row in load_overview().rows if row["kind"] == kind]
    return list(row["commands"])


def test_the_encoder_row_shows_every_token_attending_to_every_token(invoke_json):
    line, layer = rows_of("Encoder self-attention")
    weights, _ = weights_of(invoke_json, line)
    assert weights.shape[0] == weights.shape[1] and (weights > 0).all()
    weights, _ = weights_of(invoke_json, layer, "self.head1.weights")  # inside an encoder layer
    assert weights.shape[0] == weights.shape[1] and (weights > 0).all()


def test_the_causal_row_shows_the_past_only(invoke_json):
    (line,) = rows_of("Decoder self-attention (causal)")
    weights, _ = weights_of(invoke_json, line)
    assert np.array_equal(np.triu(weights, 1), np.zeros_like(weights))  # nothing above
    assert (np.diag(weights) > 0).all() and weights[-1].all()  # itself; the last sees all


def test_the_cross_attention_rows_show_queries_from_another_sequence(invoke_json):
    scaled, bahdanau, layer = rows_of("Cross-attention")
    weights, _ = weights_of(invoke_json, scaled)
    assert weights.shape == (2, 5)  # m = 2 decoder queries, n = 5 encoder keys
    weights, doc = weights_of(invoke_json, bahdanau)
    assert weights.shape == (3,) and doc["example"] == "cat-slept"  # s_t over the, cat, slept
    weights, doc = weights_of(invoke_json, layer, "cross.head1.weights")
    assert weights.shape == (4, 3) and (weights > 0).all()  # 4 decoder rows over 3 source rows


def test_the_local_rows_show_a_band_and_a_global_token(invoke_json):
    band, global_first = rows_of("Masked/local attention")
    weights, _ = weights_of(invoke_json, band)
    i, j = np.indices(weights.shape)
    assert (weights[abs(i - j) > 1] == 0).all() and (weights[abs(i - j) <= 1] > 0).all()
    weights, doc = weights_of(invoke_json, global_first)
    assert doc["meta"]["global"] == [0]
    assert (weights[:, 0] > 0).all() and (weights[0] > 0).all()  # token 0 sees and is seen
    i, j = np.indices(weights.shape)
    far = (abs(i - j) > doc["meta"]["window"]) & (i != 0) & (j != 0)
    assert (weights[far] == 0).all()


def test_every_kind_has_a_command_that_exists_now():
    for row in load_overview().rows:
        assert any(is_command(shlex.split(line)[1]) for line in row["commands"]), row["kind"]


def test_the_cross_attention_command_attends_m_queries_to_n_keys(invoke_json):
    (line,) = [line for line in COMMAND_LINES if line.startswith("attn scaled")]
    doc = invoke_json(*shlex.split(line)[1:])
    weights = np.array(data({s["key"]: s for s in doc["steps"]}["weights"]["value"]))
    m, n = weights.shape
    assert m != n  # queries from one sequence, keys and values from another
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-14)


def test_rich_shows_the_table_and_each_command(invoke):
    result = invoke("kinds")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    for heading in ("Type", "Q comes from", "K, V come from", "Used in"):
        assert heading in text
    for line in COMMAND_LINES:
        assert f"$ {line}" in text
    assert "Cross-attention" in text and "Longformer," in text


def test_markdown_is_the_table_and_the_commands(invoke):
    result = invoke("kinds", "--format", "markdown")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "| Type | Q comes from | K, V come from | Used in |" in lines
    for kind, q_from, kv_from, used_in in SLIDE:
        assert f"| {kind} | {q_from} | {kv_from} | {used_in} |" in lines
    for line in COMMAND_LINES:
        assert f"`{line}`" in result.stdout


def test_json_is_a_kinds_document_that_validates(invoke):
    result = invoke("kinds", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema.Draft202012Validator(schema()).validate(doc)
    assert doc["kind"] == "kinds"
    assert [row["kind"] for row in doc["rows"]] == [row[0] for row in SLIDE]
    assert doc["rows"][2]["commands"] == [line for line in COMMAND_LINES
                                         if line.startswith(("attn scaled", "attn bahdanau"))
                                         or "decoder" in line]  # fmt: skip


def test_a_bad_format_is_a_user_error(invoke):
    assert_user_error(invoke("kinds", "--format", "latex"), "--format", "latex")


def test_a_broken_data_file_is_refused(tmp_path: Path):
    text = overview_path().read_text(encoding="utf-8")
    broken = tmp_path / "kinds.toml"
    broken.write_text(text.replace('used_in = "GPT', 'used = "GPT'), encoding="utf-8")
    with pytest.raises(ValueError, match="kinds 2 must have exactly"):
        load_overview(broken)
    broken.write_text(text.replace('commands = ["attn causal"]', 'commands = ["causal"]'), "utf-8")
    with pytest.raises(ValueError, match="commands must be attn command lines"):
        load_overview(broken)


def _row(kind: str) -> dict:
    (row,) = [row for row in load_overview().rows if row["kind"] == kind]
    return row


def _weights(invoke_json, line: str) -> np.ndarray:
    doc = invoke_json(*shlex.split(line)[1:])
    return np.array(data({s["key"]: s for s in doc["steps"]}["weights"]["value"]), dtype=float)


def test_cross_attention_points_at_several_encoder_states(invoke_json):
    # Issue 22 (15): `attn bahdanau` alone has one encoder state, whose softmax weight is 1.
    (line,) = [line for line in _row("Cross-attention")["commands"] if "bahdanau" in line]
    weights = _weights(invoke_json, line)
    assert weights.shape[-1] >= 3
    assert np.all(weights < 0.99) and np.all(weights > 0)  # no state takes all the weight
    assert "three encoder states" in _row("Cross-attention")["shows"]


def test_masked_local_points_at_local_attention_not_a_padding_mask(invoke_json):
    # Issue 22 (15): `attn causal --valid-len 2` is a padding mask, not local attention.
    commands = _row("Masked/local attention")["commands"]
    assert all(shlex.split(line)[1] == "window" for line in commands)
    for line in commands:
        weights = _weights(invoke_json, line)
        n = weights.shape[0]
        far = [(i, j) for i in range(n) for j in range(n) if abs(i - j) > 1 and 0 not in (i, j)]
        assert far and all(weights[i, j] == 0.0 for i, j in far)  # outside the band: exactly 0
        assert all(weights[i, j] > 0 for i in range(n) for j in range(n) if abs(i - j) <= 1)
        if "global-first" in line:  # the global token: every query sees it, it sees every key
            assert np.all(weights[0] > 0) and np.all(weights[:, 0] > 0)


def test_beyond_the_lectures_lists_each_change_with_commands_that_run(invoke):
    """Past the slide: every change the 2026 models make, each command one that runs."""
    overview = load_overview()
    changes = [change["change"] for change in overview.changes]
    assert changes == [
        "Rotary positions (RoPE)",
        "ALiBi",
        "Grouped-query and multi-query heads",
        "Attention sinks",
        "Soft-capping and QK-norm",
    ]
    text = " ".join(invoke("kinds").stdout.split())
    assert overview.beyond_heading in text
    for change in overview.changes:
        for line in change["commands"]:
            assert f"$ {line}" in text
            result = invoke(*shlex.split(line)[1:], "--format", "json")
            assert result.exit_code == 0, (line, result.output)
    markdown = invoke("kinds", "--format", "markdown").stdout
    assert f"## {overview.beyond_heading}" in markdown
    doc = json.loads(invoke("kinds", "--format", "json").stdout)
    assert [change["change"] for change in doc["beyond"]["changes"]] == changes
