"""attn block against PyTorch's own modules (issue 41), in float64.

PyTorch's nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.TransformerEncoder and
nn.TransformerDecoder are built with random weights (every parameter drawn, LayerNorm's and the
biases too), their state_dict handed to ``attn.block(weights=...)``, and run on the same inputs
with the same masks: the layer's output and every intermediate PyTorch exposes (each sublayer's
output, each LayerNorm's, the feed-forward's two linear layers, every layer's output, the final
LayerNorm, and each head's weights, recomputed by the attention module with need_weights=True
from the inputs it was called with) agree to 1e-12.

Every combination of pre/post norm, relu/gelu/gelu-tanh, encoder/decoder, stack depth 1-3,
padding or not, no mask / a boolean / an additive float attn_mask, and batch_first both ways
runs once on seeded random shapes (test_every_combination_agrees); hypothesis then draws the
shapes, weights, masks and options together (test_random_layers_agree). PyTorch runs its
reference path (gradients on); a row whose every key is masked is left to its own test
(test_a_fully_masked_row), where PyTorch's paths disagree with each other.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attn_cli as attn
from tests.conftest import examples

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    """One thread for PyTorch's tiny matrices: on a shared 2-core machine its pool's threads
    wait on each other (five times slower); put back afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


TOLERANCE = 1e-12
ACTIVATIONS = ("relu", "gelu", "gelu-tanh")
MASKS = ("none", "bool", "float")
# The largest difference seen by each test, for its closing report (ATTN_TORCH_REPORT=path).
SEEN: dict[str, list[float]] = {}


@dataclass(frozen=True)
class Case:
    """One layer (or stack) and its inputs' shapes."""

    decoder: bool
    pre_norm: bool
    activation: str
    layers: int
    padding: bool
    mask: str
    batch_first: bool
    final_norm: bool = False
    bias: bool = True
    causal: bool | None = None  # None: the lesson's default (on in the decoder)
    batch: int = 2
    n: int = 3
    m: int = 2
    heads: int = 2
    dk: int = 2
    d_ff: int = 5
    eps: float = 1e-5
    seed: int = 0

    @property
    def d_model(self) -> int:
        return self.heads * self.dk


def torch_module(torch: Any, case: Case) -> Any:
    """PyTorch's module for ``case``, every parameter random (not PyTorch's initial values)."""
    nn = torch.nn
    torch.manual_seed(case.seed)
    # The tanh GELU as a function: nn.TransformerDecoder's copies of a layer given the module
    # nn.GELU(approximate="tanh") fall back to ReLU (TransformerDecoderLayer.__setstate__ looks
    # for the activation in the instance's __dict__, where a module is not), in torch 2.13.
    tanh_gelu = functools.partial(torch.nn.functional.gelu, approximate="tanh")
    activation = {"relu": "relu", "gelu": "gelu", "gelu-tanh": tanh_gelu}
    kind = nn.TransformerDecoderLayer if case.decoder else nn.TransformerEncoderLayer
    layer = kind(
        case.d_model,
        case.heads,
        case.d_ff,
        dropout=0.0,
        activation=activation[case.activation],
        layer_norm_eps=case.eps,
        batch_first=case.batch_first,
        norm_first=case.pre_norm,
        bias=case.bias,
        dtype=torch.float64,
    )
    module = layer
    if case.layers > 1 or case.final_norm:
        norm = None
        if case.final_norm:
            norm = nn.LayerNorm(case.d_model, eps=case.eps, bias=case.bias, dtype=torch.float64)
        if case.decoder:
            module = nn.TransformerDecoder(layer, case.layers, norm=norm)
        else:
            module = nn.TransformerEncoder(
                layer, case.layers, norm=norm, enable_nested_tensor=False
            )
    generator = torch.Generator().manual_seed(case.seed)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            random = torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
            if parameter.ndim == 2:  # a weight: N(0, 1/fan_in), keeping its inputs' scale
                parameter.copy_(random / np.sqrt(parameter.shape[1]))
            elif "norm" in name and name.endswith("weight"):  # LayerNorm's γ: about 1
                parameter.copy_(1 + 0.2 * random)
            else:  # a bias, or LayerNorm's β
                parameter.copy_(0.2 * random)
    return module.eval()


