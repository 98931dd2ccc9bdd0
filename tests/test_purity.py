"""The pure cores import no I/O library (docs/architecture.md)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

PURE = [
    "peer.config",
    "peer.urls",
    "peer.bloom",
    "peer.seen",
    "peer.pid",
    "peer.frontier",
    "peer.dnscache",
    "peer.extract",
    "peer.items",
    "peer.state",
    "peer.robots",
    "peer.netguard",
    "peer.limits",
    "peer.runs",
    "peer.progress",
    "peer.stats",
    "peer.holds",
    "peer.decisions",
    "peer.crawl",
    "peer.http1",
    "peer.layout",
    "ring.hashring",
    "ring.messages",
    "ring.membership",
    "ring.sim",
    "ring.forwarder",
    "ring.node",
    "ring.routes",
    "ring.crawlport",
    "ring.curve",
    # The hostile web's answers are pure too; only localweb.hostile serves them.
    "localweb.wire",
    "localweb.site",
    "localweb.farm",
    "localweb.cases",
    # So is the site graph, with its pages, oracle and bad endpoints; only
    # localweb.server serves them.
    "localweb.text",
    "localweb.shop",
    "localweb.hrefs",
    "localweb.endpoints",
    "localweb.graph",
    "localweb.pages",
    "localweb.oracle",
    "localweb.sitegraph",
]
FORBIDDEN = ["trio", "zmq", "httpx", "httpcore", "duckdb"]


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
    names = sorted({*PURE, *(_ring_name(m) for m in RING_MODULES)})
    res = subprocess.run([sys.executable, "-c", _CHECKER, ",".join(FORBIDDEN), *names],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_the_checker_sees_what_a_module_imports(loaded):
    # It must be able to fail: the zmq driver loads zmq and trio, the client does not load peer.
    assert {"zmq", "trio"} <= {_top(m) for m in loaded["ring.driver"]}
    assert "ring.messages" in loaded["ring.node"]


@pytest.mark.parametrize("module", PURE)
def test_pure_core_imports_no_io_library(module, loaded):
    assert isinstance(loaded[module], list), loaded[module]
    bad = sorted({_top(m) for m in loaded[module]} & set(FORBIDDEN))
    assert not bad, f"{module} pulls in {','.join(bad)}"


def _ring_name(module: str) -> str:
    return "ring" if module == "__init__" else f"ring.{module}"


RING_MODULES = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "ring").glob("*.py")
                      if p.stem != "__main__")


@pytest.mark.parametrize("module", RING_MODULES)
def test_ring_imports_nothing_of_peer(module, loaded):
    # The layers (ring/__init__.py): peer is built on ring, never the other
    # way; ring/__main__.py, the process entry point, is where they meet.
    name = _ring_name(module)
    assert isinstance(loaded[name], list), loaded[name]
    bad = sorted(m for m in loaded[name] if _top(m) == "peer")
    assert not bad, f"{name} pulls in {','.join(bad)}"
    source = (Path(__file__).resolve().parent.parent / "ring" / f"{module}.py").read_text()
    assert not re.search(r"^\s*(from|import) peer\b", source, re.M), f"{name} imports peer"
