"""The layers hold: the pure cores do no I/O, ``ring`` needs nothing of ``peer`` (docs/architecture.md).

Which modules are pure is read from the tree, not from a list: everything
under ``peer/core/`` and every module of ``ring/`` outside its edges (they live
in ``ring/io/`` and its tools in ``ring/tools/``). Each is checked three times:
what importing it loads (no trio, zmq, httpx, httpcore or duckdb, even
indirectly); what its own source does (no socket, thread, process or clock
module; no ``open``, no ``os`` call but ``os.fspath``, no file-system method of
``pathlib``); and every import statement it and the modules it imports hold,
at the top, under ``if TYPE_CHECKING:`` or inside a function
(tests/support/importgraph.py): none may name an edge layer (``peer.net``,
``peer.engine``, ``peer.state``, ``peer.results``, ``peer.commands``,
``ring.io``, ``ring.tools``) or an I/O library, even for a type.
"""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from importgraph import ImportGraph

ROOT = Path(__file__).resolve().parents[2]


def _dotted(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: The pure layers, by glob: every module under them.
PURE_FILES = sorted([*(ROOT / "peer" / "core").rglob("*.py"),
                     *(p for p in (ROOT / "ring").rglob("*.py")
                       if p.name != "__main__.py" and p.parent.name not in ("io", "tools"))])
# The test webs' pure layers (localweb/__init__.py); only localweb.sitegraph.server and
# localweb.hostile.server serve them.
LOCALWEB_PURE = [
    "localweb.hostile.wire", "localweb.hostile.site", "localweb.hostile.farm", "localweb.hostile.cases", "localweb.sitegraph.text",
    "localweb.sitegraph.shop", "localweb.sitegraph.hrefs", "localweb.sitegraph.endpoints", "localweb.sitegraph.graph", "localweb.sitegraph.pages",
    "localweb.sitegraph.oracle", "localweb.sitegraph.web", "localweb.sims.politeness", "localweb.judges.politeness",
    "localweb.hostile.sitemaps", "localweb.sitegraph.docsite", "localweb.sitegraph.nearcopies", "localweb.sims.changes",
]
PURE = [*(_dotted(p) for p in PURE_FILES), *LOCALWEB_PURE]
FORBIDDEN = ["trio", "zmq", "httpx", "httpcore", "duckdb"]
#: The layers that do I/O: a pure module names none of them, not even under TYPE_CHECKING.
EDGE_LAYERS = ["peer.net", "peer.engine", "peer.state", "peer.results", "peer.commands", "ring.io", "ring.tools"]


# One interpreter checks every module, each from the same clean start: what
# importing it adds to sys.modules is recorded, then removed again before the
# next. (A fresh interpreter a module cost about a second each, 70 of them.)
# Our own modules are always imported afresh. A third-party module is left
# loaded once an import that brought it in brought in no forbidden library
# (so it loads none at import): re-importing idna, msgpack, tomllib... for
# every core was most of the checker's time. A forbidden library is never
# left loaded, so every module that imports one, directly or through
# anything, shows it.
_CHECKER = """
import importlib, json, sys
forbidden = set(sys.argv[1].split(","))
ours = {"peer", "ring", "localweb"}
base = set(sys.modules)
kept = set()
out = {}
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
        out[name] = sorted(set(sys.modules) - base - kept)
    except Exception as e:
        out[name] = "error: %s: %s" % (type(e).__name__, e)
    fresh = set(sys.modules) - base - kept
    tops = {m.partition(".")[0] for m in fresh}
    if not isinstance(out[name], str) and not tops & forbidden:
        kept |= {m for m in fresh if m.partition(".")[0] not in ours}
    for m in set(sys.modules) - base - kept:
        del sys.modules[m]
print(json.dumps(out))
"""


def _top(name: str) -> str:
    return name.partition(".")[0]


@pytest.fixture(scope="module")
def loaded() -> dict[str, list[str]]:
    """What importing each module (alone) loads: {module: [module names]}."""
    names = sorted({*PURE, *RING_MODULES})
    res = subprocess.run([sys.executable, "-c", _CHECKER, ",".join(FORBIDDEN), *names],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_the_checker_sees_what_a_module_imports(loaded):
    # It must be able to fail: the zmq driver loads zmq and trio, the client does not load peer.
    assert {"zmq", "trio"} <= {_top(m) for m in loaded["ring.io.driver"]}
    assert "ring.messages" in loaded["ring.node"]


@pytest.mark.parametrize("module", PURE)
def test_pure_core_imports_no_io_library(module, loaded):
    assert isinstance(loaded[module], list), loaded[module]
    bad = sorted({_top(m) for m in loaded[module]} & set(FORBIDDEN))
    assert not bad, f"{module} pulls in {','.join(bad)}"


RING_MODULES = sorted(_dotted(p) for p in (ROOT / "ring").rglob("*.py") if p.name != "__main__.py")


@pytest.mark.parametrize("module", RING_MODULES)
def test_ring_imports_nothing_of_peer(module, loaded):
    # The layers (ring/__init__.py): peer is built on ring, never the other
    # way; ring/__main__.py, the process entry point, is where they meet.
    assert isinstance(loaded[module], list), loaded[module]
    bad = sorted(m for m in loaded[module] if _top(m) == "peer")
    assert not bad, f"{module} pulls in {','.join(bad)}"
    source = _source(module).read_text()
    assert not re.search(r"^\s*(from|import) peer\b", source, re.M), f"{module} imports peer"


def _source(module: str) -> Path:
    base = ROOT.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


#: Standard modules whose import means I/O, threads or a clock in a core.
IO_MODULES = frozenset({
    "socket", "ssl", "select", "selectors", "signal", "threading", "subprocess", "asyncio",
    "multiprocessing", "concurrent", "time", "shutil", "tempfile", "mmap", "http", "urllib.request",
    *FORBIDDEN,
})
#: ``pathlib`` and file-object methods that touch the file system.
FS_METHODS = frozenset({
    "read_text", "read_bytes", "write_text", "write_bytes", "mkdir", "unlink", "rmdir", "exists",
    "is_file", "is_dir", "iterdir", "glob", "rglob", "touch", "resolve", "readlink", "chmod", "stat",
    "lstat", "open", "fdopen", "makedirs", "rename", "symlink_to", "samefile", "cwd", "home",
    "readinto", "fsync",
})
#: ``os`` names that only compute (the rest are system calls).
OS_PURE = frozenset({"fspath", "fsencode", "fsdecode", "path", "sep", "PathLike"})
#: Builtins a core may not call: the file system and the console.
CONSOLE_CALLS = frozenset({"open", "input", "print"})


def system_call(node: ast.Call, builtins: frozenset[str]) -> str | None:
    """What ``node`` calls that touches the system (one of ``builtins``, an ``os`` call,
    a file-system method), as ``open()``, ``os.fsync()`` or ``.read_text()``; None: nothing."""
    fn = node.func
    if isinstance(fn, ast.Name) and fn.id in builtins:
        return f"{fn.id}()"
    if isinstance(fn, ast.Attribute):
        if isinstance(fn.value, ast.Name) and fn.value.id == "os" and fn.attr not in OS_PURE:
            return f"os.{fn.attr}()"
        if fn.attr in FS_METHODS:
            return f".{fn.attr}()"
    return None


def io_calls(source: str) -> list[str]:
    """What a module's own source does that is I/O: imports of I/O modules and calls that touch the system."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            names = []
        bad = [n for n in names if n in IO_MODULES or n.partition(".")[0] in IO_MODULES]
        found += [f"line {node.lineno}: import {bad[0]}"] if bad else []
        if isinstance(node, ast.Call) and (what := system_call(node, CONSOLE_CALLS)):
            found.append(f"line {node.lineno}: {what}")
    return found


def test_the_source_check_can_fail():
    source = "import time\nimport os\nfrom pathlib import Path\nopen('x')\nos.fsync(3)\nPath('x').read_text()\nos.fspath('x')\n"
    assert io_calls(source) == ["line 1: import time", "line 4: open()", "line 5: os.fsync()",
                                "line 6: .read_text()"]
    # And the globs find the layers' modules.
    assert {"peer.core.crawl.core", "peer.core.frontier.frontier", "ring.node", "ring.hashring"} <= set(PURE)
    assert "ring.io.zmqio" not in PURE and "peer.net.fetcher" not in PURE
    # The SSRF guard is one of them: test_pure_core_imports_no_io_library[peer.core.dns.guard]
    # asserts what tests/core/test_netguard.py's own interpreter used to (no trio, zmq, httpx,
    # httpcore or duckdb loaded by importing it).
    assert "peer.core.dns.guard" in PURE


@pytest.mark.parametrize("path", PURE_FILES, ids=_dotted)
def test_pure_core_source_does_no_io(path):
    assert io_calls(path.read_text()) == []


# -- every import statement, followed through the tree -----------------------------------


@pytest.fixture(scope="module")
def graph() -> ImportGraph:
    return ImportGraph(ROOT)


def _layer(name: str) -> str | None:
    return next((layer for layer in EDGE_LAYERS if name == layer or name.startswith(layer + ".")), None)


def edge_imports(graph: ImportGraph, module: str) -> list[str]:
    """Each import statement that ``module``, or a module importing it runs, holds of an edge
    layer or an I/O library, with the chain of imports that reaches it."""
    found = []
    for reached, chain in graph.reach(module).items():
        for e in graph.edges[reached]:
            if (e.internal and _layer(e.target)) or (not e.internal and e.target in FORBIDDEN):
                via = " -> ".join(chain)
                found.append(f"{via}: line {e.line} imports {e.target}")
    return sorted(set(found))


def test_the_import_check_sees_type_checking_and_function_imports(tmp_path, graph):
    files = {
        "peer/__init__.py": "",
        "peer/errors.py": "from ring.tools.shell import cli_shell\n",
        "peer/core/__init__.py": "",
        "peer/core/a.py": ("from typing import TYPE_CHECKING\nimport peer.errors\n"
                           "if TYPE_CHECKING:\n    from peer.net.fetcher import FetchResult\n"),
        "peer/core/b.py": "def f():\n    import trio\n    from peer.core import a\n",
        "peer/core/c.py": "from peer.core.b import f\n",
        "peer/net/__init__.py": "", "peer/net/fetcher.py": "",
        "ring/__init__.py": "", "ring/tools/__init__.py": "", "ring/tools/shell.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    fake = ImportGraph(tmp_path)
    assert edge_imports(fake, "peer.core.c") == [
        "peer.core.c -> peer.core.b -> peer.core.a -> peer.errors: line 1 imports ring.tools.shell",
        "peer.core.c -> peer.core.b -> peer.core.a: line 4 imports peer.net.fetcher",
        "peer.core.c -> peer.core.b: line 2 imports trio",
    ]
    # And on the tree's own graph it finds what an edge module imports.
    assert any(line.endswith("imports zmq") for line in edge_imports(graph, "ring.io.zmqio"))


@pytest.mark.parametrize("module", [_dotted(p) for p in PURE_FILES])
def test_pure_core_names_no_edge_layer_even_for_a_type(module, graph):
    found = edge_imports(graph, module)
    assert not found, f"{module} reaches the edges:\n" + "\n".join(found)
