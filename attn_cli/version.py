"""The package's version (pyproject reads it: [tool.hatch.version])."""

__version__ = "0.1.0"
