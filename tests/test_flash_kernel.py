"""The flash lesson as a Triton kernel (attn_cli/kernels/flash_triton.py) and `attn flash --kernel`.

The kernel runs compiled on a CUDA GPU where there is one, and otherwise on the CPU through
Triton's interpreter (TRITON_INTERPRET=1, set before the kernel module is imported): against the
float64 attention of attn_cli's mechanisms, and against `attn flash`'s own walkthrough (m and ℓ
after each key block). Those tests skip where triton (or torch) is not installed, or where the
installed triton's interpreter cannot run with the installed numpy (set
ATTN_REQUIRE_KERNEL_TESTS=1 to make that skip a failure, as CI does). The --kernel tests read
the source as text and need neither.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import attn_cli as attn
from attn_cli.bench.impls import static_problem
from attn_cli.course import get_lesson
from attn_cli.lessonfiles.kernel_source import MARKER, kernel_source, marked_parts, symbolic_title
from attn_cli.lessonfiles.loader import load_bundled
from attn_cli.mechanisms import attention as mech
from attn_cli.render.json_render import schema
from tests.conftest import assert_user_error


def cuda_available() -> bool:
    """A CUDA GPU that torch can use (without importing triton)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


# Before triton is imported (nothing above imports it, nor does collecting the suite): triton
# decorates its own library for the interpreter, or for a GPU, when it is imported, for good.
TRITON_BEFORE = "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1"
ON_GPU = cuda_available() and not TRITON_BEFORE and os.environ.get("TRITON_INTERPRET") != "1"
if not ON_GPU:
    os.environ["TRITON_INTERPRET"] = "1"
DEVICE = "cuda" if ON_GPU else "cpu"

ROOT = Path(__file__).resolve().parent.parent
KERNEL_FILE = ROOT / "attn_cli" / "kernels" / "flash_triton.py"
# The lesson steps the kernel implements, in the order a tile meets them.
KERNEL_STEPS = ["tile", "scores", "max", "rescale", "p", "sum", "acc", "tile_output"]
# The lesson's options the kernel takes (the lesson has more, e.g. --sram for its HBM count).
KERNEL_OPTIONS = ("block", "query_block", "causal", "scale")
NO_TRITON = "triton is not installed (pip install 'attn-cli[kernel]'): the kernel tests need it"
REQUIRED = os.environ.get("ATTN_REQUIRE_KERNEL_TESTS") == "1"


def version(package: str) -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", importlib.metadata.version(package)).groups()
    return int(major), int(minor)


def interpreter_problem() -> str | None:
    """Why the installed triton's interpreter cannot run the kernel beside the installed numpy.

    Up to triton 3.6 the interpreter holds every scalar (an argument, a program id) as a
    one-element array and turns it into a Python int with int(), for a loop bound; numpy 2.4
    refuses int() of an array that is not 0-dimensional (triton 3.7 squeezes it first). The
    compiled kernel on a GPU is not affected."""
    if version("triton") < (3, 7) and version("numpy") >= (2, 4):
        return (
            f"triton {importlib.metadata.version('triton')}'s interpreter cannot run a loop "
            f"with numpy {np.__version__} (it calls int() on one-element arrays, which numpy "
            "2.4 refuses): pip install 'triton>=3.7', or 'numpy<2.4'"
        )
    return None


def interpreted_kernel():
    """The kernel module, compiled for the GPU or decorated for Triton's interpreter (a clean
    skip without triton, or with an interpreter that cannot run it here)."""
    pytest.importorskip("torch", reason="torch is not installed: the kernel takes torch tensors")
    if REQUIRED and importlib.util.find_spec("triton") is None:
        pytest.fail(NO_TRITON)
    pytest.importorskip("triton", reason=NO_TRITON)
    if TRITON_BEFORE:
        pytest.fail("triton was imported before this module set TRITON_INTERPRET=1")
    problem = None if ON_GPU else interpreter_problem()
    if problem:
        (pytest.fail if REQUIRED else pytest.skip)(problem)
    module = importlib.import_module("attn_cli.kernels.flash_triton")
    assert module.interpreted() is not ON_GPU
    return module


@pytest.fixture(scope="module")
def kernel():
    return interpreted_kernel()


