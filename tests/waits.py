"""How long a test waits for a command, a process or an app before it fails.

A hang guard, not a speed target (benchmarks/ measure speed): every wait in the suite is for a
state (a command's end, a prompt, a screen that shows a value). A loaded machine, the suite beside
six busy processes on two cores, takes minutes for what an idle one does in seconds, so the guard
is minutes: a test that passes idle passes there too, and one that hangs still fails, well inside
pytest-timeout's ten minutes (pyproject.toml), with its stack.
"""

HANG_GUARD_SECONDS = 300
