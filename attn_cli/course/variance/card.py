"""attn variance: why scores are divided by √d_k, measured."""

from __future__ import annotations

from attn_cli.core.card import Card, Option
from attn_cli.course.shared import D_K

# Samples per d_k (each one query and `keys` keys). The standard error of the variance
# estimates is then 3.0% at d_k = 1 (the worst case), 1.7% at d_k = 4 and at most 1.2% from
# d_k = 16 on (see mechanisms.variance.variance_standard_error); drawing and scoring all six
# default widths takes about 0.33 s on numpy on one core, 0.19 s on two (2-core machine, 2026-11).
DEFAULT_SAMPLES = 3000

# The defaults are the lecture's settings; lessons/variance.toml's "lecture" example relies on
# them (its examples state only what differs).
CARD = Card(
    "variance",
    summary="Why divide by √d_k: the variance of q·k, the softmax and its gradient, measured.",
    options=(
        Option(
            "dk",
            'Widths d_k: one value or a list, e.g. "1,4,16" (default: {default}).',
            [1, 4, 16, 64, 256, 1024],
            metavar="WIDTHS",
        ),
        Option(
            "samples",
            "Samples per d_k, each one query and its keys (default: {default}).",
            DEFAULT_SAMPLES,
            type=int,
        ),
        Option("keys", "Keys n per softmax, at least 2 (default: {default}).", 8, type=int),
        # The lecture's worked numerics, set by lesson files only.
        Option(
            "spiky_scores",
            "The spiky step's raw scores q·k of one query, divided by √{spiky_dk} before the "
            "softmax (default: the slide's {default}).",
            [15.5, -16.1, 2.3],
            command_line=False,
        ),
        Option(
            "spiky_dk",
            "The d_k of the spiky step's scores (default: the slide's {default}).",
            256,
            type=int,
            command_line=False,
        ),
        Option(
            "logits",
            "The temperature step's logits s, shown as softmax(s / T) (default: {default}).",
            [2.0, 1.0, 0.5],
            command_line=False,
        ),
        Option(
            "temperatures",
            "The temperatures T of that step, each above 0 (default: {default}).",
            [1.0, 4.0, 0.1],
            command_line=False,
        ),
    ),
    batches=False,
    figure=(
        "the spread by d_k: the variance of q·k against d_k, the scores at the largest d_k, "
        "and the softmax's largest weight"
    ),
    examples=(
        "attn variance",
        'attn variance --dk "4,64,512" --samples 500',
    ),
    symbols=(D_K,),
)
