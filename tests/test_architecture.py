"""The import rules of docs/architecture.md, read from the code itself (every import statement, also inside
functions), so a module that crosses a boundary, or closes a circle, fails here rather than in a reviewer's head."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "core", "storage", "adapters", "runners")
# The harness's rooms by side of the trust boundary (docs/architecture.md, "The harness by trust side"); modules
# directly in harness/ are the shared data both sides use.
HARNESS_ROOMS = ("isolation", "builds", "runner", "judge", "host")
ROOM_RULES = {
    # room: the rooms it must not import
    "shared": ("isolation", "builds", "runner", "judge", "host"),
    "isolation": ("builds", "runner", "judge", "host"),
    "builds": ("runner", "judge", "host"),
    "runner": ("judge", "host"),  # the submission's process must not hold the judge's code
    "judge": ("host",),
    "host": (),
}


def _names(path: Path) -> set[str]:
    """Every module name an import statement in ``path`` names (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _module(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def read_tree(root: Path) -> dict[str, set[str]]:
    """Module name -> every name its import statements mention, for the project's packages under ``root``."""
    return {_module(p, root): _names(p) for package in PACKAGES for p in sorted((root / package).rglob("*.py"))}


def dependencies(tree: dict[str, set[str]]) -> dict[str, set[str]]:
    """Module -> the project modules it imports: ``from a.b import c`` is a.b.c when that is a module, else a.b."""
    graph: dict[str, set[str]] = {}
    for module, names in tree.items():
        targets = {n for n in names if n in tree and not any(m.startswith(n + ".") and m in tree for m in names)}
        graph[module] = {t for t in targets if t != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles (strongly connected groups of two or more modules), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative: the tree is deep enough for recursion limits
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while (member := stack.pop()) != node:
                    group.append(member)
                group.append(node)
                if len(group) > 1:
                    found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def room(module: str) -> str | None:
    """The harness room a module belongs to, ``shared`` for harness/*.py, None outside the harness."""
    parts = module.split(".")
    if parts[0] != "harness" or module == "harness":
        return None
    return parts[1] if parts[1] in HARNESS_ROOMS else "shared"


def room_crossings(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} ({room(module)}) imports {target} ({room(target)})"
        for module, targets in graph.items()
        if room(module) is not None
        for target in targets
        if room(target) in ROOM_RULES[room(module)]
    )


TREE = read_tree(REPO)
GRAPH = dependencies(TREE)


def _under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _crossings(importer: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, names in TREE.items()
        if _under(module, importer)
        for name in names
        if _under(name, *forbidden) and not _under(name, *allowed)
    )


# What every process may take from the harness: its shared data (job, result, codec, problem formats, the wire
# format of the public harness, the result as text), never a room that evaluates.
HARNESS_SHARED_DATA = ("harness.result", "harness.codec", "harness.job", "harness.popcorn", "harness.result_text")

RULES = [
    # (who, what it must not import, exceptions to that)
    ("harness", ("core", "storage", "adapters", "runners"), ()),
    ("storage", ("core", "adapters", "runners", "harness"), ("harness.result",)),
    (
        "core.contracts",
        ("core.service", "core.launch", "storage", "adapters", "runners", "harness"),
        HARNESS_SHARED_DATA,
    ),
    ("core.service", ("core.launch", "adapters", "runners"), ()),
    ("adapters", ("core", "storage", "runners", "harness"), ("core.contracts",)),
    ("runners", ("core", "storage", "adapters"), ("core.contracts",)),
]


@pytest.mark.parametrize(("who", "forbidden", "allowed"), RULES, ids=[rule[0] for rule in RULES])
def test_each_layer_imports_only_what_it_may(who: str, forbidden: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    assert _crossings(who, forbidden, allowed) == []


def test_each_harness_room_imports_only_what_its_side_may() -> None:
    assert room_crossings(GRAPH) == []


def test_no_import_circle_anywhere() -> None:
    assert circles(GRAPH) == []


def test_only_the_launcher_imports_adapters_and_runners() -> None:
    outside = [
        f"{module} imports {name}"
        for module, names in TREE.items()
        if not _under(module, "core.launch", "adapters", "runners")
        for name in names
        if _under(name, "adapters", "runners")
    ]
    assert outside == []


def test_only_the_core_service_opens_the_database() -> None:
    openers = {module for module, names in TREE.items() if "storage.store" in names or "duckdb" in names}
    assert {m for m in openers if not _under(m, "core.service", "storage")} == set()


def test_the_rules_see_the_imports_they_guard() -> None:
    """The checks above would pass on an empty tree: make sure they read the real one."""
    assert "core.contracts.messages" in GRAPH["core.service.handlers"]
    assert "adapters.cli" in TREE["core.launch.main"]
    assert "harness.judge.runner_link" in GRAPH["harness.judge.judge_process"]
    assert "harness.runner.runner_process" in GRAPH["harness.judge.runner_link"]
    assert {room(m) for m in TREE} >= {"shared", *HARNESS_ROOMS}


def _planted_copy(tmp_path: Path, relative: str, line: str) -> dict[str, set[str]]:
    """A copy of the project's packages with ``line`` added at the end of one module (inside a function, as a
    hidden import would be)."""
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / relative
    target.write_text(target.read_text() + f"\n\ndef _planted() -> None:\n    {line}\n")
    return read_tree(tmp_path)


def test_a_planted_runner_to_judge_import_is_found(tmp_path: Path) -> None:
    planted = dependencies(_planted_copy(tmp_path, "harness/runner/monitor.py", "from harness.judge import checking"))
    assert room_crossings(planted) == ["harness.runner.monitor (runner) imports harness.judge.checking (judge)"]


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    # core.service.handlers imports core.contracts.messages; a function-level import back closes the circle
    planted = dependencies(_planted_copy(tmp_path, "core/contracts/messages.py", "import core.service.handlers"))
    found = circles(planted)
    assert any({"core.service.handlers", "core.contracts.messages"} <= set(group) for group in found), found
