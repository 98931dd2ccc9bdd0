"""No import circles in peer/ and ring/: the import graph, drawn from every import statement, has no cycle.

Every ``import`` and ``from ... import`` counts, at the top of a module,
under ``if TYPE_CHECKING:`` or inside a function (tests/support/importgraph.py
resolves each to the tree's module it names). A circle means two modules
that cannot be read, tested or moved one without the other: a room of the
core that needs a room above it, or a part that should be handed what it
needs instead of importing its owner.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from importgraph import ImportGraph

ROOT = Path(__file__).resolve().parents[2]


def describe(graph: ImportGraph, edges: bool = False) -> list[str]:
    """One entry a circle: its modules, one shortest path around it, and (``edges``) every
    import statement inside it, the ones to cut."""
    out = []
    for c in graph.cycles():
        text = f"{len(c)} modules: {', '.join(c)}\n    e.g. {' -> '.join(graph.shortest_cycle(c))}"
        if edges:
            cuts = dict.fromkeys((e.source, e.line, e.target) for m in c for e in graph.edges[m]
                                 if e.internal and e.target in c and e.target != m)
            text += "".join(f"\n    {source}:{line} imports {target}" for source, line, target in cuts)
        out.append(text)
    return out


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_the_graph_sees_every_import_statement_and_finds_a_circle(tmp_path):
    root = _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
        "pkg/b.py": "def f():\n    from pkg import c\n",
        "pkg/c.py": "import pkg.a\nimport trio\n",
        "pkg/d.py": "from . import a\nfrom .sub.e import x\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/e.py": "from ..d import y\n",
    })
    graph = ImportGraph(root, ["pkg"])
    assert graph.internal() == {
        "pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"},
        "pkg.d": {"pkg.a", "pkg.sub.e"}, "pkg.sub": set(), "pkg.sub.e": {"pkg.d"},
    }
    assert [e.target for e in graph.edges["pkg.c"] if not e.internal] == ["trio"]
    assert graph.cycles() == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.sub.e"]]
    assert describe(graph)[0] == "3 modules: pkg.a, pkg.b, pkg.c\n    e.g. pkg.a -> pkg.b -> pkg.c -> pkg.a"


def test_the_graph_holds_the_whole_tree():
    graph = ImportGraph(ROOT)
    assert {"peer.core.crawl.core", "peer.engine.crawler", "ring.node", "ring.io.zmqio", "peer.core"} <= set(graph.paths)
    assert "ring.messages" in graph.internal()["ring.node"]


def test_no_module_of_peer_or_ring_imports_itself_in_a_circle():
    circles = describe(ImportGraph(ROOT), edges=True)
    assert not circles, "import circles:\n" + "\n".join(circles)
