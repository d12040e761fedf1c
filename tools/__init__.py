"""The project's development tools: the generators of the docs' generated files, and the one
command that rewrites them all (``python tools/regenerate.py``; ``--check`` fails on drift).

Not part of the package: the wheel ships attn_cli alone, and nothing in it imports these.
"""

# The command that every generated file's marker names.
REGENERATE = "python tools/regenerate.py"
