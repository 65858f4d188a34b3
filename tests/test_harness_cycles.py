"""A core without circles: the import graph among ``harness/`` modules has no cycle.

Every import at any depth counts (inside functions too, parsed as tests/test_layering.py parses them): a
function-local import defers loading a module, it does not remove the dependency. ``from harness import x`` is an
edge to ``harness.x`` when that is a module. A cycle fails the test, named module by module
(``harness.a -> harness.b -> harness.a``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layering import ROOT, imported_modules, package_of


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, package: str = "harness") -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (a package's ``__init__`` is the package's own name)."""
    paths = {module_name(path, root): path for path in sorted((root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = {module for _, module in imported_modules(tree, package_of(path, root))}
        for node in ast.walk(tree):  # `from harness import registry` names the module harness.registry
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {target for target in targets if target in paths and target not in (name, package)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of each strongly connected component of two or more modules (Tarjan's algorithm): a shortest one
    through each of its modules, each written from its first module (alphabetically) back to it, none twice."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    loops = {tuple(_rotated(_loop(graph, component, node))) for component in components for node in component}
    return sorted(map(list, loops))


def _rotated(loop: list[str]) -> list[str]:
    """``a -> b -> c -> a`` from its first module: the same cycle, whichever module it was found from."""
    ring = loop[:-1]
    first = ring.index(min(ring))
    return [*ring[first:], *ring[:first], ring[first]]


def _loop(graph: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    """A shortest path inside ``component`` from ``start`` back to itself (breadth first)."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(graph[node] & component):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"{sorted(component)} is not strongly connected")


def test_the_harness_modules_import_one_another_without_a_cycle():
    found = cycles(import_graph(ROOT))
    assert not found, "import cycles among harness/ modules:\n" + "\n".join(" -> ".join(loop) for loop in found)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_checker_names_each_cycle_hidden_or_not(tmp_path: Path):
    write(tmp_path / "harness/__init__.py", "")
    write(tmp_path / "harness/a.py", "from harness.b import f\n")
    write(tmp_path / "harness/b.py", "def f():\n    from harness import a\n")  # function-local: still an edge
    write(tmp_path / "harness/c.py", "from . import d\nimport harness.a\n")
    write(tmp_path / "harness/d.py", "import os\n\ndef g():\n    from .c import x\n")
    write(tmp_path / "harness/e.py", "from harness import errors\nimport harness\n")  # no module errors: no edge
    write(tmp_path / "harness/f.py", "from harness import g, h\n")  # f -> g -> f and f -> h -> g -> f: one component
    write(tmp_path / "harness/g.py", "from harness.f import x\n")
    write(tmp_path / "harness/h.py", "from harness.g import y\n")
    graph = import_graph(tmp_path)
    assert graph["harness.e"] == set() and graph["harness.c"] == {"harness.a", "harness.d"}
    assert [" -> ".join(loop) for loop in cycles(graph)] == [
        "harness.a -> harness.b -> harness.a",
        "harness.c -> harness.d -> harness.c",
        "harness.f -> harness.g -> harness.f",
        "harness.f -> harness.h -> harness.g -> harness.f",
    ]