# (m = n, d, d_v, block, query_block): n = 1; n not a multiple of the block; several query
# tiles, the last one short; the lesson's small d and the kernel's widest, 128; then blocks
# whose tile is the block itself (a power of two, at least 16), so that whole blocks run
# unmasked before the ragged last one (and, causal, before the diagonal).
SHAPES = [
    (1, 2, 2, 2, None),
    (7, 5, 3, 3, 4),
    (6, 4, 4, 2, None),
    (9, 16, 8, 4, 2),
    (5, 128, 128, 2, 3),
    (40, 16, 16, 16, 16),
    (70, 32, 24, 32, 64),
]
# The output against float64: float32 to rounding; float16 and bfloat16 round P and the output.
TOLERANCE = {"float32": 2e-6, "float16": 4e-3, "bfloat16": 3e-2}


def reference(q, k, v, *, causal: bool, scale: bool = True) -> np.ndarray:
    """float64 softmax attention by attn_cli's own mechanism (the code of attn scaled)."""
    n = q.shape[-2]
    mask = np.triu(np.full((n, n), -np.inf), 1) if causal else None
    return mech.attention(q, k, v, use_scale=scale, mask=mask).output


def rounded(rng: np.random.Generator, shape: tuple[int, ...], dtype):
    """Standard normal values in the kernel's dtype, and the same values in float64."""
    import torch

    tensor = torch.from_numpy(rng.standard_normal(shape)).to(getattr(torch, dtype))
    return tensor.to(DEVICE), tensor.double().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_kernel_is_attention_on_every_shape(kernel, dtype, causal):
    rng = np.random.default_rng(26)
    for n, d, d_v, block, query_block in SHAPES:
        (q, q64), (k, k64) = (rounded(rng, (2, n, d), dtype) for _ in range(2))
        v, v64 = rounded(rng, (2, n, d_v), dtype)
        out = kernel.flash_attention(q, k, v, block=block, query_block=query_block, causal=causal)
        assert out.dtype == q.dtype and out.shape == (2, n, d_v)
        error = np.abs(out.double().cpu().numpy() - reference(q64, k64, v64, causal=causal)).max()
        assert error < TOLERANCE[dtype], (n, d, block, query_block, error)


def test_m_differs_from_n_and_scores_can_go_unscaled(kernel):
    rng = np.random.default_rng(3)
    (q, q64), (k, k64), (v, v64) = (rounded(rng, s, "float32") for s in ((3, 4), (5, 4), (5, 2)))
    out = kernel.flash_attention(q, k, v, block=2, scale=False)
    assert np.abs(out.double().cpu().numpy() - reference(q64, k64, v64, causal=False, scale=False)).max() < 2e-6  # fmt: skip