@dataclass
class Inputs:
    x: np.ndarray  # (B, n, d)
    memory: np.ndarray | None  # (B, m, d)
    padding: np.ndarray | None  # (B, n) 1 = padding
    memory_padding: np.ndarray | None  # (B, m)
    mask: np.ndarray | None  # (n, n): 0/1 for "bool", additive for "float"


def draw_inputs(case: Case) -> Inputs:
    """Random tokens, memory and masks; no query row loses every key (each keeps the first
    token and itself; the memory keeps its first row)."""
    rng = np.random.default_rng(case.seed + 1000)
    b, n, m, d = case.batch, case.n, case.m, case.d_model
    x = rng.standard_normal((b, n, d))
    memory = rng.standard_normal((b, m, d)) if case.decoder else None
    padding = memory_padding = mask = None
    if case.padding:
        padding = (rng.random((b, n)) < 0.4).astype(float)
        padding[:, 0] = 0
        if case.decoder:
            memory_padding = (rng.random((b, m)) < 0.4).astype(float)
            memory_padding[:, 0] = 0
    if case.mask == "bool":
        mask = (rng.random((n, n)) < 0.35).astype(float)
        mask[:, 0] = 0
    elif case.mask == "float":
        mask = rng.standard_normal((n, n))
        mask[rng.random((n, n)) < 0.3] = -np.inf
        mask[:, 0] = rng.standard_normal(n)
    return Inputs(x, memory, padding, memory_padding, mask)


def torch_masks(torch: Any, case: Case, inputs: Inputs) -> dict[str, Any]:
    """The masks as PyTorch takes them: the attention mask boolean (True = blocked) or float,
    the causal mask added into it, the padding masks boolean (float beside a float mask)."""
    n = case.n
    causal = case.decoder if case.causal is None else case.causal
    mask = None
    if inputs.mask is not None:
        given = torch.tensor(inputs.mask)
        mask = given.bool() if case.mask == "bool" else given
    if causal:
        square = torch.nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64)
        if mask is None:
            mask = square
        elif mask.dtype == torch.bool:
            mask = square.masked_fill(mask, -torch.inf)
        else:
            mask = square + mask
    floats = mask is not None and mask.dtype != torch.bool

    def padding(value: np.ndarray | None) -> Any:
        if value is None:
            return None
        blocked = torch.tensor(value).bool()
        if not floats:
            return blocked
        return torch.zeros(blocked.shape, dtype=torch.float64).masked_fill(blocked, -torch.inf)

    return {
        "mask": mask,
        "padding": padding(inputs.padding),
        "memory_padding": padding(inputs.memory_padding),
    }


