"""Every pure module has a test module: tests/ mirrors peer/core/ and ring/ (but its edges, ring/io and ring/tools).

A module is covered by a test module named after it (``tests/**/test_<name>.py``:
``peer/core/frontier/pacing.py`` by ``tests/core/test_pacing.py``, and a room's
main module named like its room, ``peer/core/frontier/frontier.py``, by
``test_frontier.py``), or by a test module whose docstring names it, dotted
(``peer.core.run.layout``) or as a path (``peer/core/run/layout.py``). The
name alone does not count where another module or package of peer/ or ring/
has it too (``peer.core.crawl.state`` and ``peer.state``, ``peer.core.config.tls``
and ``peer.net.tls``): there the docstring says which.

Packages' ``__init__`` modules, which only say what a room holds and
re-export its names, are not asked for a test of their own.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


#: The modules that need a test module: the pure layers, by glob (as tests/project/test_purity.py finds them).
MODULES = sorted(_dotted(p) for p in [*(ROOT / "peer" / "core").rglob("*.py"),
                                        *(p for p in (ROOT / "ring").rglob("*.py") if p.parent.name not in ("io", "tools"))]
                 if p.name not in ("__init__.py", "__main__.py"))


def docstrings_of_tests() -> dict[Path, str]:
    """Each test module under tests/ and the first string of its source."""
    out = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path != Path(__file__).resolve():  # this docstring's examples cover nothing
            out[path] = ast.get_docstring(ast.parse(path.read_text())) or ""
    return out


def named(module: str, text: str) -> bool:
    """Whether ``text`` names ``module`` dotted or as its path, as a whole word."""
    path = module.replace(".", "/") + ".py"
    for name in (module, path):
        start = 0
        while (i := text.find(name, start)) >= 0:
            before = text[i - 1] if i else " "
            after = text[i + len(name)] if i + len(name) < len(text) else " "
            if not (before.isalnum() or before in "._/") and not (after.isalnum() or after == "_"
                                                                  or (after == "." and text[i + len(name):][1:2].isalpha())):
                return True
            start = i + 1
    return False


#: Every module and package name of peer/ and ring/, dotted.
TREE = sorted({_dotted(p.parent if p.name == "__init__.py" else p)
               for package in ("peer", "ring") for p in (ROOT / package).rglob("*.py")})


def shared(module: str, tree: list[str]) -> bool:
    """Whether another module or package of ``tree`` has ``module``'s last name (its own room apart)."""
    name = module.rpartition(".")[2]
    room = module.rpartition(".")[0]
    return any(other.rpartition(".")[2] == name for other in tree if other not in (module, room))


def covering(module: str, docs: dict[Path, str], tree: list[str]) -> list[Path]:
    """The test modules that cover ``module``: named after it (a name no other module has), or naming it."""
    own = f"test_{module.rpartition('.')[2]}.py"
    return [path for path, doc in docs.items()
            if named(module, doc) or (path.name == own and not shared(module, tree))]


def gaps(modules: list[str], docs: dict[Path, str], tree: list[str]) -> list[str]:
    return [m for m in modules if not covering(m, docs, tree)]


def test_the_check_can_fail():
    docs = {Path("tests/core/test_pace.py"): "A host's pace (peer/core/frontier/pacing.py, rule 1).",
            Path("tests/core/test_layout.py"): "The data_dir's names.",
            Path("tests/edges/test_state.py"): "Tests for peer.state.journal.",
            Path("tests/core/test_census.py"): "peer.core.frontier.frontier.Frontier, and peer.core.frontierx.",
            Path("tests/core/test_frontier.py"): "The per-host frontier."}
    modules = ["peer.core.frontier.pacing", "peer.core.run.layout", "peer.core.crawl.state",
               "peer.core.frontier.frontier", "peer.core.frontier.census", "peer.core.frontier.scheduler"]
    tree = [*modules, "peer.core.frontier", "peer.state", "peer.core.run"]
    assert gaps(modules, docs, tree) == ["peer.core.crawl.state", "peer.core.frontier.scheduler"]
    assert shared("peer.core.crawl.state", tree) and not shared("peer.core.frontier.frontier", tree)
    # And the glob finds the pure layers' modules, without the packages' __init__.
    assert {"peer.core.crawl.core", "peer.core.run.layout", "ring.node", "ring.hashring"} <= set(MODULES)
    assert "peer.core.run" not in MODULES and "ring.io.zmqio" not in MODULES


def test_every_pure_module_is_named_by_a_test_module():
    missing = gaps(MODULES, docstrings_of_tests(), TREE)
    assert not missing, (f"{len(missing)} of {len(MODULES)} pure modules have no test module that names them "
                         "in its docstring:\n" + "\n".join(missing))