def autograd_reference(q64, k64, v64, d_out64, *, causal: bool, scale: bool = True):
    """dQ, dK, dV of F.scaled_dot_product_attention in float64, by torch.autograd."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    leaves = [torch.from_numpy(x).requires_grad_() for x in (q64, k64, v64)]
    out = scaled_dot_product_attention(*leaves, is_causal=causal, scale=None if scale else 1.0)
    out.backward(torch.from_numpy(d_out64))
    return [leaf.grad.numpy() for leaf in leaves]


# The backward's gradients against float64, relative to 1 + the largest: float32 to rounding of
# the sums; float16 and bfloat16 round O, P and dS for the products (as FlashAttention-2 does)
# and the gradients once, so within 4 of the type's epsilons (measured on SHAPES: 0.45 of
# float16's, 0.84 of bfloat16's).
BACKWARD_TOLERANCE = {"float32": 5e-6, "float16": 4 * 2**-10, "bfloat16": 4 * 2**-7}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_backward_kernel_matches_autograd_on_every_shape(kernel, dtype, causal):
    """FlashAttention-2's backward (two kernels, from O and L): dQ, dK and dV in the inputs'
    type against autograd's in float64 from the same (rounded) inputs, within that type's
    rounding (relative to the largest); and the forward's L = m + ln ℓ, float32 whatever the
    inputs, against logsumexp of the scaled scores."""
    import torch

    rng = np.random.default_rng(58)
    lse_tolerance = 2e-6 if dtype == "float32" else 5e-6  # S from exact products, in float32
    for n, d, d_v, block, query_block in SHAPES:
        (q, q64), (k, k64) = (rounded(rng, (2, n, d), dtype) for _ in range(2))
        (v, v64), (d_out, d_out64) = (rounded(rng, (2, n, d_v), dtype) for _ in range(2))
        options = {"block": block, "query_block": query_block, "causal": causal}
        out, lse = kernel.flash_attention_with_lse(q, k, v, **options)
        assert lse.dtype == torch.float32
        scores = q64 @ np.swapaxes(k64, -1, -2) / math.sqrt(d)
        if causal:
            scores = scores + np.triu(np.full((n, n), -np.inf), 1)
        expected_lse = torch.logsumexp(torch.from_numpy(scores), dim=-1).numpy()
        assert np.abs(lse.double().cpu().numpy() - expected_lse).max() < lse_tolerance, (n, d)
        grads = kernel.flash_attention_backward(q, k, v, out, lse, d_out, **options)
        for name, got, expected in zip("QKV", grads, autograd_reference(q64, k64, v64, d_out64, causal=causal), strict=True):  # fmt: skip
            assert got.dtype == q.dtype and got.shape == expected.shape
            error = np.abs(got.double().cpu().numpy() - expected).max()
            bound = BACKWARD_TOLERANCE[dtype] * (1 + np.abs(expected).max())
            assert error < bound, (name, n, d, block, error)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_bench_backward_runs_the_kernel_as_it_is_checked(kernel, causal):
    """attn bench --backward's triton-flash call (the forward with L, then the backward
    kernel, at the bench's launch) against the bench's own float64 gradients: n = 70 is one
    whole block of 64 and a ragged one."""
    from attn_cli.bench import backward as backward_registry
    from attn_cli.bench import impls as registry
    from attn_cli.bench.config import BenchConfig

    config = BenchConfig(
        sizes=(70,), d=16, heads=2, dtype="float32", causal=causal, backward=True,
        impls=("naive", "triton-flash"),
    )  # fmt: skip
    inputs = registry.make_inputs(config, 70, DEVICE)
    grads = backward_registry.make_runner("triton-flash", config, inputs)()
    rows = registry.reference_rows(70)
    expected = backward_registry.reference_gradients(inputs, rows, causal)
    got = backward_registry.gradient_rows(grads, rows)
    assert np.abs(got - expected).max() < 5e-6 * (1 + np.abs(expected).max())


def test_the_backward_kernel_with_m_not_n_and_unscaled(kernel):
    rng = np.random.default_rng(5)
    shapes = ((3, 4), (5, 4), (5, 2), (3, 2))
    (q, q64), (k, k64), (v, v64), (d_out, d_out64) = (rounded(rng, s, "float32") for s in shapes)
    out, lse = kernel.flash_attention_with_lse(q, k, v, block=2, scale=False)
    grads = kernel.flash_attention_backward(q, k, v, out, lse, d_out, block=2, scale=False)
    expected = autograd_reference(q64, k64, v64, d_out64, causal=False, scale=False)
    for got, want in zip(grads, expected, strict=True):
        assert np.abs(got.double().cpu().numpy() - want).max() < 5e-6 * (1 + np.abs(want).max())
    with pytest.raises(ValueError, match="of q's dtype"):  # a float32 output for float16 inputs
        kernel.flash_attention_backward(q.half(), k.half(), v.half(), out, lse, d_out)


def float32_values(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Standard normal values that float32 holds exactly, in float64 (for the lesson)."""
    return rng.standard_normal(shape).astype(np.float32).astype(np.float64)


