"""Writes lessons/kvcache-inputs/: the long inputs of attn kvcache's real-size examples.

Each is n tokens of d_k = d_v = 2, drawn once from N(0, 1) with numpy's default_rng(seed),
rounded to 2 decimals and stored as float32 .npy, with the first token made a sink as in the
lesson's "sink" example: k1 = (10, 0) matches every query (whose first entry is 1) far better
than the other keys (first entry 0), so that it takes about half of each row's weight over a
thousand keys, as a trained model's sink does; its value is zeros. Run: python tools/kvcache_inputs.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FOLDER = Path(__file__).resolve().parent.parent / "lessons" / "kvcache-inputs"
# (file stem, tokens, seed): StreamingLLM's 4 sinks + 1,020 recent; a 4,096-token window.
SETS = (("streaming", 1_100, 0), ("window4096", 4_160, 1))


def inputs(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = np.column_stack([np.ones(n), rng.standard_normal(n)])
    k = np.column_stack([np.zeros(n), rng.standard_normal(n)])
    v = rng.standard_normal((n, 2))
    k[0], v[0] = (10.0, 0.0), (0.0, 0.0)
    return {
        name: np.round(a, 2).astype(np.float32) for name, a in zip("qkv", (q, k, v), strict=True)
    }


def main() -> None:
    FOLDER.mkdir(exist_ok=True)
    for stem, n, seed in SETS:
        for name, array in inputs(n, seed).items():
            np.save(FOLDER / f"{stem}-{name}.npy", array)


if __name__ == "__main__":
    main()
