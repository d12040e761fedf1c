"""Where the project lives on the web: the one base address the help and the README link to.

It must equal the Homepage of [project.urls] in pyproject.toml (tests/test_packaging.py checks
that, and that the README's links are absolute against it).
"""

from __future__ import annotations

REPOSITORY = "https://github.com/attn-cli/attn"


def docs_url(page: str) -> str:
    """The address of a page under docs/ in the repository, e.g. ``docs_url("cli.md")``."""
    return f"{REPOSITORY}/blob/main/docs/{page}"
