"""attn kvcache at real sizes: more tokens than a walkthrough shows step by step.

Past MAX_TOKENS (or with --show-tokens) the lesson shows the generation steps in full at a few
chosen tokens only: the first three, where a window (or StreamingLLM's sinks + window) cache
first fills and first evicts, and the last; --show-tokens names others. The rest is a summary:
the cache's size, its evictions and its bytes, phase by phase, for the full cache and each
cache the options describe; and, at the chosen tokens, what each of those caches holds and how
far its output moves from the full cache's. Nothing is n × n: the stacked outputs are computed
one token at a time and full causal attention in blocks of query rows, so memory is O(n · d).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_cli.core.errors import UserError, param
from attn_cli.course.kvcache import sinks as sink_options
from attn_cli.course.recorder import Grid, StepRecorder
from attn_cli.mechanisms import attention as mech
from attn_cli.mechanisms import kvcache

# Every token a step: the walkthrough of attn kvcache up to this many tokens.
MAX_TOKENS = 32
# At most this many tokens in all (each is one attention row, computed one at a time).
LONG_MAX = 8_192
# Rows of full causal attention computed at once.
BLOCK = 64


@dataclass(frozen=True)
class Policy:
    """A cache: its name in the tables, and the tokens it keeps (window None: every one)."""

    name: str
    window: int | None = None
    sinks: int = 0
    # K of the model's layers window their cache (--window-layers); None: every layer does.
    window_layers: int | None = None


def summarised(n: int, options: Mapping[str, Any]) -> bool:
    """Steps at chosen tokens and a summary: more than MAX_TOKENS, or --show-tokens given."""
    return n > MAX_TOKENS or options.get("show_tokens") not in (None, "", [])


def check_length(n: int) -> None:
    if n > LONG_MAX:
        raise UserError(
            f"{n:,} tokens is more than attn kvcache computes ({LONG_MAX:,}, one attention row "
            f"each); use at most {LONG_MAX:,} ({param('n', LONG_MAX)})."
        )


def policies(options: Mapping[str, Any]) -> tuple[Policy, ...]:
    """The full cache, and the caches --window (with --window-layers or --sinks) describes."""
    found = [Policy("full")]
    window = options.get("window")
    if window is None:
        return tuple(found)
    window = int(window)
    layers = options.get("window_layers")
    found.append(
        Policy(
            f"window {window:,}",
            window,
            window_layers=None if layers is None else int(layers),
        )
    )
    sizes = sink_options.settings(options)
    if sizes is not None:
        found.append(Policy(f"sinks {sizes[0]:,} + {window:,}", window, sizes[0]))
    return tuple(found)


def chosen_tokens(n: int, options: Mapping[str, Any]) -> tuple[int, ...]:
    """The tokens (1..n) whose steps are shown in full: --show-tokens, else the first three,
    each cache's first full and first evicting token, and the last."""
    given = options.get("show_tokens")
    if given not in (None, "", []):
        return _parsed(given, n)
    chosen = {1, 2, 3, n}
    for policy in policies(options):
        if policy.window is not None:
            full = policy.sinks + policy.window
            chosen |= {full, full + 1}
    return tuple(sorted(t for t in chosen if 1 <= t <= n))


def _parsed(value: Any, n: int) -> tuple[int, ...]:
    items = value.split(",") if isinstance(value, str) else value
    items = items if isinstance(items, list | tuple) else [items]
    tokens = set()
    for item in items:
        text = str(item).strip().replace("_", "")
        if isinstance(item, bool | float) or not text.isdigit() or not 1 <= int(text) <= n:
            raise UserError(
                f"{param('show_tokens', value)}: give tokens from 1 to {n:,} separated by commas, "
                f"e.g. {param('show_tokens', f'1,2,{n}')}."
            )
        tokens.add(int(text))
    return tuple(sorted(tokens))


def estimate_bytes(n: int, d_k: int, d_v: int, chosen: tuple[int, ...], itemsize: int) -> int:
    """The inputs, the stacked and full outputs, one block of full attention's scores and the
    chosen steps' caches (a few copies each): O(n · d), never n²."""
    steps = sum(t * (d_k + d_v + 4) for t in chosen)
    return (8 * n * (d_k + d_v) + 6 * BLOCK * n + 4 * steps) * itemsize


def step_at(q: Any, k: Any, v: Any, t: int) -> kvcache.CacheStep:
    """Token t's step (1-based) over the full cache k[:t], v[:t]."""
    keys, values = k[..., :t, :], v[..., :t, :]
    result = mech.attention(q[..., t - 1 : t, :], keys, values)
    return kvcache.CacheStep(t - 1, keys, values, result.scaled, result.weights, result.output)


