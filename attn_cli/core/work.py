"""The work guard: a request that would run for more than a few minutes here is refused in one
line before it starts, with the time it would take and how to ask for less.

Each command counts its own work (numbers drawn, timed calls, panels drawn) and knows how fast
this machine does it (measured, in the module that counts); the cap and the words are here,
once. The memory guard (attn_cli.core.backend.ensure_fits) is its sibling for space.
"""

from __future__ import annotations

from attn_cli.core.errors import UserError

# The most a request may take: about three minutes of this machine's measured speed.
MAX_SECONDS = 180.0


def check_work(units: float, per_second: float, what: str, ask_less: str) -> None:
    """Refuse ``units`` of work done at ``per_second`` when it would take over MAX_SECONDS.

    ``what`` says what was asked ("--samples 3,000 ... draws 2.7e+12 numbers"), ``ask_less``
    what to change ("fewer --samples (the default is 3,000)"); the error reads
    "<what>, about <time> here; ask for less: <ask_less>."
    """
    if units > MAX_SECONDS * per_second:
        took = duration(units / per_second)
        raise UserError(f"{what}, about {took} here; ask for less: {ask_less}.")


def duration(seconds: float) -> str:
    """40 seconds, 3 minutes, 67 hours, 12 days: a time as a person says it."""
    if seconds < 120:
        return f"{seconds:,.0f} seconds"
    if seconds < 7200:
        return f"{seconds / 60:,.0f} minutes"
    if seconds < 4 * 86400:
        return f"{seconds / 3600:,.0f} hours"
    if seconds < 1000 * 365 * 86400:
        return f"{seconds / 86400:,.0f} days"
    return f"{seconds / (365 * 86400):.2g} years"