def run_torch(torch: Any, case: Case, module: Any, inputs: Inputs) -> dict[str, np.ndarray]:
    """The module's output and intermediates, each (B, n, ...) batch first, by attn's step key."""
    masks = torch_masks(torch, case, inputs)
    seen: dict[str, Any] = {}
    hooks = []
    stacked = case.layers > 1 or case.final_norm
    layers = list(module.layers) if stacked else [module]
    prefixes = [f"layer{i}." if case.layers > 1 else "" for i in range(1, len(layers) + 1)]

    def keep(key: str) -> Any:
        def hook(_module: Any, args: Any, kwargs: Any, output: Any) -> None:
            value = output[0] if isinstance(output, tuple) else output
            seen[key] = value
            if isinstance(_module, torch.nn.MultiheadAttention):
                # each head's weights, from the same call with need_weights=True
                call = dict(kwargs, need_weights=True, average_attn_weights=False)
                call.pop("is_causal", None)
                _out, weights = torch.nn.MultiheadAttention.forward(_module, *args, **call)
                seen[key.replace(".output", ".weights")] = weights

        return hook

    for layer, prefix in zip(layers, prefixes, strict=True):
        named = {"self_attn": "self.output", "linear1": "ffn.pre", "linear2": "ffn.output"}
        named |= {f"norm{i}": f"norm{i}" for i in range(1, 4 if case.decoder else 3)}
        if case.decoder:
            named["multihead_attn"] = "cross.output"
        for attribute, key in named.items():
            hooks.append(
                getattr(layer, attribute).register_forward_hook(
                    keep(prefix + key), with_kwargs=True
                )
            )
        hooks.append(layer.register_forward_hook(keep(prefix + "layer"), with_kwargs=True))
    if case.final_norm:
        hooks.append(module.norm.register_forward_hook(keep("final_norm"), with_kwargs=True))

    def arranged(value: np.ndarray) -> Any:
        tensor = torch.tensor(value)
        return tensor if case.batch_first else tensor.transpose(0, 1)

    x = arranged(inputs.x)
    if case.decoder:
        memory = arranged(inputs.memory)
        kwargs = {
            "tgt_key_padding_mask": masks["padding"],
            "memory_key_padding_mask": masks["memory_padding"],
        }
        output = module(x, memory, tgt_mask=masks["mask"], **kwargs)
    else:
        name = "mask" if stacked else "src_mask"
        kwargs = {name: masks["mask"], "src_key_padding_mask": masks["padding"]}
        output = module(x, **kwargs)
    for hook in hooks:
        hook.remove()
    seen["output"] = output
    found = {}
    for key, value in seen.items():
        array = value.detach().numpy()
        if key.endswith(".weights"):  # (B, h, n, m): heads second, already batch first
            found[key] = array
        else:
            found[key] = array if case.batch_first else np.swapaxes(array, 0, 1)
    return found


def run_attn(case: Case, module: Any, inputs: Inputs) -> attn.Walkthrough:
    keywords: dict[str, Any] = {
        "x": inputs.x if case.batch_first else np.swapaxes(inputs.x, 0, 1),
        "weights": module.state_dict(),
        "heads": case.heads,
        "pre_norm": case.pre_norm,
        "activation": case.activation,
        "eps": case.eps,
        "posenc": False,
        "sequence_first": not case.batch_first,
    }
    if case.causal is not None:
        keywords["causal"] = case.causal
    if case.decoder:
        memory = inputs.memory
        keywords["memory"] = memory if case.batch_first else np.swapaxes(memory, 0, 1)
    # One row per item (B × 1 × n): a batch of vectors even when n = 1 (B × 1 alone would read
    # as one vector of B entries).
    if inputs.padding is not None:
        keywords["padding"] = inputs.padding[:, None, :]
    if inputs.memory_padding is not None:
        keywords["memory_padding"] = inputs.memory_padding[:, None, :]
    if inputs.mask is not None:
        keywords["attn_mask" if case.mask == "bool" else "attn_mask_float"] = inputs.mask
    return attn.block(**keywords)


def compare(torch: Any, case: Case) -> tuple[int, float]:
    """attn against PyTorch on ``case``: how many arrays were compared and the largest
    difference; every difference within TOLERANCE."""
    module = torch_module(torch, case)
    inputs = draw_inputs(case)
    expected = run_torch(torch, case, module, inputs)
    walkthrough = run_attn(case, module, inputs)
    items = walkthrough.items or (walkthrough,)
    assert len(items) == case.batch
    compared, largest = 0, 0.0
    last = f"{'add' if case.pre_norm else 'norm'}{3 if case.decoder else 2}"
    for b, item in enumerate(items):
        steps = {step.key: step.value for step in item.steps}
        pairs = []  # (what, attn's value, PyTorch's)
        for key, theirs in expected.items():
            if key.endswith(".weights"):  # (B, h, n, m)
                for head in range(case.heads):
                    mine = steps[key.replace(".weights", f".head{head + 1}.weights")]
                    pairs.append((f"{key} head {head + 1}", mine, theirs[b, head]))
                continue
            if key == "output":
                mine = item.output
            elif key.endswith("layer"):  # a layer's output: its last step
                mine = steps[key.removesuffix("layer") + last]
            else:
                mine = steps[key]
            pairs.append((key, mine, theirs[b]))
        for key, mine, theirs in pairs:
            mine = np.asarray(mine, dtype=np.float64)
            assert mine.shape == theirs.shape, (case, key, mine.shape, theirs.shape)
            assert np.all(np.isfinite(mine)), (case, key)
            gap = float(np.max(np.abs(mine - theirs)))
            assert gap <= TOLERANCE, (case, key, gap)
            compared += 1
            largest = max(largest, gap)
    return compared, largest