def ordered_gap_at(
    record: StepRecorder, qkv: tuple[Any, Any, Any], chosen: tuple[int, ...]
) -> dict[str, Any]:
    """At the chosen tokens: the cache's step and row t of the n × n causal computation, every
    sum left to right (kvcache.ordered_attention): how many entries differ, by how much."""
    q, k, v = qkv
    cached, whole = [], []
    for t in chosen:
        row = q[..., t - 1 : t, :]
        cached.append(
            record.to_numpy(kvcache.ordered_attention(row, k[..., :t, :], v[..., :t, :])[1])
        )
        whole.append(
            record.to_numpy(kvcache.ordered_attention(row, k, v, causal=True, row0=t - 1)[1])
        )
    a, b = np.concatenate(cached, axis=0), np.concatenate(whole, axis=0)
    return {
        "unequal": int(np.count_nonzero(a != b)),
        "entries": int(a.size),
        "difference": float(np.max(np.abs(a - b))),
        "tokens": ", ".join(f"{t:,}" for t in chosen),
    }


def _runs_text(names: tuple[str, ...], runs: tuple[range, ...]) -> str:
    """Runs of 0-based positions as key names: "k1–k4, k6–k1,025"."""
    return ", ".join(
        names[run[0]] if len(run) == 1 else f"{names[run[0]]}–{names[run[-1]]}" for run in runs
    )


def record_policies(
    record: StepRecorder,
    qkv: tuple[Any, Any, Any],
    keys: tuple[str, ...],
    context: dict[str, Any],
    chosen: tuple[int, ...],
) -> None:
    """At each chosen token, each windowed cache: what it holds, what it evicted then, the
    weight full attention gave the keys it no longer holds, how far its output moved."""
    q, k, v = qkv
    windowed = [p for p in policies(record.run.options) if p.window is not None]
    if not windowed:
        return
    rows = []
    for t in chosen:
        query = q[..., t - 1 : t, :]
        full = mech.attention(query, k[..., :t, :], v[..., :t, :])
        weights = np.asarray(record.to_numpy(full.weights), dtype=np.float64)[0]
        full_out = np.asarray(record.to_numpy(full.output), dtype=np.float64)
        for policy in windowed:
            runs = kvcache.held(t, policy.window, policy.sinks)
            index = np.concatenate([np.arange(r.start, r.stop) for r in runs])
            kept = mech.attention(query, k[..., index, :], v[..., index, :])
            out = np.asarray(record.to_numpy(kept.output), dtype=np.float64)
            gone = kvcache.evicted_at(t, policy.window, policy.sinks)
            rows.append(
                {
                    "token": t,
                    "policy": policy.name,
                    "held": int(index.size),
                    "keys_held": _runs_text(keys, runs),
                    "evicted": "–" if gone is None else keys[gone],
                    "weight_evicted": float(np.sum(np.delete(weights, index))),
                    "output_moved": float(np.max(np.abs(out - full_out))),
                }
            )
    record.add("policy_tokens", rows, kind="records", grid=Grid(context=context))


def _bytes(policy: Policy, t: int, sizes: Mapping[str, int], dtype: str) -> int:
    """The model's cache after token t under the policy, every layer counted."""
    layers, kv_heads, d_head = sizes["layers"], sizes["kv_heads"], sizes["d_head"]
    if policy.window is not None and policy.window_layers is not None:
        return kvcache.windowed_cache_bytes(
            t, layers, policy.window_layers, policy.window, kv_heads, d_head, dtype
        )
    per_token = kvcache.cache_bytes_per_token(layers, sizes["heads"], d_head, dtype, kv_heads)
    size = t if policy.window is None else min(t, policy.sinks + policy.window)
    return per_token * size


def record_summary(
    record: StepRecorder,
    n: int,
    context: dict[str, Any],
    sizes: Mapping[str, int],
    dtype: str,
) -> None:
    """Phase by phase, per cache: the tokens, the keys held (per windowed layer), the keys
    evicted per token and in all, and the model's cache bytes at the phase's last token."""
    rows = []
    for policy in policies(record.run.options):
        limit = n if policy.window is None else min(n, policy.sinks + policy.window)
        phases = [(1, limit, 0)]
        if limit < n:
            phases.append((limit + 1, n, 1))
        for first, last, each in phases:
            held_first = 1 if each == 0 else limit
            held_last = last if each == 0 else limit
            rows.append(
                {
                    "policy": policy.name,
                    "first_token": first,
                    "last_token": last,
                    "held_first": held_first,
                    "held_last": held_last,
                    "evicted_each": each,
                    "evicted_total": max(0, last - limit),
                    "bytes_last": _bytes(policy, last, sizes, dtype),
                }
            )
    words = {"tokens_text": f"{n:,} tokens", "dtype": dtype, **sizes}
    record.add("cache_summary", rows, kind="records", grid=Grid(context={**context, **words}))


STEPS = {
    "policy_tokens": (),
    "cache_summary": ("tokens_text", "dtype", "layers", "heads", "kv_heads", "d_head", "d_model"),
}