def trace_against_walkthrough(kernel, q64, k64, v64, **options) -> int:
    """Run the kernel (float32) and the lesson on the same inputs; m and ℓ after each key block
    must agree to float32 precision, and a causal tile must skip the blocks the lesson's tile
    skips. Returns how many (row, block) pairs were compared."""
    import torch

    q, k, v = (torch.from_numpy(a).float().to(DEVICE) for a in (q64, k64, v64))
    kernel_options = {name: options[name] for name in KERNEL_OPTIONS if name in options}
    out, m_after, l_after = kernel.flash_attention_traced(q, k, v, **kernel_options)
    m_after, l_after = m_after.double().cpu().numpy(), l_after.double().cpu().numpy()
    walkthrough = attn.flash(q64, k64, v64, **options)
    rows, block = q.shape[0], options["block"]
    tile = options.get("query_block") or rows
    compared = 0
    for t, start in enumerate(range(0, rows, tile), start=1):
        stop = min(start + tile, rows)
        prefix = f"tile{t}." if options.get("query_block") else ""
        for b in range(1, math.ceil(k.shape[0] / block) + 1):
            key = f"{prefix}block{b}"
            shown = [step.key for step in walkthrough.steps if step.key.startswith(key + ".")]
            if not shown:  # the lesson's tile skipped this block: so did the kernel's
                assert np.isnan(m_after[b - 1, start:stop]).all(), (t, b)
                continue
            lesson_m = walkthrough.step(f"{key}.max")[:, 0]
            lesson_l = walkthrough.step(f"{key}.sum")[:, 0]
            np.testing.assert_allclose(m_after[b - 1, start:stop], lesson_m, rtol=2e-6, atol=2e-6)
            np.testing.assert_allclose(l_after[b - 1, start:stop], lesson_l, rtol=2e-6, atol=2e-6)
            compared += stop - start
    np.testing.assert_allclose(out.double().cpu().numpy(), walkthrough.output, rtol=2e-6, atol=2e-6)
    return compared


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_m_and_l_after_each_block_are_the_lessons(kernel, causal):
    rng = np.random.default_rng(7)
    for n, d, _d_v, block, query_block in SHAPES[:4]:
        q64, k64, v64 = (float32_values(rng, (n, d)) for _ in "qkv")
        options = {"block": block, "query_block": query_block, "causal": causal}
        assert trace_against_walkthrough(kernel, q64, k64, v64, **options) >= n


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_whole_blocks_without_masks_give_the_lessons_m_and_l(kernel, causal):
    """Blocks of 16 keys in tiles of 16 (no padding): the blocks before the ragged last one (and,
    causal, before a tile's diagonal block) run without a mask, and still agree with the lesson
    after every block."""
    rng = np.random.default_rng(19)
    for n, query_block in ((40, 16), (48, 32), (33, None)):
        q64, k64, v64 = (float32_values(rng, (n, 8)) for _ in "qkv")
        options = {"block": 16, "query_block": query_block, "causal": causal}
        assert trace_against_walkthrough(kernel, q64, k64, v64, **options) >= n


def test_a_causal_tile_stops_before_the_blocks_in_its_future(kernel):
    """6 tokens, tiles of 2, blocks of 2: tile 1 visits 1 block, tile 2 two, tile 3 all three."""
    rng = np.random.default_rng(11)
    q64, k64, v64 = (float32_values(rng, (6, 3)) for _ in "qkv")
    compared = trace_against_walkthrough(kernel, q64, k64, v64, block=2, query_block=2, causal=True)
    assert compared == 2 * (1 + 2 + 3)


@pytest.mark.parametrize("example", [e.name for e in load_bundled("flash").examples])
def test_the_lessons_examples_give_the_numbers_on_its_screen(kernel, example):
    """Each bundled example of `attn flash`, with its own block sizes and options."""
    chosen = load_bundled("flash").example(example)
    options = {**get_lesson("flash").options, **chosen.options}
    q64, k64, v64 = (np.asarray(chosen.inputs[name], dtype=float) for name in "QKV")
    assert trace_against_walkthrough(kernel, q64, k64, v64, **options) >= q64.shape[0]


def test_the_kernel_refuses_what_it_cannot_run(kernel):
    import torch

    q = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="m = n"):
        kernel.flash_attention(q, torch.zeros(4, 3), torch.zeros(4, 3), causal=True)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        kernel.flash_attention(q.double(), q.double(), q.double())
    with pytest.raises(ValueError, match="d, d_v <= 128"):
        wide = torch.zeros(2, 129)
        kernel.flash_attention(wide, wide, wide)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_every_tuned_setting_computes_attention(kernel, causal):
    """Each launch setting the tuner may pick (tile sides; warps and stages change no number)
    gives the same attention: n not a multiple of any tile, d_v narrower than its tile."""
    rng = np.random.default_rng(41)
    (q, q64), (k, k64) = (rounded(rng, (2, 150, 32), "float32") for _ in range(2))
    v, v64 = rounded(rng, (2, 150, 24), "float32")
    expected = reference(q64, k64, v64, causal=causal)
    for rows, keys in dict.fromkeys((rows, keys) for rows, keys, _, _ in kernel.TUNING):
        out = kernel.flash_attention(q, k, v, block=keys, query_block=rows, causal=causal)
        assert np.abs(out.double().cpu().numpy() - expected).max() < 2e-6, (rows, keys)


