"""--code: the program behind the numbers (issue 24, part 4).

Every program a lesson prints, for every bundled example (and a few runs with options), is run in
a fresh interpreter; what it prints (``name = literal`` lines) must be the walkthrough's values:
to rtol 1e-12 for numpy, 1e-10 for PyTorch (its kernels order the sums their own way). The
programs of one backend run in one interpreter, each with its own globals, to keep this fast.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import attn_cli as attn
from attn_cli.core.errors import UserError
from attn_cli.core.model import Walkthrough
from attn_cli.course import lesson_names, programs_of
from attn_cli.lessonfiles.loader import load_bundled
from tests.conftest import assert_user_error
from tests.test_block import WEIGHTS_FILE as BLOCK_WEIGHTS
from tests.waits import HANG_GUARD_SECONDS

WITH_CODE = sorted(name for name in lesson_names() if programs_of(name) is not None)
WITHOUT_CODE = sorted(set(lesson_names()) - set(WITH_CODE))

# Runs each program read from stdin (a JSON list) in its own globals, a marker line before each.
RUNNER = """
import json, sys
for index, code in enumerate(json.load(sys.stdin)):
    print(f"### {index}", flush=True)
    exec(compile(code, f"<program {index}>", "exec"), {"__name__": "__main__"})
"""


def example_walkthroughs() -> list[tuple[str, Walkthrough]]:
    """Every bundled example of every lesson with programs, and runs with options."""
    runs = [
        (f"{name} {example.name}", getattr(attn, name)(example=example.name))
        for name in WITH_CODE
        for example in load_bundled(name).examples
    ]
    runs += [
        (label, walkthrough)
        for label, walkthrough in option_walkthroughs()
        if walkthrough.lesson in WITH_CODE
    ]
    return runs


QKV = np.random.default_rng(7).standard_normal((3, 4, 3))


def option_walkthroughs() -> list[tuple[str, Walkthrough]]:
    """Random inputs with the options the programs write out."""
    return [
        ("scaled --valid-len", attn.scaled(n=5, m=3, dk=3, dv=2, valid_len=[1, 4, 5])),
        ("scaled --no-scale", attn.scaled(n=4, dk=2, scale=False, seed=3)),
        (
            "scaled --softcap --qk-norm rmsnorm --valid-len",
            attn.scaled(n=4, m=3, dk=3, softcap=0.5, qk_norm="rmsnorm", valid_len=[1, 2, 4]),
        ),
        (
            "scaled --qk-norm layernorm --no-scale",
            attn.scaled(n=3, dk=4, qk_norm="layernorm", scale=False, seed=2),
        ),
        ("scaled --softcap", attn.scaled(n=3, dk=2, softcap=2.0, seed=1)),
        ("causal --q --k --v", attn.causal(q=QKV[0], k=QKV[1], v=QKV[2])),
        ("backward --causal", attn.backward(q=QKV[0], k=QKV[1], v=QKV[2], causal=True)),
        ("backward --no-scale", attn.backward(n=4, m=3, dk=2, dv=3, scale=False, seed=2)),
        (
            "backward --x --wv --causal",
            attn.backward(x=QKV[0], wv=QKV[1][:3, :2], do=QKV[2][:, :2], causal=True),
        ),
        ("causal --valid-len", attn.causal(n=5, valid_len=3, seed=1)),
        ("causal --x", attn.causal(x=np.arange(12.0).reshape(4, 3) / 10)),
        ("selfattn --no-scale", attn.selfattn(n=4, d=3, scale=False)),
        ("window --causal", attn.window(n=7, window=2, causal=True, seed=2)),
        ("multihead --causal --bias", attn.multihead(n=4, causal=True, bias=True, seed=5)),
        ("multihead --valid-len", attn.multihead(n=5, heads=1, valid_len=[2, 3, 4, 5, 5])),
        (
            "multihead --kv-heads 2 --causal --bias",
            attn.multihead(n=4, d_model=8, heads=4, kv_heads=2, causal=True, bias=True, seed=5),
        ),
        (
            "multihead --softcap --qk-norm rmsnorm --causal",
            attn.multihead(n=4, heads=2, softcap=0.7, qk_norm="rmsnorm", causal=True, seed=3),
        ),
        (
            "multihead --kv-heads 2 --qk-norm layernorm --bias",
            attn.multihead(n=3, d_model=8, heads=4, kv_heads=2, qk_norm="layernorm", bias=True),
        ),
        (
            "multihead --kv-heads 1 --valid-len",
            attn.multihead(n=4, d_model=6, heads=3, kv_heads=1, valid_len=[1, 2, 4, 3]),
        ),
        ("posenc --layout split", attn.posenc(positions=5, d_model=6, layout="split")),
        ("window --global", attn.window(n=7, window=1, global_tokens=[0, 4], seed=2)),
        ("graph --no-scale", attn.graph(n=5, d=3, scale=False, seed=4)),
        ("block --decoder --pre-norm --m 3", attn.block(n=4, decoder=True, pre_norm=True, m=3)),
        ("kvcache --n 6 --dv 3", attn.kvcache(n=6, dk=4, dv=3, seed=2)),
        (
            "bahdanau --valid-len --all-scores",
            attn.bahdanau(example="cat-slept", valid_len=2, all_scores=True),
        ),
        (
            "bahdanau --values",
            attn.bahdanau(example="cat-slept", values=np.arange(9.0).reshape(3, 3) / 4),
        ),
        ("bahdanau --steps", attn.bahdanau(example="cat-slept", steps=4)),
        ("flash --query-block --causal", attn.flash(n=5, block=2, query_block=2, causal=True)),
        ("flash --block 3", attn.flash(n=7, m=3, block=3, seed=4)),
        ("linear --causal --relu", attn.linear(n=5, causal=True, feature_map="relu", seed=3)),
        (
            "linear --causal --random",
            attn.linear(n=4, causal=True, feature_map="random", features=8),
        ),
        ("linear --leaky-squared", attn.linear(n=4, m=3, feature_map="leaky-squared", seed=1)),
        (
            "cost --n 1000 --d 512 --window 64 --features 32",
            attn.cost(n=1000, d=512, window=64, features=32),
        ),
        (
            "variance --dk 3,7 --samples 700 --keys 5 --seed 9",
            attn.variance(dk=[3, 7], samples=700, keys=5, seed=9),
        ),
        ("block --no-posenc --gamma-beta", attn.block(n=3, heads=4, posenc=False, gamma_beta=True)),
        *block_walkthroughs(),
    ]


def block_walkthroughs() -> list[tuple[str, Walkthrough]]:
    """attn block with what issue 41 added: masks, stacks, activations, biases, a file."""
    pad = np.array([0.0, 0.0, 1.0, 0.0])
    blocked = np.eye(4)[::-1]  # each query may not attend one key
    additive = np.array([[0, -np.inf, 0.5, 0], [0, 0, -1, 0], [0, 0, 0, 0], [1, 0, 0, -np.inf]])
    return [
        (
            "block --layers 2 --pre-norm --final-norm --activation gelu --padding",
            attn.block(layers=2, pre_norm=True, final_norm=True, activation="gelu", padding=pad),
        ),
        (
            "block --decoder --layers 3 --attn-mask --memory-padding --activation gelu-tanh",
            attn.block(
                decoder=True,
                layers=3,
                attn_mask=blocked,
                memory_padding=[0, 1, 0, 0],
                activation="gelu-tanh",
                gamma_beta=True,
            ),
        ),
        (
            "block --causal --attn-mask-float --no-bias --layers 2 --shared-weights",
            attn.block(
                causal=True, attn_mask_float=additive, bias=False, layers=2, shared_weights=True
            ),
        ),
        (
            "block --decoder --pre-norm --no-causal --padding",
            attn.block(decoder=True, pre_norm=True, causal=False, padding=pad),
        ),
        ("block --weights FILE", attn.block(weights=BLOCK_WEIGHTS, posenc=False)),
        (
            "block --heads 4 --kv-heads 2 --decoder --pre-norm (grouped-query heads)",
            attn.block(n=3, d_model=8, heads=4, kv_heads=2, decoder=True, pre_norm=True),
        ),
        (
            "block --example your-weights --attn-mask (a row with no key)",
            attn.block(example="your-weights", attn_mask=[[1, 1, 1], [0, 0, 1], [0, 0, 0]]),
        ),
    ]


def expected(walkthrough: Walkthrough, name: str) -> Any:
    """The walkthrough's value a program prints as ``name``: the output, or that step's value
    (the weights after rows with no key were zeroed, where the lesson zeroes them), or a table's
    column as ``step.column`` (a records step, such as attn cost's tables)."""
    if name == "output":
        return walkthrough.output
    if name == "weights" and "zeroed" in [step.key for step in walkthrough.steps]:
        return walkthrough.step("zeroed")
    keys = [step.key for step in walkthrough.steps]
    if name not in keys and "." in name:
        key, _, column = name.rpartition(".")
        if key in keys and records(walkthrough.step(key)):
            return [row[column] for row in walkthrough.step(key)]
    return walkthrough.step(name)


def records(value: Any) -> bool:
    """Whether a step's value is a table of records (a list of dicts)."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict)


def prints_output(value: Any, output: Any) -> bool:
    """Whether a printed value is the walkthrough's output (the lesson's result): the array, or
    where the output is a table, one of its numeric columns."""
    if records(output):
        columns = [[row[name] for row in output] for name in output[0]]
        numeric = [c for c in columns if all(isinstance(x, int | float) for x in c)]
        return any(prints_output(value, column) for column in numeric)
    got, want = np.asarray(value, dtype=np.float64), np.asarray(output, dtype=np.float64)
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-10, equal_nan=True)


def run_programs(codes: list[str]) -> list[dict[str, Any]]:
    """Run each program in a fresh interpreter (all in one); what each printed, read back."""
    result = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(codes),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SECONDS,
    )
    assert result.returncode == 0, result.stderr
    printed: list[dict[str, Any]] = []
    names = {"inf": math.inf, "nan": math.nan, "__builtins__": {}}
    for line in result.stdout.splitlines():
        if line.startswith("### "):
            printed.append({})
            continue
        name, _, literal = line.partition(" = ")
        assert literal, f"not a `name = value` line: {line!r}"
        printed[-1][name] = eval(literal, names)
    assert len(printed) == len(codes)
    return printed


def check_programs(backend: str, rtol: float) -> int:
    """Every example's program for ``backend`` reproduces its walkthrough; returns how many
    ran. A program not written refuses in one line naming --code or the option."""
    runs, codes = [], []
    for label, walkthrough in example_walkthroughs():
        try:
            code = walkthrough.to_code(backend)
        except UserError as error:
            assert "--code" in str(error) and "\n" not in str(error), (label, error)
            continue
        runs.append((label, walkthrough))
        codes.append(code)
    for (label, walkthrough), printed in zip(runs, run_programs(codes), strict=True):
        assert any(prints_output(value, walkthrough.output) for value in printed.values()), label
        for name, value in printed.items():
            want = np.asarray(expected(walkthrough, name), dtype=np.float64)
            got = np.asarray(value, dtype=np.float64)
            np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-14, err_msg=f"{label}: {name}")
    return len(codes)


@pytest.mark.slow
def test_numpy_programs_reproduce_every_example():
    ran = check_programs("numpy", rtol=1e-12)
    assert ran >= len(WITH_CODE)


@pytest.mark.slow
def test_torch_programs_reproduce_every_example(torch):
    ran = check_programs("torch", rtol=1e-10)
    assert ran >= 1


def test_every_lesson_with_code_has_a_program_for_an_example():
    for name in WITH_CODE:
        example = load_bundled(name).examples[0].name
        code = getattr(attn, name)(example=example).to_code()
        assert code.startswith(f'"""attn {name}:'), code[:80]
        compile(code, name, "exec")


