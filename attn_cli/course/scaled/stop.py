"""The tour's stop at attn scaled."""

from __future__ import annotations

from attn_cli.core.stop import BEYOND_THE_LECTURES, Stop

STOP = Stop(
    "scaled",
    "Attention as retrieval: queries look up keys",
    ("--example", "library"),
    topic="retrieval view",
    after=None,
)

# Visits to attn scaled past the lectures (see attn_cli.course.visit_stops).
VISITS = (
    Stop(
        "softcap",
        "Soft-capping and QK-norm: the scores kept in bounds",
        ("--softcap", "1", "--qk-norm", "rmsnorm"),
        topic="soft-capping and QK-norm",
        lead_in=(
            "Then the scores themselves: Gemma 2 squeezes them under a cap with tanh; OLMo 2, "
            "Qwen 3 and Gemma 3 normalise q and k before the dot product. Both, next, on the "
            "lecture's first example."
        ),
        after="sinks",
        command="scaled",
        lesson=False,
        section=BEYOND_THE_LECTURES,
        checked=(
            "Gemma 2's cap·tanh(s / cap) and F.layer_norm / F.rms_norm before softmax and "
            "scaled_dot_product_attention, written in PyTorch in the tests"
        ),
    ),
)