def test_the_tuner_keeps_the_fastest_setting_for_each_shape(kernel):
    """tuned_flash_attention times every setting of TUNING once per shape and keeps the
    fastest; tuned_setting names it. (The timing is stubbed: the interpreter times nothing.)"""
    fastest = 5  # which setting the stub times fastest
    timed = []

    def bench(launch, quantiles):
        launch()
        timed.append(len(timed) % len(kernel.TUNING))
        ms = 1.0 if timed[-1] == fastest else 2.0
        return [ms] * len(quantiles)

    tuner = kernel.make_tuner(bench)
    rng = np.random.default_rng(5)
    (q, q64), (k, k64), (v, v64) = (rounded(rng, (3, 90, 16), "float32") for _ in range(3))
    with pytest.raises(LookupError, match="has not run"):
        kernel.tuned_setting(q, k, v, tuner=tuner)
    for _ in range(2):  # the second call reuses the tuned setting: nothing timed again
        out = kernel.tuned_flash_attention(q, k, v, causal=True, tuner=tuner)
        assert np.abs(out.double().cpu().numpy() - reference(q64, k64, v64, causal=True)).max() < 2e-6  # fmt: skip
        assert len(timed) == len(kernel.TUNING)
    rows, keys, warps, stages = kernel.TUNING[fastest]
    setting = kernel.tuned_setting(q, k, v, causal=True, tuner=tuner)
    assert setting == {"query_block": rows, "block": keys, "warps": warps, "stages": stages}
    with pytest.raises(LookupError):  # tuned causal, not full
        kernel.tuned_setting(q, k, v, causal=False, tuner=tuner)


DOCS = ROOT / "docs" / "kernel.md"


def test_the_docs_show_the_kernels_own_code():
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    loop = next(block for block in blocks if "for start in tl.range" in block)
    assert loop in KERNEL_FILE.read_text(encoding="utf-8")


def test_the_docs_example_prints_what_the_kernel_computes(kernel):
    """docs/kernel.md's numbers for the two-blocks example, recomputed."""
    import ast

    import torch

    text = DOCS.read_text(encoding="utf-8")
    shown = {
        name: np.array(ast.literal_eval(value))
        for name, value in re.findall(r"^# (m|l|out) += (\[\[.*?\]\])", text, re.MULTILINE)
    }
    inputs = {
        name: torch.tensor(ast.literal_eval(value))
        for name, value in re.findall(r"^(Q|K|V) = torch.tensor\((.*)\)$", text, re.MULTILINE)
    }
    out, m, ell = kernel.flash_attention_traced(
        *(inputs[name].float().to(DEVICE) for name in "QKV"), block=2, scale=False
    )
    assert set(shown) == {"m", "l", "out"}
    for name, value in (("m", m), ("l", ell), ("out", out)):
        np.testing.assert_array_equal(value.double().cpu().numpy().round(4), shown[name])


# --- attn bench --impl triton-flash ---------------------------------------------------------


def test_bench_on_the_cpu_is_an_unsupported_row_with_the_reason():
    reason = static_problem("triton-flash", "cpu", "float32", 64)
    assert reason is not None and "need a CUDA GPU" in reason and "TRITON_INTERPRET=1" in reason


def test_bench_cli_on_the_cpu_reports_the_row_and_goes_on(invoke_json, torch):
    doc = invoke_json("bench", "--impl", "tiled,triton-flash", "--sizes", "16", "--repeats", "1")
    rows = {row["impl"]: row for row in doc["rows"]}
    assert rows["tiled"]["status"] == "ok"
    assert rows["triton-flash"]["status"] == "unsupported"
    assert "need a CUDA GPU" in rows["triton-flash"]["note"]


# --- attn flash --kernel: the source as text (no triton, no torch) ----------------------------


@pytest.fixture
def without_triton(monkeypatch):
    """As on a machine without triton or torch: importing either raises ImportError."""
    for name in ("triton", "torch"):
        monkeypatch.setitem(sys.modules, name, None)


