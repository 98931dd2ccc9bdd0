"""The pure cores import no I/O library (docs/architecture.md)."""

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


@pytest.mark.parametrize("module", PURE)
def test_pure_core_imports_no_io_library(module):
    code = (
        f"import sys, {module}\n"
        f"bad = [m for m in {FORBIDDEN!r} if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "", f"{module} pulls in {res.stdout.strip()}"


RING_MODULES = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "ring").glob("*.py")
                      if p.stem != "__main__")


@pytest.mark.parametrize("module", RING_MODULES)
def test_ring_imports_nothing_of_peer(module):
    # The layers (ring/__init__.py): peer is built on ring, never the other
    # way; ring/__main__.py, the process entry point, is where they meet.
    name = "ring" if module == "__init__" else f"ring.{module}"
    code = (f"import sys, {name}\n"
            "print(','.join(sorted(m for m in sys.modules if m == 'peer' or m.startswith('peer.'))))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "", f"{name} pulls in {res.stdout.strip()}"
    source = (Path(__file__).resolve().parent.parent / "ring" / f"{module}.py").read_text()
    assert not re.search(r"^\s*(from|import) peer\b", source, re.M), f"{name} imports peer"
