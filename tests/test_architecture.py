"""The import rules of docs/architecture.md, read from the code itself (every import statement, also inside
functions), so a module that crosses a boundary fails here rather than in a reviewer's head."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "core", "storage", "adapters", "runners")


def _imports(path: Path) -> set[str]:
    """Every module name an import statement in ``path`` names (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _module(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


MODULES = {_module(p): _imports(p) for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))}


def _under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _crossings(importer: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, names in MODULES.items()
        if _under(module, importer)
        for name in names
        if _under(name, *forbidden) and not _under(name, *allowed)
    )


RULES = [
    # (who, what it must not import, exceptions to that)
    ("harness", ("core", "storage", "adapters", "runners"), ()),
    ("storage", ("core", "adapters", "runners", "harness"), ("harness.result",)),
    ("core.contracts", ("core.service", "core.launch", "storage", "adapters", "runners"), ()),
    ("core.service", ("core.launch", "adapters", "runners"), ()),
    ("adapters", ("core", "storage", "runners", "harness"), ("core.contracts",)),
    ("runners", ("core", "storage", "adapters"), ("core.contracts",)),
]


@pytest.mark.parametrize(("who", "forbidden", "allowed"), RULES, ids=[rule[0] for rule in RULES])
def test_each_layer_imports_only_what_it_may(who: str, forbidden: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    assert _crossings(who, forbidden, allowed) == []


def test_only_the_launcher_imports_adapters_and_runners() -> None:
    outside = [
        f"{module} imports {name}"
        for module, names in MODULES.items()
        if not _under(module, "core.launch", "adapters", "runners")
        for name in names
        if _under(name, "adapters", "runners")
    ]
    assert outside == []


def test_only_the_core_service_opens_the_database() -> None:
    openers = {module for module, names in MODULES.items() if "storage.store" in names or "duckdb" in names}
    assert {m for m in openers if not _under(m, "core.service", "storage")} == set()


def test_the_rules_see_the_imports_they_guard() -> None:
    """The checks above would pass on an empty tree: make sure they read the real one."""
    assert "core.contracts.messages" in MODULES["core.service.handlers"]
    assert "adapters.cli" in MODULES["core.launch.main"]
    assert "core.contracts.messages" in MODULES["adapters.api.app"]
