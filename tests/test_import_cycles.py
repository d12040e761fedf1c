"""No import circles in attn_cli, between any two modules.

pyproject.toml's acyclic_siblings contract (lint-imports, in .ci/run) forbids circles between
the modules and subpackages beside each other at every depth; a package's __init__ and the
modules inside it are not siblings, so a circle through an __init__ (attn_cli/render/__init__.py
importing its renderers, which imported it back for RenderOptions) is found here. The graph is
import-linter's own (grimp's), read as [tool.importlinter] reads it: every import, those inside
functions too and, as configured there, those under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def import_graph() -> grimp.ImportGraph:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    linter = config["tool"]["importlinter"]
    return grimp.build_graph(
        linter["root_package"],
        exclude_type_checking_imports=linter.get("exclude_type_checking_imports", False),
    )


def circles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One shortest circle through each module that is on one, each circle listed once: the
    modules in import order, the first repeated at the end."""
    found: dict[frozenset[str], tuple[str, ...]] = {}
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported == module or not graph.chain_exists(importer=imported, imported=module):
                continue
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            assert chain is not None
            circle = (module, *chain)
            found.setdefault(frozenset(circle), circle)
            break
    return sorted(found.values())


def test_no_module_of_attn_cli_imports_itself_through_others():
    found = circles(import_graph())
    assert found == [], "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_a_circle_is_found_and_named():
    """The check itself: a circle put in a copy of the graph is reported, in import order."""
    graph = import_graph()
    graph.add_import(importer="attn_cli.core.errors", imported="attn_cli.core.backend")
    found = circles(graph)
    assert ("attn_cli.core.backend", "attn_cli.core.errors", "attn_cli.core.backend") in found
