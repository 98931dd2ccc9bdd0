"""The import graph of this tree's packages, read from their source: every import statement counts.

An ``import`` or ``from ... import`` anywhere in a module (at the top, under
``if TYPE_CHECKING:``, inside a function) is an edge from that module to the
module it names, resolved to this tree's modules: ``from peer.core.urls import
normalize`` names ``peer.core.urls.normalize`` (a module), ``from
peer.core.urls.normalize import normalize`` names it too (a name in it), and
``from peer.core import urls`` names the package ``peer.core.urls``. A name
outside the tree is kept as the top-level library it comes from (``trio``).

tests/project/test_imports.py looks for circles in it, and
tests/project/test_purity.py follows it from every pure module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Edge", "ImportGraph", "dotted"]


def dotted(root: Path, path: Path) -> str:
    """``peer/core/urls/normalize.py`` -> ``peer.core.urls.normalize``; a package is its folder's name."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass(frozen=True, slots=True)
class Edge:
    """One import statement's target: ``source`` imports ``target`` at ``line``."""

    source: str
    target: str
    line: int
    internal: bool  # a module of the tree, else a top-level library name


class ImportGraph:
    """Every module of ``packages`` under ``root`` and the edges of its import statements."""

    def __init__(self, root: Path, packages: Iterable[str] = ("peer", "ring")) -> None:
        self.root = root
        self.paths: dict[str, Path] = {}
        for package in packages:
            for path in sorted((root / package).rglob("*.py")):
                self.paths[dotted(root, path)] = path
        self.edges: dict[str, list[Edge]] = {name: self._edges(name, path) for name, path in self.paths.items()}

    # -- reading one module ----------------------------------------------------------------

    def _resolve(self, name: str) -> str | None:
        """The longest prefix of ``name`` that is a module of the tree, or None."""
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            candidate = ".".join(parts[:n])
            if candidate in self.paths:
                return candidate
        return None

    def _base(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        package = module if self.paths[module].name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{node.module}" if node.module else package

    def _edge(self, module: str, name: str, line: int) -> Edge:
        found = self._resolve(name)
        if found is not None:
            return Edge(module, found, line, True)
        return Edge(module, name.partition(".")[0], line, False)

    def _edges(self, module: str, path: Path) -> list[Edge]:
        out: list[Edge] = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                out += [self._edge(module, alias.name, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = self._base(module, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    out.append(self._edge(module, sub if sub in self.paths else base, node.lineno))
        return sorted(out, key=lambda e: (e.line, e.target))

    # -- the graph -------------------------------------------------------------------------

    def internal(self) -> dict[str, set[str]]:
        """module -> the tree's modules it imports (itself left out)."""
        return {m: {e.target for e in es if e.internal and e.target != m} for m, es in self.edges.items()}

    def reach(self, start: str) -> dict[str, list[str]]:
        """Every module importing ``start`` runs, with the shortest chain of imports to it.

        Importing a module runs its packages' ``__init__`` first, so a
        package of every module reached is reached too.
        """
        graph = self.internal()
        paths: dict[str, list[str]] = {start: [start]}
        queue = [start]
        while queue:
            here = queue.pop(0)
            nexts = sorted(graph[here])
            parts = here.split(".")
            nexts += [p for p in (".".join(parts[:n]) for n in range(1, len(parts))) if p in self.paths]
            for there in nexts:
                if there not in paths:
                    paths[there] = [*paths[here], there]
                    queue.append(there)
        return paths

    def cycles(self) -> list[list[str]]:
        """Each circle of imports (a strongly connected component of two modules or more), sorted."""
        return [sorted(c) for c in _components(self.internal()) if len(c) > 1]

    def shortest_cycle(self, members: Iterable[str]) -> list[str]:
        """One shortest circle through the first of ``members``, within them: a -> b -> ... -> a."""
        inside = set(members)
        graph = self.internal()
        first = min(inside)
        paths = {first: [first]}
        queue = [first]
        while queue:
            here = queue.pop(0)
            for there in sorted(graph[here] & inside):
                if there == first:
                    return [*paths[here], first]
                if there not in paths:
                    paths[there] = [*paths[here], there]
                    queue.append(there)
        return [first]


def _components(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(component)
    return out