def test_the_marks_name_the_lessons_steps_in_order():
    parts = marked_parts(KERNEL_FILE.read_text(encoding="utf-8"))
    assert [step for step, _, _ in parts] == KERNEL_STEPS
    declared = get_lesson("flash").texts.steps
    assert all(step in declared for step in KERNEL_STEPS)
    ends = [line for _, first, last in parts for line in (first, last)]
    assert ends == sorted(ends)  # parts in order, none overlapping


def test_json_carries_the_source_and_every_part(invoke, without_triton):
    result = invoke("flash", "--kernel", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema.Draft202012Validator(schema()).validate(doc)
    assert doc["kind"] == "kernel" and doc["lesson"] == "flash"
    assert doc["source"] == KERNEL_FILE.read_text(encoding="utf-8")
    lines = doc["source"].splitlines()
    words = load_bundled("flash")
    assert [part["step"] for part in doc["parts"]] == KERNEL_STEPS
    for part in doc["parts"]:
        first, last = part["lines"]
        assert MARKER.match(lines[first - 1]).group(1) == part["step"]
        assert all(lines[i].strip() for i in range(first - 1, last))  # no blank line inside
        assert part["title"] == symbolic_title(words.text(part["step"]).title)
    max_part = next(part for part in doc["parts"] if part["step"] == "max")
    assert "m_new = tl.maximum(m_i, tl.max(s, 1))" in "\n".join(lines[slice(*max_part["lines"])])


def test_rich_shows_each_part_with_the_lessons_title_and_the_code(invoke, without_triton):
    result = invoke("flash", "--kernel")
    assert result.exit_code == 0, result.output
    kernel = kernel_source("flash")
    for part in kernel.parts:
        row = re.search(rf"{part.first}–{part.last}\s+{part.step}\s+(.*)", result.stdout)
        assert row and part.title.startswith(row.group(1).strip()), part
    assert "Block b · running max m" in result.stdout  # the lesson's title, as the kernel names
    assert "# ── step rescale ── c = exp(m_old − m_new)" in result.stdout  # the code itself


def test_markdown_is_the_table_and_the_code_block(invoke, tmp_path, without_triton):
    out = tmp_path / "kernel.md"
    result = invoke("flash", "--kernel", "--format", "markdown", "--output", str(out))
    assert result.exit_code == 0 and result.stdout == "", result.output
    text = out.read_text(encoding="utf-8")
    assert "| lines | step | title |" in text and "```python\n" in text
    assert KERNEL_FILE.read_text(encoding="utf-8").rstrip("\n") in text


def test_kernel_with_another_format_is_a_user_error(invoke):
    assert_user_error(invoke("flash", "--kernel", "--format", "latex"), "--kernel", "latex")


def test_the_gpu_references_backward_runs_on_the_interpreter(kernel, monkeypatch, capsys):
    """benchmarks/gpu_reference.py's backward section (the Triton backward kernel against
    sdpa's, run on a GPU by benchmarks/gpu_run.py), run through at a small size on the device
    here, with one call in place of each timing: every setting runs and its error is small."""
    spec = importlib.util.spec_from_file_location(
        "gpu_reference", ROOT / "benchmarks" / "gpu_reference.py"
    )
    assert spec and spec.loader
    reference_script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference_script)
    monkeypatch.setattr(reference_script, "BACKWARD_DEVICE", DEVICE)
    monkeypatch.setattr(reference_script, "HEADS", 2)
    monkeypatch.setattr(reference_script, "D", 16)
    monkeypatch.setattr(reference_script, "BACKWARD_SETTINGS", ((64, 64), (32, 16)))
    monkeypatch.setattr(reference_script, "median_ms", lambda fn: (fn(), 1.0)[1])
    monkeypatch.setattr(reference_script, "dispatched_kernels", lambda fn: [])
    assert reference_script.BACKWARD_DTYPES == ("bfloat16", "float32")
    for dtype, tolerance in (("bfloat16", 0.05), ("float32", 1e-5)):
        reference_script.backward(70, dtype)
        out = capsys.readouterr().out
        errors = [float(e) for e in re.findall(r"err (\S+)", out)]
        assert len(errors) == 3 and max(errors) < tolerance, out  # sdpa's and two settings'
        assert f"summary backward n=70 d=16 {dtype}" in out
        assert ("(the target, within 1.25x" in out) == (dtype == "bfloat16")
