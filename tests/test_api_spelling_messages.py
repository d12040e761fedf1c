"""Each message that names a parameter, said by both doors from the one message: the Python API
writes the keyword (``xk``, ``processes=1 or 3``), the command line the flag (``--xk``,
``--processes 1 or 3``). A note of a walkthrough is spelt by the door that asked for it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import attn_cli as attn
from attn_cli.cli import flags
from attn_cli.core.backend_choice import get_backend
from attn_cli.core.batch import batch_line
from attn_cli.core.errors import UserError
from attn_cli.course import get_lesson
from attn_cli.course.multihead import build as multihead_build
from attn_cli.course.multihead.card import CARD as MULTIHEAD
from attn_cli.learn import common, induction, translate
from attn_cli.learn.common import LearnOptions
from attn_cli.run.runner import guard_memory


def spoken(error: UserError) -> tuple[str, str]:
    """The message as the Python API says it (no flag in it) and as the command line does."""
    python = str(error)
    assert "--" not in python, python
    return python, flags.message(error)


def refused(call, *args, **kwargs) -> tuple[str, str]:
    with pytest.raises(UserError) as raised:
        call(*args, **kwargs)
    return spoken(raised.value)


def note(walkthrough, key: str) -> str:
    (found,) = [n for n in walkthrough.notes if n.key == key]
    return found.text()


def doc_note(doc: dict, key: str) -> str:
    (found,) = [n for n in doc["notes"] if n["key"] == key]
    return found["text"]


# --- bahdanau --------------------------------------------------------------------------------

GOOD = {"s": "1,3", "h": "2,1;0,1", "w1": "0.1,0.2;0.3,0.4", "w2": "0.5,0.6;0.7,0.8"}
WIDER_S = {**GOOD, "v": "0.9,0.1", "s": "1,2,3", "w2": "1,2,3;4,5,6"}
WIDTHS = "s has 3 entries but each row of h has 2: Luong's dot score s_t · h_i needs them"
CLI_WIDTHS = "--s has 3 entries but each row of --h has 2: Luong's dot score s_t · h_i needs them"


def test_bahdanau_wa_that_turns_on_all_scores_is_named_by_each_door():
    python, cli = refused(attn.bahdanau, **WIDER_S, wa="1,0;0,1;0,0")
    assert python.startswith(f"wa turns on all_scores: {WIDTHS}")
    assert python.endswith("the same width; leave out wa.")
    assert cli.startswith(f"--wa turns on --all-scores: {CLI_WIDTHS}")
    assert cli.endswith("the same width; leave out --wa.")


def test_bahdanau_all_scores_asked_is_named_by_each_door():
    python, cli = refused(attn.bahdanau, **WIDER_S, wa="1,0;0,1;0,0", all_scores=True)
    assert python.startswith(f"all_scores=True: {WIDTHS}")
    assert python.endswith("leave out all_scores and wa.")
    assert cli.startswith(f"--all-scores: {CLI_WIDTHS}")
    assert cli.endswith("leave out --all-scores and --wa.")


def test_bahdanau_single_state_note_names_the_values_by_each_door(invoke_json):
    python = note(attn.bahdanau(example="term-by-term", values="5,6"), "single_state")
    assert "the context is v_1, the row of values, itself" in python
    cli = doc_note(invoke_json("bahdanau", "--values", "5,6"), "single_state")
    assert "the context is v_1, the row of --values, itself" in cli


# --- block -----------------------------------------------------------------------------------


def test_block_work_guard_names_the_sizes_by_each_door():
    python, cli = refused(attn.block, layers=1_000_000_000)
    assert python.endswith("ask for less: a smaller n, d_model, d_ff or layers.")
    assert cli.endswith("ask for less: a smaller --n, --d-model, --d-ff or --layers.")


def no_memory(monkeypatch, name: str) -> tuple[str, str]:
    """``name``'s refusal of a run that does not fit in (one byte of) memory (block's of a
    4 × 4 X)."""
    lesson = get_lesson(name)
    monkeypatch.setattr("attn_cli.core.backend.FITS_ANYWHERE", 0)
    monkeypatch.setattr("attn_cli.core.backend.available_host_bytes", lambda: 1)
    backend = get_backend("numpy")
    shapes = {"X": (4, 4)} if name == "block" else {}
    return refused(guard_memory, lesson, backend, shapes, None, dict(lesson.options))


@pytest.mark.parametrize(
    ("name", "python", "cli"),
    [
        (
            "block",
            "choose a smaller n, m, d_model, d_ff or layers.",
            "choose a smaller --n, --m, --d-model, --d-ff or --layers.",
        ),
        ("posenc", "lower positions or d_model.", "lower --positions or --d-model."),
        (
            "variance",
            "lower samples, keys or the largest dk.",
            "lower --samples, --keys or the largest --dk.",
        ),
    ],
)
def test_a_lessons_memory_fix_is_named_by_each_door(monkeypatch, name, python, cli):
    said, said_cli = no_memory(monkeypatch, name)
    assert said.startswith(f"this {name} walkthrough needs about ") and said.endswith(python)
    assert said_cli.endswith(cli)


def test_block_weight_shape_names_kv_heads_by_each_door():
    python, cli = refused(attn.block, n=2, d_model=4, heads=2, wk="1,0;0,1")
    assert python == (
        "wk is 2 × 2 but must be d_model × d_model = 4 × 4 (or g·d_k columns for g key/value "
        "heads, g dividing h: kv_heads)."
    )
    assert cli == (
        "--wk is 2 × 2 but must be d_model × d_model = 4 × 4 (or g·d_k columns for g key/value "
        "heads, g dividing h: --kv-heads)."
    )


# --- causal ----------------------------------------------------------------------------------

SQUARE = "1,0;0,1"


def test_causal_two_sources_of_scores_are_named_by_each_door():
    python, cli = refused(attn.causal, scores=SQUARE, q=SQUARE, k=SQUARE, v=SQUARE)
    assert python.startswith("give the scores one way, not scores and q/k: scores, or q with k")
    assert cli.startswith(
        "give the scores one way, not --scores and --q/--k: --scores, or --q with --k"
    )


@pytest.mark.parametrize(("given", "missing"), [("q", "k"), ("k", "q")])
def test_causal_query_without_key_is_named_by_each_door(given, missing):
    python, cli = refused(attn.causal, **{given: SQUARE})
    assert python == f"{given} needs {missing}: the scores are Q Kᵀ."
    assert cli == f"--{given} needs --{missing}: the scores are Q Kᵀ."


# --- linear ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "python", "cli"),
    [
        ({"features": 8}, "features=8", "--features 8"),
        ({"feature_seed": 3, "feature_map": "relu"}, "feature_seed=3", "--feature-seed 3"),
    ],
)
def test_linear_random_feature_options_are_named_by_each_door(given, python, cli):
    said, said_cli = refused(attn.linear, **given)
    flag = cli.split()[0]
    assert said.startswith(f"{python} is read only by feature_map random (")
    assert said.endswith(f"add feature_map random, or leave {python.split('=')[0]} out.")
    assert said_cli.startswith(f"{cli} is read only by --feature-map random (")
    assert said_cli.endswith(f"add --feature-map random, or leave {flag} out.")


# --- multihead -------------------------------------------------------------------------------

TOKENS = "1,0,0;0,1,0"
WIDE = "1,0,0,0;0,1,0,0;0,0,1,0"


def test_multihead_weights_without_tokens_are_named_by_each_door():
    python, cli = refused(attn.multihead, wq=SQUARE)
    assert python == "wq needs x: the heads project the tokens X (Q = X W_Q)."
    assert cli == "--wq needs --x: the heads project the tokens X (Q = X W_Q)."


def test_multihead_missing_tokens_are_named_by_each_door():
    python, cli = refused(multihead_build.validate, {}, dict(MULTIHEAD.defaults))
    assert python == "X is missing; give x: the heads project the tokens X (Q = X W_Q)."
    assert cli == "X is missing; give --x: the heads project the tokens X (Q = X W_Q)."


@pytest.mark.parametrize(
    ("given", "python", "cli"),
    [
        ({"xk": SQUARE}, "xk has 2", "--xk has 2"),
        (
            {},
            "X (the keys' sequence without xk) has 2",
            "X (the keys' sequence without --xk) has 2",
        ),
    ],
)
def test_multihead_values_per_key_name_the_keys_by_each_door(given, python, cli):
    said, said_cli = refused(attn.multihead, x=SQUARE, xv="1,0", **given)
    assert said == f"xv has 1 row but {python}: one value per key."
    assert said_cli == f"--xv has 1 row but {cli}: one value per key."


def test_multihead_shared_weight_shape_names_xk_xv_by_each_door():
    python, cli = refused(attn.multihead, x=TOKENS, wq=WIDE, wk="1,0;0,1;1,1", wv=WIDE)
    assert python.endswith(
        "(W_Q, W_K and W_V share their shape unless xk, xv give sequences of other widths)."
    )
    assert cli.endswith(
        "(W_Q, W_K and W_V share their shape unless --xk, --xv give sequences of other widths)."
    )


def test_multihead_key_weight_shape_names_xk_by_each_door():
    python, cli = refused(attn.multihead, x=TOKENS, xk=SQUARE, wq=WIDE, wk="1,0;0,1;1,1", wv=WIDE)
    assert python == "wk is 3 × 2 but must be kdim × d_out = 2 × 4 (xk's columns × W_Q's)."
    assert cli == "--wk is 3 × 2 but must be kdim × d_out = 2 × 4 (--xk's columns × W_Q's)."


# --- ring, selfattn, variance ----------------------------------------------------------------


def test_ring_zigzag_names_the_processes_by_each_door():
    python, cli = refused(attn.ring, n=6, processes=2, sharding="zigzag")
    assert "is not a multiple of 4; use processes=1 or 3, a sequence length that" in python
    assert python.endswith("or sharding=contiguous or striped.")
    assert "is not a multiple of 4; use --processes 1 or 3, a sequence length that" in cli


def test_selfattn_weight_rows_are_named_by_each_door():
    python, cli = refused(attn.selfattn, x=SQUARE, wq="1,0,0;0,1,0;0,0,1")
    assert python.startswith("wq has 3 rows but x has 2 columns: X W_Q needs W_Q to have d = 2")
    assert cli.startswith("--wq has 3 rows but --x has 2 columns: X W_Q needs W_Q to have d = 2")


def test_selfattn_identity_weight_is_named_by_each_door():
    python, cli = refused(attn.selfattn, x=SQUARE, wk="1,0,0;0,1,0")
    assert python.endswith(
        "; wq was not given, so it is the 2 × 2 identity: give it as a 2 × 3 matrix."
    )
    assert cli.endswith(
        "; --wq was not given, so it is the 2 × 2 identity: give it as a 2 × 3 matrix."
    )


def test_variance_work_guard_names_the_sizes_by_each_door():
    python, cli = refused(attn.variance, samples=2_147_483_648)
    assert python.startswith("samples=2,147,483,648 with keys=8 and d_k up to 1,024 draws ")
    assert python.endswith(
        "ask for less: fewer samples (the default is 3,000), fewer keys or smaller dk."
    )
    assert cli.startswith("--samples 2,147,483,648 with --keys 8 and d_k up to 1,024 draws ")
    assert cli.endswith(
        "ask for less: fewer --samples (the default is 3,000), fewer --keys or smaller --dk."
    )


# --- what every lesson shares: dropout's generator, a batch's line, overflow, devices ----------


def test_dropout_generator_names_the_backend_by_each_door(invoke_json):
    walkthrough = attn.scaled(dropout=0.5)
    python = walkthrough.find("dropout").explanation
    assert "this is not torch's mask, backend=torch draws that one." in python
    cli = invoke_json("scaled", "--dropout", "0.5")
    (step,) = [s for s in cli["steps"] if s["key"] == "dropout"]
    assert "this is not torch's mask, --backend torch draws that one." in step["explanation"]


def test_batch_line_names_the_item_by_each_door(invoke):
    walkthrough = attn.scaled(q="1,0;0,1 | 1,1;0,2", k=SQUARE, v="1,2;3,4", item=1)
    line = "batch item 1 shown, of 2 (items 0 to 1); item picks another; the JSON holds every item."
    assert batch_line(walkthrough) == line
    assert batch_line(walkthrough.item(0)) == line.replace("item 1 shown", "item 0 shown")
    shown = invoke("scaled", "--q", "1,0;0,1 | 1,1;0,2", "--k", SQUARE, "--v", "1,2;3,4",
                   "--item", "1", "-f", "markdown")  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "batch item 1 shown, of 2 (items 0 to 1); --item picks another;" in shown.stdout


def test_overflow_note_names_the_dtype_by_each_door(invoke_json):
    big = "1e30,1e30"
    python = note(attn.scaled(q=big, k=big, v="1,2", dtype="float32"), "overflow")
    assert python.endswith("stayed finite. Use dtype=float64 or smaller inputs.")
    doc = invoke_json("scaled", "--q", big, "--k", big, "--v", "1,2", "--dtype", "float32")
    assert doc_note(doc, "overflow").endswith(
        "stayed finite. Use --dtype float64 or smaller inputs."
    )


def test_an_unavailable_device_names_the_cpu_by_each_door(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    python, cli = refused(attn.scaled, backend="torch", device="cuda")
    assert python == (
        "device=cuda: CUDA is not available here (no NVIDIA GPU or a CPU-only torch build); "
        "use device=cpu."
    )
    assert cli == (
        "--device cuda: CUDA is not available here (no NVIDIA GPU or a CPU-only torch build); "
        "use --device cpu."
    )


# --- attn learn ------------------------------------------------------------------------------


def test_learn_sizes_beside_weights_are_named_by_each_door(tmp_path):
    options = LearnOptions("induction", steps=5, max_len=9, weights=tmp_path / "model.npz")
    python, cli = refused(common.refuse_sizes_with_weights, options)
    assert python == (
        "weights evaluates a trained model, whose file fixes its sizes; leave out steps, max_len."
    )
    assert cli == (
        "--weights evaluates a trained model, whose file fixes its sizes; leave out --steps, "
        "--max-len."
    )


def test_learn_too_few_steps_are_named_by_each_door():
    options = LearnOptions("induction", steps=5)
    python, cli = refused(
        common.sized, options, "induction", steps=300, hidden=32, max_len=8, min_steps=40
    )
    assert python == (
        "attn learn induction: 5 training steps: too small to say anything; give steps=40 or "
        "more (default 300)."
    )
    assert cli.endswith("too small to say anything; give --steps 40 or more (default 300).")


def test_induction_work_guard_names_the_steps_by_each_door():
    python, cli = refused(induction.check_steps, 10**9, induction.HIDDEN)
    assert python.startswith(f"steps=1,000,000,000 trains {len(induction.MODELS)} models of width")
    assert python.endswith(f"ask for less: fewer steps (the default is {induction.STEPS}).")
    assert cli.startswith(f"--steps 1,000,000,000 trains {len(induction.MODELS)} models of width")
    assert cli.endswith(f"ask for less: fewer --steps (the default is {induction.STEPS}).")


def test_translate_too_little_training_names_the_steps_by_each_door(monkeypatch):
    """A model that gets too few held-out words right (the evaluation stubbed at 10%)."""
    monkeypatch.setattr(translate, "evaluate", lambda model, corpus: SimpleNamespace(words=()))
    monkeypatch.setattr(translate, "_overall", lambda words, corpus: 0.1)
    trained = SimpleNamespace(models={"attention": None})
    python, cli = refused(translate.measure, trained, None, 40)
    steps = max(translate.STEPS, 80)
    assert python.endswith(f"too small to say anything; train longer (steps={steps}).")
    assert cli.endswith(f"too small to say anything; train longer (--steps {steps}).")
