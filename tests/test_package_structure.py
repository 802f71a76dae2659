"""The package's shape: short modules, no import cycle, kernels as a leaf.

Imports are read from the source (module level only: an import inside a
function or under ``if TYPE_CHECKING:`` runs late or never, so it cannot
close a cycle at import time).
"""
from __future__ import annotations

import ast
from pathlib import Path

from fixture_paths import REPO

PACKAGE = REPO / "gpukit"
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _module_level_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """gpukit modules imported when ``path`` is executed (a name imported from a
    package that is not itself a module counts as the package)."""
    found: set[str] = set()

    def visit(statements) -> None:
        for node in statements:
            if isinstance(node, ast.If):
                if "TYPE_CHECKING" in ast.unparse(node.test):
                    continue
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("gpukit"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in modules)

    visit(ast.parse(path.read_text()).body)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_over_500_lines():
    long = {str(p.relative_to(REPO)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_no_import_cycle_at_import_time():
    modules = _modules()
    graph = {name: _module_level_imports(path, modules) & modules.keys() - {name} for name, path in modules.items()}
    assert graph["gpukit.ranking"], "the import reader found no imports: it is broken"
    assert _cycles(graph) == []


def test_kernels_are_a_leaf():
    """gpukit.metrics imports nothing of gpukit outside itself (pure functions on tensors)."""
    modules = _modules()
    for name, path in modules.items():
        if name.startswith("gpukit.metrics"):
            outside = {m for m in _module_level_imports(path, modules) if not m.startswith("gpukit.metrics")}
            assert not outside, (name, outside)
