"""The pure tests stay pure: tests/core and tests/ring open no socket, file, thread, process or event loop.

``scripts/test --pure`` runs those two folders alone, in seconds
(docs/development.md), because everything in them drives a pure core
synchronously with ``now`` passed in. What needs more lives elsewhere:
tests/edges (one edge: files, sockets, a library), tests/e2e (a crawl, a
ring, real processes), tests/project (the tree, its docs, its install).

Read from each test module's source, as tests/project/test_purity.py reads
the cores': a test module there may not

- import an I/O library or module (trio, zmq, httpx, httpcore, duckdb,
  socket, threading, subprocess, time...), an edge layer that does I/O
  (``peer.net``, ``peer.engine``, ``peer.results``, ``ring.io``,
  ``ring.tools``), a harness that starts servers or processes
  (``tests/support``'s clirun, ringharness, zmq_peer_proc), a test module of
  another folder, or one of ``localweb``'s servers, process runners or
  namespaces (its pure modules, the webs' pages and oracles and the
  simulators, are welcome);
- ask for a temporary directory (``tmp_path``, ``tmpdir`` and their factories);
- define an ``async`` test (an event loop: trio's opens a socket pair and
  threads, and reads the clock);
- call ``open``, a file-system method (``read_text``, ``mkdir``, ``exists``...)
  or an ``os`` system call.

Every import statement counts, at the top or inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from test_purity import IO_MODULES, LOCALWEB_PURE, system_call

ROOT = Path(__file__).resolve().parents[2]
PURE_TEST_DIRS = ("core", "ring")
PURE_TEST_FILES = sorted(p for d in PURE_TEST_DIRS for p in (ROOT / "tests" / d).glob("*.py"))

#: Edge layers: using one means I/O.
#: (Not peer.state nor peer.commands: SieveFiles(None) keeps the seen set in RAM, and
#: the commands' describe functions only render text; what they open shows as a
#: temporary directory or a harness.)
EDGE_LAYERS = ("peer.net", "peer.engine", "peer.results", "ring.io", "ring.tools")
#: tests/support harnesses that start servers, threads or processes.
IMPURE_HARNESSES = frozenset({"clirun", "ringharness", "zmq_peer_proc"})
#: The tests' own folders other than the pure ones.
OTHER_TEST_DIRS = frozenset({"edges", "e2e", "project", "support"})
TEMP_FIXTURES = frozenset({"tmp_path", "tmp_path_factory", "tmpdir", "tmpdir_factory"})


def _localweb_pure_names() -> frozenset[str]:
    """The names ``localweb`` re-exports from its pure modules (its ``__init__``)."""
    import localweb

    def pure(value: object) -> bool:
        # A class or function is its module's; a constant (a host name, a tuple of cases) is a value.
        module = getattr(value, "__module__", None)
        return module in LOCALWEB_PURE or not (isinstance(module, str) and module.startswith("localweb"))

    return frozenset(name for name in dir(localweb) if pure(getattr(localweb, name)))


def _impure_import(module: str, names: list[str], localweb_pure: frozenset[str]) -> str | None:
    top = module.partition(".")[0]
    if top in IO_MODULES or module in IO_MODULES:
        return f"import {module}"
    if any(module == layer or module.startswith(layer + ".") for layer in EDGE_LAYERS):
        return f"import {module} (an edge layer)"
    if top in IMPURE_HARNESSES:
        return f"import {module} (a harness of servers or processes)"
    if top == "tests" and module.split(".")[1:2] and module.split(".")[1] in OTHER_TEST_DIRS:
        return f"import {module} (a test module of another folder)"
    if top == "localweb":
        if module == "localweb":
            bad = sorted(set(names) - localweb_pure)
            return f"from localweb import {', '.join(bad)} (not of its pure modules)" if bad else None
        if module not in LOCALWEB_PURE and not any(f"{module}.{n}" in LOCALWEB_PURE for n in names):
            return f"import {module} (not one of localweb's pure modules)"
    return None


def impure_lines(source: str, localweb_pure: frozenset[str] = frozenset()) -> list[str]:
    """What a test module's source does that a pure test may not, one ``line N: what`` each."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: {why}" for a in node.names
                      if (why := _impure_import(a.name, [], localweb_pure))]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            why = _impure_import(node.module, [a.name for a in node.names], localweb_pure)
            found += [f"line {node.lineno}: {why}"] if why else []
        elif isinstance(node, ast.AsyncFunctionDef) and node.name.startswith("test"):
            found.append(f"line {node.lineno}: async test {node.name} (an event loop)")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            temp = sorted({a.arg for a in node.args.args} & TEMP_FIXTURES)
            found += [f"line {node.lineno}: {node.name} asks for {t}" for t in temp]
        elif isinstance(node, ast.Call) and (what := system_call(node, frozenset({"open"}))):
            found.append(f"line {node.lineno}: {what}")
    return found


def test_the_check_can_fail():
    source = (
        "import trio\nimport time\nfrom clirun import run_main\nfrom peer.engine.crawler import Crawler\n"
        "from tests.e2e.test_engine import crawl\nfrom localweb import SiteGraph, serve_webfarm\n"
        "from localweb.sims.politeness import simulate_pid_host\nfrom localweb.processes.peerrun import run_peers\n"
        "async def test_a(): pass\n"
        "def test_b(tmp_path):\n    import subprocess\n    (tmp_path / 'x').write_text('')\n    open('y')\n"
        "    os.listdir('.')\n    os.fspath('z')\n"
        "def test_c():\n    from peer.core.urls.normalize import normalize\n"
    )
    pure = frozenset({"SiteGraph"})
    assert impure_lines(source, pure) == [
        "line 1: import trio", "line 2: import time", "line 3: import clirun (a harness of servers or processes)",
        "line 4: import peer.engine.crawler (an edge layer)",
        "line 5: import tests.e2e.test_engine (a test module of another folder)",
        "line 6: from localweb import serve_webfarm (not of its pure modules)",
        "line 8: import localweb.processes.peerrun (not one of localweb's pure modules)",
        "line 9: async test test_a (an event loop)", "line 10: test_b asks for tmp_path",
        "line 11: import subprocess", "line 12: .write_text()", "line 13: open()", "line 14: os.listdir()",
    ]
    # And the globs find both folders' modules.
    names = {p.relative_to(ROOT / "tests").as_posix() for p in PURE_TEST_FILES}
    assert {"core/test_frontier.py", "ring/test_hashring.py"} <= names
    assert "SiteGraph" in _localweb_pure_names() and "serve_webfarm" not in _localweb_pure_names()


@pytest.fixture(scope="module")
def localweb_pure() -> frozenset[str]:
    return _localweb_pure_names()


@pytest.mark.parametrize("path", PURE_TEST_FILES, ids=lambda p: p.relative_to(ROOT / "tests").as_posix())
def test_a_pure_test_module_does_no_io(path, localweb_pure):
    found = impure_lines(path.read_text(), localweb_pure)
    assert not found, (f"{path.relative_to(ROOT)} is in a folder of pure tests; move these to tests/edges "
                       f"or tests/e2e:\n" + "\n".join(found))
