"""The tour's stop at attn rope: the first beyond the lectures."""

from __future__ import annotations

from attn_cli.core.stop import BEYOND_THE_LECTURES, Stop

STOP = Stop(
    "rope",
    "Rotary positions: q and k turned, scores set by the offset",
    ("--example", "four-tokens"),
    topic="rotary positions (RoPE)",
    lead_in=(
        "The lectures add a sinusoidal vector to each token. The models a student meets next "
        "turn the query and the key instead: rotary position embedding, next."
    ),
    after="kvcache",
    section=BEYOND_THE_LECTURES,
    checked=(
        "Hugging Face's rotate_half and Meta's complex-number RoPE, written in PyTorch in the tests"
    ),
)