def test_inputs_are_written_as_full_floats():
    q = np.array([[0.1 + 0.2, 1 / 3]])
    k = np.array([[2 / 7, -1e-300]])
    code = attn.scaled(q, k, np.array([[1.0]])).to_code()
    assert repr(0.1 + 0.2) in code and repr(1 / 3) in code and repr(-1e-300) in code


def test_cli_prints_the_program(invoke):
    result = invoke("scaled", "--example", "two-tokens", "--code")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith('"""attn scaled:')
    assert "softmax" in result.stdout and "print(" in result.stdout
    torch_result = invoke("scaled", "--example", "two-tokens", "--code", "--backend", "torch")
    assert torch_result.exit_code == 0, torch_result.output
    assert "F.scaled_dot_product_attention" in torch_result.stdout


def test_cli_refuses_what_a_program_does_not_show(invoke):
    assert_user_error(invoke("scaled", "--code", "--format", "json"), "--code", "--format json")
    assert_user_error(invoke("scaled", "--code", "--quiz"), "--code", "--quiz")
    assert_user_error(
        invoke("scaled", "--example", "library-sigmoid", "--code"), "--normalise sigmoid"
    )
    assert_user_error(invoke("graph", "--score", "gatv2", "--code"), "--score gatv2", "--code")
    assert_user_error(
        invoke("bahdanau", "--example", "cat-slept", "--dropout", "0.5", "--code"), "--dropout"
    )
    for name in ("cost", "variance"):
        assert_user_error(invoke(name, "--code", "--backend", "torch"), "--backend torch")
    for name in WITHOUT_CODE:
        assert_user_error(invoke(name, "--code"), f"attn {name}", "--code")