def record(test: str, compared: int, largest: float) -> None:
    SEEN.setdefault(test, [0, 0.0])
    SEEN[test][0] += compared
    SEEN[test][1] = max(SEEN[test][1], largest)
    path = os.environ.get("ATTN_TORCH_REPORT")
    if path:
        with open(f"{path}.{test}.txt", "w", encoding="utf-8") as file:
            file.write(
                f"{test}: {SEEN[test][0]} arrays compared, largest difference {SEEN[test][1]:.3e}\n"
            )


def combinations() -> Iterator[Case]:
    """Every combination the issue names, each with its own seeded shapes."""
    grid = itertools.product(
        (False, True), ACTIVATIONS, (False, True), (1, 2, 3), (False, True), MASKS, (True, False)
    )
    for number, (pre, act, dec, layers, pad, mask, first) in enumerate(grid):
        rng = np.random.default_rng(number)
        heads, dk = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        yield Case(
            decoder=dec,
            pre_norm=pre,
            activation=act,
            layers=layers,
            padding=pad,
            mask=mask,
            batch_first=first,
            final_norm=bool(rng.integers(0, 2)) if layers > 1 else False,
            bias=bool(rng.integers(0, 4)),  # mostly with biases
            batch=int(rng.integers(1, 3)),
            n=int(rng.integers(1, 5)),
            m=int(rng.integers(1, 4)),
            heads=heads,
            dk=dk,
            d_ff=int(rng.integers(1, 7)),
            eps=float(rng.choice([1e-5, 1e-3, 0.1])),
            seed=number,
        )


COMBINATIONS = list(combinations())


@pytest.mark.slow
def test_every_combination_agrees():
    compared, largest = 0, 0.0
    for case in COMBINATIONS:
        count, gap = compare(torch, case)
        compared += count
        largest = max(largest, gap)
    record("every_combination", compared, largest)
    assert len(COMBINATIONS) == 2 * 3 * 2 * 3 * 2 * 3 * 2


@st.composite
def cases(draw: Any) -> Case:
    layers = draw(st.integers(1, 3))
    return Case(
        decoder=draw(st.booleans()),
        pre_norm=draw(st.booleans()),
        activation=draw(st.sampled_from(ACTIVATIONS)),
        layers=layers,
        padding=draw(st.booleans()),
        mask=draw(st.sampled_from(MASKS)),
        batch_first=draw(st.booleans()),
        final_norm=draw(st.booleans()),
        bias=draw(st.booleans()),
        causal=draw(st.sampled_from((None, True, False))),
        batch=draw(st.integers(1, 3)),
        n=draw(st.integers(1, 6)),
        m=draw(st.integers(1, 5)),
        heads=draw(st.integers(1, 3)),
        dk=draw(st.integers(1, 3)),
        d_ff=draw(st.integers(1, 8)),
        eps=draw(st.sampled_from((1e-5, 1e-6, 0.01, 0.5))),
        seed=draw(st.integers(0, 2**31 - 1)),
    )


@settings(max_examples=examples(100))
@given(cases())
def test_random_layers_agree(case):
    count, gap = compare(torch, case)
    record("random_layers", count, gap)
